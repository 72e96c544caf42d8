"""`$/cancelRequest` that reaches the work, not only the reply.

pygls answers a cancelled request at once, but for `workspace/executeCommand` the
command's own task runs on (pygls cancels the outer request, not the task it started),
and a thread already searching cannot be interrupted by cancelling a task. Handlers
register their task and a flag here under the request id; a cancel sets the flag the
worker thread polls and cancels the task, which also drops queued thread work.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pygls.protocol import LanguageServerProtocol


class CancellableProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._running: dict[object, tuple[asyncio.Task[Any], threading.Event]] = {}

    @contextmanager
    def cancellable(self) -> Iterator[threading.Event]:
        """The current request's cancel flag, set when the client cancels it."""
        flag = threading.Event()
        msg_id, task = self.msg_id, asyncio.current_task()
        if msg_id is None or task is None:
            yield flag
            return
        self._running[msg_id] = (task, flag)
        try:
            yield flag
        finally:
            self._running.pop(msg_id, None)

    def _handle_cancel_notification(self, msg_id: str | int) -> None:
        running = self._running.pop(msg_id, None)
        if running is not None:
            task, flag = running
            flag.set()
            task.cancel()
        super()._handle_cancel_notification(msg_id)
