"""Choose find's short-query fusion weights on a tuning split; report them on data they never saw.

Every query's component scores (BM25 over the body, BM25 over the name field, MiniLM over
the body and over the card) are computed once; a weight set then only re-fuses arrays, so a
grid of hundreds of weight sets costs seconds. The grid is searched on the short-description
benchmark's tuning split only. The chosen weights apply to short queries (the length rule of
`fusion.fusion_weights`); they are reported on the docstrings test split, on RepoQA Python and
on the other RepoQA languages beside the fixed weights used for every query before.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from prism_bench import docstrings_data, repoqa_data
from prism_bench.repoqa_data import Haystack
from prism_bench.repoqa_retrieval import haystack_search, rank_of, target_row
from prism_code.retrieval.dense import Embedder
from prism_code.retrieval.fusion import (
    LONG_QUERY_WEIGHTS,
    LONG_QUERY_WORDS,
    SHORT_QUERY_WORDS,
    fuse,
    fusion_weights,
)
from prism_code.tasks.find_function import COMPONENTS

GRID = (0.0, 0.5, 1.0, 1.5, 2.0)
BEFORE = {c: LONG_QUERY_WEIGHTS[c] for c in COMPONENTS}  # every query had these before the length rule


@dataclass
class ScoredQuery:
    """One query's component scores over its haystack's functions, and the right row."""

    benchmark: str
    components: dict[str, np.ndarray]
    target: int
    words: int


@dataclass
class Metrics:
    top1: float
    top10: float
    mrr10: float
    n: int


@dataclass
class TuningResult:
    chosen: dict[str, float]
    tuned_on: str
    # benchmark -> label ("before", "chosen", ...) -> metrics
    table: dict[str, dict[str, Metrics]] = field(default_factory=dict)


def collect(benchmark: str, haystacks: Sequence[Haystack], cache_dir: Path, embedder: Embedder,
            sections: bool = False) -> list[ScoredQuery]:
    """Component scores of every needle the index locates (a needle it cannot place is a parser
    matter the repoqa bench reports, not a fusion one); `sections`: a structured description's
    section components too."""
    out: list[ScoredQuery] = []
    for haystack in haystacks:
        with haystack_search(haystack, cache_dir, embedder) as search:
            fragments = search.corpus.fragments
            for needle in haystack.needles:
                row = target_row(fragments, needle, overlap=haystack.language != "python")
                if row is None:
                    continue
                parts = search.component_scores(needle.description, sections)
                out.append(ScoredQuery(benchmark, parts, row, len(needle.description.split())))
    return out


def fused_rank(query: ScoredQuery, short: dict[str, float]) -> int:
    """The needle's rank with `short` as the short-query weights of the length rule."""
    weights = fusion_weights(query.words, short)
    used = [(query.components[c], w) for c, w in weights.items() if w and c in query.components]
    return rank_of(fuse(used), query.target) if used else len(query.components["bm25"])


def evaluate(queries: Iterable[ScoredQuery], weights: dict[str, float]) -> Metrics:
    ranks = [fused_rank(q, weights) for q in queries]
    if not ranks:
        return Metrics(0.0, 0.0, 0.0, 0)
    n = len(ranks)
    return Metrics(sum(r == 1 for r in ranks) / n, sum(r <= 10 for r in ranks) / n,
                   sum(1 / r for r in ranks if r <= 10) / n, n)


def weight_grid(components: Sequence[str] = COMPONENTS, grid: Sequence[float] = GRID) -> list[dict[str, float]]:
    """Every weight set on the grid, up to scale (a set and its multiples rank alike)."""
    seen: set[tuple[float, ...]] = set()
    out = []
    for values in itertools.product(grid, repeat=len(components)):
        top = max(values)
        if top == 0:
            continue
        key = tuple(round(v / top, 4) for v in values)
        if key not in seen:
            seen.add(key)
            out.append(dict(zip(components, values)))
    return out


def choose(tune: Sequence[ScoredQuery], candidates: Sequence[dict[str, float]]) -> dict[str, float]:
    """The weights with the best MRR@10 on the tuning queries; top-1, then fewer non-zero
    weights, break ties (a simpler fusion wins a tie)."""
    def key(weights: dict[str, float]) -> tuple[float, float, int]:
        m = evaluate(tune, weights)
        return (round(m.mrr10, 6), round(m.top1, 6), -sum(1 for w in weights.values() if w))
    return max(candidates, key=key)


def run(tune: Sequence[ScoredQuery], reports: dict[str, list[ScoredQuery]], tuned_on: str,
        candidates: Sequence[dict[str, float]] | None = None) -> TuningResult:
    chosen = choose(tune, candidates or weight_grid())
    result = TuningResult(chosen, tuned_on)
    for benchmark, queries in {tuned_on: list(tune), **reports}.items():
        result.table[benchmark] = {"before": evaluate(queries, BEFORE), "chosen": evaluate(queries, chosen)}
    return result


def markdown(result: TuningResult, command: str) -> str:
    weights = ", ".join(f"{c} {w:g}" for c, w in result.chosen.items())
    before = ", ".join(f"{c} {w:g}" for c, w in BEFORE.items())
    lines = [f"Command: `{command}`", "",
             f"Short-query weights chosen on **{result.tuned_on}** only (grid {list(GRID)} per component, "
             f"best MRR@10): {weights}. They apply up to {SHORT_QUERY_WORDS} words, the fixed weights from "
             f"{LONG_QUERY_WORDS} words, blended between. Before, every query had the fixed ones: {before}.", "",
             "| benchmark | queries | before top-1 | before MRR@10 | chosen top-1 | chosen top-10 | chosen MRR@10 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for benchmark, rows in result.table.items():
        b, c = rows["before"], rows["chosen"]
        tag = " (tuning split)" if benchmark == result.tuned_on else ""
        lines.append(f"| {benchmark}{tag} | {c.n} | {b.top1:.3f} | {b.mrr10:.3f} | {c.top1:.3f} | "
                     f"{c.top10:.3f} | {c.mrr10:.3f} |")
    return "\n".join(lines)


def chart(result: TuningResult, path: Path) -> Path:
    from prism_bench.charts import grouped_bars

    groups = [b.replace("RepoQA ", "RepoQA\n").replace("docstrings ", "docstrings\n") for b in result.table]
    return grouped_bars(path, "Find, retrieval only: top-1 before and with the weights chosen on docstrings tune",
                        groups, {label: [rows[label].top1 for rows in result.table.values()]
                                 for label in ("before", "chosen")}, "top-1")


def run_cli(languages: Sequence[str], command: str, chart_path: Path | None = None) -> str:
    """Collect every benchmark's component scores with the indexes the benches keep, tune, report."""
    embedder = Embedder()
    docstrings_cache = docstrings_data.default_cache_dir() / "indexes"
    tune = collect("docstrings tune", docstrings_data.load_haystacks("tune"), docstrings_cache, embedder)
    reports = {"docstrings test": collect("docstrings test", docstrings_data.load_haystacks("test"),
                                          docstrings_cache, embedder)}
    repoqa_cache = repoqa_data.default_cache_dir() / "indexes"
    for language in languages:
        haystacks = (repoqa_data.load_haystacks() if language == "python"
                     else repoqa_data.load_multi_haystacks(language))
        reports[f"RepoQA {language}"] = collect(f"RepoQA {language}", haystacks, repoqa_cache, embedder)
    result = run(tune, reports, "docstrings tune")
    body = markdown(result, command)
    if chart_path is not None:
        body += f"\n\n![Find fusion before and after tuning](images/{chart(result, chart_path).name})"
    return body
