"""Call edges and how prism's are scored against a reference's: overall, by function pair, by shape."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from prism_bench.callgraph_sites import SHAPES, UNKNOWN_SHAPE, DefKey


@dataclass(frozen=True, order=True)
class CallEdge:
    """caller calls callee at `line` (the call site's first line, in the caller's file).

    Equality is (caller, callee, line); `name`, the called name, only finds the site's shape.
    """

    caller: DefKey
    callee: DefKey
    line: int
    name: str = field(default="", compare=False)

    @property
    def pair(self) -> tuple[DefKey, DefKey]:
        return self.caller, self.callee

    def to_json(self) -> list[object]:
        return [*self.caller, *self.callee, self.line, self.name]

    @classmethod
    def from_json(cls, row: list) -> CallEdge:
        caller_path, caller_line, callee_path, callee_line, line, name = row
        return cls((str(caller_path), int(caller_line)), (str(callee_path), int(callee_line)), int(line), str(name))


@dataclass(frozen=True)
class Score:
    """Counts behind a precision and a recall.

    `prism_matched` of the `prism` edges are in the reference, `reference_matched` of the
    `reference` edges are in prism's. Over all edges the two matched counts are equal; by
    shape they need not be, as a shape's precision counts prism's edges of that shape and
    its recall the reference's.
    """

    prism: int
    reference: int
    prism_matched: int
    reference_matched: int

    @property
    def precision(self) -> float | None:
        return self.prism_matched / self.prism if self.prism else None

    @property
    def recall(self) -> float | None:
        return self.reference_matched / self.reference if self.reference else None

    def __add__(self, other: Score) -> Score:
        return Score(self.prism + other.prism, self.reference + other.reference,
                     self.prism_matched + other.prism_matched, self.reference_matched + other.reference_matched)


EMPTY = Score(0, 0, 0, 0)


def _score(prism: set, reference: set) -> Score:
    both = len(prism & reference)
    return Score(len(prism), len(reference), both, both)


def edge_score(prism: Iterable[CallEdge], reference: Iterable[CallEdge]) -> Score:
    """Precision and recall over edges (caller, callee, line)."""
    return _score(set(prism), set(reference))


def pair_score(prism: Iterable[CallEdge], reference: Iterable[CallEdge]) -> Score:
    """Precision and recall over function pairs (caller, callee), lines ignored."""
    return _score({e.pair for e in prism}, {e.pair for e in reference})


def shape_scores(prism: Iterable[CallEdge], reference: Iterable[CallEdge],
                 shape_of: Callable[[CallEdge], str]) -> dict[str, Score]:
    """Score per call shape: a shape's precision over prism's edges of that shape, its recall
    over the reference's. Every shape of SHAPES is present (empty ones score nothing); an edge
    whose site was not found is counted under UNKNOWN_SHAPE."""
    prism_set, reference_set = set(prism), set(reference)
    counts = {shape: [0, 0, 0, 0] for shape in (*SHAPES, UNKNOWN_SHAPE)}
    for edge in prism_set:
        row = counts[shape_of(edge)]
        row[0] += 1
        row[2] += edge in reference_set
    for edge in reference_set:
        row = counts[shape_of(edge)]
        row[1] += 1
        row[3] += edge in prism_set
    return {shape: Score(*row) for shape, row in counts.items()}
