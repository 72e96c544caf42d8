"""Find a function by description with PRISM over retrieval's candidates.

Retrieval ranks the repository; candidates are shown to the model a few at a time
(PRISM's chunks). At each chunk the model proposes revisions to a query memory
`candidate_functions: {name -> {does, fit}}` (amendments encoding by default, so the
task, schema, query and earlier amendments stay a cached prefix; task, rules and schema
also come back from a state file when other model work used the cache in between). All
candidates are returned in retrieval order, except that one moves to the front when the
evidence says so. Two kinds of evidence (`PrismSettings.evidence`):

- "likelihood" (default): first, how likely the model finds the user's description as
  its own description of each of retrieval's top-10 bodies (query_likelihood); the best
  moves above retrieval's first only when it beats it by a margin per token. Then the
  pass reads the first few of that order (two per step) and its memory's `does` notes are
  the reasons shown. The 0.5B's memory fits are flat (nearly always 1) and, read as
  probabilities, follow the candidate's position in the chunk, not the candidate; the
  likelihood does not. A sentence (<= 40 words) is first written out as code by the model
  and searched again fused with that guess (query_expansion), and it is scored against each
  candidate's signature (signature_pmi) instead of the bodies.
- "fit": the pass reads all the candidates, then a final call over the memory names one
  entry under a grammar that only admits memory keys; it moves up only when the memory
  rates it a strong fit and better than retrieval's first (`promotable`).

Two views of a candidate: its whole body, or its precomputed note and signature
(`notes_for`: the model's note where one is stored, else the deterministic one), which
is several times fewer prompt tokens. Either is fitted to the model's window
(tasks/prism_cards.py): a card shows the heads of a long signature and note, and each
step drops the lowest-ranked candidate's text first when the room runs out.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.index import RepoIndex
from prism_code.llm.accounting import Accounting
from prism_code.llm.backend import ScoringBackend
from prism_code.llm.state_cache import StateCache
from prism_code.memory.code_schemas import CandidateMatch, CandidateMatches
from prism_code.memory.notes_store import NotesStore
from prism_code.memory.revisions import Target
from prism_code.memory.runner import PassResult, PassSettings, StepProgress, run_pass
from prism_code.memory.schema import format_path
from prism_code.retrieval.fusion import SHORT_QUERY_WORDS
from prism_code.tasks.find_events import FindEvent, FindListener, Stage
from prism_code.tasks.find_function import FoundFunction, FunctionSearch
from prism_code.tasks.find_outcome import FindOutcome, answer_grammar, candidate_labels, parse_function_json
from prism_code.tasks.find_ranking import spelled_parts, spelled_symbol
from prism_code.tasks.find_settings import EVIDENCE, SHORT_EVIDENCE, VIEWS, PrismSettings
from prism_code.tasks.find_stream import RankingStream
from prism_code.tasks.prism_cards import CandidateText, candidate_text, fit_texts
from prism_code.tasks.query_expansion import hypothetical_function, language_name
from prism_code.tasks.query_likelihood import (
    DEFAULT_DESCRIPTION_TOKENS,
    DEFAULT_LINES,
    DEFAULT_MARGIN,
    SHORT_QUERY_MARGIN,
    body_text,
    rank_by_likelihood,
    rerank,
)
from prism_code.tasks.signature_pmi import EXPANDED_SIGNATURE_MARGIN, SIGNATURE_MARGIN, signature_of, signature_scores

log = logging.getLogger(__name__)


TASK = ("You help find the one function of a repository that [QUERY] describes. A search "
        "already picked some candidate functions; [TEXT] shows a few of them, each under a "
        "line `### name`. Put into the memory each function of [TEXT] that could be the one "
        "[QUERY] describes, under its name exactly as written after ###: say in a few words "
        "what it does and rate how well that fits [QUERY].")

# The final call (Algorithm 1, line 6) continues the pass's own prompt: its instruction
# stands where a chunk would, so task, schema, query and memory come from the KV cache.
ANSWER = ("Every candidate has been read; the memory holds those that could fit. Now do not "
          "propose revisions: name the one function of the memory that does what [QUERY] "
          'describes, the best fit. Answer with JSON {"function": name}, name being a key of '
          "candidate_functions.")
STRONG_FIT = 8  # nearer "does exactly what [QUERY] says" (10) than "similar job" (5)
# Retrieval's top-n whose bodies (or signatures) the likelihood reads: RepoQA's needles sit in
# retrieval's top 10 for most queries, and each one more costs a forward pass.
LIKELIHOOD_CANDIDATES = 10
# A body shown to the PRISM pass is cut here: its head says what it does, and the pass's
# prompt keeps room for five candidates per step.
MAX_BODY_LINES = 60
ANSWER_TOKENS = 40  # the final answer: one short JSON object naming a function and its reason


def fit_of(entry: object) -> int | None:
    """The fit a memory entry gives, or None when there is no entry (or no readable fit)."""
    if not isinstance(entry, dict):
        return None
    fit = entry.get("fit")
    return fit if isinstance(fit, int) and not isinstance(fit, bool) else None


def promotable(order: list[str], memory: dict[str, Any], strong_fit: int = STRONG_FIT) -> list[str]:
    """Memory keys the model may move above retrieval's first candidate, in retrieval order.

    Retrieval's order is the prior; the memory's verdict overrides it only when the model
    rated a candidate a strong fit and strictly better than retrieval's first (a tie keeps
    retrieval's choice; a first candidate the pass left out of the memory rates nothing).
    """
    if not order:
        return []
    top_fit = fit_of(memory.get(order[0]))
    out = []
    for key in order[1:]:
        fit = fit_of(memory.get(key))
        if fit is not None and fit >= strong_fit and (top_fit is None or fit > top_fit):
            out.append(key)
    return out


def _describe(entry: dict[str, Any] | None) -> str:
    if not entry:
        return ""
    does = str(entry.get("does", "")).strip().rstrip(".")
    return f"fit {entry.get('fit', '?')}/10" + (f", {does}" if does else "")


@dataclass
class _Query:
    """One find query's model, settings and running totals, shared by its stages."""

    session: ScoringBackend
    description: str
    settings: PrismSettings
    cancelled: CancelCheck | None
    on_event: FindListener | None
    total: int  # progress events a query reports after retrieval's
    rankings: RankingStream = field(default_factory=lambda: RankingStream(None))
    beyond: list[FoundFunction] = field(default_factory=list)  # retrieval's results past the candidates
    accounting: Accounting = field(default_factory=Accounting)
    stats: dict[str, Any] = field(default_factory=dict)
    done_before: int = 0  # steps of earlier stages the later ones count on from (the expansion)
    expanded: bool = False  # the candidates came from the sentence fused with the model's guess

    @property
    def signature_margin(self) -> float:
        return EXPANDED_SIGNATURE_MARGIN if self.expanded else SIGNATURE_MARGIN

    def emit(self, stage: Stage, message: str, done: int) -> None:
        if self.on_event is not None:
            self.on_event(FindEvent("prism", stage, message, min(done + self.done_before, self.total), self.total))


