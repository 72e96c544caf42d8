"""Find a function by description with Writing in the Margins (WiM) over retrieval's candidates.

The context is retrieval's top candidates, shown as source (cut to a token budget). It is
prefilled segment by segment into ONE KV cache. After each segment an extract
instruction I_A is appended and a margin decoded; then I_A and the margin are cut from
the cache (`LlamaSession.truncate`, llama.cpp seq_rm), so the next segment continues
right after the previous segment's tokens: the cache only ever holds the context, as in
a plain chunked prefill. The final answer call reads context + relevant margins +
the question again, under a grammar that only admits candidate names. On a remote engine
every step sends its whole prompt again and the server's prefix cache (llama.cpp's
`cache_prompt`, vLLM's prefix caching) stands in for the local KV cache.

Choices, and why:
- Segments follow retrieval order, not file order. Candidates come from many files, so
  file order buys no locality; retrieval order puts the likeliest candidates in the
  first segment, which makes the first margin (the first progress event) the most
  useful one and lets early exit fire after little prefill. The first segment is
  smaller than the others so that first margin arrives quickly.
- Classification: the paper classifies each margin (a classifier pass, or, in its
  experiments, the first generated token as the class label). We do the latter: the
  margin is JSON whose first value is the label, `{"relevant": true|false, ...}`; we read
  the model's probability of `true` at that position from the logits, and only when it
  wins do we decode the rest (the function name, under a grammar admitting only this
  segment's candidate names, and a short why). An irrelevant margin costs one token.
  A separate classifier call would double the decoding a 0.5B model does on 2 cores
  and judge a short margin without the code it came from.
- Early exit (paper Sec. 6) when a margin is relevant with probability >= a threshold
  and names one of the segment's candidates: that candidate is the answer and no
  further segments or final call are run.
- Every segment emits a progress event (a progress bar, paper Sec. 6); the message
  carries the margin when it is relevant.
- The answer moves above retrieval's first only when the description's likelihood after
  its body beats that after the first's (query_likelihood, two scoring passes).

Measured (docs/benchmarks.md, 20 RepoQA needles, 0.5B): the 0.5B labels every segment
relevant (P(true) 0.66-0.74 on the runs inspected), so no margin is dropped and the 0.9
early-exit bar is never met. Its final answer alone scored 0.65 against retrieval's 0.75
(session 4); with the likelihood's check, 0.75. The label is kept as the paper defines
it rather than re-thresholded on the benchmark.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from llama_cpp.llama_grammar import LlamaGrammar

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.llm.accounting import Accounting
from prism_code.llm.backend import ScoringBackend, model_label
from prism_code.llm.gbnf import gbnf_literal
from prism_code.tasks.find_events import FindEvent, FindListener, Stage
from prism_code.tasks.find_function import FoundFunction, FunctionSearch, unit_text
from prism_code.tasks.find_outcome import FindOutcome, candidate_labels
from prism_code.tasks.find_settings import WimSettings
from prism_code.tasks.find_stream import RankingStream
from prism_code.tasks.query_likelihood import (
    DEFAULT_DESCRIPTION_TOKENS,
    DEFAULT_LINES,
    DEFAULT_MARGIN,
    body_text,
    rerank,
)

log = logging.getLogger(__name__)

SYSTEM = ("You are a careful code reader. A search tool picked candidate functions from a repository; "
          "you help decide which one the user's description is about.")

CONTEXT_HEAD = "Description of the function the user looks for:\n{description}\n\nCandidate functions:\n"

# I_A: closes the reading turn, asks about this segment only, and opens the JSON answer
# up to the class label so the next token is `true` or `false`.
MARGIN_ASK = ("Look only at these functions: {labels}. Does one of them do what this description says?\n"
              "{query}\nAnswer in JSON: relevant true or false, the function's name, and why in a few words.")

FINAL_ASK = ("Notes I took while reading the candidates:\n{notes}\n"
             "Which candidate function does this description describe?\n{query}\n"
             "Answer in JSON with the function's name and a short reason.")

MARGIN_OPEN = '{"relevant":'
MARGIN_NAME_OPEN = ' true, "function": "'
ANSWER_OPEN = '{"function": "'
# Length of a margin's why and of the answer's reason, in characters: a clause a user reads at
# a glance (its tokens, about half as many, are what each margin decodes).
WHY_CHARS = 40
EXIT_PROBABILITY = 0.9  # P(relevant) of a margin that ends the run early
WIM_CANDIDATES = 10  # retrieval's top-k WiM reads unless asked for another number
# The paper's I_A holds the query; here it sits once at the head of the context instead (about
# 250 tokens saved per margin) and is restated only in the final question: each margin asks
# about "the description above".
MARGIN_QUERY = "(the description above)"
# The answer moves above retrieval's first only when the description is more likely after its
# body than after the first's by query_likelihood's DEFAULT_MARGIN (nats/token), read over
# DEFAULT_LINES of each body and the description's first DEFAULT_DESCRIPTION_TOKENS tokens.


@dataclass(frozen=True)
class CandidateBlock:
    """One of retrieval's results as WiM's context holds it: a name and a block of tokens."""

    label: str  # the name the model sees and writes: qualname, path-qualified when ambiguous
    found: FoundFunction
    tokens: list[int]  # the block the context shows for it


@dataclass
class Margin:
    segment: int  # 1-based
    p_relevant: float
    relevant: bool
    label: str | None = None
    why: str = ""

    def text(self) -> str:
        if not self.relevant:
            return "nothing relevant"
        return f"{self.label}: {self.why}" if self.label else f"relevant: {self.why}"


@dataclass
class WimRun:
    margins: list[Margin] = field(default_factory=list)
    early_exit: bool = False
    answer: str | None = None  # label the run settled on
    answer_reason: str = ""
    first_event_ms: float | None = None
    first_margin_ms: float | None = None
    held: bool = False  # the answer failed the likelihood check: retrieval's first stays first
    likelihood: dict[str, float] = field(default_factory=dict)  # label -> mean log-prob per token



def segment_bounds(n: int, first: int, size: int) -> list[tuple[int, int]]:
    """[start, end) index ranges of the segments over n candidates in retrieval order."""
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < n:
        end = min(n, start + (first if not bounds else size))
        bounds.append((start, end))
        start = end
    return bounds


def name_grammar(labels: Sequence[str], tail_key: str, chars: int) -> LlamaGrammar:
    """Continues after an opening quote: one of `labels`, then `", "<tail_key>": "<text>"}`."""
    names = " | ".join(gbnf_literal(label) for label in labels)
    between = gbnf_literal(f'", "{tail_key}": "')
    close = gbnf_literal('"}')
    gbnf = (f"root ::= name {between} text {close}\n"
            f"name ::= {names}\n"
            f"text ::= [^\"\\\\\\n]{{0,{chars}}}\n")
    return LlamaGrammar.from_string(gbnf, verbose=False)


def _parse_named(opening: str, text: str, key: str, tail_key: str, labels: Sequence[str]) -> tuple[str | None, str]:
    """(label, tail text) from a continuation of `opening`; label None when it names no candidate."""
    raw = opening + text
    value: object = None
    tail = ""
    try:
        data = json.loads(raw)
        if isinstance(data, dict):
            value, tail = data.get(key), str(data.get(tail_key, "") or "")
    except json.JSONDecodeError:
        # Cut off by max_tokens or otherwise broken: read the name tolerantly.
        m = re.search(rf'"{key}"\s*:\s*"([^"]*)"', raw)
        value = m.group(1) if m else None
        t = re.search(rf'"{tail_key}"\s*:\s*"([^"]*)', raw)
        tail = t.group(1) if t else ""
    if not isinstance(value, str):
        return None, tail.strip()
    value = value.strip()
    if value in labels:
        return value, tail.strip()
    # A bare qualname or short name is accepted only when it picks out exactly one candidate.
    hits = [label for label in labels if label.rsplit(":", 1)[-1] == value or label.rsplit(".", 1)[-1] == value]
    return (hits[0] if len(hits) == 1 else None), tail.strip()


def parse_margin(text: str, labels: Sequence[str]) -> tuple[str | None, str]:
    """A relevant margin's (function label, why), from the text decoded after MARGIN_NAME_OPEN."""
    return _parse_named(MARGIN_OPEN + MARGIN_NAME_OPEN, text, "function", "why", labels)


