"""Choose find's long-description fusion weights on a tuning half of repoqa-multi; report them
on the other half, on RepoQA Python (never tuned on) and on the docstrings test split.

RepoQA's descriptions are numbered purpose / input / output / procedure lists. Each needle's
component scores are computed once by the library (`FunctionSearch.component_scores` with
`sections=True`: the four whole-description components and the section components), then a
grid of weight sets is searched as matrix products over the z-scores, so 15,625 sets over 160
needles cost seconds. The repositories of each language are split alternately (sorted by
name: first, third, ... tune; second, fourth, ... test), so a repository is never on both sides.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from prism_bench import docstrings_data, repoqa_data
from prism_bench.bootstrap import Interval, paired_difference
from prism_bench.fusion_tuning import GRID, ScoredQuery, collect
from prism_bench.repoqa_data import Haystack
from prism_bench.repoqa_retrieval import rank_of
from prism_code.retrieval.dense import Embedder
from prism_code.retrieval.fusion import LONG_QUERY_WEIGHTS, SECTION_COMPONENTS, fuse, fusion_weights, zscore
from prism_code.tasks.find_function import COMPONENTS

WHOLE = COMPONENTS  # the components of the whole description
WITH_SECTIONS = COMPONENTS + SECTION_COMPONENTS
LANGUAGES = repoqa_data.MULTI_LANGUAGES


def split_halves(haystacks: Sequence[Haystack]) -> tuple[list[Haystack], list[Haystack]]:
    """(tune, test): alternate repositories in name order."""
    ordered = sorted(haystacks, key=lambda h: h.repo)
    return ordered[0::2], ordered[1::2]


@dataclass
class Ranked:
    """The needles' ranks under one weight set, with the metrics read off them."""

    ranks: np.ndarray  # 1-based, one per query

    @property
    def top1(self) -> float:
        return float(np.mean(self.ranks == 1)) if self.ranks.size else 0.0

    @property
    def top10(self) -> float:
        return float(np.mean(self.ranks <= 10)) if self.ranks.size else 0.0

    @property
    def mrr10(self) -> float:
        return float(np.mean(np.where(self.ranks <= 10, 1.0 / self.ranks, 0.0))) if self.ranks.size else 0.0

    @property
    def hits(self) -> np.ndarray:
        return (self.ranks == 1).astype(np.float64)


def grid_ranks(queries: Sequence[ScoredQuery], components: Sequence[str], weights: np.ndarray) -> np.ndarray:
    """ranks[w, q]: query q's needle rank under weight set w (fuse's z-score sum, all sets at once).
    A query lacking a component (no sections) scores it as zeros, as the library's fuse skips it."""
    out = np.zeros((len(weights), len(queries)), dtype=np.int32)
    for j, q in enumerate(queries):
        n = len(q.components["bm25"])
        z = np.stack([zscore(q.components[c]) if c in q.components else np.zeros(n, np.float32)
                      for c in components])
        for start in range(0, len(weights), 2048):
            fused = weights[start:start + 2048] @ z
            out[start:start + 2048, j] = (fused > fused[:, q.target:q.target + 1]).sum(axis=1) + 1
    return out


def weight_sets(components: Sequence[str], grid: Sequence[float] = GRID) -> np.ndarray:
    """Every weight set on the grid up to scale, as rows (a set and its multiples rank alike)."""
    seen: set[tuple[float, ...]] = set()
    rows = []
    for values in itertools.product(grid, repeat=len(components)):
        top = max(values)
        key = tuple(round(v / top, 4) for v in values) if top else ()
        if top and key not in seen:
            seen.add(key)
            rows.append(values)
    return np.asarray(rows, dtype=np.float32)


def choose(tune: Sequence[ScoredQuery], components: Sequence[str]) -> dict[str, float]:
    """Best MRR@10 on the tuning queries; top-1, then fewer non-zero weights, break ties."""
    weights = weight_sets(components)
    ranks = grid_ranks(tune, components, weights)
    mrr = np.where(ranks <= 10, 1.0 / ranks, 0.0).mean(axis=1).round(6)
    top1 = (ranks == 1).mean(axis=1).round(6)
    best = np.lexsort((-(weights > 0).sum(axis=1), top1, mrr))[-1]
    return {c: float(w) for c, w in zip(components, weights[best])}


def rank_with(queries: Sequence[ScoredQuery], long: dict[str, float]) -> Ranked:
    """Ranks with `long` as the long-query weights of the length rule (short queries keep theirs)."""
    ranks = []
    for q in queries:
        # The library's own fuse, so a reported rank is the rank find gives.
        weights = fusion_weights(q.words, long=long)
        used = [(q.components[c], w) for c, w in weights.items() if w and c in q.components]
        ranks.append(rank_of(fuse(used), q.target))
    return Ranked(np.asarray(ranks, dtype=np.int64))


