"""RepoQA needle search with the WiM strategy: top-1, latency, first-event latency, margins.

Needles are taken round-robin over the repositories so a small `limit` still covers
all of them. Retrieval's top-1 on the same needles is reported beside WiM's, since a
subset's retrieval score differs from the full set's.
"""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from prism_bench.machine_speed import MachineSpeed, measure
from prism_bench.repoqa_data import Haystack, Needle, needle_rank
from prism_bench.repoqa_retrieval import haystack_search
from prism_code.retrieval.dense import Embedder

if TYPE_CHECKING:
    from prism_code.tasks.find_settings import WimSettings

log = logging.getLogger(__name__)


@dataclass
class WimNeedle:
    instance_id: str
    found_rank: int | None  # 1-based rank of the needle in WiM's results
    retrieval_rank: int | None  # among retrieval's candidates
    ms: float
    first_event_ms: float | None
    first_margin_ms: float | None
    margins_kept: int
    margins_dropped: int
    early_exit: bool
    encoded: int
    decoded: int
    margins: list[dict] = field(default_factory=list)  # per segment: P(relevant), function, why
    answer_moved: bool = False  # the answer was not retrieval's first
    answer_held: bool = False  # ... and the likelihood kept it below retrieval's first


@dataclass
class WimBenchResult:
    model: str
    candidates: int
    threads: int = 2
    needles: list[WimNeedle] = field(default_factory=list)
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)
    speed: MachineSpeed | None = None

    def summary(self) -> dict[str, float | int]:
        n = len(self.needles) or 1
        lat = sorted(x.ms / 1000 for x in self.needles) or [0.0]
        first = sorted(x.first_event_ms / 1000 for x in self.needles if x.first_event_ms is not None) or [0.0]
        margin = sorted(x.first_margin_ms / 1000 for x in self.needles if x.first_margin_ms is not None) or [0.0]
        return {
            "needles": len(self.needles),
            "top1": round(sum(1 for x in self.needles if x.found_rank == 1) / n, 3),
            "retrieval_top1": round(sum(1 for x in self.needles if x.retrieval_rank == 1) / n, 3),
            "in_candidates": round(sum(1 for x in self.needles if x.retrieval_rank is not None) / n, 3),
            "p50_s": round(statistics.median(lat), 2),
            "p90_s": round(_p90(lat), 2),
            "first_event_p50_s": round(statistics.median(first), 2),
            "first_event_p90_s": round(_p90(first), 2),
            "first_margin_p50_s": round(statistics.median(margin), 2),
            "margins_kept": sum(x.margins_kept for x in self.needles),
            "margins_dropped": sum(x.margins_dropped for x in self.needles),
            "early_exits": sum(1 for x in self.needles if x.early_exit),
            "answers_not_retrieval_first": sum(1 for x in self.needles if x.answer_moved),
            "of_those_held_by_likelihood": sum(1 for x in self.needles if x.answer_held),
            "encoded_per_query": round(sum(x.encoded for x in self.needles) / n),
            "decoded_per_query": round(sum(x.decoded for x in self.needles) / n),
        }


def _p90(values: list[float]) -> float:
    return values[int(0.9 * (len(values) - 1))]


def _pick(haystacks: list[Haystack], limit: int) -> list[tuple[Haystack, Needle]]:
    picked: list[tuple[Haystack, Needle]] = []
    depth = 0
    while len(picked) < limit and any(depth < len(h.needles) for h in haystacks):
        for h in haystacks:
            if depth < len(h.needles) and len(picked) < limit:
                picked.append((h, h.needles[depth]))
        depth += 1
    return picked


def run_wim_bench(haystacks: list[Haystack], index_cache: Path, limit: int = 20,
                  model: str = "qwen2.5-coder-0.5b", candidates: int = 10, early_exit: bool = True,
                  threads: int = 2, settings: WimSettings | None = None) -> WimBenchResult:
    """Run find_wim on `limit` needles (round-robin over repositories) with one model session."""
    import os

    from prism_code.llm.runtime import LlamaSession
    from prism_code.tasks.find_wim import find_wim

    result = WimBenchResult(model=model, candidates=candidates, threads=threads)
    picked = _pick(haystacks, limit)
    embedder = Embedder()
    session = LlamaSession.open(model, n_ctx=4096, n_threads=threads)
    result.speed = measure(session)
    try:
        for haystack in haystacks:
            needles = [n for h, n in picked if h is haystack]
            if not needles:
                continue
            with haystack_search(haystack, index_cache, embedder) as search:
                search.search("warm up", top=1)  # load vectors outside the timed queries
                for needle in needles:
                    started = time.perf_counter()
                    outcome = find_wim(session, search, needle.description, top=candidates, candidates=candidates,
                                       early_exit=early_exit,
                                       settings=settings)
                    ms = (time.perf_counter() - started) * 1000
                    retrieved = search.search(needle.description, top=candidates)
                    acc = outcome.accounting
                    item = WimNeedle(
                        needle.instance_id, needle_rank(outcome.results, needle), needle_rank(retrieved, needle), ms,
                        outcome.stats.get("first_event_ms"), outcome.stats.get("first_margin_ms"),
                        outcome.stats["margins_kept"],
                        outcome.stats["margins_dropped"], outcome.stats["early_exit"],
                        acc.encoded if acc else 0, acc.decoded if acc else 0, outcome.stats.get("margins", []),
                        bool(outcome.stats.get("likelihood")), bool(outcome.stats.get("answer_held")))
                    result.needles.append(item)
                    log.info("%s: rank %s (retrieval %s) %.1fs first %.1fs kept %d early %s", needle.instance_id,
                             item.found_rank, item.retrieval_rank, ms / 1000, (item.first_event_ms or 0) / 1000,
                             item.margins_kept, item.early_exit)
    finally:
        session.close()
        result.load_average = os.getloadavg()
    return result


def markdown(result: WimBenchResult, command: str) -> str:
    from prism_bench.report import table

    s = result.summary()
    load = ", ".join(f"{x:.2f}" for x in result.load_average)
    return "\n".join([
        f"Command: `{command}`",
        "",
        (f"{s['needles']} RepoQA Python needles (round-robin over repositories), model {result.model}, "
         f"{result.candidates} retrieval candidates, {result.threads} thread(s); load average at the end: {load}. "
         "Latencies are wall-clock on a shared machine; tokens per query do not depend on load."
         + (f" {result.speed.sentence()}" if result.speed else "")),
        "",
        table(["metric", "value"], [[k, v] for k, v in s.items()]),
    ])
