"""One workspace folder: its index, the background worker keeping it current, and queries.

The worker thread owns every write: it opens the index, runs incremental updates and
then computes the missing embeddings. Requests never wait for it: they read the state
the index last published (RepoIndex swaps its dicts atomically) and search lexically
until the embeddings are complete. Edits arrive as buffer overlays and are folded in by
a debounced update; pausing cancels the running job, which leaves the index unchanged.

The index database may be shared with the command line. A request first catches up with
what another process committed (RepoIndex.refresh: the search caches follow the index's
generation), and then schedules an update, which folds the unsaved buffers back in and
embeds what is new. The worker waits a bounded time for another process's write lock and
retries later; requests never wait for it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.config import IndexConfig, cache_root
from prism_code.embeddings import VectorCache
from prism_code.index import RepoIndex
from prism_code.lsp import heap
from prism_code.lsp.locations import cursor, lsp_lines
from prism_code.lsp.settings import Settings
from prism_code.memory.notes_store import NotesStore, llm_note_texts
from prism_code.parse import language_for_path
from prism_code.retrieval.dense import Embedder, ModelUnavailable
from prism_code.store import CacheDirError, IndexBusy, is_damage
from prism_code.tasks.find_events import FindListener
from prism_code.tasks.find_function import FoundFunction, FunctionSearch
from prism_code.tasks.find_strategies import run_find
from prism_code.tasks.find_stream import Ranking
from prism_code.tasks.hover import HoverNote, ModuleHover, ParsedBuffers, hover_at

if TYPE_CHECKING:  # llama.cpp loads on the model thread, not at import
    from prism_code.llm.backend import ScoringBackend

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

# Texts per ONNX call when embedding in the server. Memory grows with the batch's
# attention buffers, speed does not: on 256-token texts a batch of 8 grew RSS by ~290 MB,
# 2 by ~70 MB and 1 by ~30 MB, all at the same texts per second (2 cores, busy). Texts are
# embedded shortest first, so batching saved little padding anyway.
EMBED_BATCH = 1

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


@dataclass(frozen=True)
class Found:
    """A search hit, with its workspace root and the text of its last line."""

    function: FoundFunction
    root: Path
    last_line: str  # text of the definition's last line, to end the range at its end


class WorkspaceState:
    def __init__(self, root: Path, settings: Settings,
                 progress: Callable[[str], ProgressSink],
                 indexed: Callable[[WorkspaceState], None] | None = None) -> None:
        self.root = root
        self._indexed = indexed  # told (on the worker thread) after each successful update
        self.settings = settings
        self._progress = progress
        self.index: RepoIndex | None = None
        self._finder: FunctionSearch | None = None
        self._embedder: Embedder | None = None
        # Unsaved editor text by workspace-relative path; replaced whole under _buffers_lock so
        # the worker can read a snapshot while the event loop records the next edit.
        self._buffers: dict[str, str] = {}
        self._buffers_lock = threading.Lock()
        # The texts hovers and the call hierarchy parsed, by workspace-relative path: this
        # folder's own, since another folder may hold a file at the same relative path.
        self.parsed_buffers = ParsedBuffers()
        self.state = OPENING
        self.error: str | None = None
        self.embedded = (0, 0)  # (done, total) texts with vectors
        # (done, total) functions whose model note is for their current text; the notes
        # pass keeps it current while it writes.
        self.noted = (0, 0)
        self._notes: NotesStore | None = None
        self._notes_epoch = 0  # the index store's epoch the notes store was opened at
        self._notes_lock = threading.Lock()
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
        """Apply new settings; a changed exclude list, cache dir or trust means another index."""
        old, self.settings = self.settings, settings
        if ((old.exclude, old.cache_dir, old.trusted)
                != (settings.exclude, settings.cache_dir, settings.trusted)):
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

    def close_buffer(self, path: str) -> None:
        """The editor closed a document: its unsaved edits are gone, and so is its parse."""
        self.set_buffer(path, None, 0.0)
        self.parsed_buffers.discard(path)

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

    def catch_up(self, index: RepoIndex) -> None:
        """Read what another process (the command line) committed to the shared index since
        this one last looked, so a request never answers from a graph that is gone; then let
        the worker fold the unsaved buffers back in and embed the new functions."""
        try:
            changed = index.refresh()
        except (sqlite3.Error, OSError, CacheDirError) as exc:
            # The request answers from what is in memory; the worker's update reports it.
            log.warning("%s: could not read the index: %s", self.root.name, exc)
            self.schedule()
            return
        if changed:
            self.schedule(visible=True)

    def search(self, query: str, top: int, cancelled: CancelCheck) -> list[Found]:
        index, finder = self.index, self._finder
        if index is None or finder is None:
            return []
        self.catch_up(index)
        with self._search_lock:
            if cancelled():
                raise Cancelled("the search was cancelled")
            _ = finder.corpus  # built from a snapshot of the index: readers do not wait for it
            if cancelled():
                raise Cancelled("the search was cancelled")
            # What `prism-code find` calls too: one ranking for the editor and the CLI.
            results = run_find("retrieval", finder, query, top=top, alpha=self.settings.fragrel_alpha).results
        return [Found(r, self.root, _line(index, r.path, r.end_line)) for r in results]

    def find_with_model(self, strategy: str, query: str, top: int, session: ScoringBackend,
                        on_event: FindListener, cancelled: CancelCheck, state_dir: Path | None = None,
                        on_ranking: Callable[[list[Found], Ranking], None] | None = None) -> list[Found]:
        """A model strategy (prism, wim, long-context) over this workspace; model thread only.
        `on_ranking` hears each ranking on the way (tasks/find_stream), the final one last."""
        index, finder = self.index, self._finder
        if index is None or finder is None:
            return []
        self.catch_up(index)
        options = {}
        from prism_code.llm.backend import keeps_kv_state
        from prism_code.llm.state_cache import StateCache

        if strategy == "prism" and state_dir is not None and keeps_kv_state(session):
            # PRISM's task, rules and schema do not change between queries: their KV state is a file.
            options["state_cache"] = StateCache(state_dir)
        def found(results: list[FoundFunction]) -> list[Found]:
            return [Found(r, self.root, _line(index, r.path, r.end_line)) for r in results]

        def ranked(ranking: Ranking) -> None:
            if on_ranking is not None:
                on_ranking(found(ranking.results), ranking)

        with self._search_lock:
            outcome = run_find(strategy, finder, query, top=top, session=session, on_event=on_event,
                               cancelled=cancelled, on_ranking=ranked, **options)
        return found(outcome.results)

    def hover(self, path: str, text: str | None, position: types.Position,
              codec: PositionCodec) -> tuple[HoverNote | ModuleHover, list[str]] | None:
        """What a hover at an LSP position shows, with the lines the position was read
        against; None when there is nothing to show. `text` is the editor's buffer; None
        (a file the editor has not open) reads the file as indexed, once caught up."""
        index = self.caught_up()
        if index is None:
            return None
        if text is None:
            text = "\n".join(index.lines.get(path, []))
        lines = lsp_lines(text)
        line, col = cursor(codec, lines, position)
        found = hover_at(index, path, line, col, text, self.notes_store(index), self.parsed_buffers)
        return None if found is None else (found, lines)

    def caught_up(self) -> RepoIndex | None:
        """The index with what other processes committed read in; None before it opens."""
        index = self.index
        if index is not None:
            self.catch_up(index)
        return index

    def indexed_lines(self, path: str) -> list[str]:
        """A file's lines as indexed (unsaved edits folded in); [] when it is not indexed."""
        index = self.index
        return index.lines.get(path, []) if index is not None else []

    def notes_store(self, index: RepoIndex) -> NotesStore:
        """The function notes kept with `index` (one connection, shared by every thread)."""
        with self._notes_lock:
            # A new epoch: the database file was replaced (a damaged one moved aside).
            if (self._notes is None or self._notes.path != index.store.path
                    or self._notes_epoch != index.store.epoch):
                if self._notes is not None:
                    self._notes.close()
                self._notes = NotesStore.for_index(index)
                self._notes_epoch = index.store.epoch
            return self._notes

    def status(self) -> dict[str, Any]:
        index = self.index
        functions = 0 if index is None else index.function_count
        cache = self.settings.cache_dir or cache_root()
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
            "notes": {"done": self.noted[0], "total": self.noted[1]},
            "unsavedBuffers": len(self._buffers),
            "hoverBuffers": self.parsed_buffers.stats(),
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
        with self._notes_lock:
            if self._notes is not None:
                self._notes.close()
                self._notes = None
        if self.index is not None:
            self.index.close()

    def _ready(self) -> bool:
        return not self._paused and self._due is not None and time.monotonic() >= self._due

    def _interrupted(self) -> bool:
        return self._stopping or self._paused

    def _work(self, progress: ProgressSink, visible: bool) -> None:
        progress.begin()

        def report(stage: str, done: int, total: int) -> None:
            # What indexing built so far is long-lived: keep the collector off it.
            heap.settle()
            start, end = _STAGES.get(stage, (0, 100))
            share = done / total if total else 1.0
            progress.report(stage, f"{stage} {done}/{total}", start + (end - start) * share)

        try:
            index = self.index
            if index is None or self._reopen:
                self.state = OPENING
                report("open", 0, 1)
                with heap.building():
                    index = self._open()
            self.state = INDEXING
            # Files and fragments are published first, so search and completion see an edit
            # at once; relations follow, and a newer edit interrupts them (its update finishes them).
            summary = index.update(progress=report, cancelled=self._interrupted, relations=False)
            log.log(logging.INFO if visible else logging.DEBUG, "%s: indexed %s",
                    self.root.name, summary.line())
            index.finish_relations(
                report, cancelled=lambda: self._interrupted() or self._due is not None)
            self.state = EMBEDDING
            self._embed(report)
            self.noted = count_notes(index, self.notes_store(index))
            heap.settle(force=True)
            _release_memory()
            self.state = IDLE
            self.error = None
            progress.end(f"{summary.functions} functions in {summary.files} files")
            if self._indexed is not None:
                self._indexed(self)
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

    def _open(self) -> RepoIndex:
        config = IndexConfig(exclude=list(self.settings.exclude), trusted=self.settings.trusted)
        index = RepoIndex(self.root, config, self.settings.cache_dir,
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
                self._embedder = _LeanEmbedder(threads=1)
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
        cache.fill(texts, progress, cancelled=lambda: self._interrupted() or self._due is not None)


class _LeanEmbedder(Embedder):
    """The embedder with the server's batch size (see EMBED_BATCH)."""

    def embed(self, texts: Sequence[str], batch_size: int = EMBED_BATCH,
              progress: Callable[[int, int], None] | None = None,
              cancelled: CancelCheck | None = None) -> np.ndarray:
        return super().embed(texts, batch_size, progress, cancelled)


def _release_memory() -> None:
    """Give memory freed by an update back to the system: glibc keeps it otherwise, and a
    full index frees a third of what it took (measured on torch-geometric: 235 -> 204 MB)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:
        pass


def count_notes(index: RepoIndex, store: NotesStore) -> tuple[int, int]:
    """(functions whose model note matches their current text, all functions)."""
    from prism_code.memory.notes_store import function_hash

    stored = store.hashes()
    functions = index.functions()
    done = sum(1 for f in functions if stored.get((f.path, f.qualname)) == function_hash(index, f))
    return done, len(functions)


def _line(index: RepoIndex, path: str, line: int) -> str:
    lines = index.lines.get(path, [])
    return lines[line - 1] if 0 < line <= len(lines) else ""
