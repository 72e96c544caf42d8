"""How the remote engine (`prism.remote.url`) is doing, for the status and the user.

A remote engine fails in ways the local model does not: it is down, slow, answers with an
error or with something that is not JSON, or lacks a feature a task needs (prompt
log-probabilities). Every failure is counted and the last one kept for `prism.status`;
the user is told once per kind of failure, not on every keystroke, and told again only
after a success in between. Messages name the URL and the reason, never the API key
(no request error carries it).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from prism_code.llm.backend import BackendError

# What a failure's reason says, and the kind the status reports (first match wins).
_KINDS = (
    (("connection refused", "cannot connect", "cannot resolve", "no connection within"), "unreachable"),
    (("no answer within",), "timeout"),
    (("log-probabilities",), "no-logprobs"),
    (("malformed JSON", "expected a JSON object", "no completion choices", "closed the stream"), "malformed"),
    (("HTTP 5",), "server-error"),
    (("HTTP 4",), "refused"),
)


def failure_kind(exc: BackendError) -> str:
    text = str(exc)
    return next((kind for needles, kind in _KINDS if any(n in text for n in needles)), "failed")


@dataclass
class RemoteStatus:
    """Updated on the model thread, read on the event loop (a lock keeps each read whole)."""

    url: str | None = None
    ok: int = 0
    failures: int = 0
    kind: str | None = None  # of the last failure, until the next success
    error: str | None = None
    job: str | None = None  # completion, find, notes
    at: float | None = None  # wall-clock time of the last failure
    _told: str | None = None  # the kind the user was last told about
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self, url: str | None) -> None:
        with self._lock:
            self.url, self.ok, self.failures = url, 0, 0
            self.kind = self.error = self.job = self._told = None
            self.at = None

    def failed(self, exc: BackendError, job: str) -> str | None:
        """Record a failure; the message to show the user, or None when they were told already."""
        kind = failure_kind(exc)
        with self._lock:
            self.failures += 1
            self.kind, self.error, self.job, self.at = kind, str(exc), job, time.time()
            if self._told == kind:
                return None
            self._told = kind
        return f"prism: the remote engine failed ({kind}) during {job}: {exc}. " + _FALLBACK.get(job, "")

    def succeeded(self) -> None:
        with self._lock:
            self.ok += 1
            self.kind = self.error = self.job = self._told = None

    def to_json(self) -> dict[str, Any] | None:
        if self.url is None:
            return None
        with self._lock:
            return {"url": self.url, "state": "failing" if self.kind else "ok" if self.ok else "unknown",
                    "ok": self.ok, "failures": self.failures, "kind": self.kind, "error": self.error,
                    "job": self.job, "at": self.at}


_FALLBACK = {
    "completion": "Completions stay empty until it answers again.",
    "find": "Find showed retrieval's list instead.",
    "notes": "The notes pass stopped; it tries again after the next edit.",
}
