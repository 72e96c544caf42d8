"""What every model backend and its callers share, without loading llama.cpp.

The local session (runtime.py) and the remote one (remote.py) return these, and the
function memory and the tasks read them; importing this module loads no native library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar


class ContextOverflow(ValueError):
    pass


@dataclass(frozen=True)
class PrefillStats:
    prompt_tokens: int
    reused: int  # kept from the KV cache (longest common prefix)
    encoded: int  # evaluated now
    ms: float
    cancelled: bool = False


@dataclass(frozen=True)
class GenerationStats:
    prompt_tokens: int
    reused: int
    encoded: int
    decoded: int  # tokens sampled
    prefill_ms: float
    decode_ms: float
    # "stop" | "eos" | "length" | "cancelled"; a remote server may pass on its own reason
    finish_reason: str


@dataclass(frozen=True)
class Generation:
    text: str
    tokens: list[int]
    stats: GenerationStats


@dataclass(frozen=True)
class Scored:
    logprobs: list[float]  # one per continuation token
    reused: int
    encoded: int
    cancelled: bool = False
    ms: float = 0.0


@dataclass
class SessionCounters:
    """Cumulative token accounting (the PRISM paper's encoded / reused / decoded)."""

    encoded: int = 0
    reused: int = 0
    decoded: int = 0
    restored: int = 0  # tokens brought back from state files instead of being evaluated
    prefill_ms: float = 0.0
    decode_ms: float = 0.0

    @property
    def cache_hit(self) -> float:
        total = self.encoded + self.reused
        return self.reused / total if total else 0.0

    @property
    def cost_index(self) -> float:
        return (self.encoded + 3 * self.decoded) / 1e6

    def snapshot(self) -> SessionCounters:
        return replace(self)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


_Sub = TypeVar("_Sub", contravariant=True)
_Stop = TypeVar("_Stop")


class _Searchable(Protocol[_Sub]):
    """str, bytes or bytearray (a generated text grows in one): what first_stop searches."""

    def find(self, sub: _Sub, start: int, /) -> int: ...


def first_stop(text: _Searchable[_Stop], stops: Sequence[_Stop], start: int = 0) -> int | None:
    """Where the earliest of `stops` begins in `text` at or after `start`; an empty stop never matches.

    Every backend, and whatever replays a generation, cuts its text here.
    """
    hits = [i for s in stops if s and (i := text.find(s, start)) >= 0]
    return min(hits) if hits else None
