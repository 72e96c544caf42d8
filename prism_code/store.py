"""SQLite persistence of one workspace's index (WAL, schema-versioned, crash-safe).

Every index update is one transaction, so a kill at any moment leaves either the
previous index or the new one. An update may publish files and fragments first and
relations later: the fragments whose relations are still owed are marked dirty in the
same transaction, so a kill between the two leaves work to finish, never a wrong index.
Embeddings are keyed by the hash of the text they embed and the model, so unchanged
functions never pay for them twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np
import platformdirs

from prism_code.fragments import Fragment
from prism_code.parse.model import CallSite, Definition, Import, ParsedFile
from prism_code.workspace import FileState

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


def default_cache_dir() -> Path:
    override = os.environ.get("PRISM_CODE_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("prism-code"))


def workspace_db_path(root: Path, cache_dir: Path | None = None) -> Path:
    """One database per workspace, outside the repository, named after its real path."""
    real = str(root.resolve())
    digest = hashlib.blake2b(real.encode(), digest_size=8).hexdigest()
    return (cache_dir or default_cache_dir()) / "workspaces" / f"{root.resolve().name}-{digest}" / "index.sqlite"


def parsed_to_json(pf: ParsedFile) -> str:
    return json.dumps({
        "language": pf.language, "line_count": pf.line_count, "has_errors": pf.has_errors,
        "definitions": [asdict(d) for d in pf.definitions],
        "calls": [[c.name, c.receiver, c.line, c.caller] for c in pf.calls],
        "imports": [[i.module, i.line, [list(n) for n in i.names], i.alias, i.level]
                    for i in pf.imports],
        "blocks": pf.blocks,
    }, separators=(",", ":"))


def parsed_from_json(path: str, data: str) -> ParsedFile:
    raw = json.loads(data)
    return ParsedFile(
        path=path, language=raw["language"], line_count=raw["line_count"],
        has_errors=raw["has_errors"],
        definitions=[Definition(**d) for d in raw["definitions"]],
        calls=[CallSite(*c) for c in raw["calls"]],
        imports=[Import(m, line, tuple(tuple(n) for n in names), alias, level)
                 for m, line, names, alias, level in raw["imports"]],
        blocks=[tuple(b) for b in raw["blocks"]],
    )


class Store:
    def __init__(self, db_path: Path) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.path = db_path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._migrate()

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection: with WAL, readers never wait for the indexing writer."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._guard:
                self._connections.append(conn)
        return conn

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
        changed, recompute = set(), set()
        for key, was_changed in self.db.execute("SELECT key, changed FROM dirty_fragments"):
            (changed if was_changed else recompute).add(key)
        nodes = {node for (node,) in self.db.execute("SELECT node FROM dirty_nodes")}
        return changed, recompute, nodes

    def load_edges(self) -> list[tuple[str, str, str, float]]:
        return self.db.execute("SELECT owner, u, v, weight FROM edges").fetchall()

    def embeddings(self, hashes: Iterable[str], model: str) -> dict[str, np.ndarray]:
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
        with self.transaction():
            self.db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?)",
                                [(h, model, v.astype(np.float32).tobytes()) for h, v in vectors.items()])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None
