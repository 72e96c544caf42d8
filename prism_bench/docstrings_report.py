"""The docstrings benchmark's own breakdown of retrieval ranks: by split, project and query length.

``repoqa_retrieval.markdown`` reports every scorer over all needles; short queries are
what this benchmark adds, so here the fused scorer's ranks are split by how many words
the query has and by project, each for the tune and the test split.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from prism_bench.repoqa_data import Haystack, Needle, recall_metrics
from prism_bench.repoqa_retrieval import FIND_LABEL, RepoQAResult
from prism_bench.report import table

# (label, fewest words, most words)
WORD_BUCKETS: tuple[tuple[str, int, int], ...] = (("1-8 words", 1, 8), ("9-15 words", 9, 15),
                                                  ("16+ words", 16, 10**9))


@dataclass(frozen=True)
class Ranked:
    needle: Needle
    project: str
    split: str
    rank: int | None  # 1-based; None when the function was not located in the index


def ranked(result: RepoQAResult, haystacks: Sequence[Haystack], splits: dict[str, str],
           scorer: str = "fused") -> list[Ranked]:
    """Each needle with its rank: ``run`` appends ranks in haystack order, then needle order."""
    pairs = [(h, n) for h in haystacks for n in h.needles]
    ranks = result.ranks[scorer]
    if len(ranks) != len(pairs):
        raise ValueError(f"{len(ranks)} ranks for {len(pairs)} needles")
    return [Ranked(n, h.repo, splits[n.instance_id], r) for (h, n), r in zip(pairs, ranks, strict=True)]


def bucket_of(query: str) -> str:
    words = len(query.split())
    return next(label for label, low, high in WORD_BUCKETS if low <= words <= high)


def _row(label: str, rows: Sequence[Ranked]) -> list[object]:
    m = recall_metrics([r.rank for r in rows])
    return [label, len(rows), m["recall@1"], m["recall@10"], m["mrr@10"]]


def breakdown(rows: Sequence[Ranked], split: str) -> str:
    """Two tables for one split (or "all"): per project, then per query-length bucket."""
    chosen = [r for r in rows if split == "all" or r.split == split]
    if not chosen:
        return f"No needles in split {split}."
    header = ["", "needles", "top-1", "top-10", "MRR@10"]
    projects = sorted({r.project for r in chosen})
    by_project = [_row(p, [r for r in chosen if r.project == p]) for p in projects]
    by_project.append(_row("all", chosen))
    by_length = [_row(label, [r for r in chosen if bucket_of(r.needle.description) == label])
                 for label, _, _ in WORD_BUCKETS
                 if any(bucket_of(r.needle.description) == label for r in chosen)]
    return "\n".join([f"Split `{split}`, fused scorer:", "", table(["project", *header[1:]], by_project), "",
                      table(["query length", *header[1:]], by_length)])


def as_returned(result: RepoQAResult, haystacks: Sequence[Haystack], splits: dict[str, str],
                shown: Sequence[str]) -> str:
    """The fused score's ranks beside what find returns (its ranking signals, files grouped), per split."""
    fused, returned = ranked(result, haystacks, splits), ranked(result, haystacks, splits, FIND_LABEL)
    rows = [_row(f"{label}, {s}", [r for r in chosen if r.split == s])
            for s in shown for label, chosen in (("fused score", fused), (FIND_LABEL, returned))]
    return table(["scorer, split", "needles", "top-1", "top-10", "MRR@10"], rows)


def markdown(result: RepoQAResult, haystacks: Sequence[Haystack], splits: dict[str, str], split: str) -> str:
    rows = ranked(result, haystacks, splits)
    shown = ["tune", "test"] if split == "all" else [split]
    parts = [breakdown(rows, s) for s in shown]
    if result.ranks.get(FIND_LABEL):
        parts.append(as_returned(result, haystacks, splits, shown))
    return "\n\n".join(parts)


def run_cli(args: argparse.Namespace, command: str) -> tuple[str, str]:
    """`prism-code bench docstrings`: (markdown, section name for --write)."""
    from prism_bench import docstrings_data, repoqa_retrieval

    haystacks = docstrings_data.load_haystacks(args.split, args.cache_dir)
    index_cache = (args.cache_dir or docstrings_data.default_cache_dir()) / "indexes"
    total = sum(len(h.needles) for h in haystacks)
    intro = (f"{total} functions in {len(haystacks)} PyPI projects, each searched by the first paragraph of "
             f"its docstring, with every sampled docstring removed from the haystack (split `{args.split}`).")
    if args.expand:
        from prism_bench import expansion_bench

        expanded = expansion_bench.run(haystacks, index_cache, docstrings_data.task_splits(), args.model,
                                       args.threads)
        return intro + "\n\n" + expansion_bench.markdown(expanded, command), \
            f"docstrings-expansion-{args.model}-{args.split}"
    if args.strategy == "retrieval":
        from prism_code.retrieval.dense import Embedder

        result = repoqa_retrieval.run(haystacks, index_cache, Embedder())
        subject = f"{total} docstring queries in {len(haystacks)} PyPI projects"
        body = "\n\n".join([repoqa_retrieval.markdown(result, command, subject), intro,
                            markdown(result, haystacks, docstrings_data.task_splits(), args.split)])
        return body, f"docstrings-retrieval-{args.split}"
    from prism_bench import repoqa_strategies

    outcome = repoqa_strategies.run(haystacks, index_cache, args.strategy, args.model, limit=args.limit,
                                    threads=args.threads)
    return intro + "\n\n" + repoqa_strategies.markdown(outcome, command), \
        f"docstrings-{args.strategy}-{args.model}-{args.split}"
