"""Token accounting of a PRISM pass, in the columns of the paper's Table 3.

Per call the runtime reports tokens reused from the KV cache (the longest common
prefix with what it holds), tokens encoded now and tokens decoded. Net tokens are the
encoded ones, what had to be evaluated; cache hit % = reused / (reused + encoded);
cost index = (net + 3 x decoded) / 1e6, the paper's input/output price ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class TokenStats(Protocol):
    # Read-only: GenerationStats and PrefillStats are frozen.
    @property
    def reused(self) -> int: ...
    @property
    def encoded(self) -> int: ...


@dataclass
class Accounting:
    calls: int = 0
    reused: int = 0
    encoded: int = 0
    decoded: int = 0
    prefill_ms: float = 0.0
    decode_ms: float = 0.0

    def add(self, stats: TokenStats | Accounting) -> None:
        """Count one call's GenerationStats or PrefillStats, or merge another Accounting."""
        if isinstance(stats, Accounting):
            self.calls += stats.calls
            self.prefill_ms += stats.prefill_ms
        else:
            self.calls += 1
            self.prefill_ms += getattr(stats, "prefill_ms", getattr(stats, "ms", 0.0))
        self.reused += stats.reused
        self.encoded += stats.encoded
        self.decoded += getattr(stats, "decoded", 0)
        self.decode_ms += getattr(stats, "decode_ms", 0.0)

    @property
    def total(self) -> int:
        """Prompt tokens seen, cached or not."""
        return self.reused + self.encoded

    @property
    def net(self) -> int:
        return self.encoded

    @property
    def cache_hit(self) -> float:
        return self.reused / self.total if self.total else 0.0

    @property
    def cost_index(self) -> float:
        return (self.net + 3 * self.decoded) / 1e6

    def as_row(self) -> dict[str, float | int]:
        return {
            "calls": self.calls,
            "total_tokens": self.total,
            "reused": self.reused,
            "net_tokens": self.net,
            "decoded": self.decoded,
            "cache_hit_pct": round(100 * self.cache_hit, 1),
            "cost_index": round(self.cost_index, 6),
            "seconds": round((self.prefill_ms + self.decode_ms) / 1000, 2),
        }
