"""`prism-code bench semble --strategy prism|wim --sample N`: a model strategy of find on a
seeded sample of semble's queries, beside retrieval on the same queries.

The sample is drawn once per (split, N) with `SAMPLE_SEED`: each repository's queries are
shuffled by one seeded generator, repositories are taken in name order, and the queries are
dealt round-robin over them, so a sample of 100 from 21 repositories holds four or five of
each. Every sampled query runs through `run_find` twice, as retrieval and as the strategy, and
both top tens are scored by semble's NDCG@10. What the model cost is read from the outcome's
accounting: the prompt tokens it saw (cached or not) and the seconds the query took.

Per-query outcomes are kept in a JSON file under the cache as they finish, so a run that is
stopped resumes where it was and a report can be written from a partial run (it says how many
of the sample finished). Indexes are the semble bench's own; nothing is embedded here: a
repository whose vectors are not all stored is ranked lexically (both strategies alike) and
the report says so.
"""

from __future__ import annotations

import json
import random
import signal
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING

from prism_bench.report import table
from prism_bench.semble_coverage import is_parsable, open_index
from prism_bench.semble_data import Query, SembleRepo, materialise
from prism_bench.semble_scoring import Result, mean_or_zero, ndcg_at_10
from prism_code.atomic import atomic_write

if TYPE_CHECKING:
    from prism_code.tasks.find_function import FoundFunction

# The sample's seed, stored so that every run of a (split, N) asks the same queries.
SAMPLE_SEED = 27
CATEGORIES = ("architecture", "semantic", "symbol")


@dataclass(frozen=True)
class SampledOutcome:
    """One sampled query's two rankings, scored, with what the model strategy cost."""

    repo: str
    query: str
    category: str
    retrieval_ndcg10: float
    strategy_ndcg10: float
    prompt_tokens: int  # every prompt token the model saw for this query, cached or not
    decoded: int
    seconds: float  # the strategy's wall time for this query
    hybrid: bool  # the repository's vectors were all stored: BM25 and MiniLM, else BM25 only
    model_failed: bool = False  # the backend failed and the strategy answered with retrieval's list
    # Format 2 (#27): enough to score another placement of the model's pick offline, without the model.
    # Each list is of [path, start line, end line, key, kind]: scored against `targets` by semble_scoring.
    retrieval_ranked: list[list[object]] = field(default_factory=list)
    strategy_ranked: list[list[object]] = field(default_factory=list)
    stats: dict[str, object] = field(default_factory=dict)  # the strategy's own record: pool, scores, choice
    targets: list[list[object]] = field(default_factory=list)  # the query's targets, as semble gives them


def sample_queries(repos: list[SembleRepo], size: int, seed: int = SAMPLE_SEED) -> list[tuple[SembleRepo, Query]]:
    """`size` queries spread across `repos`: each repository's queries in a seeded order,
    dealt round-robin over the repositories in name order. The same inputs give the same list."""
    rng = random.Random(seed)
    per_repo = []
    for repo in sorted(repos, key=lambda r: r.name):
        queries = list(repo.queries)
        rng.shuffle(queries)
        per_repo.append([(repo, q) for q in queries])
    dealt = [pair for row in zip_longest(*per_repo) for pair in row if pair is not None]
    return dealt[:size]


def outcome_key(repo: str, query: str) -> str:
    return f"{repo}\n{query}"


