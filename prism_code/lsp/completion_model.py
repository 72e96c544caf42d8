"""The completion model policy, applied: which model the server loads, and why.

tasks/model_policy.py decides; this module gathers what it decides from. For `auto` that
is the 1.5B's speed on this host, read from the speed cache or, the first time, measured
on the model thread once the editor has left the model alone for a while (the 0.5B
serves until then). Measuring loads the 1.5B, so the model in use is closed first: the
process holds one model at a time (docs/decisions.md). Typing takes the model back at
the next prefill batch or decoded token, and the measurement is tried again later.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prism_code.cancel import Cancelled
from prism_code.llm.cpu_load import cores
from prism_code.llm.machine_speed import HostKey, MachineSpeed, SpeedCache, host_key, measured_speed
from prism_code.llm.models import MODELS, ModelError, is_installed
from prism_code.lsp.model_host import N_BATCH, N_CTX
from prism_code.lsp.model_scheduler import ModelScheduler
from prism_code.tasks.model_policy import LARGE, SMALL, ModelChoice, choose, forced

if TYPE_CHECKING:
    from prism_code.llm.runtime import LlamaSession

log = logging.getLogger(__name__)

# Measuring takes the model for ~10 s on two cores and a keystroke that interrupts it
# waits for the 1.5B to load (~2 s): only after a longer pause than the notes pass's 5 s.
QUIET_S = 20.0
RETRY_S = 2.0


@dataclass(frozen=True)
class _Plan:
    """A measurement auto waits for, under the settings that asked for it."""

    setting: str
    threads: int  # the setting; the measurement runs with as many as there are cores
    cache: SpeedCache
    key: HostKey


class CompletionModel:
    def __init__(self, loop: asyncio.AbstractEventLoop, scheduler: ModelScheduler,
                 index_busy: Callable[[], bool], quiet_s: float = QUIET_S) -> None:
        self._loop = loop
        self._scheduler = scheduler
        self._index_busy = index_busy
        self._quiet_s = quiet_s
        self.choice = ModelChoice(SMALL, "not configured yet")  # replaced whole, read anywhere
        self._plan: _Plan | None = None
        self._lock = threading.Lock()  # a measurement's result against new settings
        self._since = 0.0  # monotonic time of the last configure
        self._timer: asyncio.TimerHandle | None = None

    def configure(self, setting: str, model_path: str | None, threads: int, cache_dir: Path) -> str:
        """The model to serve with now; when auto lacks the 1.5B's speed, measures it later."""
        measuring_threads = max(1, min(threads, cores()))
        key = host_key(MODELS[LARGE].sha256, measuring_threads)
        cache = SpeedCache(cache_dir)
        installed = forced(setting, model_path) is None and is_installed(LARGE)
        choice = choose(setting, model_path, large_installed=installed,
                        speed=cache.get(key) if installed else None)
        with self._lock:
            self.choice = choice
            self._plan = _Plan(setting, threads, cache, key) if choice.measuring else None
        self._since = time.monotonic()
        log.info("completion model %s: %s", choice.model, choice.reason)
        if self._plan is not None:
            self._retry(self._plan)
        return choice.model

    def remote(self, setting: str, url: str) -> None:
        """A remote engine takes every model job: nothing to choose or measure on this host."""
        with self._lock:
            self.choice = ModelChoice("remote", f"prism.remote.url is set: every model job goes to {url}",
                                      setting)
            self._plan = None
        self._since = time.monotonic()

    def close(self) -> None:
        self._plan = None
        if self._timer is not None:
            self._timer.cancel()

    # ---- waiting for a quiet moment (event loop) ------------------------------------------

    def _retry(self, plan: _Plan) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_later(RETRY_S, self._try_measure, plan)

    def _try_measure(self, plan: _Plan) -> None:
        self._timer = None
        if plan is not self._plan:
            return
        idle = time.monotonic() - max(self._scheduler.last_activity, self._since)
        if idle < self._quiet_s or self._index_busy() or self._scheduler.model_wanted():
            self._retry(plan)
            return
        job = self._scheduler.submit(self._measure, plan)
        job.add_done_callback(lambda done: self._measured(done, plan))

    def _measured(self, job: Future[bool], plan: _Plan) -> None:
        """On the model thread: an interrupted measurement waits for the next quiet moment."""
        if job.cancelled():
            return
        if (error := job.exception()) is not None:
            log.error("measuring %s failed", LARGE, exc_info=error)
            return
        if job.result():
            return
        try:
            self._loop.call_soon_threadsafe(self._retry, plan)
        except RuntimeError:  # the loop closed: the server is exiting
            pass

    # ---- the model thread -----------------------------------------------------------------

    def _measure(self, plan: _Plan) -> bool:
        """Measure the 1.5B and apply the choice; False when editor work interrupted it."""
        if plan is not self._plan:
            return True
        host = self._scheduler.host
        was_open = host.current is not None
        if plan.cache.get(plan.key) is None:  # measured meanwhile under earlier settings: no load
            # One model in memory at a time; the 0.5B's KV state was saved when the editor idled.
            host.close()
        speed: MachineSpeed | None = None
        error: str | None = None
        try:
            speed = measured_speed(plan.cache, plan.key, lambda: _open(plan.key.threads),
                                   cancelled=self._scheduler.model_wanted)
        except Cancelled:
            return False
        except (ModelError, OSError, ValueError, RuntimeError) as exc:  # llama.cpp refusing it
            error = str(exc)
        with self._lock:
            if plan is not self._plan:
                return True
            self.choice = choose(plan.setting, None, large_installed=True, speed=speed, error=error)
            self._plan = None
            host.configure(self.choice.model, plan.threads)
        log.info("completion model %s: %s", self.choice.model, self.choice.reason)
        if was_open:
            self._scheduler.preload()
        return True


def _open(threads: int) -> LlamaSession:
    from prism_code.llm.runtime import LlamaSession

    return LlamaSession.open(LARGE, n_threads=threads, n_ctx=N_CTX, n_batch=N_BATCH)
