"""`prism-code bench semble`: find's retrieval strategy on semble's 42 repositories, scored
with semble's NDCG@10 rule beside semble's published figures.

Each repository's folder is indexed as `prism-code index` does (with embeddings unless
asked not to) and every query runs through `run_find(FindRequest(query))`, as `prism-code
find` runs it; its top ten (path, start_line, end_line) are scored. Find ranks functions,
classes and files without definitions, so a target no indexed unit can match (a span outside
every one, a file too short to be a unit, a language the parser lacks) scores nothing whatever
the ranking: such queries are counted. A repository none of whose files the parser knows is not
indexed; its queries score 0 and it is marked.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from prism_bench.semble_coverage import is_parsable, open_index, targets_parsed
from prism_bench.semble_data import SembleRepo, Split, Target, materialise, split_of
from prism_bench.semble_scoring import (
    Result,
    mean_or_zero,
    ndcg_at_10,
    path_matches,
    repo_category_means,
    result_matches,
    target_rank,
)
from prism_code.atomic import atomic_write
from prism_code.fragments import Fragment


@dataclass
class QueryRecord:
    """One query's outcome, kept in the results JSON for analysis."""

    query: str
    category: str
    ndcg10: float
    reachable: bool  # some indexed function could match one of its targets
    targets: list[dict[str, object]]  # {"target": path[:lines], "secondary": bool, "rank": int | None}
    top: list[str]  # "path:start-end qualname", best first
    # A diagnostic, not what find returns: find's ranking with each file's later functions
    # dropped, so ten distinct files are scored (semble's targets are mostly whole files).
    ndcg10_per_file: float = 0.0


@dataclass
class RepoRun:
    repo: str
    language: str
    split: Split
    parsed: bool  # the index parsed a file the annotations name
    functions: int = 0
    queries: list[QueryRecord] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)

    @property
    def ndcg10(self) -> float:
        return mean_or_zero(q.ndcg10 for q in self.queries)

    @property
    def ndcg10_per_file(self) -> float:
        return mean_or_zero(q.ndcg10_per_file for q in self.queries)

    @property
    def by_category(self) -> dict[str, float]:
        return repo_category_means([(q.category, q.ndcg10) for q in self.queries])

    @property
    def unreachable(self) -> int:
        return sum(not q.reachable for q in self.queries)

    @property
    def p50_ms(self) -> float | None:
        return statistics.median(self.latency_ms) if self.latency_ms else None


# Find's results read to fill ten distinct files for the one-per-file diagnostic: on these
# repositories find's top ten hold 3.4 to 5.8 distinct files, so a hundred functions give ten.
FILE_POOL = 100


def one_per_file(results: list[Result]) -> list[Result]:
    """Each file's first result, in order: the ranking with a file's repeats dropped."""
    seen: set[str] = set()
    kept = []
    for result in results:
        if result[0] not in seen:
            seen.add(result[0])
            kept.append(result)
    return kept


def reachable(targets: tuple[Target, ...], functions: dict[str, list[tuple[int, int]]]) -> bool:
    """Whether some function find could return (path -> its functions' line spans) matches
    one of the targets by semble's rule."""
    return any(result_matches((path, start, end), t)
               for t in targets for path, spans in functions.items() if path_matches(path, t.path)
               for start, end in spans)


def function_spans(functions: list[Fragment]) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for f in functions:
        spans.setdefault(f.path, []).append((f.start_line, f.end_line))
    return spans


def score_query(text: str, category: str, targets: tuple[Target, ...], results: list[Result],
                labels: list[str], functions: dict[str, list[tuple[int, int]]]) -> QueryRecord:
    return QueryRecord(
        query=text, category=category, ndcg10=ndcg_at_10(results, targets),
        reachable=reachable(targets, functions),
        targets=[{"target": t.label(), "secondary": t.secondary, "rank": target_rank(results, t)} for t in targets],
        top=labels)


