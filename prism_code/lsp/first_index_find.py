"""Find answered while a folder's first index is built (issue #29).

With no index to load and no saved copy to answer from, the first index parses every
file before it links, stores and publishes anything. The worker hands each parsed file to
this sink (RepoIndex.update's `sink`), which publishes them in growing batches
(tasks/partial_find.py) and builds each batch's lexical corpus on the worker thread,
while the parse itself runs in worker processes. Requests rank over the last batch built
and never wait for the next one; once the index has published and find's own corpus is
built, the worker closes this and the full ranking answers.
"""

from __future__ import annotations

import logging
import threading

from prism_code.index import IndexSnapshot
from prism_code.parse.model import ParsedFile
from prism_code.tasks.corpus_files import answerable
from prism_code.tasks.find_function import FoundFunction
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.find_strategies import run_find
from prism_code.tasks.partial_find import CorpusSearch, PartialIndex, next_search

log = logging.getLogger(__name__)


class FirstIndexFind:
    """The files a first index has parsed so far, searchable lexically."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._partial = PartialIndex()
        self._lock = threading.Lock()  # a search's caches are not thread-safe
        self._current: tuple[CorpusSearch, IndexSnapshot] | None = None
        self._closed = False

    # ---- RepoIndex.update's sink (worker thread) ------------------------------------------

    def expect(self, files: int) -> None:
        self._partial.expect(files)

    def add(self, path: str, text: str, parsed: ParsedFile) -> None:
        self._partial.add(path, text, parsed)
        if self._partial.due():
            self._build()

    def parsed_all(self) -> None:
        self._partial.parsed_all()
        if self._partial.due():
            self._build()

    def _build(self) -> None:
        previous = self._current[0] if self._current is not None else None
        search = next_search(self._partial, previous)
        snapshot = self._partial.published
        with self._lock:
            if not self._closed:
                self._current = (search, snapshot)
        log.info("%s: %d of %d files searchable while the first index is built",
                 self._name, len(snapshot.lines), self._partial.total)

    # ---- requests ------------------------------------------------------------------------

    @property
    def searchable(self) -> tuple[int, int]:
        """(files searchable now, files the first index parses)."""
        current = self._current
        return (len(current[1].lines) if current is not None else 0), self._partial.total

    def search(self, request: FindRequest) -> list[tuple[FoundFunction, str]] | None:
        """The functions `request` finds among the files parsed so far, each with the text
        of its last line; None before the first batch, once closed, or for a request the
        lexical ranking alone cannot answer."""
        if not answerable(request):
            return None
        with self._lock:
            if self._current is None:
                return None
            search, snapshot = self._current
            results = run_find(request, search).results
        return [(r, _line(snapshot, r.path, r.end_line)) for r in results]

    def close(self) -> None:
        """The index has published: its own corpus answers from now on."""
        with self._lock:
            self._closed = True
            self._current = None


def _line(snapshot: IndexSnapshot, path: str, line: int) -> str:
    lines = snapshot.lines.get(path, [])
    return lines[line - 1] if 0 < line <= len(lines) else ""
