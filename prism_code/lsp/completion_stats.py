"""The completion counters the server reports in its status (the debounce is in completion_debounce)."""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prism_code.tasks.complete import CompletionResult


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
