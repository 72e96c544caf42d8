"""Lexical find over the files a first index has parsed so far (issue #29).

A first index of a large repository parses every file, links the graph, stores it all and
only then publishes: about a minute on a 750k-line repository, during which find had
nothing to rank. Parsed files are searchable long before that: each one's functions,
types and text are what find's corpus is made of, and none of it needs the graph. So the
files are taken as they are parsed (open files and their folders first: see
parse_pool.open_first) and published in growing batches, each batch giving a FunctionCorpus
ranked exactly as the full index's lexical find ranks the same files.
"""

from __future__ import annotations

import threading

from prism_code.fragments import FUNCTION, Fragment, is_function
from prism_code.index import IndexSnapshot
from prism_code.parse.model import ParsedFile
from prism_code.tasks.find_function import FunctionCorpus, FunctionSearch

# The first batch is published after this many files: enough for the open files' folders
# to answer, small enough that its corpus builds in well under a second.
FIRST_BATCH_FILES = 64
# Each later batch waits until the files parsed have grown by this factor, so every
# rebuild together costs about one more build of the final corpus (a geometric series),
# however many files the repository has.
BATCH_GROWTH = 2.0


class PartialIndex:
    """Parsed files collected as a first index parses them (any thread), published in
    batches as IndexSnapshots that FunctionCorpus reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[tuple[str, str, ParsedFile]] = []
        self._finished = False
        self.total = 0  # files the index will parse, once known
        self.published = IndexSnapshot(0, {}, {}, {}, {})

    def expect(self, files: int) -> None:
        self.total = files

    def add(self, path: str, text: str, parsed: ParsedFile) -> None:
        with self._lock:
            self._pending.append((path, text, parsed))

    def parsed_all(self) -> None:
        """Every file is parsed: what is pending is due however few it is."""
        with self._lock:
            self._finished = True

    @property
    def files(self) -> int:
        """Files searchable now (published)."""
        return len(self.published.lines)

    def due(self) -> bool:
        with self._lock:
            pending = len(self._pending)
            finished = self._finished
        if not pending:
            return False
        if finished:
            return True
        have = self.files
        return have + pending >= (FIRST_BATCH_FILES if have == 0 else have * BATCH_GROWTH)

    def publish(self) -> IndexSnapshot:
        """Fold the pending files into a new snapshot (the old one is left as it was)."""
        with self._lock:
            pending, self._pending = self._pending, []
        old = self.published
        lines, parsed, fragments = dict(old.lines), dict(old.parsed), dict(old.fragments)
        for path, text, pf in pending:
            lines[path] = text.split("\n")
            parsed[path] = pf
            for f in function_fragments(pf):
                fragments[f.key] = f
        self.published = IndexSnapshot(old.generation + 1, lines, fragments, {}, parsed)
        return self.published


def function_fragments(pf: ParsedFile) -> list[Fragment]:
    """A file's function fragments with the keys and lines the index gives them (the graph
    nodes they own matter only to relations, which find's default ranking does not read)."""
    return [Fragment(pf.path, FUNCTION, d.start_line, d.end_line, qualname=d.qualname)
            for d in pf.definitions if is_function(d)]


class CorpusSearch(FunctionSearch):
    """Retrieval find, lexical only, over one corpus built elsewhere."""

    def __init__(self, corpus: FunctionCorpus) -> None:
        self.embedder = None
        self._notes = {}
        self._fixed = corpus
        self._vectors = {}
        self._pending_notes = {}
        self._missing_seen = {}

    @property
    def corpus(self) -> FunctionCorpus:
        return self._fixed


def next_search(partial: PartialIndex, previous: CorpusSearch | None) -> CorpusSearch:
    """A search over what `partial` has parsed now, reusing the previous corpus's rows of
    files that have not changed (every file already published)."""
    return CorpusSearch(FunctionCorpus(partial.publish(), previous.corpus if previous is not None else None))
