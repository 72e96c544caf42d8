"""How fast this machine runs the model, measured beside every model benchmark.

Latency targets are seconds on "2 cores", but two 2-core hosts differ (the same build
prefilled 220 tokens/s on one and 95 on another). Each model benchmark therefore states
the prefill and decode speed it ran at, so figures from different sessions can be set
side by side; token counts, which do not depend on the host, are reported too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import prism_code
from prism_code.llm.runtime import LlamaSession

# Fixed text, so every run measures the same tokens: the library's own source.
_SAMPLE = Path(prism_code.__file__).resolve().parent / "tasks" / "find_prism.py"


@dataclass(frozen=True)
class MachineSpeed:
    prefill_tokens_per_s: float
    decode_ms_per_token: float
    threads: int

    def sentence(self) -> str:
        return (f"Machine speed with this model ({self.threads} thread(s), measured just before the run): "
                f"prefill {self.prefill_tokens_per_s:.0f} tokens/s, decode {self.decode_ms_per_token:.0f} ms/token.")


def measure(session: LlamaSession, prefill_tokens: int = 256, decode_tokens: int = 32) -> MachineSpeed:
    """Prefill a fixed text from an empty cache, then decode greedily; the cache is left empty."""
    tokens = session.tokenize_text(_SAMPLE.read_text())[:prefill_tokens]
    session.reset()
    started = time.perf_counter()
    session.prefill(tokens)
    prefill_s = time.perf_counter() - started
    gen = session.generate(tokens, max_tokens=decode_tokens, temperature=0.0)
    session.reset()
    per_token = gen.stats.decode_ms / max(gen.stats.decoded, 1)
    return MachineSpeed(len(tokens) / prefill_s, per_token, session.n_threads)
