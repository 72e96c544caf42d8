"""One entry point for every find-by-description strategy.

Callers (CLI, language server, benchmarks) name a strategy and get the same outcome
back: results in the CLI contract (best first, a one-line reason each), what the model
calls cost, and numbers only that strategy has. Model strategies import lazily so the
retrieval path never loads llama.cpp.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, get_args

from prism_code.cancel import CancelCheck
from prism_code.tasks.find_events import FindEvent, FindListener, Strategy
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_outcome import FindOutcome
from prism_code.tasks.find_stream import RankingListener, RankingStream

if TYPE_CHECKING:
    from prism_code.llm.backend import ScoringBackend

STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
MODEL_STRATEGIES: tuple[Strategy, ...] = tuple(s for s in STRATEGIES if s != "retrieval")


# Control characters other than whitespace (a NUL pasted from a binary, JSON's "\u0000")
# are no part of a description: they read as spaces.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# A lone surrogate (an argv byte that is not UTF-8, JSON's "\ud800") cannot be encoded, and
# the MiniLM tokenizer raises on it: it reads as U+FFFD, as a decoder replaces a bad byte.
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def description_text(description: str) -> str:
    """`description` as every strategy and caller reads it: controls as spaces, lone
    surrogates as U+FFFD, stripped. One normalization for the CLI and the server, so
    both rank the same text; ValueError when nothing is left to search for."""
    text = _SURROGATES.sub("\ufffd", _CONTROLS.sub(" ", description)).strip()
    if not text:
        raise ValueError("the description is empty")
    return text


def as_strategy(value: object) -> Strategy | None:
    """The strategy `value` names exactly, or None."""
    return next((s for s in STRATEGIES if s == value), None)


def run_find(strategy: str, search: FunctionSearch, description: str, *, top: int = 10,
             session: ScoringBackend | None = None, on_event: FindListener | None = None,
             cancelled: CancelCheck | None = None, on_ranking: RankingListener | None = None,
             **options: Any) -> FindOutcome:
    """Find the function `description` describes with `strategy`; see STRATEGIES.

    `on_ranking` hears the rankings on the way (find_stream): for prism and wim,
    retrieval's at once and one per candidate the model reads; for every strategy the
    final one last, whose results are the outcome's.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown find strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    description = description_text(description)
    rankings = RankingStream(on_ranking)
    if strategy == "retrieval":
        results = search.search(description, top=top, **options)
        if on_event is not None:
            on_event(FindEvent("retrieval", "retrieval", f"{len(results)} candidates ranked", 1, 1))
        rankings.final(results)
        return FindOutcome(results)
    if session is None:
        raise ValueError(f"the {strategy} strategy needs a model session")
    outcome = _run_model(strategy, session, search, description, top, on_event, cancelled, rankings, options)
    # long-context reads its candidates in one call: all it returns is the model's reading.
    rankings.final(outcome.results, {r.key for r in outcome.results} if strategy == "long-context" else None)
    return outcome


def _run_model(strategy: str, session: ScoringBackend, search: FunctionSearch, description: str, top: int,
               on_event: FindListener | None, cancelled: CancelCheck | None, rankings: RankingStream,
               options: dict[str, Any]) -> FindOutcome:
    if strategy == "prism":
        from prism_code.tasks.find_prism import find_prism

        return find_prism(session, search, description, top=top, on_event=on_event, cancelled=cancelled,
                          rankings=rankings, **options)
    if strategy == "long-context":
        from prism_code.tasks.find_long_context import find_long_context

        # One model call answers at once: no ranking on the way but the final one.
        return find_long_context(session, search, description, top=top, on_event=on_event,
                                 cancelled=cancelled, **options)
    try:
        from prism_code.tasks.find_wim import find_wim
    except ModuleNotFoundError as exc:
        if exc.name != "prism_code.tasks.find_wim":
            raise
        raise ValueError("wim strategy not available") from exc
    return find_wim(session, search, description, top=top, on_event=on_event, cancelled=cancelled,
                    rankings=rankings, **options)
