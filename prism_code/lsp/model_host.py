"""The one model the server works with, opened on first use: the local model, or the
remote engine `prism.remote.url` names.

Every method except `configure`, `set_remote` and `status` runs on the model thread (see
model_scheduler), so opening, re-threading and closing never race a generation.
A model that cannot be opened is reported once, with the fix in the message, and stays
off until the settings name another model. With a remote engine the local model is never
loaded (only its vocabulary, to build prompts), and the engine's failures are reported
through `remote` (lsp/remote_status.py).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prism_code.llm.backend import BackendError
from prism_code.llm.cpu_load import cores
from prism_code.llm.models import DEFAULT_MODEL, ModelError, ModelNotInstalled
from prism_code.lsp.remote_status import RemoteStatus

if TYPE_CHECKING:  # importing the runtime loads llama.cpp: only the model thread does that
    from prism_code.llm.backend import ScoringBackend
    from prism_code.llm.remote import RemoteSession
    from prism_code.llm.runtime import LlamaSession

log = logging.getLogger(__name__)

# Room for the largest FIM prompt (~1,900 tokens) plus a block completion (160), with margin.
N_CTX = 4096
# Prefill is cancelled between batches: 128 tokens (0.6-1.5 s) is how long a
# keystroke may wait for a warm-up to let go of the model. Prefill ran no slower than with
# 512 (72 against 60 tokens/s median on 1 thread, busy machine: within noise).
N_BATCH = 128
# A remote request's deadline: a completion is superseded by the next keystroke long before,
# a find or notes step on a busy engine may take this long before it counts as a failure.
REMOTE_TIMEOUT_S = 30.0
REMOTE_CONNECT_TIMEOUT_S = 3.0


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
        self.remote = RemoteStatus()  # its url: the engine every model job goes to, when set
        self._remote: RemoteSession | None = None

    def configure(self, name: str | None, threads: int) -> None:
        """New settings; the model thread acts on them before its next job."""
        self.config = ModelConfig(name or DEFAULT_MODEL, threads)

    def set_remote(self, url: str | None) -> None:
        """Send every model job to the engine at `url` (None: the local model) from the next job on."""
        if url != self.remote.url:
            self.remote.reset(url)

    def session(self, busy_cores: float) -> ScoringBackend | None:
        """The open session (the local one with a thread per core others leave free); None while
        unavailable."""
        if self.remote.url is not None:
            return self._remote_session(self.remote.url)
        if self._remote is not None:
            self.close()
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
    def current(self) -> ScoringBackend | None:
        """The open session as it is, without opening or re-threading anything."""
        return self._remote if self._remote is not None else self._session

    def remote_failed(self, exc: BackendError, job: str) -> None:
        """A remote request failed: counted for the status, and the user told once per kind."""
        message = self.remote.failed(exc, job)
        log.warning("remote engine: %s failed: %s", job, exc)
        if message is not None:
            self._report_error(message)

    def remote_answered(self) -> None:
        if self._remote is not None:
            self.remote.succeeded()

    def _remote_session(self, url: str) -> ScoringBackend | None:
        if self._remote is not None and self._remote.settings.url == url:
            return self._remote
        if self._remote is None and self._tried is not None and self._tried.name == url:
            return None  # it failed to open and was reported; a new setting tries again
        self.close()  # the local model (or the engine at another URL) goes first
        self._tried = ModelConfig(url, 0)
        try:
            from prism_code.llm.remote import RemoteSession, RemoteSettings

            # Prompts are built here with the default model's vocabulary: only that is read.
            self._remote = RemoteSession(RemoteSettings(url=url, timeout=REMOTE_TIMEOUT_S,
                                                        connect_timeout=REMOTE_CONNECT_TIMEOUT_S))
        except ModelNotInstalled as exc:
            self._fail(f"prism: the remote engine cannot be used: its prompts are built with the vocabulary "
                       f"of {exc.spec.name}, which is not installed. Install it with "
                       f"`{sys.executable} -m prism_code.cli setup --model {exc.spec.name}`, then restart the server")
        except (BackendError, ModelError, OSError, ValueError, RuntimeError) as exc:
            self._fail(f"prism: the remote engine cannot be used: {exc}")
        return self._remote

    def _open(self, config: ModelConfig) -> None:
        self._tried = config
        started = time.perf_counter()
        try:
            from prism_code.llm.runtime import LlamaSession

            self._session = LlamaSession.open(config.name, n_threads=config.threads,
                                              n_ctx=N_CTX, n_batch=N_BATCH)
        except ModelNotInstalled as exc:
            self._fail(f"prism: completions are off: the model {exc.spec.name} is not installed. "
                       f"Install it with `{sys.executable} -m prism_code.cli setup --model {exc.spec.name}` "
                       "(PRISM: Set Up prism-code does it for the extension's own environment), "
                       "then restart the server")
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
        if self._remote is not None:
            self._remote.close()
        self._session, self._remote, self._tried, self._threads = None, None, None, 0
        self.error = self.load_ms = None

    def status(self) -> dict[str, Any]:
        session, remote = self._session, self._remote
        counters = remote.counters if remote is not None else session.counters if session is not None else None
        return {
            "name": self.config.name if self.remote.url is None else f"remote {self.remote.url}",
            "path": str(session.model_path) if session is not None else None,
            "loaded": session is not None or remote is not None,
            # The engine every model job goes to when prism.remote.url is set: ok, failing, unknown.
            "remote": self.remote.to_json(),
            "loadMs": self.load_ms,
            "threads": self._threads or None,
            "error": self.error,
            # Every prefill (warm-ups too): what was evaluated, kept, or restored from state files.
            "tokens": None if counters is None else {
                "encoded": counters.encoded, "reused": counters.reused,
                "restored": counters.restored, "decoded": counters.decoded},
        }
