"""The model's rerank of retrieval's top 10, by view and margin, chosen on a tuning split.

Views: the description's likelihood after each body (as written, or its code only, without
comments and docstrings), and the description's PMI with each signature (how much it raises
the model's belief in the candidate's header; `prism_code.tasks.signature_pmi`). Each view
scores every candidate once; a margin rule then only compares numbers, so every (view, margin)
pair is evaluated on the same model calls. The pair is chosen on the docstrings tuning split
and reported on its test split, RepoQA Python and repoqa-multi beside retrieval alone.

Scores are kept per (benchmark, needle, view) with the candidates they were computed for, so a
rerun computes only what is new and a changed retrieval ranking is scored again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prism_bench.bootstrap import paired_difference
from prism_bench.repoqa_data import Haystack, is_needle
from prism_bench.repoqa_retrieval import haystack_search
from prism_bench.repoqa_strategies import by_haystack, located, select_needles
from prism_code.llm.runtime import LlamaSession
from prism_code.retrieval.dense import Embedder
from prism_code.retrieval.fusion import SHORT_QUERY_WORDS
from prism_code.tasks.find_function import FoundFunction, FunctionSearch
from prism_code.tasks.find_prism import first_candidate, shortlist
from prism_code.tasks.find_settings import LONG_QUERY_BODIES
from prism_code.tasks.query_expansion import hypothetical_function, language_name
from prism_code.tasks.query_likelihood import (
    DEFAULT_LINES,
    DEFAULT_MARGIN,
    body_text,
    description_likelihood,
)
from prism_code.tasks.signature_pmi import SIGNATURE_MARGIN, SignaturePriors, signature_of, signature_scores

SIGNATURE_PMI = "signature PMI"
# A long description's staged read: every signature, then the bodies (as written) of retrieval's first and
# the best other headers only, as many bodies as find reads (find_prism.LONG_QUERY_BODIES: what fits #16's
# budget of 2,000 prompt tokens a RepoQA query, signatures ~700, a body with the description ~440).
STAGED_BODIES = LONG_QUERY_BODIES
STAGED = f"signature PMI, then {STAGED_BODIES} bodies"
VIEWS = ("as written", "code only", SIGNATURE_PMI, STAGED)
MARGIN_NEEDLES = slice(20, 40)  # the RepoQA Python needles the bodies' margin (0.1) was chosen on
NOT_READ = -1e9  # the staged view's score for a body it did not read: never moved up
WITH_GUESS = ", with the guess"  # the benchmark's name when its candidates came from the fused search
MARGINS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 1.5, 2.0)


@dataclass
class ScoredCandidates:
    benchmark: str
    needle: str
    words: int
    target: int | None  # the needle's place among the candidates, None when retrieval missed it
    candidates: list[str] = field(default_factory=list)  # the candidates' keys, retrieval's order
    scores: dict[str, list[float]] = field(default_factory=dict)  # view -> score per candidate
    tokens: dict[str, int] = field(default_factory=dict)  # view -> prompt tokens evaluated
    # view -> prompt tokens evaluated per candidate (bodies only; rows cached before it have none)
    candidate_tokens: dict[str, list[int]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


class RowCache:
    """One JSON line per (benchmark, needle, view): its candidates, scores, tokens and seconds."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._known: dict[tuple[str, str, str], dict] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                    self._known[(entry["benchmark"], entry["needle"], entry["view"])] = entry
                except (ValueError, KeyError):
                    continue  # a line cut by an interrupted run

    def fill(self, row: ScoredCandidates, view: str) -> bool:
        entry = self._known.get((row.benchmark, row.needle, view))
        if entry is None or entry["candidates"] != row.candidates:
            return False
        row.scores[view], row.tokens[view], row.seconds[view] = entry["scores"], entry["tokens"], entry["seconds"]
        if "candidate_tokens" in entry:
            row.candidate_tokens[view] = entry["candidate_tokens"]
        return True

    def add(self, row: ScoredCandidates, view: str) -> None:
        entry = {"benchmark": row.benchmark, "needle": row.needle, "view": view, "candidates": row.candidates,
                 "scores": row.scores[view], "tokens": row.tokens[view], "seconds": row.seconds[view]}
        if view in row.candidate_tokens:
            entry["candidate_tokens"] = row.candidate_tokens[view]
        self._known[(row.benchmark, row.needle, view)] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")