@dataclass
class LongTuning:
    candidates: dict[str, dict[str, float]]  # label -> weights ("fixed" is the library's)
    # benchmark -> label -> ranks
    table: dict[str, dict[str, Ranked]] = field(default_factory=dict)

    def difference(self, benchmark: str, label: str) -> Interval:
        """Paired top-1 difference of `label` over the fixed weights, with its 95% interval."""
        rows = self.table[benchmark]
        return paired_difference(rows[label].hits, rows["fixed"].hits)


def run(tune: Sequence[ScoredQuery], reports: dict[str, list[ScoredQuery]]) -> LongTuning:
    fixed = dict(LONG_QUERY_WEIGHTS)
    result = LongTuning({"fixed": fixed,
                         "whole, chosen": choose(tune, WHOLE),
                         "with sections, chosen": choose(tune, WITH_SECTIONS)})
    for benchmark, queries in {"repoqa-multi tune": list(tune), **reports}.items():
        result.table[benchmark] = {label: rank_with(queries, w) for label, w in result.candidates.items()}
    return result


def markdown(result: LongTuning, command: str) -> str:
    labels = list(result.candidates)
    lines = [f"Command: `{command}`", "",
             "Long-description weights (>= 60 words) chosen on **repoqa-multi tune** only: the first, "
             "third, fifth and seventh repository of each language in name order (160 needles); "
             "`test` is the other four of each language. RepoQA Python was never tuned on; the "
             "docstrings test split is short queries, which keep their weights. Grid "
             f"{list(GRID)} per component, best MRR@10 on the tuning half. Section components: "
             "`dense_card_purpose` (the purpose section against the card), `dense_code_procedure` "
             "(the procedure section against the source).", ""]
    lines += [f"- {label}: " + ", ".join(f"{c} {w:g}" for c, w in weights.items() if w)
              for label, weights in result.candidates.items()]
    lines += ["", "| benchmark | queries | " + " | ".join(f"{label} top-1 / MRR@10" for label in labels)
              + " | " + " | ".join(f"{label} - fixed, top-1 [95%]" for label in labels[1:]) + " |",
              "| --- | --- | " + " | ".join("---" for _ in labels) + " | "
              + " | ".join("---" for _ in labels[1:]) + " |"]
    for benchmark, rows in result.table.items():
        tag = " (tuning half)" if benchmark == "repoqa-multi tune" else ""
        cells = [f"{rows[label].top1:.3f} / {rows[label].mrr10:.3f}" for label in labels]
        diffs = [result.difference(benchmark, label).signed() for label in labels[1:]]
        lines.append(f"| {benchmark}{tag} | {rows['fixed'].ranks.size} | " + " | ".join(cells + diffs) + " |")
    return "\n".join(lines)


def chart(result: LongTuning, path: Path) -> Path:
    from prism_bench.charts import grouped_bars

    groups = [b.replace("repoqa-multi ", "multi\n").replace("RepoQA ", "RepoQA\n")
              .replace("docstrings ", "docstrings\n") for b in result.table]
    return grouped_bars(path, "Find, long descriptions: top-1, fixed weights vs chosen on repoqa-multi tune",
                        groups, {label: [rows[label].top1 for rows in result.table.values()]
                                 for label in result.candidates}, "top-1")


def collect_long(label: str, haystacks: Sequence[Haystack], cache_dir: Path, embedder: Embedder) -> list[ScoredQuery]:
    return collect(label, haystacks, cache_dir, embedder, sections=True)


def run_cli(command: str, chart_path: Path | None = None) -> str:
    """Collect every needle's components with the bench indexes, tune on the tuning half, report."""
    embedder = Embedder()
    cache = repoqa_data.default_cache_dir() / "indexes"
    tune: list[ScoredQuery] = []
    reports: dict[str, list[ScoredQuery]] = {}
    test_all: list[ScoredQuery] = []
    for language in LANGUAGES:
        tune_half, test_half = split_halves(repoqa_data.load_multi_haystacks(language))
        tune += collect_long(f"{language} tune", tune_half, cache, embedder)
        reports[f"repoqa-multi test {language}"] = collect_long(f"{language} test", test_half, cache, embedder)
        test_all += reports[f"repoqa-multi test {language}"]
    reports["repoqa-multi test"] = test_all
    reports["RepoQA python"] = collect_long("RepoQA python", repoqa_data.load_haystacks(), cache, embedder)
    reports["docstrings test"] = collect("docstrings test", docstrings_data.load_haystacks("test"),
                                         docstrings_data.default_cache_dir() / "indexes", embedder)
    result = run(tune, reports)
    body = markdown(result, command)
    if chart_path is not None:
        body += f"\n\n![Find fusion for long descriptions](images/{chart(result, chart_path).name})"
    return body
