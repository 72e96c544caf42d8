"""The one model thread: every job that touches the model, editor work first.

One model thread runs everything that touches the model (loading, warm-ups, completions,
model find, checkpoints, the notes pass, the completion model's measurement): a llama.cpp
context does one thing at a time, and the event loop must stay free for hover and find.
What completions do on it is lsp/completion_service.py's business; this module only keeps
the queue, the session and the clock of the editor's last use.

Background work (the function-notes pass) runs on the same thread between editor jobs
and lets go of the model as soon as an editor job is queued (`model_wanted`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prism_code.llm.cpu_load import CpuMeter
from prism_code.lsp.model_host import ModelHost

if TYPE_CHECKING:  # llama.cpp loads on the model thread, not at import
    from prism_code.llm.backend import ScoringBackend

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_S = 10.0


class ModelScheduler:
    """The model thread: editor work (completions, warm-ups, model find) first, background
    work (the notes pass) when the editor leaves the model alone."""

    def __init__(self, host: ModelHost, index_busy: Callable[[], bool]) -> None:
        self.host = host
        self._index_busy = index_busy
        self._cpu = CpuMeter()  # read on the model thread only
        self._model = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prism-model")
        self.closing = False
        # Editor jobs queued for the model thread and not started yet (see submit).
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        self.last_request = 0.0  # monotonic time of the editor's latest completion request
        self._last_job_end = 0.0  # monotonic end of the latest editor job on the model thread
        self._state_dir: Path | None = None

    def configure(self, model: str | None, threads: int, state_dir: Path,
                  remote: str | None = None) -> None:
        """`remote`: the engine every model job goes to (the local model is then never loaded)."""
        self.host.configure(model, threads)
        self.host.set_remote(remote)
        self._state_dir = state_dir

    @property
    def state_dir(self) -> Path | None:
        """Where KV state files go (completions, PRISM find, the notes pass)."""
        return self._state_dir

    def submit(self, fn: Callable[..., Any], *args: Any, background: bool = False) -> Future[Any]:
        """Run `fn(*args)` on the model thread. Editor work makes background work yield while
        it waits; background work (`background=True`) polls model_wanted() and returns once
        it is true. Neither opens the model: `fn` asks for session() if it needs one."""
        if background:
            return self._model.submit(fn, *args)
        with self._waiting_lock:
            self._waiting += 1

        def job() -> Any:
            with self._waiting_lock:
                self._waiting -= 1
            try:
                return fn(*args)
            finally:
                self._last_job_end = time.monotonic()
        return self._model.submit(job)

    def preload(self) -> None:
        """Load the model now, so the first job does not wait for it."""
        self.submit(self._preload)

    def editor_request(self) -> None:
        """The editor asked for a completion: background work waits for a quiet moment."""
        self.last_request = time.monotonic()

    @property
    def last_activity(self) -> float:
        """When the editor last used the model: its latest completion request or the end of
        its latest job, whichever is later (monotonic; 0: never)."""
        return max(self.last_request, self._last_job_end)

    def model_wanted(self) -> bool:
        """Whether the editor needs the model now: background work must let go of it."""
        return self.closing or self._waiting > 0

    # ---- the model thread ----------------------------------------------------------------

    def session(self) -> ScoringBackend | None:
        """The shared model (model thread only), with threads for how busy the cores are;
        None while it is unavailable."""
        # The indexer is part of this process, so the meter does not see its core.
        busy = self._cpu.others_busy() + (1.0 if self._index_busy() else 0.0)
        return self.host.session(busy)

    def _preload(self) -> None:
        try:
            self.session()
        except Exception:  # the first request tries again and reports it
            log.exception("loading the completion model failed")

    # ---- lifecycle and status -------------------------------------------------------------

    async def aclose(self, last: Callable[[], None] | None = None) -> None:
        """Stop taking work, run `last` (the completions' final checkpoint) and free the model."""
        self.closing = True

        def final() -> None:
            if last is not None:
                last()
            self.host.close()
        try:
            await asyncio.wait_for(asyncio.wrap_future(self.submit(final)), SHUTDOWN_TIMEOUT_S)
        except TimeoutError:  # asyncio.TimeoutError is TimeoutError since Python 3.11
            log.warning("the model did not stop within %.0f s", SHUTDOWN_TIMEOUT_S)
        finally:
            self._model.shutdown(wait=False, cancel_futures=True)

    def status(self) -> dict[str, Any]:
        return {"model": self.host.status()}