class GuessCache:
    """The model's guess at each sentence's code (greedy, so the same model writes the same guess),
    one JSON line per (model, language, description), so a rerun writes no guess twice."""

    def __init__(self, path: Path, model: str) -> None:
        self.path, self.model = path, model
        self._known: dict[tuple[str, str], str] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                    if entry["model"] == model:
                        self._known[(entry["language"], entry["description"])] = entry["guess"]
                except (ValueError, KeyError):
                    continue  # a line cut by an interrupted run

    def guess(self, session: LlamaSession, description: str, language: str) -> str:
        known = self._known.get((language, description))
        if known is not None:
            return known
        guess, _ = hypothetical_function(session, description, language)
        self._known[(language, description)] = guess
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps({"model": self.model, "language": language, "description": description,
                                "guess": guess}) + "\n")
        return guess


def _score_view(session: LlamaSession, search: FunctionSearch, found: list[FoundFunction], description: str,
                view: str, priors: SignaturePriors) -> tuple[list[float], int, list[int]]:
    """Scores per candidate, prompt tokens evaluated in all, and per candidate (bodies only)."""
    if view == SIGNATURE_PMI:
        scored = signature_scores(session, [signature_of(search.index, f) for f in found], description, priors)
        return [s.pmi for s in scored.scores], scored.encoded, []
    scores, tokens = [], []
    for f in found:
        text = body_text(search.index, f, f.qualname, DEFAULT_LINES, code_only=view == "code only")
        likelihood = description_likelihood(session, text, description)
        scores.append(likelihood.mean_logprob)
        tokens.append(likelihood.stats.encoded)
    return scores, sum(tokens), tokens


def _staged_view(session: LlamaSession, search: FunctionSearch, found: list[FoundFunction], description: str,
                 row: ScoredCandidates) -> tuple[list[float], int, list[int]]:
    """The staged read's scores from the row's signature PMI, and its bodies' likelihood as written
    (taken from the row when every body was scored already)."""
    keep = shortlist(row.scores[SIGNATURE_PMI], STAGED_BODIES)
    scores, tokens = [NOT_READ] * len(found), [0] * len(found)
    known = "as written" in row.scores and "as written" in row.candidate_tokens
    for i in keep:
        if known:
            scores[i], tokens[i] = row.scores["as written"][i], row.candidate_tokens["as written"][i]
            continue
        text = body_text(search.index, found[i], found[i].qualname, DEFAULT_LINES)
        likelihood = description_likelihood(session, text, description)
        scores[i], tokens[i] = likelihood.mean_logprob, likelihood.stats.encoded
    return scores, row.tokens[SIGNATURE_PMI] + sum(tokens), tokens


def collect(benchmark: str, haystacks: list[Haystack], cache_dir: Path, embedder: Embedder,
            session: LlamaSession, limit: int, views: Sequence[str], rows_cache: RowCache,
            overlap: bool = False, candidates: int = 10,
            guesses: GuessCache | None = None) -> list[ScoredCandidates]:
    """Every view's scores of retrieval's top candidates per needle; with `guesses`, a sentence's
    candidates are `prism`'s when its expansion is on: the sentence fused with the model's guess."""
    chosen = select_needles(haystacks, limit)
    priors = SignaturePriors()
    out: list[ScoredCandidates] = []
    for haystack, needles in by_haystack(haystacks, chosen):
        with haystack_search(haystack, cache_dir, embedder) as search:
            for needle in needles:
                if overlap:
                    needle = located(search.index, needle)
                found = search.search(needle.description, top=candidates)
                if guesses is not None and len(needle.description.split()) <= SHORT_QUERY_WORDS:
                    guess = guesses.guess(session, needle.description, language_name([f.path for f in found]))
                    found = search.search(needle.description, top=candidates, expansion=guess) if guess else found
                target = next((i for i, f in enumerate(found) if is_needle(f.path, f.start_line, needle)), None)
                row = ScoredCandidates(benchmark, f"{needle.repo}:{needle.name}", len(needle.description.split()),
                                       target, [f.key for f in found])
                if STAGED in views:
                    rows_cache.fill(row, "as written")  # the staged view reuses bodies already scored
                for view in _ordered(views):
                    if rows_cache.fill(row, view):
                        continue
                    started = time.perf_counter()
                    if view == STAGED:
                        row.scores[view], row.tokens[view], per_candidate = _staged_view(
                            session, search, found, needle.description, row)
                    else:
                        row.scores[view], row.tokens[view], per_candidate = _score_view(
                            session, search, found, needle.description, view, priors)
                    if per_candidate:
                        row.candidate_tokens[view] = per_candidate
                    row.seconds[view] = time.perf_counter() - started
                    rows_cache.add(row, view)
                out.append(row)
                print(f"{benchmark} {len(out)}/{len(chosen)} {row.needle} target {target} "
                      f"{ {v: round(s, 1) for v, s in row.seconds.items()} }", flush=True)
    return out


