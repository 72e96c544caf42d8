"""Anytime find: the rankings a model strategy passes through on its way to the answer.

Retrieval's ranking is a usable answer at once, and the model then takes seconds per
candidate on a CPU. So a model strategy reports a ranking first with retrieval's
evidence, then a new one each time the model has read a candidate (that candidate's
detail becomes the model's), and last the final one, which is exactly what `run_find`
returns. The CLI prints them as JSON lines (`find --stream`); the language server sends
them as `prism/findUpdate` notifications.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from prism_code.tasks.find_function import FoundFunction

Evidence = Literal["retrieval", "model"]  # whose evidence a result's reason gives


@dataclass(frozen=True)
class Ranking:
    results: list[FoundFunction]  # best first, as run_find returns them
    evidence: list[Evidence]  # per result
    scored: int  # candidates the model has read so far
    total: int  # candidates it will read
    done: bool  # the final ranking: equal to run_find's results

    @property
    def progress(self) -> str:
        return "done" if self.done else f"scored {self.scored} of {self.total}"

    def to_json(self) -> dict[str, Any]:
        """One line of `find --stream`: the results in find's JSON contract, plus progress."""
        return {"done": self.done, "scored": self.scored, "total": self.total, "progress": self.progress,
                "results": [r.to_json() for r in self.results], "evidence": list(self.evidence)}


RankingListener = Callable[[Ranking], None]


@dataclass
class RankingStream:
    """What a strategy reports rankings through; remembers which results the model has read,
    so the final ranking says so too."""

    listener: RankingListener | None
    total: int = 0
    _modelled: set[str] = field(default_factory=set)
    _scored: int = 0

    def retrieval(self, results: Sequence[FoundFunction], total: int) -> None:
        """Retrieval's ranking, before the model reads anything; `total` candidates will be read."""
        self.total = total
        self._send(results, set(), 0, done=False)

    def scored(self, results: Sequence[FoundFunction], modelled: set[str], scored: int) -> None:
        """A provisional ranking: `modelled` holds the keys whose reason is now the model's."""
        self._send(results, modelled, scored, done=False)

    def final(self, results: Sequence[FoundFunction], modelled: set[str] | None = None) -> None:
        self._send(results, self._modelled if modelled is None else modelled, self.total, done=True)

    def _send(self, results: Sequence[FoundFunction], modelled: set[str], scored: int, done: bool) -> None:
        self._modelled, self._scored = set(modelled), scored
        if self.listener is not None:
            evidence: list[Evidence] = ["model" if r.key in modelled else "retrieval" for r in results]
            self.listener(Ranking(list(results), evidence, scored, self.total, done))
