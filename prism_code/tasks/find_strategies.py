"""The one entry point of find by description, for every strategy.

Callers (CLI, language server, benchmarks) build a `FindRequest` (tasks/find_request.py)
and get the same outcome back: results in the CLI contract (best first, a one-line reason
each), what the model calls cost, and numbers only that strategy has. A model strategy
whose backend fails (a remote engine down, slow or broken) answers with retrieval's list
for the same request, and the outcome says why; so does one whose prompt the model's window
cannot hold (prism's pass cuts what it shows to fit; a description longer than the window, or
a body of very long lines, is what is left). Model strategies import lazily so the retrieval
path never loads llama.cpp.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from prism_code.cancel import CancelCheck
from prism_code.llm.backend import BackendError
from prism_code.llm.types import ContextOverflow
from prism_code.tasks.find_events import FindEvent, FindListener
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_outcome import FindOutcome
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.find_stream import RankingListener, RankingStream

if TYPE_CHECKING:
    from prism_code.llm.backend import ScoringBackend
    from prism_code.llm.state_cache import StateCache

log = logging.getLogger(__name__)


def run_find(request: FindRequest, search: FunctionSearch, *, session: ScoringBackend | None = None,
             state_cache: StateCache | None = None, on_event: FindListener | None = None,
             cancelled: CancelCheck | None = None, on_ranking: RankingListener | None = None) -> FindOutcome:
    """Run `request` over `search`. A model strategy needs `session`; prism keeps its
    query-independent prefix in `state_cache` when one is given.

    `on_ranking` hears the rankings on the way (find_stream): for prism and wim,
    retrieval's at once and one per candidate the model reads; for every strategy the
    final one last, whose results are the outcome's.
    """
    rankings = RankingStream(on_ranking)
    if not request.uses_model:
        outcome = _retrieval(request, search, on_event)
        rankings.final(outcome.results)
        return outcome
    if session is None:
        raise ValueError(f"the {request.strategy} strategy needs a model session")
    try:
        outcome = _run_model(request, session, search, state_cache, on_event, cancelled, rankings)
    except BackendError as exc:
        # The only place a model's failure turns into an answer: retrieval's list, and why.
        log.warning("%s find: the model failed, answering with retrieval's list: %s", request.strategy, exc)
        outcome = _retrieval(request.as_retrieval(), search, on_event)
        outcome.model_error = exc
        rankings.final(outcome.results)
        return outcome
    except ContextOverflow as exc:
        # Not the engine's failure (no remote status): the model could not read this request.
        log.warning("%s find: the prompt does not fit the model's window, answering with retrieval's list: %s",
                    request.strategy, exc)
        outcome = _retrieval(request.as_retrieval(), search, on_event)
        outcome.stats["model_skipped"] = str(exc)
        rankings.final(outcome.results)
        return outcome
    # long-context reads its candidates in one call: all it returns is the model's reading.
    rankings.final(outcome.results,
                   {r.key for r in outcome.results} if request.strategy == "long-context" else None)
    return outcome


def _retrieval(request: FindRequest, search: FunctionSearch, on_event: FindListener | None) -> FindOutcome:
    results = search.search(request.description, top=request.top, alpha=request.alpha,
                            expansion=request.expansion)
    if on_event is not None:
        on_event(FindEvent("retrieval", "retrieval", f"{len(results)} candidates ranked", 1, 1))
    return FindOutcome(results)


def _run_model(request: FindRequest, session: ScoringBackend, search: FunctionSearch,
               state_cache: StateCache | None, on_event: FindListener | None, cancelled: CancelCheck | None,
               rankings: RankingStream) -> FindOutcome:
    description, top = request.description, request.top
    if request.strategy == "prism":
        from prism_code.tasks.find_prism import find_prism

        return find_prism(session, search, description, top=top, on_event=on_event, cancelled=cancelled,
                          settings=request.prism_settings(), state_cache=state_cache, rankings=rankings)
    if request.strategy == "long-context":
        from prism_code.tasks.find_long_context import find_long_context

        # One model call answers at once: no ranking on the way but the final one.
        return find_long_context(session, search, description, top=top, on_event=on_event,
                                 cancelled=cancelled, settings=request.long_context)
    try:
        from prism_code.tasks.find_wim import find_wim
    except ModuleNotFoundError as exc:
        if exc.name != "prism_code.tasks.find_wim":
            raise
        raise ValueError("wim strategy not available") from exc
    return find_wim(session, search, description, top=top, candidates=request.candidates, on_event=on_event,
                    cancelled=cancelled, settings=request.wim, rankings=rankings)