def parse_final_answer(text: str, labels: Sequence[str]) -> tuple[str | None, str]:
    """The final answer's (label, reason), from the text decoded after ANSWER_OPEN."""
    return _parse_named(ANSWER_OPEN, text, "function", "reason", labels)


def read_so_far(candidates: Sequence[CandidateBlock], run: WimRun, read: int) -> list[FoundFunction]:
    """The ranking after the first `read` candidates' margins: rank_results', with the
    candidates no margin has covered yet still showing retrieval's reason."""
    covered = {c.found.key for c in candidates[:read]}
    retrieval = {c.found.key: c.found for c in candidates}
    return [r if r.key in covered else retrieval[r.key] for r in rank_results(candidates, run)]


def rank_results(candidates: Sequence[CandidateBlock], run: WimRun) -> list[FoundFunction]:
    """All candidates: the answer first, then those relevant margins named, then retrieval order.

    Without an answer naming a real candidate this is retrieval's order (only margin-named
    ones move up), so a bad answer never loses a candidate.
    """
    by_label = {c.label: c for c in candidates}
    named = [m.label for m in run.margins if m.relevant and m.label in by_label]
    lead = [run.answer] if run.answer in by_label else []
    if run.held and candidates:
        lead = [candidates[0].label] + lead
    order: list[str] = []
    for label in lead + named + [c.label for c in candidates]:
        if label not in order:
            order.append(label)
    seen = {m.segment for m in run.margins}
    why = {m.label: m.why for m in run.margins if m.relevant and m.label}
    results = []
    for label in order:
        c = by_label[label]
        if label == run.answer:
            reason = f"wim answer: {why.get(label) or run.answer_reason or 'chosen'}"
            if run.held:
                reason += "; not moved above retrieval's first: the description is not clearly more likely after it"
        elif label in why:
            reason = f"margin: {why[label]}"
        else:
            reason = "margin: not relevant" if seen else "not read"
        if label in run.likelihood:
            reason += f"; description log-prob {run.likelihood[label]:.2f}/token"
        results.append(FoundFunction(c.found.name, c.found.qualname, c.found.path, c.found.start_line,
                                     c.found.end_line, c.found.score, f"{reason} (retrieval: {c.found.reason})"))
    return results


