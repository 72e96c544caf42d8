"""The likelihood rerank on short descriptions: which body view and margin, chosen on a tuning split.

For each query, retrieval's top candidates are scored once per view (the body as written, and
its code only, without comments and docstrings); a margin rule then only compares numbers, so
every (view, margin) pair is evaluated on the same model calls. The pair is chosen on the
docstrings tuning split and reported on its test split and on RepoQA beside retrieval alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prism_bench.repoqa_data import Haystack
from prism_bench.repoqa_retrieval import haystack_search
from prism_bench.repoqa_strategies import by_haystack, select_needles
from prism_code.llm.runtime import LlamaSession
from prism_code.retrieval.dense import Embedder
from prism_code.tasks.query_likelihood import (
    DEFAULT_LINES,
    DEFAULT_MARGIN,
    body_text,
    description_likelihood,
    rank_by_likelihood,
)

VIEWS = ("as written", "code only")
MARGINS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0)


@dataclass
class ScoredCandidates:
    benchmark: str
    needle: str
    words: int
    target: int | None  # the needle's place among the candidates, None when retrieval missed it
    scores: dict[str, list[float]] = field(default_factory=dict)  # view -> mean log-prob per candidate
    tokens: dict[str, int] = field(default_factory=dict)  # view -> prompt tokens evaluated
    seconds: dict[str, float] = field(default_factory=dict)


def collect(benchmark: str, haystacks: list[Haystack], cache_dir: Path, embedder: Embedder,
            session: LlamaSession, limit: int, candidates: int = 10) -> list[ScoredCandidates]:
    chosen = select_needles(haystacks, limit)
    out: list[ScoredCandidates] = []
    for haystack, needles in by_haystack(haystacks, chosen):
        with haystack_search(haystack, cache_dir, embedder) as search:
            for needle in needles:
                found = search.search(needle.description, top=candidates)
                target = next((i for i, f in enumerate(found)
                               if f.path == needle.path and f.start_line == needle.start_line), None)
                row = ScoredCandidates(benchmark, f"{needle.repo}:{needle.name}", len(needle.description.split()),
                                       target)
                for view in VIEWS:
                    started, tokens, scores = time.perf_counter(), 0, []
                    for f in found:
                        text = body_text(search.index, f, f.qualname, DEFAULT_LINES, code_only=view == "code only")
                        scored = description_likelihood(session, text, needle.description)
                        scores.append(scored.mean_logprob)
                        tokens += scored.stats.encoded
                    row.scores[view], row.tokens[view] = scores, tokens
                    row.seconds[view] = time.perf_counter() - started
                out.append(row)
                print(f"{benchmark} {len(out)}/{len(chosen)} {row.needle} target {target} "
                      f"{ {v: round(s, 1) for v, s in row.seconds.items()} }", flush=True)
    return out


def first_is_right(row: ScoredCandidates, view: str, margin: float) -> bool:
    moved = rank_by_likelihood(row.scores[view], margin)
    return row.target == (0 if moved is None else moved)


def top1(rows: Sequence[ScoredCandidates], view: str | None, margin: float = 0.0) -> float:
    """Top-1 with the likelihood's (view, margin); view None is retrieval alone."""
    if not rows:
        return 0.0
    return sum(row.target == 0 if view is None else first_is_right(row, view, margin) for row in rows) / len(rows)


def choose(tune: Sequence[ScoredCandidates]) -> tuple[str, float]:
    """Best top-1 on the tuning rows; ties go to the larger margin (closer to retrieval's order)."""
    return max(((v, m) for v in VIEWS for m in MARGINS), key=lambda vm: (top1(tune, *vm), vm[1]))


def markdown(rows_by_benchmark: dict[str, list[ScoredCandidates]], tuned_on: str, command: str) -> str:
    view, margin = choose(rows_by_benchmark[tuned_on])
    lines = [f"Command: `{command}`", "",
             f"Chosen on **{tuned_on}** only: view **{view}**, margin **{margin:g}** nats/token "
             f"(the margin in use before: {DEFAULT_MARGIN:g}, views as written).", "",
             "| benchmark | queries | retrieval top-1 | as written, margin 0.1 | chosen | "
             "right in top-10 | prompt tokens / query (chosen view) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for benchmark, rows in rows_by_benchmark.items():
        tag = " (tuning split)" if benchmark == tuned_on else ""
        tokens = sum(r.tokens[view] for r in rows) / max(1, len(rows))
        lines.append(f"| {benchmark}{tag} | {len(rows)} | {top1(rows, None):.3f} | "
                     f"{top1(rows, 'as written', DEFAULT_MARGIN):.3f} | {top1(rows, view, margin):.3f} | "
                     f"{sum(r.target is not None for r in rows) / max(1, len(rows)):.3f} | {tokens:.0f} |")
    lines += ["", "Top-1 by view and margin (every row from the same model calls):", "",
              "| benchmark | view | " + " | ".join(f"m={m:g}" for m in MARGINS) + " |",
              "| --- | --- | " + " | ".join("---" for _ in MARGINS) + " |"]
    for benchmark, rows in rows_by_benchmark.items():
        for v in VIEWS:
            lines.append(f"| {benchmark} | {v} | " + " | ".join(f"{top1(rows, v, m):.3f}" for m in MARGINS) + " |")
    return "\n".join(lines)


def run_cli(limit: int, repoqa_limit: int, model: str, threads: int, command: str) -> str:
    from prism_bench import docstrings_data, repoqa_data

    embedder = Embedder()
    session = LlamaSession.open(model, n_threads=threads, n_ctx=4096)
    try:
        cache = docstrings_data.default_cache_dir() / "indexes"
        rows = {"docstrings tune": collect("docstrings tune", docstrings_data.load_haystacks("tune"), cache,
                                           embedder, session, limit),
                "docstrings test": collect("docstrings test", docstrings_data.load_haystacks("test"), cache,
                                           embedder, session, limit)}
        if repoqa_limit:
            rows["RepoQA python"] = collect("RepoQA python", repoqa_data.load_haystacks(),
                                            repoqa_data.default_cache_dir() / "indexes", embedder, session,
                                            repoqa_limit)
    finally:
        session.close()
    return markdown(rows, "docstrings tune", command)

