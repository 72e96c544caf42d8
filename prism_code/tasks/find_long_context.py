"""Find a function by description with the code itself in the model's context.

The paper's long-context ceiling: every function of the repository, in file order, in
one prompt, and the model names the one the description asks for. A 0.5B model has a
32K window, but on a 2-core CPU a prompt costs seconds per few hundred tokens, so the
code shown is capped by `token_budget`. When the repository does not fit, the functions
retrieval ranks highest are taken until the budget is spent (still shown in file
order) and every result's reason says so.

Three steps, as in find_prism: `pick` what the model reads, `ask` it which function the
description asks for, `merge` its answer with retrieval's order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.file_order import functions_in_order
from prism_code.fragments import Fragment
from prism_code.index import RepoIndex
from prism_code.llm.accounting import Accounting
from prism_code.llm.backend import CompletionBackend, model_label
from prism_code.tasks.find_events import FindEvent, FindListener, Stage
from prism_code.tasks.find_function import FoundFunction, FunctionSearch
from prism_code.tasks.find_outcome import FindOutcome, answer_grammar, candidate_labels, parse_function_json
from prism_code.tasks.find_settings import LongContextSettings

log = logging.getLogger(__name__)

SYSTEM = ("You read source code and name the function that a description asks for. Each function "
          "in [CODE] follows a line `### name`. Answer with JSON {\"function\": name}, the name "
          "exactly as written after ###.")
PROMPT_OVERHEAD = 400  # instructions, the description and the answer, besides the code
ANSWER_TOKENS = 48  # the answer: one JSON object naming a function, with a short reason


@dataclass(frozen=True)
class Shown:
    key: str
    fragment: Fragment
    tokens: int


def _keys(fragments: list[Fragment]) -> dict[str, str]:
    """Fragment key -> the name shown (qualname; path-qualified when two share one)."""
    return dict(zip([f.key for f in fragments], candidate_labels(fragments), strict=True))


@dataclass(frozen=True)
class Picked:
    """The functions the model reads, and how they were picked."""

    shown: list[Shown]  # in file order
    whole: bool  # the whole repository fits the budget
    scope: str  # what the model read, as every result's reason says it
    repository_tokens: int
    budget: int

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "whole_repository": self.whole, "functions_in_context": len(self.shown),
            "code_tokens": sum(s.tokens for s in self.shown), "repository_tokens": self.repository_tokens,
            "token_budget": self.budget}
        if not self.whole:
            stats["shown"] = [f"{s.fragment.path}:{s.fragment.start_line}" for s in self.shown]
        return stats


def find_long_context(session: CompletionBackend, search: FunctionSearch, description: str, *, top: int = 10,
                      on_event: FindListener | None = None, cancelled: CancelCheck | None = None,
                      settings: LongContextSettings | None = None, **overrides: Any) -> FindOutcome:
    settings = settings or LongContextSettings()
    if overrides:
        settings = LongContextSettings(**{**settings.__dict__, **overrides})

    def emit(stage: Stage, message: str, done: int) -> None:
        if on_event is not None:
            on_event(FindEvent("long-context", stage, message, done, 2))

    retrieved = search.search(description, top=max(top, settings.scan))
    picked = pick(session, search, retrieved, settings)
    emit("retrieval", f"{len(picked.shown)} functions in context: {picked.scope}", 1)
    stats = picked.stats()
    accounting = Accounting()
    chosen = ask(session, search.index, description, picked.shown, settings, accounting, stats, cancelled)
    stats["chosen_by"] = "answer" if chosen else "fallback: the answer named no function in context"
    emit("answer", f"answer: {chosen}" if chosen else "answer: none, retrieval order kept", 2)
    return FindOutcome(merge(picked, retrieved, chosen, top), accounting, stats)


def pick(session: CompletionBackend, search: FunctionSearch, retrieved: list[FoundFunction],
         settings: LongContextSettings) -> Picked:
    """The whole repository when it fits the budget, else retrieval's best that fit; in file order."""
    budget = max(0, min(settings.token_budget, session.n_ctx - PROMPT_OVERHEAD - ANSWER_TOKENS))
    ordered = functions_in_order(search.index)
    keys = _keys(ordered)
    sizes = _sizes(session, search, ordered, keys)
    repository_tokens = sum(sizes.values())
    whole = repository_tokens <= budget
    if whole:
        picked = {f.key for f in ordered}
        scope = f"the whole repository ({len(ordered)} functions, {repository_tokens} tokens)"
    else:
        picked, used = set(), 0
        for r in retrieved:
            key = r.key
            if key in sizes and used + sizes[key] <= budget:
                picked.add(key)
                used += sizes[key]
        scope = (f"retrieval's top {len(picked)} that fit a {budget}-token budget "
                 f"(the repository is {repository_tokens} tokens)")
    shown = [Shown(keys[f.key], f, sizes[f.key]) for f in ordered if f.key in picked]
    return Picked(shown, whole, scope, repository_tokens, budget)


