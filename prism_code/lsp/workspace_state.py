"""One workspace folder as requests see it: search, model find, hover, status.

The index and the worker that keeps it current are lsp/index_worker.py's; this class adds
what requests ask of them. Requests never wait for the worker: they read the state the
index last published and search lexically until the embeddings are complete.

The index database may be shared with the command line. A request first catches up with
what another process committed (RepoIndex.refresh: the search caches follow the index's
generation), and then schedules an update, which folds the unsaved buffers back in and
embeds what is new.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.config import cache_root
from prism_code.index import RepoIndex
from prism_code.lsp.index_worker import IDLE, PAUSED, IndexWorker, ProgressSink
from prism_code.lsp.locations import cursor, lsp_lines
from prism_code.lsp.settings import Settings
from prism_code.store.errors import CacheDirError
from prism_code.tasks.find_events import FindListener
from prism_code.tasks.find_function import FoundFunction
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.find_strategies import run_find
from prism_code.tasks.find_stream import Ranking
from prism_code.tasks.hover import HoverNote, ModuleHover, ParsedBuffers, hover_at

if TYPE_CHECKING:  # llama.cpp loads on the model thread, not at import
    from prism_code.llm.backend import BackendError, ScoringBackend

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Found:
    """A search hit, with its workspace root and the text of its last line."""

    function: FoundFunction
    root: Path
    last_line: str  # text of the definition's last line, to end the range at its end
    from_saved: bool = False  # ranked from the saved lexical index while the index loaded
    # Ranked over only the files parsed so far, while the folder's first index is built.
    from_partial: bool = False


class WorkspaceState(IndexWorker):
    def __init__(self, root: Path, settings: Settings,
                 progress: Callable[[str], ProgressSink],
                 indexed: Callable[[WorkspaceState], None] | None = None) -> None:
        """`indexed` is told (on the worker thread) after each successful update."""
        super().__init__(root, settings, progress,
                         None if indexed is None else lambda: indexed(self))
        # The texts hovers and the call hierarchy parsed, by workspace-relative path: this
        # folder's own, since another folder may hold a file at the same relative path.
        self.parsed_buffers = ParsedBuffers()

    def close_buffer(self, path: str) -> None:
        """The editor closed a document: its unsaved edits are gone, and so is its parse."""
        self.set_buffer(path, None, 0.0)
        self.parsed_buffers.discard(path)

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

    def search(self, request: FindRequest, cancelled: CancelCheck) -> list[Found]:
        """Retrieval's answer to `request` (its strategy is not read) over this workspace."""
        request = request.as_retrieval()
        if not self.loaded:
            saved = self.saved_find.search(request)
            if saved is not None:
                return [Found(r, self.root, line, from_saved=True) for r, line in saved]
            first = self.first_find
            partial = first.search(request) if first is not None else None
            if partial is not None:
                return [Found(r, self.root, line, from_partial=True) for r, line in partial]
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
            results = run_find(request, finder).results
        return [Found(r, self.root, _line(index, r.path, r.end_line)) for r in results]

    def find_with_model(self, request: FindRequest, session: ScoringBackend,
                        on_event: FindListener, cancelled: CancelCheck, state_dir: Path | None = None,
                        on_ranking: Callable[[list[Found], Ranking], None] | None = None
                        ) -> tuple[list[Found], BackendError | None]:
        """A model strategy (prism, wim, long-context) over this workspace; model thread only.
        `on_ranking` hears each ranking on the way (tasks/find_stream), the final one last.
        With the results, the backend's error when it failed and they are retrieval's."""
        index, finder = self.index, self._finder
        if index is None or finder is None:
            return [], None
        self.catch_up(index)
        from prism_code.llm.backend import keeps_kv_state
        from prism_code.llm.state_cache import StateCache

        # PRISM's task, rules and schema do not change between queries: their KV state is a file.
        state_cache = StateCache(state_dir) if state_dir is not None and keeps_kv_state(session) else None
        def found(results: list[FoundFunction]) -> list[Found]:
            return [Found(r, self.root, _line(index, r.path, r.end_line)) for r in results]

        def ranked(ranking: Ranking) -> None:
            if on_ranking is not None:
                on_ranking(found(ranking.results), ranking)

        with self._search_lock:
            outcome = run_find(request, finder, session=session, state_cache=state_cache, on_event=on_event,
                               cancelled=cancelled, on_ranking=ranked)
        return found(outcome.results), outcome.model_error

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
            # While a first index is built: how many of its files find already searches.
            "searchable": self._searchable(),
            "notes": {"done": self.noted[0], "total": self.noted[1]},
            "unsavedBuffers": self.unsaved,
            "hoverBuffers": self.parsed_buffers.stats(),
            "index": str(index.store.path) if index is not None else None,
            "cacheDir": str(cache),
        }

    def _searchable(self) -> dict[str, int] | None:
        first = self.first_find
        if first is None:
            return None
        files, total = first.searchable
        return {"files": files, "total": total}


def _line(index: RepoIndex, path: str, line: int) -> str:
    lines = index.lines.get(path, [])
    return lines[line - 1] if 0 < line <= len(lines) else ""