def load_outcomes(path: Path) -> dict[str, SampledOutcome]:
    """The outcomes an earlier run of the same strategy and model kept, by outcome_key."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return {}  # a damaged file from an interrupted write: the queries run again
    return {key: SampledOutcome(**value) for key, value in data.items()}


def save_outcomes(outcomes: dict[str, SampledOutcome], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {key: asdict(o) for key, o in outcomes.items()}
    atomic_write(path, [(json.dumps(data, indent=1) + "\n").encode()])


def outcomes_path(cache_dir: Path, strategy: str, model: str) -> Path:
    # "-v2": format 2's outcomes hold the ranked lists; an older file stays readable (its fields default).
    return cache_dir / "results" / f"semble-sample-{strategy}-{Path(model).stem}-v2.json"


def _by_repo(sample: list[tuple[SembleRepo, Query]]) -> Iterator[tuple[SembleRepo, list[Query]]]:
    """The sample grouped by repository, in the sample's first-appearance order."""
    order: dict[str, tuple[SembleRepo, list[Query]]] = {}
    for repo, query in sample:
        order.setdefault(repo.name, (repo, []))[1].append(query)
    yield from order.values()


def run(sample: list[tuple[SembleRepo, Query]], cache_dir: Path, strategy: str, model: str, threads: int,
        path: Path) -> dict[str, SampledOutcome]:
    """Run the sampled queries not yet in `path`'s outcomes; each is saved as it finishes.
    A KeyboardInterrupt (or SIGTERM through the caller) keeps what finished."""
    from prism_code.llm.runtime import LlamaSession
    from prism_code.llm.state_cache import StateCache
    from prism_code.memory.notes_store import llm_note_texts
    from prism_code.retrieval.dense import Embedder
    from prism_code.tasks.find_function import FunctionSearch
    from prism_code.tasks.find_request import FindRequest, named_strategy
    from prism_code.tasks.find_strategies import run_find

    outcomes = load_outcomes(path)
    todo = [(r, q) for r, q in sample if outcome_key(r.name, q.text) not in outcomes]
    print(f"[semble sample] {len(sample) - len(todo)}/{len(sample)} queries kept from an earlier run; "
          f"{len(todo)} to run", file=sys.stderr, flush=True)
    if not todo:
        return outcomes
    session = LlamaSession.open(model, n_threads=threads, n_ctx=4096)
    # A background job ignores SIGINT: SIGTERM is how a long run is stopped and still reported.
    previous = signal.signal(signal.SIGTERM, _interrupt) if threading.current_thread() is threading.main_thread() \
        else None
    state_cache = StateCache(cache_dir / "states")  # prism's query-independent prefix, as the server keeps it
    embedder = Embedder()
    try:
        for repo, queries in _by_repo(todo):
            if not is_parsable(materialise(repo, cache_dir)):
                for query in queries:  # nothing indexed: both strategies score 0
                    outcomes[outcome_key(repo.name, query.text)] = SampledOutcome(
                        repo.name, query.text, query.category, 0.0, 0.0, 0, 0, 0.0, False)
                save_outcomes(outcomes, path)
                continue
            index = open_index(repo, cache_dir)
            try:
                search = FunctionSearch(index, embedder, notes=llm_note_texts(index))
                hybrid = search.vectors("code") is not None and search.vectors("card") is not None
                if not hybrid:
                    search = FunctionSearch(index, None, notes=llm_note_texts(index))
                for query in queries:
                    retrieval = run_find(FindRequest(query.text), search).results
                    started = time.perf_counter()
                    outcome = run_find(FindRequest(query.text, named_strategy(strategy)), search, session=session,
                                       state_cache=state_cache)
                    seconds = time.perf_counter() - started
                    accounting = outcome.accounting
                    record = SampledOutcome(
                        repo.name, query.text, query.category,
                        ndcg_at_10(_spans(retrieval), query.targets),
                        ndcg_at_10(_spans(outcome.results), query.targets),
                        accounting.total if accounting else 0, accounting.decoded if accounting else 0,
                        round(seconds, 3), hybrid, outcome.model_error is not None,
                        _ranked(retrieval), _ranked(outcome.results), _plain(outcome.stats),
                        [list(asdict(t).values()) for t in query.targets])
                    outcomes[outcome_key(repo.name, query.text)] = record
                    save_outcomes(outcomes, path)
                    print(f"  {len(outcomes)} {repo.name}: {record.category} retrieval {record.retrieval_ndcg10:.3f} "
                          f"{strategy} {record.strategy_ndcg10:.3f}, {record.prompt_tokens} prompt tokens, "
                          f"{seconds:.1f} s", file=sys.stderr, flush=True)
            finally:
                index.close()
    except KeyboardInterrupt:
        print("[semble sample] interrupted: the queries that finished are kept", file=sys.stderr, flush=True)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        session.close()
    return outcomes


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _ranked(found: list[FoundFunction]) -> list[list[object]]:
    return [[r.path, r.start_line, r.end_line, r.key, r.kind] for r in found[:20]]


