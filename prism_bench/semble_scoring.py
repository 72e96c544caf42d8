"""semble's scoring rule (its benchmarks/run_benchmark.py, data.py, metrics.py), exactly.

A result is (path relative to the indexed folder, start_line, end_line), 1-based inclusive.
A result matches a target when the paths match by semble's rule (equal, or either ends with
"/" + the other) and, for a target with a line span, the lines overlap. NDCG@10 has binary
gains over the distinct first-match ranks, and the ideal counts every annotated target.
A repository's score is the mean over its queries, a language's the mean over its
repositories, a category's the mean over repositories of each one's category mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean

from prism_bench.semble_data import Target

Result = tuple[str, int, int]  # (path, start_line, end_line)

CUTOFF = 10  # NDCG@10: semble scores the first ten results


def path_matches(result_path: str, target_path: str) -> bool:
    """semble's rule. The reverse clause lets `response.js` (relative to the indexed `lib/`)
    match `lib/response.js`; it also lets a top-level `app.py` match `sansio/app.py`."""
    return (result_path == target_path or result_path.endswith("/" + target_path)
            or target_path.endswith("/" + result_path))


def lines_overlap(start: int, end: int, other_start: int, other_end: int) -> bool:
    return start <= other_end and end >= other_start


def result_matches(result: Result, target: Target) -> bool:
    path, start, end = result
    if not path_matches(path, target.path):
        return False
    if target.start_line is None or target.end_line is None:
        return True
    return lines_overlap(start, end, target.start_line, target.end_line)


def target_rank(results: Sequence[Result], target: Target) -> int | None:
    """The 1-based position of the first of the first ten results matching `target`."""
    return next((rank for rank, r in enumerate(results[:CUTOFF], 1) if result_matches(r, target)), None)


def ndcg_at_10(results: Sequence[Result], targets: Sequence[Target]) -> float:
    """NDCG@10 of one query. Two targets first matched by the same result count its
    position once; targets no result can reach still count in the ideal."""
    ranks = {rank for t in targets if (rank := target_rank(results, t)) is not None}
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(CUTOFF, len(targets)) + 1))
    return sum(1 / math.log2(r + 1) for r in ranks) / ideal if ideal else 0.0


def mean_or_zero(values: Iterable[float]) -> float:
    values = list(values)
    return fmean(values) if values else 0.0


def group_means(values: Mapping[str, float], group_of: Mapping[str, str]) -> dict[str, float]:
    """Mean of the values (one per repository) within each group (a language), by group name."""
    groups: dict[str, list[float]] = {}
    for name, value in values.items():
        groups.setdefault(group_of[name], []).append(value)
    return {group: fmean(vs) for group, vs in sorted(groups.items())}


def category_means(per_repo: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """semble's per-category figure: per repository its mean for the category (given), then
    the mean over the repositories that have queries of that category."""
    by_category: dict[str, list[float]] = {}
    for categories in per_repo.values():
        for category, value in categories.items():
            by_category.setdefault(category, []).append(value)
    return {category: fmean(vs) for category, vs in sorted(by_category.items())}


def repo_category_means(scores: Sequence[tuple[str, float]]) -> dict[str, float]:
    """One repository's mean NDCG per category from its (category, NDCG) query scores."""
    by_category: dict[str, list[float]] = {}
    for category, value in scores:
        by_category.setdefault(category, []).append(value)
    return {category: fmean(vs) for category, vs in sorted(by_category.items())}
