"""The one local model the server completes with, opened on first use.

Every method except `configure` and `status` runs on the model thread (see
model_scheduler), so opening, re-threading and closing never race a generation.
A model that cannot be opened is reported once, with the fix in the message, and stays
off until the settings name another model.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prism_code.llm.cpu_load import cores
from prism_code.llm.models import DEFAULT_MODEL, ModelError, ModelNotInstalled

if TYPE_CHECKING:  # importing the runtime loads llama.cpp: only the model thread does that
    from prism_code.llm.runtime import LlamaSession

log = logging.getLogger(__name__)

# Room for the largest FIM prompt (~1,900 tokens) plus a block completion (160), with margin.
N_CTX = 4096
# Prefill is cancelled between batches: 128 tokens (0.6-1.5 s) is how long a
# keystroke may wait for a warm-up to let go of the model. Prefill ran no slower than with
# 512 (72 against 60 tokens/s median on 1 thread, busy machine: within noise).
N_BATCH = 128


@dataclass(frozen=True)
class ModelConfig:
    name: str  # a registry name or a GGUF path
    threads: int


class ModelHost:
    def __init__(self, report_error: Callable[[str], None]) -> None:
        self._report_error = report_error
        self.config = ModelConfig(DEFAULT_MODEL, 2)
        self._session: LlamaSession | None = None
        self._tried: ModelConfig | None = None  # what the session was opened (or failed) with
        self._threads = 0
        self.error: str | None = None
        self.load_ms: float | None = None

    def configure(self, name: str | None, threads: int) -> None:
        """New settings; the model thread acts on them before its next job."""
        self.config = ModelConfig(name or DEFAULT_MODEL, threads)

    def session(self, busy_cores: float) -> LlamaSession | None:
        """The open session, with a thread per core others leave free; None while unavailable."""
        config = self.config
        if self._tried is not None and self._tried.name != config.name:
            self.close()
        if self._tried is None:
            self._open(config)
        if self._session is None:
            return None
        # llama.cpp's threads spin at barriers: a thread on a core someone else uses slows
        # every other thread down (see cpu_load), so the model only takes free cores.
        threads = max(1, min(config.threads, round(cores() - busy_cores)))
        if threads != self._threads:
            self._session.set_threads(threads)
            self._threads = threads
        return self._session

    @property
    def current(self) -> LlamaSession | None:
        """The open session as it is, without opening or re-threading anything."""
        return self._session

    def _open(self, config: ModelConfig) -> None:
        self._tried = config
        started = time.perf_counter()
        try:
            from prism_code.llm.runtime import LlamaSession

            self._session = LlamaSession.open(config.name, n_threads=config.threads,
                                              n_ctx=N_CTX, n_batch=N_BATCH)
        except ModelNotInstalled as exc:
            self._fail(f"prism: completions are off: the model {exc.spec.name} is not installed. "
                       f"Install it into the server's Python ({sys.prefix}) with: {exc.command}")
            return
        except ModelError as exc:
            self._fail(f"prism: completions are off: {exc}")
            return
        except (OSError, ValueError, RuntimeError) as exc:  # llama.cpp refusing a file
            self._fail(f"prism: completions are off: {config.name} could not be loaded as a "
                       f"GGUF model ({exc})")
            return
        self._threads = config.threads
        self.error = None
        self.load_ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("completion model %s loaded in %.0f ms", self._session.model_path, self.load_ms)

    def _fail(self, message: str) -> None:
        self.error = message
        log.error("%s", message)
        self._report_error(message)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session, self._tried, self._threads = None, None, 0
        self.error = self.load_ms = None

    def status(self) -> dict[str, Any]:
        session = self._session
        counters = session.counters if session is not None else None
        return {
            "name": self.config.name,
            "path": str(session.model_path) if session is not None else None,
            "loaded": session is not None,
            "loadMs": self.load_ms,
            "threads": self._threads or None,
            "error": self.error,
            # Every prefill (warm-ups too): what was evaluated, kept, or restored from state files.
            "tokens": None if counters is None else {
                "encoded": counters.encoded, "reused": counters.reused,
                "restored": counters.restored, "decoded": counters.decoded},
        }
