"""Completions on the model thread: requests, warm-ups and KV checkpoints, so typing stays cheap.

Completion requests go through lsp/completion_debounce.py (one live request per document,
superseding, adaptive debounce) unless the user typed what the last suggestion begins with:
that answer is read off the suggestion at once (tasks/typed_through.py), before any
debounce. Each job runs on the model thread lsp/model_scheduler.py keeps, with one
Completer per workspace folder.

The KV cache holds one prompt, so warm-ups only run where a completion is about to be
asked for: while a request on a new line waits out its debounce, and for a document just
opened once nothing else is going on. When the model has been idle a few seconds its KV
state is saved to a state file, so a restarted server starts warm.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prism_code.llm.backend import BackendError
from prism_code.lsp.completion_context import ContextLog
from prism_code.lsp.completion_debounce import CompletionDebounce, CompletionRequest, PendingCompletion
from prism_code.lsp.completion_stats import CompletionStats
from prism_code.lsp.model_scheduler import ModelScheduler
from prism_code.lsp.workspace_state import WorkspaceState

if TYPE_CHECKING:  # the completion library loads llama.cpp: only the model thread imports it
    from prism_code.tasks.complete import Completer, CompletionResult, CompletionSettings

log = logging.getLogger(__name__)

# The model's KV state is saved this long after its last job.
IDLE_CHECKPOINT_S = 3.0
# A document just opened is warmed after this quiet time (retried while the index is busy).
OPEN_WARM_DELAY_S = 1.0
# The library's 256-token floor leaves small files without a state file, yet restoring
# 64 tokens (~1 MB) takes milliseconds where evaluating them takes 0.3 s or more.
MIN_STATE_TOKENS = 64


class CompletionService:
    """Completions, warm-ups and checkpoints for every workspace folder, on the model thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, models: ModelScheduler,
                 index_busy: Callable[[], bool]) -> None:
        self._loop = loop
        self._models = models
        self._index_busy = index_busy
        self.requests = CompletionDebounce(loop)
        self.stats = CompletionStats()
        self.context = ContextLog()  # what each document's last suggestion was written from
        self._place: tuple[str, int] | None = None  # (uri, line) of the latest request
        self._opened: CompletionRequest | None = None  # the document waiting for a warm-up
        self._checkpoint_timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        # Read by the model thread; replaced whole by configure().
        self._max_lines = 8
        self._settings: CompletionSettings | None = None
        self._completers: dict[Path, Completer] = {}
        self._last_completer: Completer | None = None

    def configure(self, max_lines: int) -> None:
        self._max_lines, self._settings = max_lines, None

    @property
    def _closing(self) -> bool:
        return self._models.closing

    # ---- requests (event loop) -----------------------------------------------------------

    async def complete(self, request: CompletionRequest,
                       flag: threading.Event) -> CompletionResult | None:
        """The completion at `request`; None when superseded, cancelled or unavailable."""
        if self._closing:
            return None
        self.stats.requests += 1
        self._models.editor_request()
        job, new = self.requests.enter(request, flag)
        if new:
            self._warm_new_line(request)
            self._spawn(self._run(job))
        # Shielded: one asker's cancel must not take the answer from the others.
        return await asyncio.shield(job.answer)

    def warm_when_idle(self, request: CompletionRequest) -> None:
        """Warm up for a document just opened, unless a completion request gets there first."""
        self._opened = request
        opened = time.monotonic()

        def start() -> None:
            if self._closing or self._opened is not request or self._models.last_request > opened:
                return
            if self._index_busy():
                self._loop.call_later(OPEN_WARM_DELAY_S, start)
                return
            self._opened = None
            self._models.submit(self._warm, request,
                                lambda: self._closing or self._models.last_request > opened)

        self._loop.call_later(OPEN_WARM_DELAY_S, start)

    def forget(self, uri: str) -> None:
        """A closed document: stop its work and drop its text."""
        self.requests.forget(uri)
        self.context.forget(uri)
        if self._opened is not None and self._opened.uri == uri:
            self._opened = None

    def _warm_new_line(self, request: CompletionRequest) -> None:
        place = (request.uri, request.line)
        if place == self._place:
            return
        self._place = place
        # The lines above the cursor are what every keystroke on this line reuses: evaluate
        # them while the debounce runs, and give up if the cursor moves on first.
        self._models.submit(self._warm, request, lambda: self._closing or self._place != place)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = self._loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, job: PendingCompletion) -> None:
        result = None
        host = self._models.host
        try:
            # Typing into the suggestion needs no model: answered before any debounce.
            result = await asyncio.wrap_future(self._models.submit(self._follow, job))
            if result is None and await self.requests.settled(job):
                result = await asyncio.wrap_future(self._models.submit(self._generate, job))
        except BackendError as exc:  # the remote engine: nothing for this keystroke, and a status
            host.remote_failed(exc, "completion")
        except Exception:  # a failed completion is an empty one, never a crash
            log.exception("completion in %s failed", job.request.path)
        finally:
            if not job.answer.done():
                job.answer.set_result(result)
            if result is not None:
                host.remote_answered()
                self.stats.observe(result)
                self.requests.observe(result)
                self.context.observe(job.request.uri, job.request.workspace.root, result)
            elif job.cancelled():
                self.stats.cancelled += 1
            self._schedule_checkpoint()

    def _schedule_checkpoint(self) -> None:
        if self._checkpoint_timer is not None:
            self._checkpoint_timer.cancel()
        self._checkpoint_timer = self._loop.call_later(IDLE_CHECKPOINT_S,
                                                       self._checkpoint_when_idle)

    def _checkpoint_when_idle(self) -> None:
        if self._closing:
            return
        if time.monotonic() - self._models.last_request < IDLE_CHECKPOINT_S:
            self._schedule_checkpoint()
            return
        self._models.submit(self._checkpoint)

    # ---- the model thread ----------------------------------------------------------------

    def _completer(self, workspace: WorkspaceState) -> Completer | None:
        index = workspace.index
        session = self._models.session()
        if index is None or session is None:
            return None
        from prism_code.llm.state_cache import StateCache
        from prism_code.tasks.complete import Completer, CompletionSettings

        if self._settings is None:
            self._settings = CompletionSettings(max_lines=self._max_lines,
                                                min_state_tokens=MIN_STATE_TOKENS)
        state_dir = self._models.state_dir
        completer = self._completers.get(workspace.root)
        if (completer is None or completer.index is not index or completer.session is not session
                or completer.settings is not self._settings
                or completer.state_cache is None or completer.state_cache.root != state_dir):
            completer = Completer(index, session, self._settings, StateCache(state_dir))
            self._completers[workspace.root] = completer
        self._last_completer = completer
        return completer

    def _follow(self, job: PendingCompletion) -> CompletionResult | None:
        """The answer read off the workspace's last suggestion, or None (no model is loaded for this)."""
        r = job.request
        completer = self._completers.get(r.workspace.root)
        if (job.cancelled() or completer is None or completer.index is not r.workspace.index
                or completer.session is not self._models.host.current):
            return None
        return completer.follow(r.path, r.text, r.line, r.col)

    def _generate(self, job: PendingCompletion) -> CompletionResult | None:
        completer = None if job.cancelled() else self._completer(job.request.workspace)
        if completer is None:
            return None
        r = job.request
        result = completer.complete(r.path, r.text, r.line, r.col, cancelled=job.cancelled)
        # A generation stopped early is a fragment of an answer nobody waits for any more.
        return None if job.cancelled() else result

    def _warm(self, request: CompletionRequest, cancelled: Callable[[], bool]) -> None:
        try:
            completer = None if cancelled() else self._completer(request.workspace)
            if completer is not None:
                encoded = completer.warm(request.path, request.text, request.line, request.col,
                                         cancelled)
                log.debug("warmed %s:%d (%d tokens evaluated)", request.path, request.line, encoded)
        except Exception:  # a warm-up is an optimisation: its failure is logged only
            log.exception("warming up for %s failed", request.path)
        try:
            self._loop.call_soon_threadsafe(self._schedule_checkpoint)
        except RuntimeError:  # the loop closed: the server is exiting
            pass

    def _checkpoint(self) -> None:
        completer = self._last_completer
        if completer is None or completer.session is not self._models.host.current:
            return  # its model was closed (another modelPath): nothing of it to save
        try:
            if completer.checkpoint():
                log.debug("saved the KV state of %s", completer.index.root.name)
        except Exception:  # a full disk costs the next start time, nothing else
            log.exception("saving the KV state failed")

    # ---- lifecycle and status -------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop taking requests, save the KV state for the next start and free the model."""
        self._models.closing = True
        self.requests.supersede_all()
        if self._checkpoint_timer is not None:
            self._checkpoint_timer.cancel()
        await self._models.aclose(last=self._checkpoint)

    def status(self) -> dict[str, Any]:
        return {"completion": {**self.stats.to_json(), **self.context.status(),
                               "debounceMs": round(self.requests.debounce.delay * 1000)}}


def last_code_position(text: str) -> tuple[int, int]:
    """(1-based line, 1-based column) at the end of the last non-blank line: where a file just
    opened is most likely to be continued."""
    lines = text.split("\n")
    row = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), 0)
    return row + 1, len(lines[row]) + 1
