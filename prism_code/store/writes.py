"""What the index writes to its database; each call inside `transaction()` (but `put_embeddings`,
which is its own)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

import numpy as np

from prism_code.fragments import Fragment
from prism_code.parse.model import ParsedFile
from prism_code.store.database import Database
from prism_code.store.packing import packed
from prism_code.store.parsed_json import parsed_to_json
from prism_code.workspace import FileState


class IndexWrites(Database):
    def put_file(self, path: str, state: FileState, text: str, pf: ParsedFile,
                 definition_hashes: dict[str, str]) -> None:
        self.db.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?)",
                        (path, state.size, state.mtime_ns, state.content_hash, pf.language,
                         pf.line_count, text, packed(parsed_to_json(pf))))
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
                            [(k, packed(json.dumps(v, separators=(",", ":")))) for k, v in related.items()])

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
