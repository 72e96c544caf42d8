"""RepoQA needle search with the model strategies (prism, long-context, wim).

Per needle: top-1 accuracy (the first result is the needle's function), whether the
needle was among the candidates the model saw, latency and time to the first progress
event. For prism also PRISM's Table 3 columns: the configured run's token accounting,
and with `ablation` the same needles again in the four encodings (in-place or
amendments, with or without updates), each from a cold KV cache, with their accuracy
(Table 2) beside their cost (Table 3).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import zip_longest
from pathlib import Path

from prism_bench.machine_speed import MachineSpeed, measure
from prism_bench.repoqa_data import Haystack, Needle, needle_rank
from prism_bench.repoqa_retrieval import haystack_search, target_row
from prism_bench.report import table
from prism_code.index import RepoIndex
from prism_code.llm.accounting import Accounting
from prism_code.llm.backend import ScoringBackend
from prism_code.llm.runtime import LlamaSession
from prism_code.llm.state_cache import StateCache
from prism_code.memory.encoding import Encoding
from prism_code.retrieval.dense import Embedder
from prism_code.tasks.find_events import FindEvent, Strategy
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_request import FindRequest, named_strategy
from prism_code.tasks.find_settings import LongContextSettings, PrismSettings
from prism_code.tasks.find_strategies import run_find

BASELINES = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "baselines.json"
VARIANTS = [(Encoding.IN_PLACE, True), (Encoding.IN_PLACE, False), (Encoding.AMENDMENTS, True),
            (Encoding.AMENDMENTS, False)]
# PRISM paper (Gemini 1.5, all languages) Table 2 accuracy and Table 3 RepoQA rows, for the markdown.
PAPER_TABLE3 = {"in-place": (0.42, 71, 491, 142, 9, 0.17), "in-place w/o updates": (0.50, 68, 437, 139, 6, 0.16),
                "amendments": (0.48, 75, 581, 144, 11, 0.18), "amendments w/o updates": (0.53, 68, 435, 138, 6, 0.15)}


@dataclass
class NeedleRun:
    needle: str
    correct: bool
    retrieval_correct: bool  # retrieval's own first result, for the same needle
    in_candidates: bool
    seconds: float
    first_event_s: float | None
    stats: dict


@dataclass(frozen=True)
class StrategySettings:
    """The settings a model strategy's run reads (each strategy reads its own)."""

    prism: PrismSettings = field(default_factory=PrismSettings)
    long_context: LongContextSettings = field(default_factory=LongContextSettings)

    def chosen(self, strategy: str) -> dict[str, object]:
        """The settings of `strategy` that differ from its defaults, for the report."""
        pairs: dict[str, tuple[PrismSettings, PrismSettings] | tuple[LongContextSettings, LongContextSettings]] = {
            "prism": (self.prism, PrismSettings()), "long-context": (self.long_context, LongContextSettings())}
        own = pairs.get(strategy)
        if own is None:
            return {}
        given, default = asdict(own[0]), asdict(own[1])
        return {k: v for k, v in given.items() if v != default[k]}

    def request(self, description: str, strategy: Strategy) -> FindRequest:
        return FindRequest(description, strategy, top=10, prism=self.prism, long_context=self.long_context)


@dataclass
class StrategyResult:
    strategy: str
    model: str
    options: dict[str, object]
    runs: list[NeedleRun] = field(default_factory=list)
    accounting: Accounting = field(default_factory=Accounting)  # model calls; prism: pass steps and the final answer
    variants: dict[str, tuple[int, Accounting]] = field(default_factory=dict)  # label -> (correct, pass cost)
    variant_needles: int = 0
    speed: MachineSpeed | None = None
    interrupted: bool = False  # stopped by Ctrl-C (SIGINT): the needles run so far are reported
    remote: str | None = None  # the remote engine's URL when the model ran there


def select_needles(haystacks: list[Haystack], limit: int | None) -> list[tuple[Haystack, Needle]]:
    """Needles taken round-robin over repositories, so a subset spans every repository."""
    per_repo = [[(h, n) for n in h.needles] for h in haystacks]
    mixed = [pair for row in zip_longest(*per_repo) for pair in row if pair is not None]
    return mixed[:limit] if limit else mixed


