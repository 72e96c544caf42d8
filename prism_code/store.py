"""SQLite persistence of one workspace's index (WAL, schema-versioned, crash-safe).

Every index update is one transaction, so a kill at any moment leaves either the
previous index or the new one. An update may publish files and fragments first and
relations later: the fragments whose relations are still owed are marked dirty in the
same transaction, so a kill between the two leaves work to finish, never a wrong index.
Embeddings are keyed by the hash of the text they embed and the model, so unchanged
functions never pay for them twice.

Several processes share one database (the language server and the command line, say).
Writers take an advisory lock on a file beside it, one at a time, and each commit of the
index changes a generation token in `meta`: a process whose token is not the stored one
reloads before it diffs, writes or answers (RepoIndex.refresh). Embedding takes a lock of
its own, so a second `index` waits for the first's vectors instead of computing them again.

The index is derived data: a damaged database is moved aside and rebuilt, and a cache
directory that cannot hold it is a CacheDirError saying which path and what to do.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

import numpy as np

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.config import cache_root
from prism_code.fragments import Fragment
from prism_code.parse.model import Binding, CallSite, Definition, Import, ParsedFile
from prism_code.workspace import FileState

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # not POSIX: writers go unserialised, the generation check still holds
    fcntl = None

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
# Versions that become the current one by running the schema (it only adds tables).
_UPGRADABLE = (0, 1)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
  hash TEXT NOT NULL, language TEXT NOT NULL, line_count INTEGER NOT NULL,
  text TEXT NOT NULL, parsed TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS definitions (
  path TEXT NOT NULL, qualname TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
  start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, signature TEXT NOT NULL,
  doc TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (path, qualname));
CREATE INDEX IF NOT EXISTS definitions_name ON definitions(name);
CREATE TABLE IF NOT EXISTS edges (
  owner TEXT NOT NULL, u TEXT NOT NULL, v TEXT NOT NULL, weight REAL NOT NULL);
CREATE INDEX IF NOT EXISTS edges_owner ON edges(owner);
CREATE TABLE IF NOT EXISTS fragments (
  key TEXT PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL, start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, qualname TEXT NOT NULL, position INTEGER NOT NULL,
  nodes TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS fragments_path ON fragments(path);
CREATE TABLE IF NOT EXISTS relations (
  key TEXT PRIMARY KEY, related TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dirty_fragments (key TEXT PRIMARY KEY, changed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dirty_nodes (node TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS embeddings (
  hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (hash, model));
"""


# meta key of the token every index commit replaces (see RepoIndex.refresh).
GENERATION_KEY = "generation"

# SQLite primary result codes (the low byte of an extended code).
_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT = 3, 8, 10, 11
_SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 13, 14, 26
_DAMAGED = {_SQLITE_CORRUPT, _SQLITE_NOTADB}
_UNUSABLE = {_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN}

# A lock wait longer than this is logged, so a command that waits says what for.
LOCK_NOTICE_S = 1.0
_LOCK_POLL_MAX_S = 0.25

_ADVICE = ("make it writable, or choose another cache directory with --cache-dir "
           "or PRISM_CODE_CACHE_DIR")


class CacheDirError(ValueError):
    """The cache directory cannot hold the index. A ValueError, which the command line
    reports as `prism-code: error: ...` without a traceback."""


class IndexBusy(RuntimeError):
    """Another process held the index's lock longer than the caller would wait."""


class StaleIndex(RuntimeError):
    """Another process committed to the index since this one read it (without the lock:
    a file system without flock, say). The writer reloads and tries again."""