def _plain(stats: dict[str, object]) -> dict[str, object]:
    """The strategy's stats that JSON keeps (the memory is left out: it is the notes, not the ranking)."""
    return {k: v for k, v in json.loads(json.dumps(stats, default=str)).items() if k != "memory"}


def _spans(found: list[FoundFunction]) -> list[Result]:
    return [(r.path, r.start_line, r.end_line) for r in found]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))] if ordered else 0.0


def markdown(sample: list[tuple[SembleRepo, Query]], outcomes: dict[str, SampledOutcome], strategy: str,
             model: str, split: str, command: str) -> str:
    done = [outcomes[k] for k in (outcome_key(r.name, q.text) for r, q in sample) if k in outcomes]
    repos = {r.name for r, _ in sample}
    lines = [f"Command: `{command}`", ""]
    intro = (f"Strategy `{strategy}` (model {model}) beside retrieval on the same {len(sample)} queries, "
             f"a seeded sample (seed {SAMPLE_SEED}) of the {split} split's queries dealt round-robin over its "
             f"{len(repos)} repositories. "
             f"Both rankings' top ten scored by semble's NDCG@10; a row's mean is over its queries.")
    if len(done) < len(sample):
        covered = sorted({o.repo for o in done})
        intro += (f" **Partial: {len(done)} of the {len(sample)} queries finished** (repositories "
                  f"{', '.join(covered)}); the figures are over those.")
    lexical = sorted({o.repo for o in done if not o.hybrid})
    if lexical:
        intro += f" Ranked lexically (vectors not all stored): {', '.join(lexical)}."
    lines.append(intro)
    if not done:
        return "\n".join(lines)
    rows = []
    for category in (*CATEGORIES, "all"):
        chosen = [o for o in done if category in ("all", o.category)]
        if not chosen:
            continue
        below = sum(o.strategy_ndcg10 < o.retrieval_ndcg10 - 1e-9 for o in chosen)
        above = sum(o.strategy_ndcg10 > o.retrieval_ndcg10 + 1e-9 for o in chosen)
        rows.append([category if category != "all" else "**all**", len(chosen),
                     f"{mean_or_zero(o.retrieval_ndcg10 for o in chosen):.3f}",
                     f"{mean_or_zero(o.strategy_ndcg10 for o in chosen):.3f}", above, below])
    lines += ["", table(["category", "queries", "retrieval NDCG@10", f"{strategy} NDCG@10",
                         f"{strategy} above retrieval", f"{strategy} below retrieval"], rows)]
    tokens = [float(o.prompt_tokens) for o in done]
    seconds = [o.seconds for o in done]
    failed = sum(o.model_failed for o in done)
    lines += ["", table(["cost per query", "mean", "p50", "p90"], [
        ["prompt tokens (cached or not)", round(statistics.mean(tokens)), round(statistics.median(tokens)),
         round(_pct(tokens, 0.9))],
        ["decoded tokens", round(statistics.mean(o.decoded for o in done)),
         round(statistics.median(o.decoded for o in done)), round(_pct([float(o.decoded) for o in done], 0.9))],
        ["seconds (model at the bench's threads, beside other work)", f"{statistics.mean(seconds):.1f}",
         f"{statistics.median(seconds):.1f}", f"{_pct(seconds, 0.9):.1f}"],
    ])]
    if failed:
        lines += ["", f"The model failed on {failed} queries; those are retrieval's list."]
    return "\n".join(lines)
