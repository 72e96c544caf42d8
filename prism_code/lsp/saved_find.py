"""Find answered from the saved lexical index while a folder's index loads (issue #29).

Reopening a large folder, the worker reads the whole index from the database and builds
find's corpus before the first search can rank (about 12 s on sympy's 750k lines). The
command line's saved copy (tasks/corpus_files.py) answers meanwhile: the same proof as
`prism-code find` (saved for the store's current token, no file changed on disk since, no
model notes), then lexical ranking over the memory-mapped matrices. Each answer checks the
token again inside one read transaction, so a commit (the worker's update finding a change,
or another process's) ends these answers; the worker closes them once its own corpus is
built, and from then on the full ranking (embeddings too, once complete) answers.

Lexical only: the dense half would read every vector from the store, which is the slow
part this is here to skip. Unsaved editor buffers are not seen until the index has loaded.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from prism_code.config import IndexConfig
from prism_code.store.database import workspace_db_path
from prism_code.store.index_store import Store
from prism_code.tasks.corpus_files import StoredCorpus, StoredSearch, answerable, current_corpus
from prism_code.tasks.find_function import FoundFunction
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.find_strategies import run_find

log = logging.getLogger(__name__)


class SavedFind:
    """A folder's saved lexical index, opened on first use and answering until closed."""

    def __init__(self, root: Path, config: IndexConfig, cache_dir: Path | None) -> None:
        self.root = root
        self._config = config
        self._db_path = workspace_db_path(root, cache_dir)
        self._lock = threading.Lock()  # StoredSearch's row cache is not thread-safe
        self._search: StoredSearch | None = None
        self._corpus: StoredCorpus | None = None
        self._tried = False  # opened (or found unusable) once: never again

    def open(self) -> bool:
        """Prove the saved copy current and open it (once); True if it answers."""
        with self._lock:
            return self._open()

    def _open(self) -> bool:
        if self._tried:
            return self._search is not None
        self._tried = True
        if not self._db_path.is_file():
            return False
        store = Store(self._db_path)
        try:
            with store.reading():
                corpus = current_corpus(store, self.root, self._config)
        except (sqlite3.Error, OSError) as exc:
            log.info("%s: no saved lexical index to answer from while loading: %s", self.root.name, exc)
            corpus = None
        if corpus is None:
            store.close()
            return False
        self._search, self._corpus = StoredSearch(store, corpus, None), corpus
        log.info("%s: finds are answered from the saved lexical index of index state %s until "
                 "the index has loaded", self.root.name, corpus.token)
        return True

    def search(self, request: FindRequest) -> list[tuple[FoundFunction, str]] | None:
        """The functions `request` finds with the text of each one's last line, or None
        when the saved copy cannot answer (none, stale, closed, or not plain retrieval)."""
        if not answerable(request):
            return None
        with self._lock:
            if not self._open():
                return None
            search, corpus = self._search, self._corpus
            assert search is not None and corpus is not None
            try:
                with search.store.reading():
                    if search.store.generation() != corpus.token:
                        log.info("%s: the index changed: no more answers from the saved copy", self.root.name)
                        self._close()
                        return None
                    results = run_find(request, search).results
                    return [(r, corpus.line(r.path, r.end_line)) for r in results]
            except (sqlite3.Error, OSError) as exc:
                log.warning("%s: the saved lexical index stopped answering: %s", self.root.name, exc)
                self._close()
                return None

    def close(self) -> None:
        """No more answers from the saved copy (the index has loaded): its store and maps go."""
        with self._lock:
            self._tried = True
            self._close()

    def _close(self) -> None:
        if self._search is not None:
            self._search.store.close()
            self._search = self._corpus = None