def by_haystack(haystacks: list[Haystack], chosen: list[tuple[Haystack, Needle]]
                ) -> Iterator[tuple[Haystack, list[Needle]]]:
    """The chosen needles grouped by haystack, in haystack order, so each index opens once."""
    for haystack in haystacks:
        needles = [n for h, n in chosen if h is haystack]
        if needles:
            yield haystack, needles


def run(haystacks: list[Haystack], cache_dir: Path, strategy: str, model: str, limit: int | None = None,
        threads: int = 2, ablation: int = 0, overlap: bool = False, remote: str | None = None,
        settings: StrategySettings | None = None) -> StrategyResult:
    """`overlap`: a needle is the indexed function its lines overlap most (repoqa-multi's
    qualified C++/Rust names start on other lines than the index's), as retrieval's bench has it.
    `remote`: the model runs on the OpenAI-compatible server at this URL (no state files, no
    host speed: the server's is not this machine's)."""
    chosen = select_needles(haystacks, limit)
    settings = settings or StrategySettings()
    out = StrategyResult(strategy, model, settings.chosen(strategy), remote=remote)
    embedder = Embedder()
    session: ScoringBackend
    if remote:
        from prism_code.llm.remote import RemoteSession, RemoteSettings

        session = RemoteSession(RemoteSettings(url=remote, timeout=600))
    else:
        local = LlamaSession.open(model, n_threads=threads, n_ctx=max(4096, settings.long_context.token_budget + 1024))
        out.speed = measure(local)
        session = local
    # A background job ignores SIGINT; SIGTERM then is how a long run is stopped and still reported.
    previous = signal.signal(signal.SIGTERM, _interrupt) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        # As in the server: PRISM's query-independent prefix comes back from a state file.
        warm = None if remote else StateCache(cache_dir.parent / "states")
        _run_haystacks(session, haystacks, chosen, cache_dir, embedder, strategy, settings, ablation, out, warm,
                       overlap)
    except KeyboardInterrupt:
        out.interrupted = True
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        session.close()
    return out


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _run_haystacks(session: ScoringBackend, haystacks: list[Haystack], chosen: list[tuple[Haystack, Needle]],
                   cache_dir: Path, embedder: Embedder, strategy: str, settings: StrategySettings, ablation: int,
                   out: StrategyResult, warm: StateCache | None, overlap: bool = False) -> None:
    named = named_strategy(strategy)
    for haystack, needles in by_haystack(haystacks, chosen):
        with haystack_search(haystack, cache_dir, embedder) as search:
            for needle in needles:
                if overlap:
                    needle = located(search.index, needle)
                request = settings.request(needle.description, named)
                out.runs.append(_one(session, search, needle, request, out.accounting, warm))
                print(f"{len(out.runs)}/{len(chosen)} {needle.repo}:{needle.name} "
                      f"{'ok' if out.runs[-1].correct else 'miss'} {out.runs[-1].seconds:.1f}s", flush=True)
                if strategy == "prism" and out.variant_needles < ablation:
                    out.variant_needles += 1
                    for encoding, updates in VARIANTS:
                        label = encoding.value + ("" if updates else " w/o updates")
                        session.reset()
                        variant = replace(settings, prism=replace(settings.prism, encoding=encoding,
                                                                  allow_updates=updates))
                        run_ = _one(session, search, needle, variant.request(needle.description, named),
                                    Accounting(), None)
                        correct, total = out.variants.get(label, (0, Accounting()))
                        # Table 3 compares encodings: the pass's own calls, not the likelihood's scoring.
                        total.add(run_.stats["pass_accounting"])
                        out.variants[label] = (correct + run_.correct, total)


def located(index: RepoIndex, needle: Needle) -> Needle:
    """The needle at the lines of the indexed function it overlaps most (itself when none)."""
    functions = index.functions()
    row = target_row(functions, needle, overlap=True)
    if row is None:
        return needle
    return replace(needle, start_line=functions[row].start_line, end_line=functions[row].end_line)