class WimReader:
    """Holds one query's prompt pieces and runs the WiM steps on a session."""

    def __init__(self, session: ScoringBackend, description: str, candidates: list[CandidateBlock],
                 settings: WimSettings, accounting: Accounting, cancelled: CancelCheck | None = None) -> None:
        self.session = session
        self.candidates = candidates
        self.settings = settings
        self.accounting = accounting
        self.cancelled = cancelled
        query_tokens = session.tokenize_text(description.strip())[: settings.query_tokens]
        self.query = session.detokenize(query_tokens)
        start, self._end = session.special_token("<|im_start|>"), session.special_token("<|im_end|>")
        self._start = start
        self.head = (session.chatml([("system", SYSTEM)], add_generation_prompt=False)
                     + [start] + session.tokenize_text("user\n" + CONTEXT_HEAD.format(description=self.query)))
        self.context: list[int] = list(self.head)  # what the cache holds between steps

    def _turn(self, text: str, opening: str) -> list[int]:
        s = self.session
        return ([self._end] + s.tokenize_text("\n") + [self._start] + s.tokenize_text("user\n" + text)
                + [self._end] + s.tokenize_text("\n") + [self._start] + s.tokenize_text("assistant\n" + opening))

    def _check(self) -> None:
        if self.cancelled is not None and self.cancelled():
            raise Cancelled("find cancelled")

    def read_segment(self, segment: int, members: Sequence[CandidateBlock]) -> Margin:
        """Prefill one segment after the previous ones, decode its margin, then drop I_A + margin."""
        self._check()
        s = self.session
        for c in members:
            self.context += c.tokens
        keep = len(self.context)
        labels = [c.label for c in members]
        ask = self._turn(MARGIN_ASK.format(labels=", ".join(labels), query=MARGIN_QUERY), MARGIN_OPEN)
        try:
            stats = s.prefill(self.context + ask, cancelled=self.cancelled)
            if stats.encoded == 0 and not stats.cancelled:
                # Everything was cached, so the logits belong to some other token: redo the last one.
                s.truncate(len(s.tokens) - 1)
                stats = s.prefill(self.context + ask, cancelled=self.cancelled)
            self.accounting.add(stats)
            if stats.cancelled:
                raise Cancelled("find cancelled")
            p_true = self._p_true(self.context + ask)
            self.accounting.decoded += 1  # the class label, read from the logits
            margin = Margin(segment, p_true, p_true >= 0.5)
            if margin.relevant:
                opening = ask + s.tokenize_text(MARGIN_NAME_OPEN)
                gen = s.generate(self.context + opening, max_tokens=12 + WHY_CHARS // 2,
                                 grammar=name_grammar(labels, "why", WHY_CHARS),
                                 cancelled=self.cancelled)
                self.accounting.add(gen.stats)
                if gen.stats.finish_reason == "cancelled":
                    raise Cancelled("find cancelled")
                margin.label, margin.why = parse_margin(gen.text, labels)
        finally:
            # seq_rm: the next segment continues right after this one's tokens.
            s.truncate(keep)
        return margin

    def _p_true(self, prompt: list[int]) -> float:
        """P(" true") against P(" false") for the token after MARGIN_OPEN (the end of `prompt`),
        from the last logits; a remote engine scores each spelling as a one-token continuation
        of the same prompt, which its prefix cache holds after the first."""
        s = self.session
        true_ids = _first_tokens(s, (" true", "true"))
        false_ids = _first_tokens(s, (" false", "false"))
        scores = s.next_token_scores(prompt, [*true_ids, *false_ids], self.cancelled)
        best_true = max(scores[t] for t in true_ids if t in scores)
        best_false = max(scores[t] for t in false_ids if t in scores)
        return 1.0 / (1.0 + math.exp(best_false - best_true))

    def answer(self, margins: Sequence[Margin]) -> tuple[str | None, str]:
        """Final call over context + relevant margins; (label, reason) or (None, "") if unreadable."""
        self._check()
        s = self.session
        kept = [m for m in margins if m.relevant]
        notes = "\n".join(f"- part {m.segment}: {m.text()}" for m in kept) or "- none of the parts looked relevant"
        labels = [c.label for c in self.candidates[: self._read_count(margins)]]
        prompt = self.context + self._turn(FINAL_ASK.format(notes=notes, query=self.query), ANSWER_OPEN)
        gen = s.generate(prompt, max_tokens=12 + WHY_CHARS // 2,
                         grammar=name_grammar(labels, "reason", WHY_CHARS), cancelled=self.cancelled)
        self.accounting.add(gen.stats)
        if gen.stats.finish_reason == "cancelled":
            raise Cancelled("find cancelled")
        return parse_final_answer(gen.text, labels)

    def _read_count(self, margins: Sequence[Margin]) -> int:
        bounds = segment_bounds(len(self.candidates), self.settings.first_segment, self.settings.segment)
        return bounds[len(margins) - 1][1] if margins else 0