def _ordered(views: Sequence[str]) -> list[str]:
    """The views in scoring order: the staged view reads the signatures' scores."""
    if STAGED not in views:
        return list(views)
    return [v for v in VIEWS if v in views and v != STAGED] + ([SIGNATURE_PMI] if SIGNATURE_PMI not in views
                                                               else []) + [STAGED]


def first_is_right(row: ScoredCandidates, view: str, margin: float) -> bool:
    """Whether find's rule (find_prism.first_candidate) puts the needle first from the view's scores
    (a body the staged view did not read is not a score)."""
    read = {i: score for i, score in enumerate(row.scores[view]) if score != NOT_READ}
    return row.target == first_candidate(read, margin)


def top1(rows: Sequence[ScoredCandidates], view: str | None, margin: float = 0.0) -> float:
    """Top-1 with the rerank's (view, margin); view None is retrieval alone."""
    if not rows:
        return 0.0
    return sum(row.target == 0 if view is None else first_is_right(row, view, margin) for row in rows) / len(rows)


def choose(tune: Sequence[ScoredCandidates], views: Sequence[str]) -> tuple[str, float]:
    """Best top-1 on the tuning rows; ties go to the larger margin (closer to retrieval's order)."""
    return max(((v, m) for v in views for m in MARGINS), key=lambda vm: (top1(tune, *vm), vm[1]))


def moves(rows: Sequence[ScoredCandidates], view: str, margin: float) -> tuple[int, int]:
    """(queries the rerank made right, queries it made wrong) against retrieval's first."""
    fixed = sum(first_is_right(r, view, margin) and r.target != 0 for r in rows)
    broke = sum(r.target == 0 and not first_is_right(r, view, margin) for r in rows)
    return fixed, broke


def _tokens(rows: Sequence[ScoredCandidates], view: str) -> str:
    tokens = [r.tokens[view] for r in rows if r.tokens.get(view)]
    return f"{sum(tokens) / len(tokens):.0f}" if tokens else "-"


