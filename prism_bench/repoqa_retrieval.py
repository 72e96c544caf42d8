"""RepoQA needle search with the retrieval strategy: recall@k and MRR@10 per scorer."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from prism_bench.repoqa_data import Haystack, recall_metrics
from prism_code.embeddings import VectorCache
from prism_code.index import RepoIndex
from prism_code.memory.notes_store import llm_note_texts
from prism_code.retrieval.dense import Embedder
from prism_code.tasks.find_function import COMPONENTS, FunctionSearch

# (label, fused components, FragRel alpha)
SCORERS: list[tuple[str, tuple[str, ...], float]] = [
    ("bm25", ("bm25",), 0.0),
    ("dense", ("dense_code", "dense_card"), 0.0),
    ("fused", COMPONENTS, 0.0),
    ("fused + FragRel a=0.25", COMPONENTS, 0.25),
    ("fused + FragRel a=0.5", COMPONENTS, 0.5),
    ("fused + FragRel a=1.0", COMPONENTS, 1.0),
]


@dataclass
class RepoQAResult:
    ranks: dict[str, list[int | None]] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)
    per_repo_top1: dict[str, float] = field(default_factory=dict)
    needles: int = 0
    unmatched: list[str] = field(default_factory=list)
    # repository -> (functions with a model note, functions), for haystacks with notes
    noted: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the fused ranks again with plain cards, over the needles of noted haystacks
    without_notes: list[int | None] = field(default_factory=list)
    with_notes: list[int | None] = field(default_factory=list)


def rank_of(scores: np.ndarray, target: int) -> int:
    return int(np.sum(scores > scores[target])) + 1


@contextmanager
def haystack_search(haystack: Haystack, cache_dir: Path, embedder: Embedder) -> Iterator[FunctionSearch]:
    """Search over the haystack's index, brought up to date with every vector computed."""
    index = RepoIndex(haystack.root, cache_dir=cache_dir)
    try:
        index.update()
        # As find runs for a user: cards carry the model's notes where they were written.
        search = FunctionSearch(index, embedder, notes=llm_note_texts(index))
        VectorCache(index.store, embedder).fill(search.embedding_texts())
        yield search
    finally:
        index.close()


def run(haystacks: list[Haystack], cache_dir: Path, embedder: Embedder) -> RepoQAResult:
    result = RepoQAResult(ranks={label: [] for label, _, _ in SCORERS})
    for haystack in haystacks:
        with haystack_search(haystack, cache_dir, embedder) as search:
            corpus = search.corpus
            where = {(f.path, f.start_line): i for i, f in enumerate(corpus.fragments)}
            hits = 0
            noted = len(search.note_cards())
            plain = FunctionSearch(search.index, embedder) if noted else None
            if noted:
                result.noted[haystack.repo] = (noted, len(corpus.fragments))
            for needle in haystack.needles:
                result.needles += 1
                target = where.get((needle.path, needle.start_line))
                started = time.perf_counter()
                search.search(needle.description, top=10)
                result.latency_ms.append((time.perf_counter() - started) * 1000)
                for label, components, alpha in SCORERS:
                    if target is None:
                        result.ranks[label].append(None)
                        continue
                    scores, _ = search.scores(needle.description, alpha, components)
                    result.ranks[label].append(rank_of(scores, target))
                if plain is not None and target is not None:
                    scores, _ = plain.scores(needle.description, 0.0)
                    result.without_notes.append(rank_of(scores, target))
                    result.with_notes.append(result.ranks["fused"][-1])
                if target is None:
                    result.unmatched.append(f"{haystack.repo}:{needle.name}")
                elif result.ranks["fused"][-1] == 1:
                    hits += 1
            result.per_repo_top1[haystack.repo] = hits / max(len(haystack.needles), 1)
    return result


def markdown(result: RepoQAResult, command: str) -> str:
    from prism_bench.report import table

    rows = []
    for label, _, _ in SCORERS:
        m = recall_metrics(result.ranks[label])
        rows.append([label, m["recall@1"], m["recall@10"], m["recall@50"], m["mrr@10"]])
    lat = sorted(result.latency_ms)
    p50 = statistics.median(lat) if lat else 0.0
    body = [
        f"Command: `{command}`",
        "",
        f"{result.needles} RepoQA Python needles in {len(result.per_repo_top1)} repositories "
        f"materialised from PyPI wheels; needles not located in the index: {len(result.unmatched)}.",
        "",
        table(["scorer", "top-1", "top-10", "top-50", "MRR@10"], rows),
        "",
        f"Query latency (fused, embeddings ready, `search` top 10): p50 {p50:.0f} ms, "
        f"p90 {lat[int(0.9 * (len(lat) - 1))] if lat else 0:.0f} ms.",
        "",
        table(["repository", "fused top-1"], sorted(result.per_repo_top1.items())),
    ]
    if result.noted:
        with_m, without_m = recall_metrics(result.with_notes), recall_metrics(result.without_notes)
        body += [
            "",
            "Function cards carry the model's memory notes where they exist: "
            + ", ".join(f"{repo} {n}/{total}" for repo, (n, total) in sorted(result.noted.items()))
            + f" functions. On those repositories' {len(result.with_notes)} needles:",
            "",
            table(["cards", "top-1", "top-10", "MRR@10"],
                  [["with model notes", with_m["recall@1"], with_m["recall@10"], with_m["mrr@10"]],
                   ["plain (name, path, signature, docstring)", without_m["recall@1"],
                    without_m["recall@10"], without_m["mrr@10"]]]),
        ]
    return "\n".join(body)


def chart(result: RepoQAResult, path: Path) -> Path:
    from prism_bench.charts import grouped_bars

    labels = [label for label, _, _ in SCORERS]
    metrics = [recall_metrics(result.ranks[label]) for label in labels]
    return grouped_bars(path, f"RepoQA Python needles ({result.needles}), find by description, retrieval only",
                        labels, {"top-1": [m["recall@1"] for m in metrics],
                                 "top-10": [m["recall@10"] for m in metrics],
                                 "MRR@10": [m["mrr@10"] for m in metrics]}, "share of needles")