def _one(session: ScoringBackend, search: FunctionSearch, needle: Needle, request: FindRequest,
         accounting: Accounting, state_cache: StateCache | None) -> NeedleRun:
    started = time.perf_counter()
    first: list[float] = []

    def on_event(_event: FindEvent) -> None:
        if not first:
            first.append(time.perf_counter() - started)

    outcome = run_find(request, search, session=session, state_cache=state_cache, on_event=on_event)
    seconds = time.perf_counter() - started
    correct = needle_rank(outcome.results[:1], needle) == 1
    seen = outcome.stats.get("candidates", outcome.stats.get("functions_in_context", len(outcome.results)))
    in_candidates = needle_rank(outcome.results[:seen], needle) is not None
    if request.strategy == "long-context":
        shown = outcome.stats.get("shown")
        in_candidates = (outcome.stats.get("whole_repository", False) if shown is None
                         else f"{needle.path}:{needle.start_line}" in shown)
    if outcome.accounting is not None:
        # prism: every call of the method (pass steps, likelihood scoring or the final answer call).
        accounting.add(outcome.accounting)
    retrieval_right = needle_rank(search.search(needle.description, top=1), needle) == 1
    return NeedleRun(f"{needle.repo}:{needle.name}", correct, retrieval_right, in_candidates, seconds,
                     first[0] if first else None, outcome.stats)


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))] if ordered else 0.0


def _paper_rows() -> list[list[object]]:
    """RepoQA leaderboard rows (Python, 16K context) from baselines.json, for scale."""
    try:
        data = json.loads(BASELINES.read_text())
    except (OSError, ValueError):
        return []
    keep = ("Qwen/CodeQwen1.5-7B-Chat", "deepseek-ai/deepseek-coder-33b-instruct", "gpt-4o")
    return [[r["model"], r.get("python_pass1_thr0_8", "")] for r in data.get("repoqa_snf", {}).get("rows", [])
            if any(k.lower() in r["model"].lower() for k in keep)]


def markdown(result: StrategyResult, command: str) -> str:
    runs = result.runs
    n = len(runs)
    if not runs:
        return f"Command: `{command}`\n\nNo needle finished (interrupted: {result.interrupted})."
    top1 = sum(r.correct for r in runs) / n if n else 0.0
    seen = sum(r.in_candidates for r in runs)
    decided = sum(r.correct for r in runs if r.in_candidates) / seen if seen else 0.0
    lat = [r.seconds for r in runs]
    firsts = [r.first_event_s for r in runs if r.first_event_s is not None]
    load = os.getloadavg()
    opts = ", ".join(f"{k}={v}" for k, v in result.options.items()) or "defaults"
    lines = [f"Command: `{command}`", "",
             (f"{n} RepoQA Python needles (round-robin over repositories"
              f"{'; interrupted before the limit' if result.interrupted else ''}), strategy `{result.strategy}`, "
              f"model {result.model}"
              + (f" through the remote engine at {result.remote}" if result.remote else "")
              + f", {opts}. Load average at the end: {load[0]:.1f} / {load[1]:.1f} / "
              f"{load[2]:.1f} (other jobs shared the 2 cores; latencies are inflated accordingly)."
              + (f" {result.speed.sentence()}" if result.speed else "")), "",
             table(["metric", "value"], [
                 ["top-1 accuracy", round(top1, 3)],
                 ["retrieval top-1 on the same needles", round(sum(r.retrieval_correct for r in runs) / max(n, 1), 3)],
                 ["needle among the candidates the model saw", f"{seen}/{n}"],
                 ["top-1 when the needle was among them", round(decided, 3)],
                 ["latency p50 (s)", round(statistics.median(lat), 1) if lat else 0],
                 ["latency p90 (s)", round(_pct(lat, 0.9), 1)],
                 ["first progress event p50 / max (s)",
                  f"{statistics.median(firsts):.2f} / {max(firsts):.2f}" if firsts else "-"],
             ])]
    if result.strategy == "prism":
        chosen_by: dict[str, int] = {}
        for r in runs:
            key = str(r.stats.get("chosen_by", "?")).split(":")[0]
            chosen_by[key] = chosen_by.get(key, 0) + 1
        tokens = [r.stats.get("candidate_tokens", 0) for r in runs]
        acc = result.accounting.as_row()
        passes = Accounting()
        for r in runs:
            passes.add(r.stats.get("pass_accounting", Accounting()))
        lines += ["", f"Candidate prompt tokens per query (view `{result.options.get('view', PrismSettings().view)}`): "
                  f"mean {statistics.mean(tokens):.0f}. How the first result was chosen: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(chosen_by.items())) + ".", "",
                  "Token accounting over all queries, every model call of the strategy (pass steps, and the "
                  "likelihood's scoring or the final answer call; warm session, as a user runs it):", "",
                  table(["cache hit %", "total (x10^3)", "net (x10^3)", "decoded (x10^3)", "cost index"],
                        [[acc["cache_hit_pct"], round(acc["total_tokens"] / 1e3, 1), round(acc["net_tokens"] / 1e3, 1),
                          round(acc["decoded"] / 1e3, 2), acc["cost_index"]]]),
                  "", f"The PRISM pass alone: cache hit {100 * passes.cache_hit:.1f}% of {passes.total / 1e3:.1f}k "
                  f"prompt tokens, {passes.decoded / max(len(runs), 1):.0f} decoded tokens per query."]
        if result.variants:
            rows = []
            for label, (correct, cost) in result.variants.items():
                paper = PAPER_TABLE3.get(label)
                rows.append([label, f"{correct}/{result.variant_needles}", round(100 * cost.cache_hit, 1),
                             round(cost.total / 1e3, 1), round(cost.net / 1e3, 1), round(cost.decoded / 1e3, 2),
                             round(cost.cost_index, 4),
                             f"{paper[0]} / {paper[1]}% / {paper[5]}" if paper else "-"])
            lines += ["", (f"PRISM encodings (Table 2-3 layout) on the first {result.variant_needles} needles, "
                           "each query from a cold KV cache, the pass's own calls:"), "",
                      table(["variant", "top-1", "cache hit %", "total (x10^3)", "net (x10^3)", "decoded (x10^3)",
                             "cost index", "paper: acc / hit / cost"], rows)]
    leaderboard = _paper_rows()
    lines += ["", "For scale: PRISM paper (Gemini 1.5 Pro, 8K chunks, all languages) RepoQA accuracy 0.42-0.53, "
              "long context 0.92; RepoQA leaderboard, Python, 16K context, pass@1 (BLEU >= 0.8): "
              + "; ".join(f"{m} {v}" for m, v in leaderboard)
              + ". Retrieval alone over all 80 needles: the retrieval section above."]
    misses = [r.needle for r in runs if not r.correct]
    if misses:
        lines += ["", "Missed: " + ", ".join(misses[:40]) + (" ..." if len(misses) > 40 else "")]
    return "\n".join(lines)