def find_prism(session: ScoringBackend, search: FunctionSearch, description: str, *, top: int = 10,
               on_event: FindListener | None = None, cancelled: CancelCheck | None = None,
               settings: PrismSettings | None = None, store: NotesStore | None = None,
               state_cache: StateCache | None = None, rankings: RankingStream | None = None,
               **overrides: Any) -> FindOutcome:
    """Run the PRISM find; `overrides` set PrismSettings fields (e.g. view="bodies").

    `state_cache` keeps the pass's query-independent prefix (task, rules, schema) on disk;
    `rankings` hears retrieval's ranking, then one per candidate the likelihood scores.
    """
    settings = _checked(settings or PrismSettings(), overrides)
    retrieved = search.search(description, top=max(top, settings.candidates))
    pool = retrieved[:settings.candidates]
    by_likelihood = settings.evidence == "likelihood"
    noted_n = min(settings.noted, len(pool)) if by_likelihood else len(pool)
    chunk = settings.noted_chunk if by_likelihood else settings.chunk_size
    held = held_by_retrieval(description, pool[0]) if pool and by_likelihood else ""
    expand = (bool(pool) and settings.expand_short_queries and len(description.split()) <= SHORT_QUERY_WORDS
              and not held)
    # Progress counts the expansion, candidates scored, pass steps, then the answer.
    scored_n = _model_scores(settings, description, len(pool)) if by_likelihood and not held else 0
    query = _Query(session, description, settings, cancelled, on_event,
                   expand + scored_n + -(-noted_n // chunk) + 1, rankings or RankingStream(None))
    query.rankings.retrieval(pool + _beyond(retrieved, len(pool), top), scored_n)
    query.emit("retrieval", f"{len(pool)} candidates from retrieval; top: {pool[0].qualname}" if pool
               else "no functions indexed", 0)
    if not pool:
        return FindOutcome([], Accounting(), {"chosen_by": "empty"})
    if expand:
        retrieved = _expanded(query, search, retrieved, max(top, settings.candidates))
        pool = retrieved[:settings.candidates]
        query.rankings.retrieval(pool + _beyond(retrieved, len(pool), top), scored_n)
    query.beyond = _beyond(retrieved, len(pool), top)

    keys = candidate_labels(pool)
    candidates = _candidates(session, search, pool, keys, settings, store)
    query.stats.update({"view": settings.view, "encoding": settings.encoding.value, "updates": settings.allow_updates,
                        "candidates": len(pool), "retrieval_order": keys})
    if by_likelihood:
        by_signature = (len(description.split()) <= SHORT_QUERY_WORDS
                        and settings.short_query_evidence == "signature")
        decide = _by_signature if by_signature else _by_likelihood
        if held:
            chosen = None
            query.stats["chosen_by"] = f"retrieval: {held}"
        else:
            chosen = decide(query, search.index, candidates, LIKELIHOOD_CANDIDATES)
        # The pass then writes the reasons for the results the user reads first.
        noted = sorted(candidates, key=lambda c: c.key != chosen)[:noted_n]
        passed = _note(query, noted, chunk, state_cache, steps_before=scored_n)
    else:
        noted = candidates
        passed = _note(query, noted, chunk, state_cache, steps_before=0)
        chosen = _by_memory(query, passed, keys, [c.key for c in candidates if c.key in query.stats["memory"]])
    query.emit("answer", f"answer: {chosen}" if chosen else "answer: none, retrieval order kept", query.total)

    ranked = _ranked(candidates, query.stats["memory"], chosen, query.stats.get("likelihood"),
                     {c.key for c in noted}, query.stats.get("signature_pmi"))
    return FindOutcome(ranked + query.beyond, query.accounting, query.stats)


def named_first(description: str, first: FoundFunction) -> str:
    """Retrieval's first's name when the query is that name ("flat_hash_map", "Rails::Engine"),
    else "". Such a query asks for the definition it spells and retrieval put it first by that
    name; on semble's tune split (#27) the model's evidence only moved other candidates above it.
    So prism keeps retrieval's own list (no expansion, no move) and only notes the first few.
    Only a query of at most SYMBOL_QUERY_MAX_WORDS (4) words can name one: never a RepoQA
    description (72 words and more) nor a docstring needle (6 to 40), so neither tuning changes."""
    return spelled_symbol(first.qualname, spelled_parts(description))


# A question about the code ("how X encodes Y", "where are routes registered?") asks for a place, often a
# file or a class, and often has several right answers; the likelihood's margins were tuned on
# descriptions of one function (RepoQA's, docstrings' first paragraphs), none of which is phrased so:
# 0 of RepoQA's 100 and 0 of the docstring bench's 140 start with these words or end with "?".
QUESTION = re.compile(r"^\s*(how|where|what|which|why)\b|\?\s*$", re.IGNORECASE)


def is_question(description: str) -> bool:
    return QUESTION.search(description) is not None


def held_by_retrieval(description: str, first: FoundFunction) -> str:
    """Why prism keeps retrieval's own list for this query (no expansion, no move; the notes
    are still written), or "" when the model's evidence may move a candidate up (#27)."""
    if named := named_first(description, first):
        return f"the query names retrieval's first ({named})"
    if is_question(description):
        return "the query is a question about the code, not a description of one function"
    return ""


def _beyond(retrieved: list[FoundFunction], pool: int, top: int) -> list[FoundFunction]:
    return [FoundFunction(f.name, f.qualname, f.path, f.start_line, f.end_line, f.score,
                          f"beyond the {pool} PRISM candidates; retrieval rank {pool + n}")
            for n, f in enumerate(retrieved[pool:top], 1)]


def _expanded(query: _Query, search: FunctionSearch, retrieved: list[FoundFunction],
              top: int) -> list[FoundFunction]:
    """Retrieval again, the sentence fused with the model's guess at its code."""
    language = language_name([f.path for f in retrieved])
    guess, generation = hypothetical_function(query.session, query.description, language, query.cancelled)
    query.accounting.add(generation.stats)
    query.stats["expansion"] = guess
    if query.cancelled is not None and query.cancelled():
        raise Cancelled()
    expanded = search.search(query.description, top=top, expansion=guess) if guess else retrieved
    first = guess.splitlines()[0] if guess else "(nothing written)"
    query.emit("expansion", f"searched with the model's guess: {first[:80]}", 1)
    query.done_before = 1
    query.expanded = bool(guess)
    return expanded


def _staged(settings: PrismSettings, description: str, candidates: int) -> bool:
    """Whether a long description reads the signatures before a shortlist's bodies."""
    return (len(description.split()) > SHORT_QUERY_WORDS
            and 0 < settings.long_query_bodies < min(LIKELIHOOD_CANDIDATES, candidates))


def _model_scores(settings: PrismSettings, description: str, candidates: int) -> int:
    """The forward passes the likelihood makes for a query: its progress total."""
    n = min(LIKELIHOOD_CANDIDATES, candidates)
    return n + settings.long_query_bodies if _staged(settings, description, candidates) else n


def first_candidate(scores: Mapping[int, float], margin: float) -> int:
    """Find's rule: the candidate that comes first, from the model's scores of those it read.

    `scores` maps a candidate's place in retrieval's order to its score (retrieval's first, 0, is
    always read); one read candidate moves above retrieval's first when it beats it by `margin`
    (query_likelihood.rank_by_likelihood), and one not read never moves. `prism-code bench
    likelihood` tunes the margins through this function, so what it measured is what find does.
    """
    order = sorted(scores)
    moved = rank_by_likelihood([scores[i] for i in order], margin)
    return 0 if moved is None else order[moved]


def shortlist(pmis: list[float], size: int) -> list[int]:
    """Retrieval's first and the `size - 1` others with the highest signature PMI, in retrieval order."""
    others = sorted(range(1, len(pmis)), key=lambda i: -pmis[i])[:max(0, size - 1)]
    return [0, *sorted(others)]


def _checked(settings: PrismSettings, overrides: dict[str, Any]) -> PrismSettings:
    if overrides:
        settings = replace(settings, **overrides)
    if settings.view not in VIEWS:
        raise ValueError(f"unknown candidate view {settings.view!r}; choose from {', '.join(VIEWS)}")
    if settings.evidence not in EVIDENCE:
        raise ValueError(f"unknown evidence {settings.evidence!r}; choose from {', '.join(EVIDENCE)}")
    if settings.short_query_evidence not in SHORT_EVIDENCE:
        raise ValueError(f"unknown short-query evidence {settings.short_query_evidence!r}; "
                         f"choose from {', '.join(SHORT_EVIDENCE)}")
    return settings


def _candidates(session: ScoringBackend, search: FunctionSearch, pool: list[FoundFunction], keys: list[str],
                settings: PrismSettings, store: NotesStore | None) -> list[CandidateText]:
    own_store = store is None
    store = store or NotesStore.for_index(search.index)
    try:
        return [CandidateText(k, f, candidate_text(search.index, f, k, settings.view, store, MAX_BODY_LINES, session))
                for k, f in zip(keys, pool)]
    finally:
        if own_store:
            store.close()


def _note(query: _Query, noted: list[CandidateText], chunk: int, state_cache: StateCache | None,
          steps_before: int) -> PassResult:
    """The PRISM pass over `noted`, `chunk` candidates per step; its figures go into the query's stats."""
    groups = [noted[i:i + chunk] for i in range(0, len(noted), chunk)]

    def targets(i: int, _chunk: str) -> list[Target]:
        return [Target(CandidateMatch, path=format_path(("candidate_functions", c.key))) for c in groups[i]]

    def on_step(p: StepProgress) -> None:
        query.emit("step", f"step {p.step}/{p.total}: {p.applied} revisions applied, {p.rejected} rejected",
                   p.step + steps_before)

    settings, session = query.settings, query.session
    pass_settings = PassSettings(encoding=settings.encoding, allow_updates=settings.allow_updates,
                                 min_revisions=1, max_revisions=settings.max_revisions,
                                 max_tokens=settings.step_tokens)
    def fitted(i: int, room: int) -> str:
        # A step's candidates are in rank order: the lowest-ranked one's text is cut first.
        return fit_texts(session, [c.text for c in groups[i]], room)

    passed = run_pass(session, TASK, query.description, CandidateMatches,
                      ["\n".join(c.text for c in g) for g in groups], pass_settings,
                      cancelled=query.cancelled, on_step=on_step, targets=targets, state_cache=state_cache,
                      fit_chunk=fitted)
    if passed.cancelled:
        raise Cancelled("find cancelled")
    memory = passed.memory.get("candidate_functions", {})
    query.accounting.add(passed.accounting)
    query.stats.update({
        "noted": [c.key for c in noted], "steps": len(passed.steps), "applied": passed.applied,
        "rejected": len(passed.rejected), "memory_entries": len(memory), "memory": memory,
        "step_rows": [s.accounting.as_row() for s in passed.steps],
        "parse_errors": sum(len(s.parse_errors) for s in passed.steps),
        "pass": passed.accounting.as_row(), "pass_accounting": passed.accounting,
        "candidate_tokens": sum(len(session.tokenize_text(c.text)) for c in noted)})
    return passed


def _by_memory(query: _Query, passed: PassResult, keys: list[str], names: list[str]) -> str | None:
    """The key the answer call over the memory moves above retrieval's first, else None."""
    stats = query.stats
    contenders = promotable(keys, stats["memory"], STRONG_FIT)
    if not contenders:
        # Whatever the answer named, retrieval's first would stay first: no call needed.
        stats["chosen_by"] = "retrieval: no other candidate rated a strong fit"
        return None
    gen = query.session.generate(passed.final_prompt(ANSWER, ANSWER_TOKENS), max_tokens=ANSWER_TOKENS,
                                 grammar=answer_grammar(names), cancelled=query.cancelled)
    query.accounting.add(gen.stats)
    stats["answer"] = gen.text
    stats["answer_call"] = {"reused": gen.stats.reused, "encoded": gen.stats.encoded,
                            "decoded": gen.stats.decoded}
    if gen.stats.finish_reason == "cancelled":
        raise Cancelled("find cancelled")
    answer = parse_function_json(gen.text, names)
    if answer is None:
        log.info("prism answer named no candidate: %r", gen.text)
        stats["chosen_by"] = "retrieval: the answer named no memory entry"
        return None
    if answer in contenders:
        stats["chosen_by"] = "answer: a strong fit above retrieval's first"
        return answer
    stats["chosen_by"] = ("retrieval: the answer is retrieval's first" if answer == keys[0]
                          else "retrieval: the answer was not rated above retrieval's first")
    return None


def _by_likelihood(query: _Query, index: RepoIndex, candidates: list[CandidateText], n: int) -> str | None:
    """The key to move above retrieval's first by the description's likelihood (over the
    first `n` candidates), else None."""
    settings = query.settings
    chosen_from = list(range(min(n, len(candidates))))
    done = 0
    if _staged(settings, query.description, len(candidates)):
        pmis = _signature_pmis(query, index, candidates, n)
        chosen_from, done = shortlist(pmis, settings.long_query_bodies), len(pmis)
    scored = [candidates[i] for i in chosen_from]
    logprobs: dict[int, float] = {}
    query.emit("likelihood", f"scoring the description against {len(scored)} candidate bodies", done)
    short = len(query.description.split()) <= SHORT_QUERY_WORDS
    # A sentence is scored after the bodies' code only (comments and docstrings out: a look-alike's
    # docstring would echo its words), with its own margin (nats per description token the best
    # candidate must gain over retrieval's first); a long description after the bodies as written.
    margin = SHORT_QUERY_MARGIN if short else DEFAULT_MARGIN
    bodies = [body_text(index, c.found, c.key, DEFAULT_LINES, code_only=short) for c in scored]

    def on_scored(i: int, logprob: float) -> None:
        query.emit("likelihood", f"scored {i + 1}/{len(scored)}: {scored[i].key} ({logprob:.2f}/token)",
                   done + i + 1)
        logprobs[chosen_from[i]] = logprob
        query.rankings.scored(_provisional(candidates, logprobs, margin) + query.beyond,
                              {c.found.key for c in scored[:i + 1]}, done + i + 1)

    verdict = rerank(query.session, bodies, query.description, margin, query.cancelled,
                     DEFAULT_DESCRIPTION_TOKENS, on_scored)
    for cost in verdict.stats:
        query.accounting.add(cost)
    stats = query.stats
    stats["likelihood"] = {c.key: round(v, 4) for c, v in zip(scored, verdict.scores)}
    first = first_candidate(dict(zip(chosen_from, verdict.scores, strict=True)), margin)
    chosen = candidates[first].key if first else None
    stats["chosen_by"] = ("retrieval: no candidate made the description clearly more likely" if chosen is None
                          else "likelihood: the description is clearly more likely after this body")
    query.emit("likelihood", f"first: {chosen or scored[0].key} ({stats['chosen_by']})", done + len(scored))
    return chosen


def _signature_pmis(query: _Query, index: RepoIndex, candidates: list[CandidateText], n: int) -> list[float]:
    """The description's PMI with the signatures of the first `n` candidates, each one's
    provisional ranking streamed as it is scored (margin: the signature rule's)."""
    scored = candidates[:n]
    margin = query.signature_margin
    pmis: dict[int, float] = {}
    query.emit("likelihood", f"scoring the description against {len(scored)} candidate signatures", 0)

    def on_scored(i: int, pmi: float) -> None:
        query.emit("likelihood", f"scored {i + 1}/{len(scored)}: {scored[i].key} (PMI {pmi:+.2f}/token)", i + 1)
        pmis[i] = pmi
        query.rankings.scored(_provisional(candidates, pmis, margin, SIGNATURE_LABEL) + query.beyond,
                              {c.found.key for c in scored[:i + 1]}, i + 1)

    result = signature_scores(query.session, [signature_of(index, c.found) for c in scored], query.description,
                              cancelled=query.cancelled, on_scored=on_scored)
    for cost in result.calls:
        query.accounting.add(cost)
    query.stats["signature_pmi"] = {c.key: round(pmis[i], 4) for i, c in enumerate(scored)}
    return [pmis[i] for i in range(len(scored))]


def _by_signature(query: _Query, index: RepoIndex, candidates: list[CandidateText], n: int) -> str | None:
    """The key to move above retrieval's first by the sentence's PMI with the signatures of the
    first `n` candidates, else None."""
    scored = candidates[:n]
    pmis = _signature_pmis(query, index, candidates, n)
    first = first_candidate(dict(enumerate(pmis)), query.signature_margin)
    chosen = scored[first].key if first else None
    query.stats["chosen_by"] = ("retrieval: no signature gained clearly more from the description" if chosen is None
                                else "signature: the description raises this header's likelihood the most")
    query.emit("likelihood", f"first: {chosen or scored[0].key} ({query.stats['chosen_by']})", len(scored))
    return chosen


LIKELIHOOD_LABEL = "description log-prob {score:.2f}/token"
SIGNATURE_LABEL = "signature PMI {score:+.2f}/token"


def _provisional(candidates: list[CandidateText], scores: dict[int, float], margin: float,
                 label: str = LIKELIHOOD_LABEL) -> list[FoundFunction]:
    """The order the model's scores give so far (candidate index -> score; retrieval's first
    is scored first): the final rule (one candidate moves above retrieval's first on a clear
    margin) applied to the candidates scored yet."""
    best = first_candidate(scores, margin)
    out = []
    for i in sorted(range(len(candidates)), key=lambda i: i != best):
        f = candidates[i].found
        if i in scores:
            gain = f"; {scores[i] - scores[0]:+.2f} against retrieval's first" if i else ""
            reason = f"{label.format(score=scores[i])}{gain}; retrieval rank {i + 1}"
            f = FoundFunction(f.name, f.qualname, f.path, f.start_line, f.end_line, f.score, reason)
        out.append(f)
    return out


def _ranked(candidates: list[CandidateText], memory: dict[str, Any], chosen: str | None,
            likelihood: dict[str, float] | None = None, noted: set[str] | None = None,
            signature_pmi: dict[str, float] | None = None) -> list[FoundFunction]:
    def with_reason(c: CandidateText, rank: int, reason: str) -> FoundFunction:
        f = c.found
        return FoundFunction(f.name, f.qualname, f.path, f.start_line, f.end_line, f.score,
                             f"{reason}; retrieval rank {rank}", f.kind)

    ordered = sorted(range(len(candidates)), key=lambda i: candidates[i].key != chosen)
    out = []
    for i in ordered:
        c = candidates[i]
        entry = memory.get(c.key)
        if c.key == chosen:
            by = "likelihood" if likelihood else "signature PMI" if signature_pmi else "PRISM"
            reason = (f"chosen by {by}: "
                      + (_describe(entry) or "not in the memory"))
        elif entry is not None:
            reason = "in PRISM memory, not chosen: " + _describe(entry)
        elif noted is not None and c.key not in noted:
            reason = "not read by the PRISM pass"
        else:
            reason = "not kept in the PRISM memory"
        if likelihood and c.key in likelihood:
            reason += "; " + LIKELIHOOD_LABEL.format(score=likelihood[c.key])
        if signature_pmi and c.key in signature_pmi:
            reason += "; " + SIGNATURE_LABEL.format(score=signature_pmi[c.key])
        out.append(with_reason(c, i + 1, reason))
    return out
