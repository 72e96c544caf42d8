"""The index database: per-thread connections, the schema's migration, recovery from damage,
transactions and the generation token other processes compare with (see the package's docstring)."""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prism_code.config import cache_root
from prism_code.store.errors import (
    UNUSABLE_CODES,
    IndexBusy,
    StaleIndex,
    file_id,
    is_damage,
    make_dir,
    result_code,
    unusable,
)
from prism_code.store.file_lock import FileLock
from prism_code.store.schema import GENERATION_KEY, SCHEMA, SCHEMA_VERSION, UPGRADABLE

log = logging.getLogger(__name__)


def workspace_db_path(root: Path, cache_dir: Path | None = None) -> Path:
    """One database per workspace, outside the repository, named after its real path."""
    real = str(root.resolve())
    digest = hashlib.blake2b(real.encode(), digest_size=8).hexdigest()
    return (cache_dir or cache_root()) / "workspaces" / f"{root.resolve().name}-{digest}" / "index.sqlite"


class Database:
    """The database file and its connections; `reads.IndexReads` and `writes.IndexWrites` add what
    the index reads and writes."""

    def __init__(self, db_path: Path) -> None:
        make_dir(db_path.parent)
        self.path = db_path
        self.write_lock = FileLock(db_path.with_name("index.lock"), "writing this index")
        self.embed_lock = FileLock(db_path.with_name("embed.lock"),
                                   "computing the embeddings of this index")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        # Bumped when the database file is replaced (a recovery): every thread reconnects.
        self.epoch = 0
        self._file_id = file_id(db_path)
        try:
            self._migrate()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise self._error(exc) from None
            self.recover(exc)

    def _error(self, exc: sqlite3.DatabaseError) -> Exception:
        """A clear error for a database the cache directory cannot hold; others as they are."""
        return unusable(self.path, exc) if result_code(exc) in UNUSABLE_CODES else exc

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection: with WAL, readers never wait for the indexing writer."""
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.epoch != self.epoch:
            if conn is not None:  # to the file a recovery replaced
                self._discard(conn)
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                   check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            except BaseException:
                conn.close()
                raise
            self._local.conn, self._local.epoch = conn, self.epoch
            with self._guard:
                self._connections.append(conn)
        return conn

    def _discard(self, conn: sqlite3.Connection) -> None:
        with self._guard:
            if conn in self._connections:
                self._connections.remove(conn)
        conn.close()

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (*UPGRADABLE, SCHEMA_VERSION):
            # The index is derived data: rebuilding beats migrating it.
            log.info("index schema %s is not %s: rebuilding %s", version, SCHEMA_VERSION, self.path)
            with self.transaction():
                for (name,) in self.db.execute(
                        "SELECT name FROM sqlite_master WHERE type='table'").fetchall():
                    self.db.execute(f'DROP TABLE "{name}"')
        with self.transaction():
            # executescript() would commit on its own; statement by statement stays atomic.
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self.db.execute(statement)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if self.meta(GENERATION_KEY) is None:  # a new database: no process has read it
                self.set_meta(GENERATION_KEY, secrets.token_hex(8))
        self._file_id = file_id(self.path)

    # ---- sharing the file -------------------------------------------------------------

    def follow_replacement(self, timeout: float | None = None) -> bool:
        """Reconnect if the database file is no longer the one this store opened (another
        process moved a damaged one aside, or the cache was deleted); True if so.

        A missing file is created only under the write lock: a recovery holds it from
        moving the damaged file aside until the new one exists, and must not delete the
        journal of a database someone created in between. IndexBusy after `timeout`."""
        now = file_id(self.path)
        if now == self._file_id:
            return False
        if now is None:
            with self.write_lock.held(timeout=timeout):
                self._reopen()
        else:
            self._reopen()
        log.info("the index database %s was replaced: reopened it", self.path)
        return True

    def _reopen(self) -> None:
        make_dir(self.path.parent)
        self.epoch += 1  # other threads reconnect at their next query
        try:
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def recover(self, damage: sqlite3.DatabaseError, timeout: float | None = None) -> None:
        """Move a damaged database aside and start an empty one: the index is derived data,
        so the next update rebuilds it. Holds the write lock, so no other process's writer
        is inside the file meanwhile; raises IndexBusy after `timeout` seconds of waiting."""
        with self.write_lock.held(timeout=timeout):
            if file_id(self.path) != self._file_id:
                self._reopen()  # another process moved it aside already
                return
            conn = getattr(self._local, "conn", None)
            if conn is not None:
                # Other threads' connections are left to reconnect (a new epoch): closing
                # them under a running query would fail that query. SQLite leaves a moved
                # file's journal alone when they close.
                self._discard(conn)
                self._local.conn = None
            aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            try:
                os.replace(self.path, aside)
                # The old write-ahead log must not be replayed into the new database.
                for suffix in ("-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError as exc:
                raise unusable(self.path, exc) from None
            log.warning("the index database %s is damaged (%s): moved it to %s; the index is "
                        "rebuilt from the workspace", self.path, damage, aside.name)
            _drop_older_damaged(aside)
            self._reopen()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One consistent view for several reads: another process's commit lands before or
        after all of them, never between."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")

    def generation(self) -> str:
        """The token of the last index commit (any process's)."""
        return self.meta(GENERATION_KEY) or ""

    def advance_generation(self, expected: str) -> str:
        """Inside a write transaction: check that nobody committed since this process read
        `expected`, then mark this commit with a new token and return it."""
        current = self.generation()
        if current != expected:
            raise StaleIndex(f"another process changed the index at {self.path}")
        token = secrets.token_hex(8)
        self.set_meta(GENERATION_KEY, token)
        return token

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            self.db.execute("COMMIT")

    def close(self) -> None:
        with self._guard:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    def _survive(self, damage: sqlite3.DatabaseError) -> bool:
        """Recover from damage met outside an index update (the vectors, read by a search),
        without waiting for another process's writer; True if the file was replaced. The
        index notices the new file at its next refresh and rebuilds."""
        if not is_damage(damage):
            return False
        try:
            self.recover(damage, timeout=0)
        except IndexBusy:
            return False
        return True

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None


def _drop_older_damaged(kept: Path) -> None:
    """Keep one damaged copy (the newest, for a post-mortem): a database damaged again and
    again must not fill the cache directory with copies of a derived index."""
    for older in kept.parent.glob(f"{kept.name.split('.damaged-')[0]}.damaged-*"):
        if older != kept:
            older.unlink(missing_ok=True)
