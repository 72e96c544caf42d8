"""RepoQA needle search with the retrieval strategy: recall@k and MRR@10 per scorer."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from prism_bench.repoqa_data import Haystack, Needle, recall_metrics
from prism_code.embeddings import VectorCache
from prism_code.fragments import Fragment
from prism_code.index import RepoIndex
from prism_code.memory.notes_store import llm_note_texts
from prism_code.retrieval.dense import Embedder
from prism_code.tasks.find_function import COMPONENTS, FoundFunction, FunctionSearch

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
    language: str = "Python"
    unmatched: list[str] = field(default_factory=list)
    # repository -> (functions with a model note, functions), for haystacks with notes
    noted: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the fused ranks again with plain cards, over the needles of noted haystacks
    without_notes: list[int | None] = field(default_factory=list)
    with_notes: list[int | None] = field(default_factory=list)


# What find returns, not a score over every function: the fused score with find's ranking
# signals (named symbols, path words, file coherence and text, tests down) and each file's
# best function first (tasks/find_ranking.py). A needle outside its ten results has no rank.
FIND_LABEL = "find, as returned"


def returned_rank(found: Sequence[FoundFunction], key: str) -> int | None:
    """The 1-based place of the function keyed `key` among find's results, or None."""
    return next((i for i, f in enumerate(found, 1) if f.key == key), None)


def target_row(fragments: Sequence[Fragment], needle: Needle, overlap: bool) -> int | None:
    """The row of the needle's function: the one starting on its line in its file, else (with
    ``overlap``, for languages whose needle names may be qualified) the function in that file
    whose lines overlap the needle's most, the tightest first on ties."""
    best: tuple[int, int, int] | None = None  # (overlap, -span, row)
    for row, f in enumerate(fragments):
        if f.path != needle.path:
            continue
        if f.start_line == needle.start_line:
            return row
        if overlap:
            shared = min(f.end_line, needle.end_line) - max(f.start_line, needle.start_line) + 1
            if shared > 0 and (best is None or (shared, f.start_line - f.end_line) > best[:2]):
                best = (shared, f.start_line - f.end_line, row)
    return None if best is None else best[2]


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


def run(haystacks: list[Haystack], cache_dir: Path, embedder: Embedder, language: str = "Python") -> RepoQAResult:
    ranks: dict[str, list[int | None]] = {label: [] for label in [label for label, _, _ in SCORERS] + [FIND_LABEL]}
    result = RepoQAResult(ranks=ranks, language=language)
    for haystack in haystacks:
        with haystack_search(haystack, cache_dir, embedder) as search:
            corpus = search.corpus
            hits = 0
            noted = len(search.note_cards())
            plain = FunctionSearch(search.index, embedder) if noted else None
            if noted:
                result.noted[haystack.repo] = (noted, len(corpus.fragments))
            for needle in haystack.needles:
                result.needles += 1
                target = target_row(corpus.fragments, needle, haystack.language != "python")
                started = time.perf_counter()
                found = search.search(needle.description, top=10)
                result.latency_ms.append((time.perf_counter() - started) * 1000)
                result.ranks[FIND_LABEL].append(
                    None if target is None else returned_rank(found, corpus.fragments[target].key))
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


def markdown(result: RepoQAResult, command: str, subject: str | None = None) -> str:
    """The scorers' table; `subject` names what was searched (default: RepoQA's needles and where from)."""
    from prism_bench.report import table

    rows = []
    for label in [label for label, _, _ in SCORERS] + ([FIND_LABEL] if result.ranks.get(FIND_LABEL) else []):
        m = recall_metrics(result.ranks[label])
        rows.append([label, m["recall@1"], m["recall@10"], m["recall@50"], m["mrr@10"]])
    lat = sorted(result.latency_ms)
    p50 = statistics.median(lat) if lat else 0.0
    body = [
        f"Command: `{command}`",
        "",
        (subject or f"{result.needles} RepoQA {result.language} needles in {len(result.per_repo_top1)} repositories "
         + ("materialised from PyPI wheels" if result.language == "Python" else "at their pinned commits"))
        + f"; needles not located in the index: {len(result.unmatched)}.",
        "",
        table(["scorer", "top-1", "top-10", "top-50", "MRR@10"], rows),
        "",
        f"`{FIND_LABEL}` ranks the needle among find's ten results (so its top-50 is its top-10); "
        "the other rows rank it by their score over every function.",
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
    title = f"RepoQA {result.language} needles ({result.needles}), find by description, retrieval only"
    return grouped_bars(path, title,
                        labels, {"top-1": [m["recall@1"] for m in metrics],
                                 "top-10": [m["recall@10"] for m in metrics],
                                 "MRR@10": [m["mrr@10"] for m in metrics]}, "share of needles")


@dataclass
class LexicalResult:
    """Index only, no embeddings: where each needle's function is, and BM25's rank for it."""

    language: str
    needles: int = 0
    bm25: list[int | None] = field(default_factory=list)
    by_overlap: list[str] = field(default_factory=list)  # located, but no function starts on its line
    not_located: list[str] = field(default_factory=list)


def run_lexical(haystacks: list[Haystack], cache_dir: Path, language: str) -> LexicalResult:
    result = LexicalResult(language=language)
    for haystack in haystacks:
        index = RepoIndex(haystack.root, cache_dir=cache_dir)
        try:
            index.update()
            search = FunctionSearch(index)
            fragments = search.corpus.fragments
            for needle in haystack.needles:
                result.needles += 1
                target = target_row(fragments, needle, haystack.language != "python")
                where = f"{haystack.repo}:{needle.path}:{needle.start_line}-{needle.end_line} {needle.name}"
                if target is None:
                    result.not_located.append(where)
                    result.bm25.append(None)
                    continue
                if fragments[target].start_line != needle.start_line:
                    result.by_overlap.append(f"{where} (found {fragments[target].qualname} "
                                             f"{fragments[target].start_line}-{fragments[target].end_line})")
                scores, _ = search.scores(needle.description, 0.0, ("bm25",))
                result.bm25.append(rank_of(scores, target))
        finally:
            index.close()
    return result


def lexical_markdown(results: list[LexicalResult], command: str) -> str:
    from prism_bench.report import table

    rows = []
    for r in results:
        m = recall_metrics(r.bm25)
        rows.append([r.language, r.needles, len(r.not_located), len(r.by_overlap),
                     m["recall@1"], m["recall@10"], m["mrr@10"]])
    body = [f"Command: `{command}`", "",
            table(["language", "needles", "not located", "located by overlap only",
                   "bm25 top-1", "bm25 top-10", "bm25 MRR@10"], rows)]
    for r in results:
        if r.not_located or r.by_overlap:
            body += ["", f"{r.language}:"]
            body += [f"* not located: {w}" for w in r.not_located]
            body += [f"* by overlap: {w}" for w in r.by_overlap]
    return "\n".join(body)