_TOKEN_CACHE: dict[tuple[str, str], list[int]] = {}


def _first_tokens(session: ScoringBackend, spellings: Sequence[str]) -> list[int]:
    out = []
    for text in spellings:
        key = (model_label(session), text)
        if key not in _TOKEN_CACHE:
            _TOKEN_CACHE[key] = session.tokenize_text(text)[:1]
        out += _TOKEN_CACHE[key]
    return out


def build_candidates(session: ScoringBackend, search: FunctionSearch, found: Sequence[FoundFunction],
                     settings: WimSettings) -> list[CandidateBlock]:
    index = search.index
    labels = candidate_labels(found)
    out = []
    for label, f in zip(labels, found):
        source = unit_text(index, f.path, f.qualname) or f"def {f.name}(...): ..."
        body = session.tokenize_text(source)
        if len(body) > settings.function_tokens:
            body = session.tokenize_text(session.detokenize(body[: settings.function_tokens]).rstrip() + "\n    ...")
        head = session.tokenize_text(f"\n### {label}  ({f.path})\n```python\n")
        out.append(CandidateBlock(label, f, head + body + session.tokenize_text("\n```\n")))
    return out


def _check_answer(session: ScoringBackend, search: FunctionSearch, cands: Sequence[CandidateBlock], run: WimRun,
                  description: str, accounting: Accounting, cancelled: CancelCheck | None) -> None:
    """Hold the answer below retrieval's first unless the description's likelihood backs it.

    A 0.5B model's final answer is a weaker ranker than retrieval (it names a wrong
    candidate about as often as it rescues a needle); the likelihood of the user's words
    after each of the two bodies is the check that separates them (query_likelihood).
    """
    pair = [cands[0], next(c for c in cands if c.label == run.answer)]
    bodies = [body_text(search.index, c.found, c.label, DEFAULT_LINES) for c in pair]
    verdict = rerank(session, bodies, description, DEFAULT_MARGIN, cancelled, DEFAULT_DESCRIPTION_TOKENS)
    for cost in verdict.stats:
        accounting.add(cost)
    run.likelihood = {c.label: v for c, v in zip(pair, verdict.scores)}
    run.held = verdict.best is None