def view_tokens(haystacks: list[Haystack], cache_dir: Path, model: str, limit: int | None = None,
                candidates: int = 10) -> str:
    """Prompt tokens of PRISM's candidate text per view, and how often retrieval's top-k holds
    the needle; tokenization only, no model call, so it runs over every needle quickly."""
    from prism_code.memory.notes_store import NotesStore
    from prism_code.tasks.find_outcome import candidate_labels
    from prism_code.tasks.find_settings import VIEWS
    from prism_code.tasks.prism_cards import candidate_text

    chosen = select_needles(haystacks, limit)
    embedder = Embedder()
    session = LlamaSession.open(model, n_ctx=512)
    tokens: dict[str, list[int]] = {v: [] for v in VIEWS}
    held = 0
    try:
        for haystack in haystacks:
            needles = [n for h, n in chosen if h is haystack]
            if not needles:
                continue
            index = RepoIndex(haystack.root, cache_dir=cache_dir)
            store = NotesStore.for_index(index)
            try:
                index.update()
                search = FunctionSearch(index, embedder)
                for needle in needles:
                    pool = search.search(needle.description, top=candidates)
                    held += needle_rank(pool, needle) is not None
                    for view in VIEWS:
                        texts = [candidate_text(index, f, k, view, store, 60, session)
                                 for k, f in zip(candidate_labels(pool), pool)]
                        tokens[view].append(sum(len(session.tokenize_text(t)) for t in texts))
            finally:
                store.close()
                index.close()
    finally:
        session.close()
    n = len(chosen)
    rows = [[v, round(statistics.mean(t)), round(_pct(t, 0.9))] for v, t in tokens.items() if t]
    return (f"Candidate text per query, top-{candidates} of retrieval, {n} needles; the needle is among them "
            f"for {held}/{n}.\n\n" + table(["view", "mean tokens", "p90 tokens"], rows))
