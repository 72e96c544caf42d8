"""One workspace folder: its index, the background worker keeping it current, and queries.

The worker thread owns every write: it opens the index, runs incremental updates and
then computes the missing embeddings. Requests never wait for it: they read the state
the index last published (RepoIndex swaps its dicts atomically) and search lexically
until the embeddings are complete. Edits arrive as buffer overlays and are folded in by
a debounced update; pausing cancels the running job, which leaves the index unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from prism_code.cancel import Cancelled
from prism_code.config import IndexConfig
from prism_code.embeddings import VectorCache
from prism_code.fragments import FUNCTION
from prism_code.index import RepoIndex
from prism_code.parse import language_for_path
from prism_code.retrieval.dense import Embedder, ModelUnavailable
from prism_code.store import default_cache_dir
from prism_code.tasks.find_function import FoundFunction, FunctionSearch
from prism_code.tasks.hover import HoverNote, describe, symbol_at

from server.settings import Settings

log = logging.getLogger(__name__)

# Share of the progress bar each stage fills: (start, end) percent.
_STAGES = {
    "open": (0, 5),
    "parse": (5, 60),
    "graph": (60, 65),
    "relations (functions)": (65, 70),
    "relations (windows)": (70, 75),
    "embeddings": (75, 100),
}

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


@dataclass(frozen=True)
class Found:
    """A search hit, with its workspace root and the text of its last line."""

    function: FoundFunction
    root: Path
    last_line: str  # text of the definition's last line, to end the range at its end


class WorkspaceState:
    def __init__(self, root: Path, settings: Settings,
                 progress: Callable[[str], ProgressSink]) -> None:
        self.root = root
        self.settings = settings
        self._progress = progress
        self.index: RepoIndex | None = None
        self._finder: FunctionSearch | None = None
        self._embedder: Embedder | None = None
        # Unsaved editor text by workspace-relative path; replaced whole under _buffers_lock so
        # the worker can read a snapshot while the event loop records the next edit.
        self._buffers: dict[str, str] = {}
        self._buffers_lock = threading.Lock()
        self.state = OPENING
        self.error: str | None = None
        self.embedded = (0, 0)  # (done, total) texts with vectors
        self._wake = threading.Condition()
        self._due: float | None = None  # monotonic time the next update should start
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

    def schedule(self, delay: float = 0.0, visible: bool = False) -> None:
        """Run an update `delay` seconds from now; a later call restarts the delay."""
        with self._wake:
            self._due = time.monotonic() + delay
            self._visible |= visible
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
        """Apply new settings; a changed exclude list or cache dir means another index."""
        old, self.settings = self.settings, settings
        if (old.exclude, old.cache_dir) != (settings.exclude, settings.cache_dir):
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
    def busy(self) -> bool:
        """Whether the worker is using a core right now (the model then leaves it one)."""
        return self.state in (OPENING, INDEXING, EMBEDDING)

    # ---- queries (request threads) -------------------------------------------------------

    def relative(self, path: Path) -> str | None:
        """The workspace-relative path of an absolute file path, None outside the workspace."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return None

    def search(self, query: str, top: int, cancelled: Callable[[], bool]) -> list[Found]:
        index, finder = self.index, self._finder
        if index is None or finder is None:
            return []
        with self._search_lock:
            if cancelled():
                raise Cancelled("the search was cancelled")
            with index.lock:  # the corpus reads the graph: build it from one consistent state
                finder.corpus
            if cancelled():
                raise Cancelled("the search was cancelled")
            results = finder.search(query, top=top, alpha=self.settings.fragrel_alpha)
        return [Found(r, self.root, _line(index, r.path, r.end_line)) for r in results]

    def hover(self, path: str, line: int, col: int, text: str | None) -> HoverNote | None:
        index = self.index
        if index is None:
            return None
        symbol = symbol_at(index, path, line, col, text)
        return describe(index, symbol) if symbol is not None else None

    def status(self) -> dict:
        index = self.index
        functions = 0 if index is None else sum(
            1 for f in index.fragments.values() if f.kind == FUNCTION)
        cache = self.settings.cache_dir or default_cache_dir()
        done, total = self.embedded
        # Paused between jobs, the worker itself has nothing to say: the flag does.
        state = PAUSED if self._paused and self.state in (IDLE, PAUSED) else self.state
        return {
            "root": str(self.root),
            "state": state,
            "error": self.error,
            "files": len(index.lines) if index is not None else 0,
            "functions": functions,
            "embeddings": {"done": done, "total": total},
            "unsavedBuffers": len(self._buffers),
            "index": str(index.store.path) if index is not None else None,
            "cacheDir": str(cache),
        }

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
            progress = self._progress(f"Indexing {self.root.name}") if visible else _Silent()
            self._work(progress, visible)
        self.state = STOPPED
        if self.index is not None:
            self.index.close()

    def _ready(self) -> bool:
        return not self._paused and self._due is not None and time.monotonic() >= self._due

    def _interrupted(self) -> bool:
        return self._stopping or self._paused

    def _work(self, progress: ProgressSink, visible: bool) -> None:
        progress.begin()

        def report(stage: str, done: int, total: int) -> None:
            start, end = _STAGES.get(stage, (0, 100))
            share = done / total if total else 1.0
            progress.report(stage, f"{stage} {done}/{total}", start + (end - start) * share)

        try:
            if self.index is None or self._reopen:
                self.state = OPENING
                report("open", 0, 1)
                self._open()
            self.state = INDEXING
            summary = self.index.update(progress=report, cancelled=self._interrupted)
            log.log(logging.INFO if visible else logging.DEBUG, "%s: indexed %s",
                    self.root.name, summary.line())
            self.state = EMBEDDING
            self._embed(report)
            self.state = IDLE
            self.error = None
            progress.end(f"{summary.functions} functions in {summary.files} files")
        except Cancelled as exc:
            self.state = PAUSED if self._paused else STOPPED if self._stopping else IDLE
            log.info("%s: %s", self.root.name, exc)
            progress.end(str(exc))
        except Exception as exc:  # noqa: BLE001 - the worker must survive to retry later
            self.state, self.error = FAILED, f"{type(exc).__name__}: {exc}"
            log.exception("%s: indexing failed", self.root.name)
            progress.end(f"indexing failed: {exc}")

    def _open(self) -> None:
        config = IndexConfig(exclude=list(self.settings.exclude))
        index = RepoIndex(self.root, config, self.settings.cache_dir)
        with self._buffers_lock:
            for path, text in self._buffers.items():
                index.set_overlay(path, text)
            old, self.index = self.index, index
        self._finder = FunctionSearch(index, self._load_embedder())
        self._reopen = False
        if old is not None:
            old.close()
        log.info("%s: index at %s", self.root.name, index.store.path)

    def _load_embedder(self) -> Embedder | None:
        if self._embedder is None:
            try:
                # One thread: the editor and the language server share a small machine.
                self._embedder = Embedder(threads=1)
            except ModelUnavailable as exc:
                log.warning("embeddings are off, search is lexical only: %s", exc)
        return self._embedder

    def _embed(self, report: Callable[[str, int, int], None]) -> None:
        if self._embedder is None or self._finder is None or self.index is None:
            return
        with self._search_lock, self.index.lock:
            corpus = self._finder.corpus
        texts = list(dict.fromkeys(corpus.code + corpus.cards))
        cache = VectorCache(self.index.store, self._embedder)
        missing = len(cache.missing(texts))
        self.embedded = (len(texts) - missing, len(texts))

        def progress(done: int, total: int) -> None:
            self.embedded = (len(texts) - missing + done, len(texts))
            report("embeddings", done, total)

        # New edits outrank embeddings: stop between batches and index them first.
        cache.fill(texts, progress, cancelled=lambda: self._interrupted() or self._due is not None)


def _line(index: RepoIndex, path: str, line: int) -> str:
    lines = index.lines.get(path, [])
    return lines[line - 1] if 0 < line <= len(lines) else ""