def _embedding_progress(repo: str):
    last = [0.0]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] > 15:  # a line every 15 s keeps stderr readable
            last[0] = now
            print(f"  {repo}: embedded {done}/{total}", file=sys.stderr, flush=True)
    return show


def run_repo(repo: SembleRepo, split: Split, cache_dir: Path, embeddings: bool, top: int) -> RepoRun:
    from prism_code.embeddings import VectorCache
    from prism_code.memory.notes_store import llm_note_texts
    from prism_code.tasks.find_function import FunctionSearch
    from prism_code.tasks.find_request import FindRequest
    from prism_code.tasks.find_strategies import run_find

    root = materialise(repo, cache_dir)
    if not is_parsable(root):
        run = RepoRun(repo.name, repo.language, split, parsed=False)
        run.queries = [score_query(q.text, q.category, q.targets, [], [], {}) for q in repo.queries]
        return run
    index = open_index(repo, cache_dir)
    try:
        embedder = None
        if embeddings:
            from prism_code.retrieval.dense import Embedder

            embedder = Embedder()
        # As find runs for a user: cards carry the model's notes where they exist.
        search = FunctionSearch(index, embedder, notes=llm_note_texts(index))
        if embedder is not None:
            VectorCache(index.store, embedder).fill(search.embedding_texts(), progress=_embedding_progress(repo.name))
        functions = function_spans(list(search.corpus.fragments))
        run = RepoRun(repo.name, repo.language, split, parsed=targets_parsed(repo, index.snapshot().parsed),
                      functions=len(search.corpus.fragments))
        for query in repo.queries:
            started = time.perf_counter()
            found = run_find(FindRequest(query.text, top=top), search).results
            run.latency_ms.append((time.perf_counter() - started) * 1000)
            results: list[Result] = [(r.path, r.start_line, r.end_line) for r in found]
            labels = [f"{r.path}:{r.start_line}-{r.end_line} {r.qualname}" for r in found]
            record = score_query(query.text, query.category, query.targets, results, labels, functions)
            pool = run_find(FindRequest(query.text, top=FILE_POOL), search).results
            record.ndcg10_per_file = ndcg_at_10(one_per_file([(r.path, r.start_line, r.end_line) for r in pool]),
                                                query.targets)
            run.queries.append(record)
        return run
    finally:
        index.close()


def run(repos: list[SembleRepo], every_repo: list[SembleRepo], cache_dir: Path, embeddings: bool,
        top: int = 10) -> list[RepoRun]:
    """Index and search each of `repos`; `every_repo` (the whole data set) decides the splits."""
    runs = []
    for n, repo in enumerate(repos, 1):
        print(f"[semble {n}/{len(repos)}] {repo.name} ({repo.language}, {len(repo.queries)} queries)",
              file=sys.stderr, flush=True)
        started = time.perf_counter()
        runs.append(run_repo(repo, split_of(every_repo, repo), cache_dir, embeddings, top))
        r = runs[-1]
        print(f"  {repo.name}: NDCG@10 {r.ndcg10:.3f} (semble {repo.published.ndcg10:.3f}), "
              f"{r.functions} functions, {r.unreachable} queries unreachable, "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return runs


def results_path(cache_dir: Path, embeddings: bool) -> Path:
    return cache_dir / "results" / f"semble-{'hybrid' if embeddings else 'lexical'}.json"


def write_json(runs: list[RepoRun], path: Path) -> Path:
    """Per-query outcomes by repository, merged into what earlier runs of other repositories left."""
    data: dict[str, object] = {}
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            data = {}  # a damaged file from an interrupted write: this run's results replace it
    for r in runs:
        data[r.repo] = {**asdict(r), "ndcg10": r.ndcg10, "ndcg10_per_file": r.ndcg10_per_file,
                        "by_category": r.by_category, "p50_ms": r.p50_ms}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, [(json.dumps(data, indent=1) + "\n").encode()])
    return path
