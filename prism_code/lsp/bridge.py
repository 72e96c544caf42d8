"""Talking to the client from worker threads: logs and work-done progress.

pygls' protocol object is not thread-safe (request bookkeeping is a plain dict and
several threads writing one stdout could interleave), so everything a worker thread
sends is handed to the event loop, which does the sending.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

# How long a worker waits for the client to accept a progress token.
CREATE_TIMEOUT_S = 10.0

_LEVELS = (
    (logging.ERROR, types.MessageType.Error),
    (logging.WARNING, types.MessageType.Warning),
    (logging.INFO, types.MessageType.Info),
    (logging.NOTSET, types.MessageType.Log),
)

# Token prefixes: indexing (the extension's status bar follows these) and the notes pass.
INDEX_PROGRESS = "prism-index"
NOTES_PROGRESS = "prism-notes"
FIND_PROGRESS = "prism-find"

_tokens = itertools.count(1)


class ClientBridge:
    """Sends to the client from any thread; silently drops messages once the loop is gone."""

    def __init__(self, ls: LanguageServer, loop: asyncio.AbstractEventLoop) -> None:
        self.ls = ls
        self.loop = loop

    def call(self, fn: Callable[..., object], *args: object) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop closed: the session is over
            pass

    def log(self, level: int, message: str) -> None:
        kind = next(kind for threshold, kind in _LEVELS if level >= threshold)
        self.call(self.ls.window_log_message, types.LogMessageParams(type=kind, message=message))

    def show(self, kind: types.MessageType, message: str) -> None:
        """A message the user sees (window/showMessage), not only the output panel."""
        self.call(self.ls.window_show_message, types.ShowMessageParams(type=kind, message=message))

    def progress(self, title: str, kind: str = INDEX_PROGRESS) -> WorkDoneProgress:
        """A work-done progress whose token starts with `kind`/ (clients tell them apart)."""
        return WorkDoneProgress(self, title, kind)

    @property
    def supports_progress(self) -> bool:
        window = self.ls.client_capabilities.window
        return bool(window and window.work_done_progress)


class WorkDoneProgress:
    """One server-initiated progress: create, begin, reports with percentage, end.

    A report goes out when the whole percent or the stage changes; the percentage never
    goes back, because clients draw it as a bar that only grows.
    """

    def __init__(self, bridge: ClientBridge, title: str, kind: str = INDEX_PROGRESS) -> None:
        self.bridge = bridge
        self.title = title
        self.token = f"{kind}/{next(_tokens)}"
        self.percentage = -1
        self.stage = ""
        self.active = False

    def begin(self) -> None:
        if not self.bridge.supports_progress:
            return
        progress = self.bridge.ls.work_done_progress
        try:
            future = asyncio.run_coroutine_threadsafe(progress.create_async(self.token),
                                                      self.bridge.loop)
            future.result(CREATE_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - progress is optional: work goes on without it
            log.info("the client did not accept progress token %s (%s): no progress shown",
                     self.token, exc)
            return
        self.active = True
        self.percentage = 0
        self.bridge.call(progress.begin, self.token, types.WorkDoneProgressBegin(
            title=self.title, percentage=0, cancellable=False))

    def report(self, stage: str, message: str, percentage: float) -> None:
        value = max(self.percentage, min(100, int(percentage)))
        if not self.active or (value == self.percentage and stage == self.stage):
            return
        self.percentage, self.stage = value, stage
        self.bridge.call(self.bridge.ls.work_done_progress.report, self.token,
                         types.WorkDoneProgressReport(message=message, percentage=value))

    def end(self, message: str) -> None:
        if not self.active:
            return
        self.active = False
        self.bridge.call(self.bridge.ls.work_done_progress.end, self.token,
                         types.WorkDoneProgressEnd(message=message))


class ClientLogHandler(logging.Handler):
    """Forwards prism log records to the client's output panel as window/logMessage."""

    def __init__(self, bridge: ClientBridge, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.bridge = bridge
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.bridge.log(record.levelno, self.format(record))
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)
