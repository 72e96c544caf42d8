"""One workspace folder's index and the background worker keeping it current.

The worker thread owns every write: it opens the index, runs incremental updates and
then computes the missing embeddings. Requests never wait for it: they read the state
the index last published (RepoIndex swaps its dicts atomically) and search lexically
until the embeddings are complete. Edits arrive as buffer overlays and are folded in by
a debounced update; pausing cancels the running job, which leaves the index unchanged.
The worker waits a bounded time for another process's write lock (a `prism-code index`
on the shared index) and retries later. The queries are lsp/workspace_state.py's.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from prism_code.cancel import Cancelled
from prism_code.config import IndexConfig
from prism_code.embeddings import VectorCache
from prism_code.index import RepoIndex
from prism_code.lsp import heap
from prism_code.lsp.first_index_find import FirstIndexFind
from prism_code.lsp.lean_embedder import LeanEmbedder
from prism_code.lsp.saved_find import SavedFind
from prism_code.lsp.settings import Settings
from prism_code.lsp.workspace_notes import WorkspaceNotes
from prism_code.memory.notes_store import NotesStore, count_notes, llm_note_texts
from prism_code.parse import language_for_path
from prism_code.retrieval.dense import Embedder, ModelUnavailable
from prism_code.store.errors import CacheDirError, IndexBusy, is_damage
from prism_code.tasks.corpus_files import save_corpus
from prism_code.tasks.find_function import FunctionCorpus, FunctionSearch

log = logging.getLogger(__name__)

# Share of the progress bar each stage fills: (start, end) percent.
_STAGES = {
    "open": (0, 5),
    "parse": (5, 60),
    "graph": (60, 65),
    "relations": (65, 75),
    "embeddings": (75, 100),
}

# How long the worker waits for another process (a `prism-code index`) to finish writing
# the shared index before it gives up and tries again after LOCK_RETRY_S.
WRITE_LOCK_WAIT_S = 30.0
LOCK_RETRY_S = 5.0

# Worker states, as prism.status reports them.
OPENING, INDEXING, EMBEDDING, IDLE, PAUSED, FAILED, STOPPED = (
    "opening", "indexing", "embedding", "idle", "paused", "failed", "stopped")


class ProgressSink(Protocol):
    def begin(self) -> None: ...
    def report(self, stage: str, message: str, percentage: float) -> None: ...
    def end(self, message: str) -> None: ...


class _Silent:
    """Progress for small updates after an edit: a bar per keystroke would only flicker."""

    def begin(self) -> None:
        pass

    def report(self, stage: str, message: str, percentage: float) -> None:
        pass

    def end(self, message: str) -> None:
        pass


class IndexWorker:
    """A folder's index, its unsaved buffers and the thread that keeps the index current."""

    def __init__(self, root: Path, settings: Settings,
                 progress: Callable[[str], ProgressSink],
                 indexed: Callable[[], None] | None = None) -> None:
        self.root = root
        self._indexed = indexed  # told (on the worker thread) after each successful update
        self.settings = settings
        self._progress = progress
        self.index: RepoIndex | None = None
        self._finder: FunctionSearch | None = None
        # Until the first update has built find's corpus, finds are answered from the saved
        # lexical index when it is current (lsp/saved_find.py); `loaded` says that is over.
        self.saved_find = SavedFind(root, self._config(), settings.cache_dir)
        # With neither an index nor a saved copy, the first index's files answer as they
        # are parsed (lsp/first_index_find.py), until it publishes.
        self.first_find: FirstIndexFind | None = None
        self.loaded = False
        self._embedder: Embedder | None = None
        # Unsaved editor text by workspace-relative path; replaced whole under _buffers_lock so
        # the worker can read a snapshot while the event loop records the next edit.
        self._buffers: dict[str, str] = {}
        self._buffers_lock = threading.Lock()
        self.state = OPENING
        self.error: str | None = None
        self.embedded = (0, 0)  # (done, total) texts with vectors
        # (done, total) functions whose model note is for their current text; the notes
        # pass keeps it current while it writes.
        self.noted = (0, 0)
        self._notes = WorkspaceNotes()
        self._wake = threading.Condition()
        self._due: float | None = None  # monotonic time the next update should start
        # Whether the update due was asked for by something that must not wait for the
        # running job's relations and embeddings (an edit); new notes to embed can wait.
        self._due_interrupts = False
        self._visible = False  # whether the next update shows progress
        self._reopen = False
        self._paused = False
        self._stopping = False
        self._search_lock = threading.Lock()  # FunctionSearch caches are not thread-safe
        self._thread = threading.Thread(target=self._run, name=f"prism-index:{root.name}",
                                        daemon=True)

    # ---- control (any thread) ------------------------------------------------------------

    def start(self) -> None:
        self.schedule(visible=True)
        self._thread.start()

    def schedule(self, delay: float = 0.0, visible: bool = False, interrupts: bool = True) -> None:
        """Run an update `delay` seconds from now; a later call restarts the delay.

        With `interrupts` (an edit), the running job stops its relations and embeddings
        between batches so the update starts at once; without it (new notes whose cards
        need vectors), the running job finishes first, so embedding progresses instead of
        starting over each time the notes pass writes a few notes.
        """
        with self._wake:
            self._due = time.monotonic() + delay
            self._visible |= visible
            self._due_interrupts |= interrupts
            self._wake.notify()

    def pause(self) -> None:
        with self._wake:
            self._paused = True
            self._wake.notify()

    def resume(self) -> None:
        with self._wake:
            if not self._paused:
                return
            self._paused = False
        self.schedule(visible=True)

    def stop(self, timeout: float = 5.0) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("%s: the indexing worker did not stop within %.0f s", self.root, timeout)

    def reconfigure(self, settings: Settings) -> None:
        """Apply new settings; a changed exclude list, limit, cache dir or trust means another index."""
        old, self.settings = self.settings, settings
        if ((old.exclude, old.cache_dir, old.trusted, old.max_file_bytes, old.max_files, old.max_lines)
                != (settings.exclude, settings.cache_dir, settings.trusted, settings.max_file_bytes,
                    settings.max_files, settings.max_lines)):
            with self._wake:
                self._reopen = True
            self.schedule(visible=True)

    def set_buffer(self, path: str, text: str | None, delay: float = 0.3) -> None:
        """An editor buffer's text (None: closed or saved, disk is right again)."""
        if language_for_path(path) is None:
            return
        with self._buffers_lock:
            if text is None and path not in self._buffers:
                return
            buffers = dict(self._buffers)
            if text is None:
                del buffers[path]
            else:
                buffers[path] = text
            self._buffers = buffers
            if self.index is not None:
                self.index.set_overlay(path, text)
        self.schedule(delay)

    @property
    def unsaved(self) -> int:
        """How many editor buffers differ from the disk."""
        return len(self._buffers)

    @property
    def busy(self) -> bool:
        """Whether the worker is using a core right now (the model then leaves it one)."""
        return self.state in (OPENING, INDEXING, EMBEDDING)

    def notes_store(self, index: RepoIndex) -> NotesStore:
        """The function notes kept with `index` (one connection, shared by every thread)."""
        return self._notes.store(index)

    # ---- the worker ----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopping and not self._ready():
                    wait = None if self._due is None or self._paused else self._due - time.monotonic()
                    self._wake.wait(wait)
                if self._stopping:
                    break
                visible, self._visible, self._due = self._visible, False, None
                self._due_interrupts = False
            progress = self._progress(f"Indexing {self.root.name}") if visible else _Silent()
            self._work(progress, visible)
        self.state = STOPPED
        self.saved_find.close()
        self._close_first_find()
        self._notes.close()
        if self.index is not None:
            self.index.close()

    def _ready(self) -> bool:
        return not self._paused and self._due is not None and time.monotonic() >= self._due

    def _interrupted(self) -> bool:
        return self._stopping or self._paused

    def _superseded(self) -> bool:
        """Whether the running job's relations and embeddings should give way to an update."""
        return self._interrupted() or (self._due is not None and self._due_interrupts)

    def _work(self, progress: ProgressSink, visible: bool) -> None:
        progress.begin()

        def report(stage: str, done: int, total: int) -> None:
            # What indexing built so far is long-lived: keep the collector off it.
            heap.settle()
            start, end = _STAGES.get(stage, (0, 100))
            share = done / total if total else 1.0
            first = self.first_find
            searchable = first.searchable[0] if first is not None else 0
            # The count comes first: the extension's status bar shows the first "n/m".
            message = f"{stage} {done}/{total}" + (f"; find searches {searchable} files" if searchable else "")
            progress.report(stage, message, start + (end - start) * share)

        try:
            index = self.index
            if index is None or self._reopen:
                self.state = OPENING
                report("open", 0, 1)
                if index is None:
                    self.saved_find.open()  # proven before the load below takes the core
                with heap.building():
                    index = self._open()
            self.state = INDEXING
            # Files and fragments are published first, so search and completion see an edit
            # at once; relations follow, and a newer edit interrupts them (its update finishes them).
            if not self.loaded and not index.lines and self.first_find is None:
                self.first_find = FirstIndexFind(self.root.name)
            with self._buffers_lock:
                opened = list(self._buffers)
            summary = index.update(progress=report, cancelled=self._interrupted, relations=False,
                                   opened=opened, sink=self.first_find if not self.loaded else None)
            log.log(logging.INFO if visible else logging.DEBUG, "%s: indexed %s",
                    self.root.name, summary.line())
            if not self.loaded:
                self._build_corpus()
                self.loaded = True
                self.saved_find.close()
                self._close_first_find()
            index.finish_relations(report, cancelled=self._superseded)
            self.state = EMBEDDING
            self._embed(report)
            self.noted = count_notes(index, self.notes_store(index))
            if visible and not self._buffers:
                # The next start of this folder (or `prism-code find`) answers from it at once.
                save_corpus(index, self._build_corpus())
            heap.settle(force=True)
            heap.release_memory()
            self.state = IDLE
            self.error = None
            progress.end(f"{summary.functions} functions in {summary.files} files")
            if self._indexed is not None:
                self._indexed()
        except Cancelled as exc:
            self.state = PAUSED if self._paused else STOPPED if self._stopping else IDLE
            log.info("%s: %s", self.root.name, exc)
            progress.end(str(exc))
        except IndexBusy as exc:
            # The command line is writing the shared index: requests keep answering from
            # what this process holds, and the worker comes back for its update.
            self.state, self.error = IDLE, str(exc)
            log.info("%s: %s; trying again in %.0f s", self.root.name, exc, LOCK_RETRY_S)
            progress.end("waiting for another process writing the index")
            self.schedule(LOCK_RETRY_S, visible=visible)
        except CacheDirError as exc:
            self.state, self.error = FAILED, str(exc)
            log.error("%s: %s", self.root.name, exc)
            progress.end(f"indexing failed: {exc}")
        except sqlite3.DatabaseError as exc:
            self.state, self.error = FAILED, f"{type(exc).__name__}: {exc}"
            if is_damage(exc) and self.index is not None:
                # The index is derived data: move the damaged file aside and rebuild.
                self._recover(self.index, exc)
            else:
                log.exception("%s: indexing failed", self.root.name)
            progress.end(f"indexing failed: {exc}")
        except Exception as exc:  # the worker must survive to retry later
            self.state, self.error = FAILED, f"{type(exc).__name__}: {exc}"
            log.exception("%s: indexing failed", self.root.name)
            progress.end(f"indexing failed: {exc}")

    def _recover(self, index: RepoIndex, damage: sqlite3.DatabaseError) -> None:
        try:
            index.recover(damage, timeout=WRITE_LOCK_WAIT_S)
        except Exception as exc:  # noqa: BLE001 - reported; the next update tries again
            log.error("%s: the index database is damaged and could not be replaced: %s",
                      self.root.name, exc)
            return
        self.schedule(visible=True)

    def _close_first_find(self) -> None:
        first, self.first_find = self.first_find, None
        if first is not None:
            first.close()

    def _config(self) -> IndexConfig:
        s = self.settings
        return IndexConfig(exclude=list(s.exclude), trusted=s.trusted, max_file_bytes=s.max_file_bytes,
                           max_files=s.max_files, max_lines=s.max_lines)

    def _build_corpus(self) -> FunctionCorpus:
        """Find's corpus of the current index, built here rather than by the next request."""
        assert self._finder is not None
        with self._search_lock:
            return self._finder.corpus

    def _open(self) -> RepoIndex:
        index = RepoIndex(self.root, self._config(), self.settings.cache_dir,
                          lock_timeout=WRITE_LOCK_WAIT_S)
        with self._buffers_lock:
            for path, text in self._buffers.items():
                index.set_overlay(path, text)
            old, self.index = self.index, index
        self._finder = FunctionSearch(index, self._load_embedder())
        self._reopen = False
        if old is not None:
            old.close()
        log.info("%s: index at %s", self.root.name, index.store.path)
        return index

    def _load_embedder(self) -> Embedder | None:
        if self._embedder is None:
            try:
                # One thread: the editor and the language server share a small machine.
                self._embedder = LeanEmbedder(threads=1)
            except ModelUnavailable as exc:
                log.warning("embeddings are off, search is lexical only: %s", exc)
        return self._embedder

    def _embed(self, report: Callable[[str, int, int], None]) -> None:
        if self._embedder is None or self._finder is None or self.index is None:
            return
        # Cards take the model notes written so far; the plain card answers until a
        # note card is embedded here.
        notes = llm_note_texts(self.index, self.notes_store(self.index))
        with self._search_lock:
            self._finder.set_notes(notes)
            texts = self._finder.embedding_texts()
        cache = VectorCache(self.index.store, self._embedder)
        missing = len(cache.missing(texts))
        self.embedded = (len(texts) - missing, len(texts))

        def progress(done: int, total: int) -> None:
            # `total` is what is missing once this process may embed: another process
            # (a `prism-code index`) may have stored some meanwhile.
            self.embedded = (len(texts) - total + done, len(texts))
            report("embeddings", done, total)

        # New edits outrank embeddings: stop between batches and index them first.
        cache.fill(texts, progress, cancelled=self._superseded)
        with self._search_lock:
            self._finder.vectors_stored()
