"""The WiM find strategy: the margin step leaves the KV cache as a cold run would, the
needle comes first on a fixture repository, and bad answers fall back to retrieval order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prism_code.index import RepoIndex
from prism_code.llm.accounting import Accounting
from prism_code.tasks.find_events import FindEvent
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_outcome import candidate_labels
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.find_settings import WimSettings
from prism_code.tasks.find_strategies import run_find
from prism_code.tasks.find_stream import Ranking
from prism_code.tasks.find_wim import (
    CandidateBlock,
    WimReader,
    WimRun,
    build_candidates,
    parse_final_answer,
    rank_results,
    segment_bounds,
)

FIXTURE = Path(__file__).parent / "fixtures" / "calcrepo"
SEND = "Send an invoice that was already created to a customer by email."
TOTAL = "Compute the total cost of a shopping cart from the unit prices and the quantities bought."


@pytest.fixture(scope="module")
def search(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("wim") / "calcrepo"
    shutil.copytree(FIXTURE, root)
    index = RepoIndex(root, cache_dir=root.parent / "cache")
    index.update()
    yield FunctionSearch(index)
    index.close()


@pytest.mark.model
def test_margin_removal_leaves_cache_as_a_cold_run(model_session, search: FunctionSearch) -> None:
    found = search.search(SEND, top=7)
    settings = WimSettings()
    cands = build_candidates(model_session, search, found, settings)
    accounting = Accounting()
    reader = WimReader(model_session, SEND, cands, settings, accounting)
    model_session.reset()
    margin = reader.read_segment(1, cands[:3])
    # The margin was decoded (label + name + why), then I_A and the margin were cut off.
    assert margin.relevant and accounting.decoded > 3
    assert model_session.tokens == reader.context
    follow = model_session.tokenize_text("\n# In one sentence, the first function above")
    warm = model_session.generate(reader.context + cands[3].tokens + follow, max_tokens=24)

    # Cold: a fresh cache filled with the same segments at the same boundaries, no margin ever.
    model_session.reset()
    model_session.prefill(reader.context)
    cold = model_session.generate(reader.context + cands[3].tokens + follow, max_tokens=24)
    assert warm.tokens == cold.tokens
    assert warm.stats.reused == len(reader.context)


@pytest.mark.model
def test_wim_puts_the_described_function_first_and_streams_margins(model_session, search: FunctionSearch) -> None:
    events: list[FindEvent] = []
    rankings: list[Ranking] = []
    request = FindRequest(TOTAL, "wim", top=7, candidates=7, wim=WimSettings(first_segment=2, segment=3))
    outcome = run_find(request, search, session=model_session, on_event=events.append, on_ranking=rankings.append)
    assert outcome.results[0].qualname == "total_price"
    # Anytime: retrieval's list before any margin, one ranking per margin, the answer last.
    read = [r.scored for r in rankings[1:-1]]
    assert rankings[0].scored == 0 and rankings[0].evidence == ["retrieval"] * 7
    assert [r.qualname for r in rankings[0].results] == [r.qualname for r in search.search(TOTAL, top=7)]
    assert read == [2, 5, 7][:len(read)] and read and all(r.total == 7 for r in rankings)
    assert [r.evidence.count("model") for r in rankings[1:-1]] == read
    assert rankings[-1].done and rankings[-1].results == outcome.results
    assert not any(r.done for r in rankings[:-1])
    assert len(outcome.results) == 7
    assert all(r.reason for r in outcome.results)
    margins = [e for e in events if e.stage == "margin"]
    assert margins and all(e.strategy == "wim" for e in events)
    assert any("total_price" in e.message for e in margins)
    assert events[-1].stage == "answer" and events[-1].done == events[-1].total
    assert [e.done for e in margins] == list(range(1, len(margins) + 1))
    stats = outcome.stats
    assert stats["segments"] == len(margins)
    assert stats["margins_kept"] + stats["margins_dropped"] == stats["segments"]
    assert events[0].stage == "retrieval" and "top: " in events[0].message  # before any model work
    assert 0 < stats["first_event_ms"] < stats["first_margin_ms"]
    assert outcome.accounting is not None and outcome.accounting.decoded > 0


def test_answer_naming_no_candidate_keeps_retrieval_order(search: FunctionSearch) -> None:
    found = search.search("multiply two numbers and add them to a running total", top=5)
    labels = candidate_labels(found)
    cands = [CandidateBlock(label, f, []) for label, f in zip(labels, found)]
    retrieval_order = [f.qualname for f in found]

    label, _ = parse_final_answer('compute_total_price", "reason": "sums prices"}', labels)
    assert label is None
    run = WimRun(answer=label)
    assert [r.qualname for r in rank_results(cands, run)] == retrieval_order

    # Broken JSON that still names a real candidate moves it first, the rest stay in order.
    last = labels[-1]
    label, reason = parse_final_answer(f'{last}", "reason": "adds a pro', labels)
    assert label == last and reason == "adds a pro"
    ranked = [r.qualname for r in rank_results(cands, WimRun(answer=label, answer_reason=reason))]
    assert ranked == [last] + retrieval_order[:-1]


def test_segments_cover_candidates_in_retrieval_order() -> None:
    assert segment_bounds(20, 2, 6) == [(0, 2), (2, 8), (8, 14), (14, 20)]
    assert segment_bounds(3, 2, 6) == [(0, 2), (2, 3)]
    assert segment_bounds(0, 2, 6) == []


def test_an_answer_the_likelihood_does_not_back_stays_below_retrieval_first(search: FunctionSearch) -> None:
    found = search.search(TOTAL, top=4)
    labels = candidate_labels(found)
    cands = [CandidateBlock(label, f, []) for label, f in zip(labels, found)]
    run = WimRun(answer=labels[2], answer_reason="sums prices", held=True,
                 likelihood={labels[0]: -1.2, labels[2]: -1.25})
    ranked = rank_results(cands, run)
    assert [r.qualname for r in ranked] == [found[0].qualname, found[2].qualname, found[1].qualname,
                                            found[3].qualname]
    assert "not moved above retrieval's first" in ranked[1].reason
    assert "log-prob -1.20/token" in ranked[0].reason
    # Backed by the likelihood, the answer leads.
    run.held = False
    assert rank_results(cands, run)[0].qualname == found[2].qualname