def markdown(rows_by_benchmark: dict[str, list[ScoredCandidates]], tuned_on: str, views: Sequence[str],
             command: str) -> str:
    view, margin = choose(rows_by_benchmark[tuned_on], views)
    lines = [f"Command: `{command}`", "",
             f"Chosen on **{tuned_on}** only: view **{view}**, margin **{margin:g}** "
             f"(nats per token; before: {DEFAULT_MARGIN:g}, bodies as written).", "",
             "| benchmark | queries | retrieval top-1 | chosen | made right / made wrong | right in top-10 | "
             "prompt tokens / query (chosen view) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for benchmark, rows in rows_by_benchmark.items():
        tag = " (tuning split)" if benchmark == tuned_on else ""
        fixed, broke = moves(rows, view, margin)
        in_top = sum(r.target is not None for r in rows) / max(1, len(rows))
        lines.append(f"| {benchmark}{tag} | {len(rows)} | {top1(rows, None):.3f} | {top1(rows, view, margin):.3f} | "
                     f"{fixed} / {broke} | {in_top:.3f} | {_tokens(rows, view)} |")
    lines += ["", "Top-1 by view and margin (every row from the same model calls):", "",
              "| benchmark | view | tokens / query | " + " | ".join(f"m={m:g}" for m in MARGINS) + " |",
              "| --- | --- | --- | " + " | ".join("---" for _ in MARGINS) + " |"]
    for benchmark, rows in rows_by_benchmark.items():
        for v in views:
            lines.append(f"| {benchmark} | {v} | {_tokens(rows, v)} | "
                         + " | ".join(f"{top1(rows, v, m):.3f}" for m in MARGINS) + " |")
    return "\n".join(lines)


def expansion_markdown(rows_by_benchmark: dict[str, list[ScoredCandidates]], views: Sequence[str]) -> str:
    """Per split, the rerank on the guessed candidates at the margin chosen on their tuning rows against
    the rerank on retrieval's own candidates at its own margin (SIGNATURE_MARGIN)."""
    view, margin = choose(rows_by_benchmark[f"docstrings tune{WITH_GUESS}"], views)
    lines = ["", f"The signatures read from retrieval's list (margin {SIGNATURE_MARGIN:g}) against the guess first, "
                 f"then the signatures of the fused list (margin {margin:g}), paired by query:", "",
             "| split | queries | retrieval's list | with the guess | paired difference [95%] |",
             "| --- | --- | --- | --- | --- |"]
    for split in ("tune", "test"):
        # Both lists come from the same needles in the same order (a name can repeat within a project).
        pairs = list(zip(rows_by_benchmark[f"docstrings {split}"], rows_by_benchmark[f"docstrings {split}{WITH_GUESS}"],
                         strict=True))
        old = [float(first_is_right(before, SIGNATURE_PMI, SIGNATURE_MARGIN)) for before, _ in pairs]
        new = [float(first_is_right(after, view, margin)) for _, after in pairs]
        tag = " (margin chosen here)" if split == "tune" else ""
        lines.append(f"| {split}{tag} | {len(pairs)} | {sum(old) / max(1, len(old)):.3f} | "
                     f"{sum(new) / max(1, len(new)):.3f} | {paired_difference(new, old).signed()} |")
    return "\n".join(lines)


def staged_markdown(rows_by_benchmark: dict[str, list[ScoredCandidates]], command: str) -> str:
    """Long descriptions (RepoQA): retrieval, the signatures alone, every body, and the staged read,
    each at the margin find uses for it; none of these margins was chosen on these needles."""
    columns = [(SIGNATURE_PMI, SIGNATURE_MARGIN), ("as written", DEFAULT_MARGIN), (STAGED, DEFAULT_MARGIN)]
    lines = [f"Command: `{command}`", "",
             f"Margins as find uses them: signatures {SIGNATURE_MARGIN:g} (docstrings tuning split), bodies "
             f"{DEFAULT_MARGIN:g} (RepoQA Python needles 21-40, session 7). Top-1, then prompt tokens per query.", "",
             "| benchmark | needles | retrieval | " + " | ".join(v for v, _ in columns)
             + f" | {STAGED}: made right / wrong | " + " | ".join(f"tokens: {v}" for v, _ in columns) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in columns) + " | --- | "
             + " | ".join("---" for _ in columns) + " |"]
    for benchmark, all_rows in rows_by_benchmark.items():
        if benchmark.startswith("docstrings"):
            continue  # sentences: find reads their signatures only
        cells = []
        for view, margin in columns:
            rows = [r for r in all_rows if view in r.scores]
            cells.append(f"{top1(rows, view, margin):.3f} ({len(rows)})" if rows else "-")
        staged = [r for r in all_rows if STAGED in r.scores]
        fixed, broke = moves(staged, STAGED, DEFAULT_MARGIN)
        lines.append(f"| {benchmark} | {len(all_rows)} | {top1(all_rows, None):.3f} | " + " | ".join(cells)
                     + f" | {fixed} / {broke} | "
                     + " | ".join(_tokens([r for r in all_rows if v in r.scores], v) for v, _ in columns) + " |")
    return "\n".join(lines)


def chart(rows_by_benchmark: dict[str, list[ScoredCandidates]], tuned_on: str, views: Sequence[str],
          path: Path) -> Path:
    """Top-1 per benchmark: retrieval alone, and each view at the margin chosen for it on the tuning split."""
    from prism_bench.charts import grouped_bars

    series: dict[str, Sequence[float]] = {"retrieval": [top1(rows, None) for rows in rows_by_benchmark.values()]}
    for view in views:
        _, margin = choose(rows_by_benchmark[tuned_on], [view])
        series[f"{view} (margin {margin:g})"] = [top1(rows, view, margin) for rows in rows_by_benchmark.values()]
    groups = [f"{name}\n({len(rows)})" for name, rows in rows_by_benchmark.items()]
    return grouped_bars(path, f"Find top-1: the model's rerank of retrieval's top 10 (tuned on {tuned_on})",
                        groups, series, "top-1")


