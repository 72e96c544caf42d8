"""Progress events of a find-by-description run, shared by every strategy.

The CLI prints them, the language server turns them into `$/progress` reports and the
benchmarks time the first one; a strategy only has to say what happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Strategy = Literal["retrieval", "prism", "wim", "long-context"]  # the find strategies
# "expansion": the model's guess at a sentence's code, searched with it; "step": a PRISM chunk;
# "likelihood": prism's scoring of candidate bodies; "margin": a WiM segment
Stage = Literal["retrieval", "expansion", "step", "likelihood", "margin", "answer"]


@dataclass(frozen=True)
class FindEvent:
    strategy: Strategy
    stage: Stage
    message: str  # one line a user can read, e.g. "margin 3/5: relevant: parse_args"
    done: int  # steps finished so far
    total: int  # steps this run will take at most


FindListener = Callable[[FindEvent], None]
