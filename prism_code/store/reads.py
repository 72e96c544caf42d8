"""What the index reads from its database: files, fragments, relations, owed work and vectors."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator

import numpy as np

from prism_code.fragments import Fragment
from prism_code.parse.model import Definition, ParsedFile
from prism_code.related_sets import RelatedSets
from prism_code.store.database import Database
from prism_code.store.packing import unpacked
from prism_code.store.parsed_json import parsed_from_json
from prism_code.workspace import FileState

# Hashes asked about per query: well under SQLite's limit on bound parameters.
_HASHES_PER_QUERY = 500


class IndexReads(Database):
    def file_states(self) -> dict[str, FileState]:
        return {p: FileState(size=s, mtime_ns=m, content_hash=h) for p, s, m, h in
                self.db.execute("SELECT path, size, mtime_ns, hash FROM files")}

    def load_files(self) -> Iterator[tuple[str, str, ParsedFile]]:
        for path, text, parsed in self.db.execute("SELECT path, text, parsed FROM files"):
            yield path, text, parsed_from_json(path, unpacked(parsed))

    def load_fragments(self) -> list[Fragment]:
        # A graph node is owned by many windows and a function: one string for all of them.
        names: dict[str, str] = {}
        return [Fragment(path, kind, start, end, qualname, position,
                         tuple((names.setdefault(n, n), c) for n, c in json.loads(nodes)))
                for path, kind, start, end, qualname, position, nodes in self.db.execute(
                    "SELECT path, kind, start_line, end_line, qualname, position, nodes FROM fragments")]

    def load_relations(self) -> RelatedSets:
        # Each key is decoded once per set that lists it (24 sets on average), and weights
        # (6 decimals) repeat: one shared object per key and per weight instead (on sympy
        # 2.6 million strings and floats fewer, ~230 MB).
        keys: dict[str, str] = {}
        weights: dict[float, float] = {}

        def row(key: str, related: bytes | str) -> tuple[str, tuple[str, ...], tuple[float, ...]]:
            pairs = json.loads(unpacked(related))
            return (keys.setdefault(key, key), tuple(keys.setdefault(other, other) for other, _ in pairs),
                    tuple(weights.setdefault(weight, weight) for _, weight in pairs))

        return RelatedSets.of_members(row(key, related) for key, related in
                                      self.db.execute("SELECT key, related FROM relations"))

    def dirty(self) -> tuple[set[str], set[str], set[str]]:
        """The relation work an update still owes (see RepoIndex.finish_relations):
        fragments that changed or vanished, fragments to recompute, graph nodes that changed."""
        changed: set[str] = set()
        recompute: set[str] = set()
        for key, was_changed in self.db.execute("SELECT key, changed FROM dirty_fragments"):
            (changed if was_changed else recompute).add(key)
        nodes = {node for (node,) in self.db.execute("SELECT node FROM dirty_nodes")}
        return changed, recompute, nodes

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
            for start in range(0, len(wanted), _HASHES_PER_QUERY):
                chunk = wanted[start:start + _HASHES_PER_QUERY]
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
        return row[0].split("\n"), parsed_from_json(path, unpacked(row[1])).definitions

    def _embeddings(self, hashes: Iterable[str], model: str) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), _HASHES_PER_QUERY):
            chunk = wanted[start:start + _HASHES_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            for h, blob in self.db.execute(
                    f"SELECT hash, vector FROM embeddings WHERE model = ? AND hash IN ({marks})",
                    [model, *chunk]):
                found[h] = np.frombuffer(blob, dtype=np.float32)
        return found