def ask(session: CompletionBackend, index: RepoIndex, description: str, shown: list[Shown],
        settings: LongContextSettings, accounting: Accounting, stats: dict[str, Any],
        cancelled: CancelCheck | None) -> str | None:
    """The name of the shown function the model says `description` asks for; None when it names
    none (or nothing is shown). Its cost goes into `accounting`, its answer into `stats`."""
    if not shown:
        return None
    code = "\n".join(_block(s.key, s.fragment.path, index.text(s.fragment)) for s in shown)
    user = ("[CODE]\n" + code + "\n[QUERY]\n" + description.strip()
            + "\n\nWhich function in [CODE] does [QUERY] describe?")
    names = [s.key for s in shown]
    gen = session.generate(session.chatml([("system", SYSTEM), ("user", user)]),
                           max_tokens=ANSWER_TOKENS, grammar=answer_grammar(names),
                           cancelled=cancelled)
    accounting.add(gen.stats)
    if gen.stats.finish_reason == "cancelled":
        raise Cancelled("find cancelled")
    stats["answer"] = gen.text
    chosen = parse_function_json(gen.text, names)
    if chosen is None:
        log.info("long-context answer named no function in context: %r", gen.text)
    return chosen


def merge(picked: Picked, retrieved: list[FoundFunction], chosen: str | None,
          top: int) -> list[FoundFunction]:
    """The function the model named first, then retrieval's order; each with its reason."""
    by_key = {s.key: s for s in picked.shown}
    results: list[FoundFunction] = []
    if chosen is not None:
        f = by_key[chosen].fragment
        rank = next((i for i, r in enumerate(retrieved, 1) if r.key == f.key), None)
        score = next((r.score for r in retrieved if r.key == f.key), 0.0)
        name = f.qualname.rsplit(".", 1)[-1]
        results.append(FoundFunction(name, f.qualname, f.path, f.start_line, f.end_line, score,
                                     f"named by the model reading {picked.scope}"
                                     + (f"; retrieval rank {rank}" if rank else "")))
    lead = "" if chosen else "the model named no function in context; "
    for i, r in enumerate(retrieved, 1):
        if len(results) >= top:
            break
        if chosen is not None and r.key == by_key[chosen].fragment.key:
            continue
        results.append(FoundFunction(r.name, r.qualname, r.path, r.start_line, r.end_line, r.score,
                                     f"{lead}retrieval rank {i}"))
    return results


_SIZE_CACHE: dict[tuple[int, int, str], dict[str, int]] = {}


def _sizes(session: CompletionBackend, search: FunctionSearch, ordered: list[Fragment],
           keys: dict[str, str]) -> dict[str, int]:
    """Tokens per function block; kept for the last index generation (a big repository takes seconds)."""
    tag = (id(search.index), search.index.generation, model_label(session))
    if tag not in _SIZE_CACHE:
        _SIZE_CACHE.clear()
        index = search.index
        _SIZE_CACHE[tag] = {f.key: len(session.tokenize_text(_block(keys[f.key], f.path, index.text(f))))
                            for f in ordered}
    return _SIZE_CACHE[tag]


def _block(key: str, path: str, source: str) -> str:
    return f"### {key}\n# {path}\n{source}\n"
