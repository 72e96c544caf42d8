"""What finished completions teach the server: how long to debounce, and the status counters."""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


@dataclass
class CompletionStats:
    requests: int = 0  # LSP requests, both kinds
    completed: int = 0  # generations whose answer was sent
    cancelled: int = 0  # generations stopped or skipped: superseded or cancelled by the client
    prompt_tokens: int = 0
    reused_tokens: int = 0  # kept in the KV cache, or restored from a state file
    restored_tokens: int = 0
    typed_through: int = 0  # answered from the suggestion the user was typing, without the model
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=1000))

    def observe(self, result: CompletionResult) -> None:
        self.completed += 1
        self.latencies_ms.append(result.latency_ms)
        if result.typed_through:  # no prompt went to the model
            self.typed_through += 1
            return
        self.prompt_tokens += result.prompt_tokens
        self.reused_tokens += result.reused
        self.restored_tokens += result.restored

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "completed": self.completed,
            "cancelled": self.cancelled,
            "p50Ms": round(statistics.median(self.latencies_ms), 1) if self.latencies_ms else None,
            "tokensReusedPercent": (round(100 * self.reused_tokens / self.prompt_tokens, 1)
                                    if self.prompt_tokens else None),
            "tokensRestored": self.restored_tokens,
            "typedThrough": self.typed_through,
        }
