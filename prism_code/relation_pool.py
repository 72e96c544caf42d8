"""The relation pass over groups of files, in worker processes when the corpus is large.

Each fragment's row of Eqs. 7-8 depends only on the node strengths and the corpus, so a
pass splits freely. It is cut into groups of whole files: a file's functions and windows
ask for the strengths of the same nodes, so a group computes them once, and the group's
strength rows are dropped after it. Memory then holds one group's strengths, not every
node's (on sympy, 746k lines, the unbounded cache took the relation pass from 0.7 to
1.75 GB). On a large corpus the groups run in worker processes, one per core: the pass is
Dijkstra and sparse products in C, which hold the GIL, so threads would not overlap them.
Workers receive only arrays (`RelationJob`); results come back in group order, so the
pass writes exactly what one process would.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.fragments import Fragment
from prism_code.relations import Ranked, RelationCorpus, Strengths, corpus_batches

log = logging.getLogger(__name__)

# Rows per group: about 15 files of sympy. Small enough that a group's strength rows stay
# in the tens of MB, large enough that a group's files share most of their nodes' balls.
GROUP_ROWS = 4096
# Below this many rows the pass runs in this process: starting a worker costs about a
# second of imports and the job's transfer, more than a small pass takes (an edit's pass
# is a few hundred rows; a 100k-line repository's first pass about 15,000).
PARALLEL_MIN_ROWS = 20_000
# Never more workers than this, whatever the core count: each holds the job's arrays.
MAX_WORKERS = 4

Group = list[tuple[int, list[int]]]  # (corpus index, its rows in the group), rows ascending
GroupResult = list[tuple[int, list[int], Ranked]]  # (corpus index, batch of rows, ranked arrays)


@dataclass(frozen=True)
class RelationJob:
    """Everything a group's computation reads (picklable: no graph, no fragments)."""

    strengths: Strengths
    corpora: tuple[RelationCorpus, ...]
    context_weight: float
    top_k: int | None


def file_groups(corpora: Sequence[Sequence[Fragment]], rows: Sequence[Sequence[int]],
                size: int = GROUP_ROWS) -> list[Group]:
    """The rows of every corpus by file, in path order, cut into groups of about `size`
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
        if count >= size:
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
    if rows < PARALLEL_MIN_ROWS:
        return 1
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def ranked_groups(job: RelationJob, groups: list[Group], workers: int,
                  cancelled: CancelCheck | None = None) -> Iterator[GroupResult]:
    """Each group's result, in group order; cancelling stops between groups (Cancelled)."""
    done = 0
    if workers > 1 and len(groups) > 1:
        try:
            for result in _in_workers(job, groups, workers, cancelled):
                yield result
                done += 1
        except (BrokenProcessPool, OSError) as exc:
            # A worker killed (out of memory) or no process could start: finish here.
            log.warning("relation workers failed (%s); finishing the pass in this process", exc)
    for group in groups[done:]:
        _check(cancelled)
        yield run_group(job, group)


def _in_workers(job: RelationJob, groups: list[Group], workers: int,
                cancelled: CancelCheck | None) -> Iterator[GroupResult]:
    # Spawned, not forked: the language server has threads, and a fork copies their locks.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_receive, initargs=(job,))
    try:
        for result in pool.map(_run_received, groups):
            _check(cancelled)
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _check(cancelled: CancelCheck | None) -> None:
    if cancelled is not None and cancelled():
        raise Cancelled("relations cancelled; they are finished by the next update")


_received: RelationJob | None = None  # the job a worker process was started with


def _receive(job: RelationJob) -> None:
    global _received
    _received = job


def _run_received(group: Group) -> GroupResult:
    assert _received is not None, "a relation worker runs groups only after receiving its job"
    return run_group(_received, group)