def _result_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_damage(exc: BaseException) -> bool:
    """Whether an error says the database file is damaged (not merely busy or unwritable)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = _result_code(exc)
    if code is not None:
        return code in _DAMAGED
    return "malformed" in str(exc) or "not a database" in str(exc)


def _unusable(path: Path, exc: BaseException) -> CacheDirError:
    return CacheDirError(f"cannot use the index database {path} ({exc}): {_ADVICE}")


def _file_id(path: Path) -> tuple[int, int] | None:
    """The identity of the file at `path` now: it changes when the file is replaced."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _make_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileExistsError) or exc.errno == errno.ENOTDIR:
            reason = "a file is in the way of the directory"
        raise CacheDirError(f"cannot create the index directory {path} ({reason}): {_ADVICE}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise CacheDirError(f"the index directory {path} is not writable: {_ADVICE}")


class FileLock:
    """An advisory lock (flock) on a file beside the database, for one kind of writer.

    flock locks belong to an open file, so two processes, or two Stores in one process,
    exclude each other, and the kernel drops a lock when its holder dies: a killed indexer
    never leaves the index locked. Re-entrant for the thread holding it, since an update
    holds it across its relations phase. Waiting polls, so a caller can cancel the wait.
    """

    def __init__(self, path: Path, activity: str) -> None:
        self.path = path
        self.activity = activity  # what the holder is doing, for the waiting message
        self._mutex = threading.Lock()  # threads of this process, before the file lock
        self._owner: int | None = None
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def held(self, cancelled: CancelCheck | None = None,
             timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the block. Raises Cancelled when `cancelled()` turns true while
        waiting, IndexBusy after `timeout` seconds (None: wait as long as it takes)."""
        if self._owner == threading.get_ident():
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._acquire(cancelled, timeout)
        try:
            yield
        finally:
            self._release()

    def _acquire(self, cancelled: CancelCheck | None, timeout: float | None) -> None:
        started = time.monotonic()
        pause, told, have_mutex = 0.01, False, False
        try:
            while True:
                have_mutex = have_mutex or self._mutex.acquire(blocking=False)
                if have_mutex and self._try_lock():
                    self._owner, self._depth = threading.get_ident(), 1
                    return
                if cancelled is not None and cancelled():
                    raise Cancelled(f"stopped waiting for {self._holder()} {self.activity}")
                waited = time.monotonic() - started
                if timeout is not None and waited >= timeout:
                    raise IndexBusy(f"{self._holder()} has been {self.activity} for over "
                                    f"{timeout:.0f} s (lock {self.path})")
                if not told and waited >= LOCK_NOTICE_S:
                    log.warning("waiting for %s, which is %s (lock %s)", self._holder(),
                                self.activity, self.path)
                    told = True
                time.sleep(pause)
                pause = min(pause * 2, _LOCK_POLL_MAX_S)
        except BaseException:
            if have_mutex:
                self._mutex.release()
            raise

    def _try_lock(self) -> bool:
        if fcntl is None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _unusable(self.path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError:
            # No flock here (some network file systems): the generation check in each
            # write transaction still keeps writers from publishing stale work.
            log.info("%s: no file locking on this file system; writers are not serialised",
                     self.path)
        try:  # who holds it, for the message of whoever waits
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass
        self._fd = fd
        return True

    def _release(self) -> None:
        fd, self._fd, self._owner, self._depth = self._fd, None, None, 0
        if fd is not None:
            os.close(fd)  # closing the last descriptor of the open file drops the flock
        self._mutex.release()

    def _holder(self) -> str:
        if self._mutex.locked() and self._owner is not None:
            return "another thread of this process"
        try:
            pid = self.path.read_text().strip()
        except OSError:
            pid = ""
        return f"process {pid}" if pid.isdigit() else "another process"


def workspace_db_path(root: Path, cache_dir: Path | None = None) -> Path:
    """One database per workspace, outside the repository, named after its real path."""
    real = str(root.resolve())
    digest = hashlib.blake2b(real.encode(), digest_size=8).hexdigest()
    return (cache_dir or cache_root()) / "workspaces" / f"{root.resolve().name}-{digest}" / "index.sqlite"


def parsed_to_json(pf: ParsedFile) -> str:
    return json.dumps({
        "language": pf.language, "line_count": pf.line_count, "has_errors": pf.has_errors,
        "definitions": [asdict(d) for d in pf.definitions],
        "calls": [[c.name, c.receiver, c.line, c.caller] for c in pf.calls],
        "imports": [[i.module, i.line, [list(n) for n in i.names], i.alias, i.level]
                    for i in pf.imports],
        "blocks": pf.blocks,
        "bindings": [[b.scope, b.name, b.line, b.kind, b.evidence] for b in pf.bindings],
    }, separators=(",", ":"))


def parsed_from_json(path: str, data: str) -> ParsedFile:
    raw = json.loads(data)
    return ParsedFile(
        path=path, language=raw["language"], line_count=raw["line_count"],
        has_errors=raw["has_errors"],
        definitions=[Definition(**{**d, "bases": tuple(d.get("bases", ())),
                                   "decorators": tuple(d.get("decorators", ()))}) for d in raw["definitions"]],
        calls=[CallSite(*c) for c in raw["calls"]],
        imports=[Import(m, line, tuple(tuple(n) for n in names), alias, level)
                 for m, line, names, alias, level in raw["imports"]],
        blocks=[tuple(b) for b in raw["blocks"]],
        bindings=[Binding(*b) for b in raw.get("bindings", ())],
    )


class Store:
    def __init__(self, db_path: Path) -> None:
        _make_dir(db_path.parent)
        self.path = db_path
        self.write_lock = FileLock(db_path.with_name("index.lock"), "writing this index")
        self.embed_lock = FileLock(db_path.with_name("embed.lock"),
                                   "computing the embeddings of this index")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        # Bumped when the database file is replaced (a recovery): every thread reconnects.
        self.epoch = 0
        self._file_id = _file_id(db_path)
        try:
            self._migrate()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise self._error(exc) from None
            self.recover(exc)

    def _error(self, exc: sqlite3.DatabaseError) -> Exception:
        """A clear error for a database the cache directory cannot hold; others as they are."""
        return _unusable(self.path, exc) if _result_code(exc) in _UNUSABLE else exc

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
        if version not in (*_UPGRADABLE, SCHEMA_VERSION):
            # The index is derived data: rebuilding beats migrating it.
            log.info("index schema %s is not %s: rebuilding %s", version, SCHEMA_VERSION, self.path)
            with self.transaction():
                for (name,) in self.db.execute(
                        "SELECT name FROM sqlite_master WHERE type='table'").fetchall():
                    self.db.execute(f'DROP TABLE "{name}"')
        with self.transaction():
            # executescript() would commit on its own; statement by statement stays atomic.
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.db.execute(statement)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if self.meta(GENERATION_KEY) is None:  # a new database: no process has read it
                self.set_meta(GENERATION_KEY, secrets.token_hex(8))
        self._file_id = _file_id(self.path)

    # ---- sharing the file -------------------------------------------------------------

    def follow_replacement(self, timeout: float | None = None) -> bool:
        """Reconnect if the database file is no longer the one this store opened (another
        process moved a damaged one aside, or the cache was deleted); True if so.

        A missing file is created only under the write lock: a recovery holds it from
        moving the damaged file aside until the new one exists, and must not delete the
        journal of a database someone created in between. IndexBusy after `timeout`."""
        now = _file_id(self.path)
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
        _make_dir(self.path.parent)
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
            if _file_id(self.path) != self._file_id:
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
                raise _unusable(self.path, exc) from None
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

    # ---- reads ------------------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        return {p: FileState(size=s, mtime_ns=m, content_hash=h) for p, s, m, h in
                self.db.execute("SELECT path, size, mtime_ns, hash FROM files")}

    def load_files(self) -> Iterator[tuple[str, str, ParsedFile]]:
        for path, text, parsed in self.db.execute("SELECT path, text, parsed FROM files"):
            yield path, text, parsed_from_json(path, parsed)

    def load_fragments(self) -> list[Fragment]:
        return [Fragment(path, kind, start, end, qualname, position,
                         tuple((n, c) for n, c in json.loads(nodes)))
                for path, kind, start, end, qualname, position, nodes in self.db.execute(
                    "SELECT path, kind, start_line, end_line, qualname, position, nodes FROM fragments")]

    def load_relations(self) -> dict[str, list[tuple[str, float]]]:
        return {key: [tuple(p) for p in json.loads(related)]
                for key, related in self.db.execute("SELECT key, related FROM relations")}

    def dirty(self) -> tuple[set[str], set[str], set[str]]:
        """The relation work an update still owes (see RepoIndex.finish_relations):
        fragments that changed or vanished, fragments to recompute, graph nodes that changed."""
        changed: set[str] = set()
        recompute: set[str] = set()
        for key, was_changed in self.db.execute("SELECT key, changed FROM dirty_fragments"):
            (changed if was_changed else recompute).add(key)
        nodes = {node for (node,) in self.db.execute("SELECT node FROM dirty_nodes")}
        return changed, recompute, nodes

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

    def embeddings(self, hashes: Iterable[str], model: str) -> dict[str, np.ndarray]:
        """The stored vectors of those hashes; none from a database found damaged (it is
        replaced: the vectors are computed again, search is lexical until then)."""
        try:
            return self._embeddings(hashes, model)
        except sqlite3.DatabaseError as exc:
            if not self._survive(exc):
                raise
            return {}

    def has_embeddings(self, hashes: Iterable[str], model: str) -> bool:
        """Whether every one of those hashes has a stored vector; counted in chunks (no vector
        read), stopping at the first chunk with one missing. False from a damaged database."""
        wanted = list(dict.fromkeys(hashes))
        try:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                marks = ",".join("?" * len(chunk))
                found = self.db.execute(
                    f"SELECT COUNT(*) FROM embeddings WHERE model = ? AND hash IN ({marks})",
                    [model, *chunk]).fetchone()[0]
                if found < len(chunk):
                    return False
            return True
        except sqlite3.DatabaseError as exc:
            if not self._survive(exc):
                raise
            return False

    def file_text_and_definitions(self, path: str) -> tuple[list[str], list[Definition]]:
        """One file's stored lines and definitions (empty if it is not indexed)."""
        row = self.db.execute("SELECT text, parsed FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return [], []
        return row[0].split("\n"), parsed_from_json(path, row[1]).definitions

    def _embeddings(self, hashes: Iterable[str], model: str) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for h, blob in self.db.execute(
                    f"SELECT hash, vector FROM embeddings WHERE model = ? AND hash IN ({marks})",
                    [model, *chunk]):
                found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    # ---- writes (call inside transaction()) ---------------------------------------

    def put_file(self, path: str, state: FileState, text: str, pf: ParsedFile,
                 definition_hashes: dict[str, str]) -> None:
        self.db.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?)",
                        (path, state.size, state.mtime_ns, state.content_hash, pf.language,
                         pf.line_count, text, parsed_to_json(pf)))
        self.db.execute("DELETE FROM definitions WHERE path = ?", (path,))
        self.db.executemany(
            "INSERT OR REPLACE INTO definitions VALUES (?,?,?,?,?,?,?,?,?)",
            [(path, d.qualname, d.name, d.kind, d.start_line, d.end_line, d.signature, d.doc,
              definition_hashes.get(d.qualname, "")) for d in pf.definitions])

    def touch_file(self, path: str, state: FileState) -> None:
        self.db.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?",
                        (state.size, state.mtime_ns, path))

    def delete_file(self, path: str) -> None:
        for table in ("files", "definitions", "fragments"):
            self.db.execute(f"DELETE FROM {table} WHERE path = ?", (path,))

    def replace_edges(self, owners: Iterable[str], edges: Iterable[tuple[str, str, str, float]]) -> None:
        self.db.executemany("DELETE FROM edges WHERE owner = ?", [(o,) for o in set(owners)])
        self.db.executemany("INSERT INTO edges VALUES (?,?,?,?)", edges)

    def put_fragments(self, fragments: Iterable[Fragment]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO fragments VALUES (?,?,?,?,?,?,?,?)",
            [(f.key, f.path, f.kind, f.start_line, f.end_line, f.qualname, f.position,
              json.dumps(f.nodes, separators=(",", ":"))) for f in fragments])

    def put_relations(self, related: dict[str, list[tuple[str, float]]], removed: Iterable[str]) -> None:
        self.db.executemany("DELETE FROM relations WHERE key = ?", [(k,) for k in removed])
        self.db.executemany("INSERT OR REPLACE INTO relations VALUES (?, ?)",
                            [(k, json.dumps(v, separators=(",", ":"))) for k, v in related.items()])

    def mark_dirty(self, changed: Iterable[str], recompute: Iterable[str],
                   nodes: Iterable[str]) -> None:
        # A changed fragment stays marked changed even if a later update only asks to recompute it.
        self.db.executemany("INSERT OR REPLACE INTO dirty_fragments VALUES (?, 1)",
                            [(k,) for k in changed])
        self.db.executemany("INSERT OR IGNORE INTO dirty_fragments VALUES (?, 0)",
                            [(k,) for k in recompute])
        self.db.executemany("INSERT OR IGNORE INTO dirty_nodes VALUES (?)", [(n,) for n in nodes])

    def clear_dirty(self) -> None:
        self.db.execute("DELETE FROM dirty_fragments")
        self.db.execute("DELETE FROM dirty_nodes")

    def put_embeddings(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        rows = [(h, model, v.astype(np.float32).tobytes()) for h, v in vectors.items()]
        try:
            with self.transaction():
                self.db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?)", rows)
        except sqlite3.DatabaseError as exc:
            if not self._survive(exc):
                raise
            with self.transaction():  # into the new database: vectors do not depend on it
                self.db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?)", rows)

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
