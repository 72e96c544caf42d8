"""`prism-code bench docstrings --expand`: retrieval with the sentence alone against retrieval
fused with the local model's guess at the function's code (tasks/query_expansion.py).

Both rankings come from find's own `FunctionSearch.search`; the guess is what `--strategy prism`
writes first (`PrismSettings.expand_short_queries`, on by default; docs/decisions.md).
Reported per split: the fusion's constant was chosen on the tuning split, so the test split is
the figure.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from prism_bench.bootstrap import paired_difference
from prism_bench.repoqa_data import Haystack, needle_rank, recall_metrics
from prism_bench.repoqa_retrieval import haystack_search, target_row
from prism_bench.report import table
from prism_code.retrieval.fusion import SHORT_QUERY_WORDS
from prism_code.tasks.query_expansion import hypothetical_function, language_name

TOP = 10


@dataclass(frozen=True)
class Expanded:
    instance_id: str
    split: str
    plain_rank: int | None  # 1-based within the top 10; None beyond it or not located
    expanded_rank: int | None
    guess: str
    prompt_tokens: int
    decoded_tokens: int
    seconds: float


@dataclass
class ExpansionResult:
    model: str
    rows: list[Expanded] = field(default_factory=list)
    prefill_tokens_per_s: float = 0.0
    decode_ms_per_token: float = 0.0


def run(haystacks: list[Haystack], index_cache: Path, splits: dict[str, str], model: str,
        threads: int) -> ExpansionResult:
    from prism_bench.machine_speed import measure
    from prism_code.llm.runtime import LlamaSession
    from prism_code.retrieval.dense import Embedder

    session = LlamaSession.open(model, n_threads=threads)
    result = ExpansionResult(model)
    try:
        speed = measure(session)
        result.prefill_tokens_per_s, result.decode_ms_per_token = speed.prefill_tokens_per_s, speed.decode_ms_per_token
        embedder = Embedder()
        for haystack in haystacks:
            with haystack_search(haystack, index_cache, embedder) as search:
                fragments = search.corpus.fragments
                language = language_name([f.path for f in fragments])
                for needle in haystack.needles:
                    if len(needle.description.split()) > SHORT_QUERY_WORDS:
                        continue
                    row = target_row(fragments, needle, False)
                    target = fragments[row] if row is not None else None
                    started = time.perf_counter()
                    guess, generation = hypothetical_function(session, needle.description, language)
                    seconds = time.perf_counter() - started
                    plain = search.search(needle.description, top=TOP)
                    expanded = search.search(needle.description, top=TOP, expansion=guess)
                    ranks = (None, None) if target is None else (needle_rank(plain, needle),
                                                                 needle_rank(expanded, needle))
                    result.rows.append(Expanded(needle.instance_id, splits[needle.instance_id],
                                                *ranks, guess,
                                                generation.stats.prompt_tokens, len(generation.tokens), seconds))
                    print(f"{needle.instance_id}: {ranks[0]} -> {ranks[1]}", file=sys.stderr)
    finally:
        session.close()
    return result


def markdown(result: ExpansionResult, command: str) -> str:
    rows = []
    for split in ("tune", "test"):
        chosen = [r for r in result.rows if r.split == split]
        if not chosen:
            continue
        plain = recall_metrics([r.plain_rank for r in chosen])
        expanded = recall_metrics([r.expanded_rank for r in chosen])
        gain = paired_difference([float(r.expanded_rank == 1) for r in chosen],
                                 [float(r.plain_rank == 1) for r in chosen])
        rows.append([split, len(chosen), f"{plain['recall@1']:.3f} / {plain['mrr@10']:.3f}",
                     f"{expanded['recall@1']:.3f} / {expanded['mrr@10']:.3f}", gain.signed(),
                     f"{expanded['recall@10']:.3f} (was {plain['recall@10']:.3f})",
                     sum(r.expanded_rank == 1 and r.plain_rank != 1 for r in chosen),
                     sum(r.plain_rank == 1 and r.expanded_rank != 1 for r in chosen)])
    prompt = statistics.median(r.prompt_tokens for r in result.rows) if result.rows else 0
    decoded = statistics.median(r.decoded_tokens for r in result.rows) if result.rows else 0
    seconds = statistics.median(r.seconds for r in result.rows) if result.rows else 0.0
    return "\n".join([
        f"Command: `{command}`",
        "",
        f"Model {result.model}. Each docstring query of at most {SHORT_QUERY_WORDS} words is searched alone "
        "and fused by reciprocal rank with the model's guess at the function (find's own search; "
        "the guess `--strategy prism` writes first when its expansion is on).",
        "",
        table(["split", "queries", "alone: top-1 / MRR@10", "with the guess: top-1 / MRR@10",
               "top-1 gain, paired [95%]", "top-10", "made right", "made wrong"], rows),
        "",
        f"The guess costs {prompt:.0f} prompt tokens and {decoded:.0f} decoded tokens a query (p50), "
        f"{seconds:.1f} s here (prefill {result.prefill_tokens_per_s:.0f} tokens/s, decode "
        f"{result.decode_ms_per_token:.0f} ms/token).",
    ])
