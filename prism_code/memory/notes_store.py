"""Function notes and module summaries on disk, next to the index, in tables of their own.

They live in the workspace's index database (same file, own connection, own tables)
so they go wherever the index goes, but the index schema and its version are left
alone. Every note is one committed row, written as soon as it exists: a kill loses
at most the note being written. A note is valid for exactly one text of its function,
recorded as the function's content hash.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from prism_code import workspace
from prism_code.memory.code_schemas import FunctionNote

if TYPE_CHECKING:
    from prism_code.fragments import Fragment
    from prism_code.index import RepoIndex

_TABLES = (
    """CREATE TABLE IF NOT EXISTS function_notes (
      path TEXT NOT NULL, qualname TEXT NOT NULL, hash TEXT NOT NULL,
      purpose TEXT NOT NULL, input TEXT NOT NULL, output TEXT NOT NULL, procedure TEXT NOT NULL,
      model TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (path, qualname))""",
    "CREATE INDEX IF NOT EXISTS function_notes_hash ON function_notes(hash)",
    """CREATE TABLE IF NOT EXISTS module_summaries (
      path TEXT PRIMARY KEY, hash TEXT NOT NULL, summary TEXT NOT NULL, model TEXT NOT NULL,
      created REAL NOT NULL)""",
)


@dataclass(frozen=True)
class StoredNote:
    path: str
    qualname: str
    hash: str
    note: FunctionNote
    model: str


@dataclass(frozen=True)
class StoredSummary:
    path: str
    hash: str
    summary: dict[str, Any]
    model: str


class NotesStore:
    def __init__(self, db_path: Path) -> None:
        self.path = db_path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(db_path, timeout=30, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        for statement in _TABLES:
            self._db.execute(statement)

    @classmethod
    def for_index(cls, index: RepoIndex) -> NotesStore:
        """The notes of a RepoIndex's workspace."""
        return cls(index.store.path)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- function notes ---------------------------------------------------------------

    def get(self, path: str, qualname: str) -> StoredNote | None:
        with self._lock:
            row = self._db.execute(
                "SELECT path, qualname, hash, purpose, input, output, procedure, model "
                "FROM function_notes WHERE path = ? AND qualname = ?", (path, qualname)).fetchone()
        return None if row is None else _note(row)

    def by_hash(self, content_hash: str) -> StoredNote | None:
        """Any note written for this exact function text (a moved or copied function)."""
        with self._lock:
            row = self._db.execute(
                "SELECT path, qualname, hash, purpose, input, output, procedure, model "
                "FROM function_notes WHERE hash = ? LIMIT 1", (content_hash,)).fetchone()
        return None if row is None else _note(row)

    def notes_in(self, path: str) -> dict[str, FunctionNote]:
        """qualname -> note for every note of one file (current or not)."""
        with self._lock:
            rows = self._db.execute("SELECT qualname, purpose, input, output, procedure FROM function_notes "
                                    "WHERE path = ?", (path,)).fetchall()
        return {q: FunctionNote(p, i, o, pr) for q, p, i, o, pr in rows}

    def all_notes(self) -> dict[tuple[str, str], StoredNote]:
        with self._lock:
            rows = self._db.execute("SELECT path, qualname, hash, purpose, input, output, procedure, model "
                                    "FROM function_notes").fetchall()
        return {(row[0], row[1]): _note(row) for row in rows}

    def hashes(self) -> dict[tuple[str, str], str]:
        with self._lock:
            return {(p, q): h for p, q, h in self._db.execute("SELECT path, qualname, hash FROM function_notes")}

    def put(self, path: str, qualname: str, content_hash: str, note: FunctionNote, model: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO function_notes VALUES (?,?,?,?,?,?,?,?,?)",
                (path, qualname, content_hash, note.purpose, note.input, note.output, note.procedure,
                 model, time.time()))

    def count(self) -> int:
        with self._lock:
            count: int = self._db.execute("SELECT COUNT(*) FROM function_notes").fetchone()[0]
            return count

    def delete_missing(self, live: set[tuple[str, str]]) -> int:
        """Drop notes of functions that no longer exist; returns how many."""
        gone = [key for key in self.hashes() if key not in live]
        with self._lock:
            self._db.executemany("DELETE FROM function_notes WHERE path = ? AND qualname = ?", gone)
        return len(gone)

    # ---- module summaries -------------------------------------------------------------

    def summary(self, path: str) -> StoredSummary | None:
        with self._lock:
            row = self._db.execute("SELECT path, hash, summary, model FROM module_summaries WHERE path = ?",
                                   (path,)).fetchone()
        if row is None:
            return None
        return StoredSummary(row[0], row[1], json.loads(row[2]), row[3])

    def put_summary(self, path: str, content_hash: str, summary: dict[str, Any], model: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO module_summaries VALUES (?,?,?,?,?)",
                             (path, content_hash, json.dumps(summary, ensure_ascii=False), model, time.time()))


def _note(row: tuple[Any, ...]) -> StoredNote:
    path, qualname, content_hash, purpose, input_, output, procedure, model = row
    return StoredNote(path, qualname, content_hash, FunctionNote(purpose, input_, output, procedure), model)


def function_hash(index: RepoIndex, fragment: Fragment) -> str:
    """The content hash of the function's lines (what the index stores as its definition hash)."""
    return workspace.content_hash(index.text(fragment).encode("utf-8"))


def llm_note_texts(index: RepoIndex, store: NotesStore | None = None) -> dict[str, str]:
    """Fragment key -> note text, for functions whose model note matches their current text.

    This is what function cards take as `note` (embeddings.card_text): deterministic notes
    are left out, since they only repeat the signature and docstring the card already has.
    """
    own = store is None
    store = store or NotesStore.for_index(index)
    try:
        stored = store.all_notes()
    finally:
        if own:
            store.close()
    out = {}
    for fragment in index.functions():
        entry = stored.get((fragment.path, fragment.qualname))
        if entry is not None and entry.hash == function_hash(index, fragment):
            out[fragment.key] = entry.note.text()
    return out


def count_notes(index: RepoIndex, store: NotesStore) -> tuple[int, int]:
    """(functions whose model note matches their current text, all functions)."""
    stored = store.hashes()
    functions = index.functions()
    done = sum(1 for f in functions if stored.get((f.path, f.qualname)) == function_hash(index, f))
    return done, len(functions)
