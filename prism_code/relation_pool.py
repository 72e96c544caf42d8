"""The relation pass over groups of files, in worker processes when the corpus is large.

Each fragment's row of Eqs. 7-8 depends only on the node strengths and the corpus, so a
pass splits freely. It is cut into groups of whole files: a file's functions and windows
ask for the strengths of the same nodes, so a group computes them once, and the group's
strength rows are dropped after it. Memory then holds one group's strengths, not every
node's (on sympy, 746k lines, the unbounded cache took the relation pass from 0.7 to
1.75 GB). On a large corpus the groups run in worker processes, one per core: the pass is
Dijkstra and sparse products in C, which hold the GIL, so threads would not overlap them.
Workers receive only arrays (`RelationJob`); results come back in group order, so the
pass writes exactly what one process would (worker_pool).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.fragments import Fragment
from prism_code.relations import Ranked, RelationCorpus, Strengths, corpus_batches
from prism_code.worker_pool import ordered_map, usable_cores

# Rows per group: about 15 files of sympy. Small enough that a group's strength rows stay
# in the tens of MB, large enough that a group's files share most of their nodes' balls.
GROUP_ROWS = 4096
# Below this many rows the pass runs in this process: starting a worker costs about a
# second of imports and the job's transfer, more than a small pass takes (an edit's pass
# is a few hundred rows; a 100k-line repository's first pass about 15,000).
PARALLEL_MIN_ROWS = 20_000

Group = list[tuple[int, list[int]]]  # (corpus index, its rows in the group), rows ascending
GroupResult = list[tuple[int, list[int], Ranked]]  # (corpus index, batch of rows, ranked arrays)


@dataclass(frozen=True)
class RelationJob:
    """Everything a group's computation reads (picklable: no graph, no fragments)."""

    strengths: Strengths
    corpora: tuple[RelationCorpus, ...]
    context_weight: float
    top_k: int | None


def file_groups(corpora: Sequence[Sequence[Fragment]], rows: Sequence[Sequence[int]]) -> list[Group]:
    """The rows of every corpus by file, in path order, cut into groups of about GROUP_ROWS
    rows; a file is never split across groups."""
    by_path: dict[str, list[tuple[int, int]]] = {}
    for k, (corpus, wanted) in enumerate(zip(corpora, rows)):
        for i in wanted:
            by_path.setdefault(corpus[i].path, []).append((k, i))
    groups: list[Group] = []
    current: dict[int, list[int]] = {}
    count = 0
    for path in sorted(by_path):
        for k, i in by_path[path]:
            current.setdefault(k, []).append(i)
        count += len(by_path[path])
        if count >= GROUP_ROWS:
            groups.append(_sorted_group(current))
            current, count = {}, 0
    if current:
        groups.append(_sorted_group(current))
    return groups


def _sorted_group(rows_by_corpus: dict[int, list[int]]) -> Group:
    return [(k, sorted(rows)) for k, rows in sorted(rows_by_corpus.items())]


def run_group(job: RelationJob, group: Group) -> GroupResult:
    job.strengths.forget()
    return [(k, batch, ranked)
            for k, rows in group
            for batch, ranked in corpus_batches(job.strengths, job.corpora[k], rows, job.context_weight,
                                                job.top_k)]


def worker_count(rows: int) -> int:
    """Processes for a pass of `rows` rows: one per usable core on a large pass, else 1."""
    return usable_cores() if rows >= PARALLEL_MIN_ROWS else 1


def ranked_groups(job: RelationJob, groups: list[Group], workers: int,
                  cancelled: CancelCheck | None = None) -> Iterator[GroupResult]:
    """Each group's result, in group order; cancelling stops between groups (Cancelled)."""
    yield from ordered_map(_run_received, groups, workers, cancelled, _receive, (job,))
    if cancelled is not None and cancelled():
        raise Cancelled("relations cancelled; they are finished by the next update")


_received: RelationJob | None = None  # the job this process was given


def _receive(job: RelationJob) -> None:
    global _received
    _received = job


def _run_received(group: Group) -> GroupResult:
    assert _received is not None, "a relation group runs only after its job was received"
    return run_group(_received, group)
