"""Completion requests before they reach the model: one live request per document, debounced.

Each document has one live request: a newer one supersedes it, and a superseded generation
stops at its next token (or prefill batch) through its `cancelled` callback. Identical
requests (VS Code asks for a list item and for ghost text at the same place) share one
request and its answer. A request waits out an adaptive debounce (half the typical
completion latency, within 150-400 ms) before the model starts, so a burst of keystrokes
costs one generation. The model work itself is scheduled by lsp/completion_service.py.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prism_code.lsp.workspace_state import WorkspaceState

if TYPE_CHECKING:  # the completion library loads llama.cpp: typing only
    from prism_code.tasks.complete import CompletionResult

DEBOUNCE_MIN_S = 0.15
DEBOUNCE_MAX_S = 0.4
# Weight of the newest latency in the running estimate: a few requests move it.
_SMOOTHING = 0.3


class Debounce:
    """Half the typical completion latency, within 150-400 ms.

    When completions are slow, a keystroke that lands mid-generation cancels it, and every
    cancelled prefill is CPU taken from the request that counts: waiting a little longer
    before starting wastes less.
    """

    def __init__(self) -> None:
        self._latency_ms: float | None = None

    def observe(self, latency_ms: float) -> None:
        previous = self._latency_ms
        self._latency_ms = latency_ms if previous is None else (
            (1 - _SMOOTHING) * previous + _SMOOTHING * latency_ms)

    @property
    def delay(self) -> float:
        if self._latency_ms is None:
            return DEBOUNCE_MIN_S
        return min(DEBOUNCE_MAX_S, max(DEBOUNCE_MIN_S, self._latency_ms / 2000))


@dataclass(frozen=True, eq=False)
class CompletionRequest:
    uri: str
    workspace: WorkspaceState
    path: str  # workspace-relative
    text: str  # the editor's buffer, unsaved edits included
    line: int  # 1-based
    col: int  # 1-based character column, as Completer counts it

    def same_place(self, other: CompletionRequest) -> bool:
        return (self.workspace is other.workspace and (self.uri, self.path, self.line, self.col)
                == (other.uri, other.path, other.line, other.col) and self.text == other.text)


@dataclass(eq=False)
class PendingCompletion:
    """A live request and everyone waiting for its answer."""

    request: CompletionRequest
    answer: asyncio.Future[CompletionResult | None]
    waiters: list[threading.Event]  # each asker's $/cancelRequest flag
    superseded: bool = False

    def cancelled(self) -> bool:
        return self.superseded or all(flag.is_set() for flag in self.waiters)


class CompletionDebounce:
    """The live request of each document, and the wait before the model starts on it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.debounce = Debounce()
        self._pending: dict[str, PendingCompletion] = {}  # the latest request per document URI

    def enter(self, request: CompletionRequest,
              flag: threading.Event) -> tuple[PendingCompletion, bool]:
        """(the live request that answers `request`, whether it is new). An identical live
        request is shared; any other live request of the document is superseded."""
        pending = self._pending.get(request.uri)
        if pending is not None and pending.request.same_place(request) and not pending.cancelled():
            pending.waiters.append(flag)
            return pending, False
        if pending is not None:
            pending.superseded = True
        pending = PendingCompletion(request, self._loop.create_future(), [flag])
        self._pending[request.uri] = pending
        return pending, True

    async def settled(self, pending: PendingCompletion) -> bool:
        """Wait out the debounce; whether the request is still wanted after it."""
        await asyncio.sleep(self.debounce.delay)
        return not pending.cancelled()

    def observe(self, result: CompletionResult) -> None:
        """A finished answer: its latency sets the next debounce, if the model made it."""
        if not result.typed_through:  # the debounce guards model work; these did none
            self.debounce.observe(result.latency_ms)

    def forget(self, uri: str) -> None:
        """A closed document: its live request is superseded."""
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.superseded = True

    def supersede_all(self) -> None:
        for pending in self._pending.values():
            pending.superseded = True