def expansion_chart(rows_by_benchmark: dict[str, list[ScoredCandidates]], model: str, path: Path) -> Path:
    """Sentences' top-1 per docstrings split: retrieval, retrieval with the guess, the signatures read from
    either list (retrieval's at SIGNATURE_MARGIN, the fused one at the margin chosen on its tuning rows)."""
    from prism_bench.charts import grouped_bars

    _, margin = choose(rows_by_benchmark[f"docstrings tune{WITH_GUESS}"], [SIGNATURE_PMI])
    plain = [rows_by_benchmark[f"docstrings {split}"] for split in ("tune", "test")]
    guessed = [rows_by_benchmark[f"docstrings {split}{WITH_GUESS}"] for split in ("tune", "test")]
    series: dict[str, Sequence[float]] = {
        "retrieval": [top1(rows, None) for rows in plain],
        "retrieval + model's guess": [top1(rows, None) for rows in guessed],
        f"signatures (margin {SIGNATURE_MARGIN:g})": [top1(rows, SIGNATURE_PMI, SIGNATURE_MARGIN) for rows in plain],
        f"guess, then signatures (margin {margin:g})": [top1(rows, SIGNATURE_PMI, margin) for rows in guessed],
    }
    groups = [f"docstrings {split}{' (tuned on)' if split == 'tune' else ''}\n({len(rows)})"
              for split, rows in zip(("tune", "test"), plain, strict=True)]
    return grouped_bars(path, f"Find top-1 on one-sentence queries, {model}", groups, series, "top-1")


def run_cli(limit: int, repoqa_limit: int, languages: Sequence[str], model: str, threads: int,
            views: Sequence[str], command: str, chart_path: Path | None = None, expand: bool = False) -> str:
    """The views' table (and chart); `expand` adds the docstring splits again with the model's guess
    fused into the candidates, and the margin is then chosen on the tuning split's guessed rows."""
    from prism_bench import docstrings_data, repoqa_data

    embedder = Embedder()
    rows_cache = RowCache(docstrings_data.default_cache_dir() / "likelihood-rows" / f"{model}.jsonl")
    session = LlamaSession.open(model, n_threads=threads, n_ctx=4096)
    try:
        cache = docstrings_data.default_cache_dir() / "indexes"
        rows = {f"docstrings {split}": collect(f"docstrings {split}", docstrings_data.load_haystacks(split), cache,
                                              embedder, session, limit, views, rows_cache)
                for split in ("tune", "test")}
        if expand:
            guesses = GuessCache(docstrings_data.default_cache_dir() / "guesses.jsonl", model)
            for split in ("tune", "test"):
                name = f"docstrings {split}{WITH_GUESS}"
                rows[name] = collect(name, docstrings_data.load_haystacks(split), cache, embedder, session, limit,
                                     views, rows_cache, guesses=guesses)
        repoqa_cache = repoqa_data.default_cache_dir() / "indexes"
        if repoqa_limit:
            haystacks = repoqa_data.load_haystacks()
            rows["RepoQA python"] = collect("RepoQA python", haystacks, repoqa_cache, embedder,
                                            session, repoqa_limit, views, rows_cache)
            if repoqa_limit == 0 or repoqa_limit > MARGIN_NEEDLES.stop:
                # The body margin was chosen on needles 21-40: the rest is data it never saw.
                seen = {f"{n.repo}:{n.name}" for _, n in select_needles(haystacks, MARGIN_NEEDLES.stop)[MARGIN_NEEDLES]}
                rows["RepoQA python, without needles 21-40"] = [r for r in rows["RepoQA python"]
                                                                if r.needle not in seen]
            for language in languages:
                rows[f"RepoQA {language}"] = collect(f"RepoQA {language}", repoqa_data.load_multi_haystacks(language),
                                                     repoqa_cache, embedder, session, repoqa_limit, views, rows_cache,
                                                     overlap=True)
    finally:
        session.close()
    if STAGED in views:
        return staged_markdown(rows, command)
    tuned_on = f"docstrings tune{WITH_GUESS}" if expand else "docstrings tune"
    body = markdown(rows, tuned_on, views, command)
    if expand and SIGNATURE_PMI in views:
        body += "\n" + expansion_markdown(rows, views)
        if chart_path is not None:
            png = expansion_chart(rows, model, chart_path.with_name(f"find-sentences-{model}.png"))
            body += f"\n\n![find on sentences](images/{png.name})"
    elif chart_path is not None:
        png = chart(rows, tuned_on, views, chart_path)
        body += f"\n\n![find: the model's rerank](images/{png.name})"
    return body
