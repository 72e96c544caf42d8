"""A workspace folder's function notes: one store connection beside its index, shared by
every thread, opened again when the index database is replaced."""

from __future__ import annotations

import threading

from prism_code.index import RepoIndex
from prism_code.memory.notes_store import NotesStore


class WorkspaceNotes:
    def __init__(self) -> None:
        self._store: NotesStore | None = None
        self._epoch = 0  # the index store's epoch the notes store was opened at
        self._lock = threading.Lock()

    def store(self, index: RepoIndex) -> NotesStore:
        """The function notes kept with `index`."""
        with self._lock:
            # A new epoch: the database file was replaced (a damaged one moved aside).
            if (self._store is None or self._store.path != index.store.path
                    or self._epoch != index.store.epoch):
                if self._store is not None:
                    self._store.close()
                self._store = NotesStore.for_index(index)
                self._epoch = index.store.epoch
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