def fit_settings(session: ScoringBackend, settings: WimSettings, candidates: int) -> tuple[WimSettings, int]:
    """Settings and candidate count whose context + one I_A + the final prompt fit the window.

    The per-function budget shrinks first (down to 48 tokens); past that, fewer candidates.
    """
    reserve = 2 * settings.query_tokens + 600  # head, final question and notes, answer
    overhead = 30  # a candidate's `### label (path)` line and code fence
    room = session.n_ctx - reserve
    fitting = max(1, room // (48 + overhead))
    if candidates > fitting:
        log.info("wim: %d candidates do not fit a %d-token window; reading %d", candidates, session.n_ctx, fitting)
        candidates = fitting
    per = max(48, room // max(candidates, 1) - overhead)
    if per < settings.function_tokens:
        settings = WimSettings(**{**settings.__dict__, "function_tokens": per})
    return settings, candidates


def find_wim(session: ScoringBackend, search: FunctionSearch, description: str, *, top: int = 10,
             candidates: int | None = None, on_event: FindListener | None = None,
             cancelled: CancelCheck | None = None, early_exit: bool = True,
             settings: WimSettings | None = None, rankings: RankingStream | None = None) -> FindOutcome:
    """WiM over retrieval's top `candidates` (None: WIM_CANDIDATES); returns them all (answer
    first), cut to max(top, 1).

    `rankings` hears retrieval's ranking, then one after each margin."""
    started = time.perf_counter()
    settings, candidates = fit_settings(session, settings or WimSettings(),
                                        WIM_CANDIDATES if candidates is None else candidates)
    found = search.search(description, top=candidates)
    accounting = Accounting()
    run = WimRun()
    bounds = segment_bounds(len(found), settings.first_segment, settings.segment)
    total = len(bounds) + 1

    def emit(stage: Stage, message: str, done: int) -> None:
        now = (time.perf_counter() - started) * 1000
        if run.first_event_ms is None:
            run.first_event_ms = now
        if stage == "margin" and run.first_margin_ms is None:
            run.first_margin_ms = now
        if on_event is not None:
            on_event(FindEvent("wim", stage, message, done, total))

    # Retrieval's ranking is already an answer: shown at once, the margins then refine it.
    emit("retrieval", f"{len(found)} candidates from retrieval; top: {found[0].qualname}" if found
         else "no functions indexed", 0)
    rankings = rankings or RankingStream(None)
    rankings.retrieval(found[: max(top, 1)], len(found))
    cands = build_candidates(session, search, found, settings)
    if cands:
        reader = WimReader(session, description, cands, settings, accounting, cancelled)
        for k, (a, b) in enumerate(bounds, 1):
            margin = reader.read_segment(k, cands[a:b])
            run.margins.append(margin)
            emit("margin", f"margin {k}/{len(bounds)}: {margin.text()}", k)
            rankings.scored(read_so_far(cands, run, b)[: max(top, 1)], {c.found.key for c in cands[:b]}, b)
            if early_exit and margin.relevant and margin.label and margin.p_relevant >= EXIT_PROBABILITY:
                run.early_exit = True
                run.answer, run.answer_reason = margin.label, margin.why
                break
        if not run.early_exit:
            run.answer, run.answer_reason = reader.answer(run.margins)
            if run.answer is None:
                log.info("wim answer named no candidate; keeping retrieval order")
        if run.answer is not None and run.answer != cands[0].label:
            _check_answer(session, search, cands, run, description, accounting, cancelled)
        held = f" (held below retrieval's first {cands[0].label}: the likelihood does not back it)" if run.held else ""
        emit("answer", f"answer: {run.answer or 'none (retrieval order)'}{held}", total)
    results = rank_results(cands, run)[: max(top, 1)]
    kept = sum(1 for m in run.margins if m.relevant)
    stats = {
        "margins_kept": kept,
        "margins_dropped": len(run.margins) - kept,
        "early_exit": run.early_exit,
        "segments": len(run.margins),
        "segments_planned": len(bounds),
        "first_event_ms": round(run.first_event_ms, 1) if run.first_event_ms is not None else None,
        "first_margin_ms": round(run.first_margin_ms, 1) if run.first_margin_ms is not None else None,
        "answer": run.answer,
        "answer_held": run.held,
        "likelihood": {k: round(v, 4) for k, v in run.likelihood.items()},
        "margins": [{"segment": m.segment, "p_relevant": round(m.p_relevant, 3), "function": m.label,
                     "why": m.why} for m in run.margins],
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }
    return FindOutcome(results, accounting, stats)
