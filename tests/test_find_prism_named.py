"""Prism keeps retrieval's list when the query names retrieval's first or asks a question (#27)."""

import pytest

from prism_code.tasks.find_prism import held_by_retrieval, is_question, named_first
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.find_settings import PrismSettings
from prism_code.tasks.find_strategies import run_find


def test_a_query_that_spells_retrievals_first_names_it(calcrepo_search):
    for query in ("total_price", "total price", "report.total_price"):
        first = calcrepo_search.search(query, top=3)[0]
        assert (first.qualname, named_first(query, first)) == ("total_price", "total_price")
    # A description, however it starts, names nothing: the model's evidence may still move one up.
    # Docstring needles have 6 to 40 words and RepoQA's 72 or more, so the rule never reads them.
    sentence = "Total price of an order."
    assert named_first(sentence, calcrepo_search.search(sentence, top=3)[0]) == ""
    # A short query that names another definition than retrieval's first does not hold it.
    assert named_first("send invoice", calcrepo_search.search("make_invoice", top=1)[0]) == ""


def test_a_question_is_held_and_a_description_is_not(calcrepo_search):
    for question in ("how is an order's total price computed", "Where are invoices sent?",
                     "what connects to a host"):
        assert is_question(question)
        first = calcrepo_search.search(question, top=1)[0]
        assert held_by_retrieval(question, first).startswith("the query is a question")
    # One-function descriptions as RepoQA and the docstring needles phrase them are not questions.
    for description in ("Total price of an order.", "Return the sum of two numbers.",
                        "When the host is down, retry the connection."):
        assert not is_question(description)
        assert held_by_retrieval(description, calcrepo_search.search(description, top=1)[0]) == ""


@pytest.mark.model
def test_prism_keeps_retrievals_list_for_a_named_definition_without_scoring(calcrepo_search, model_session):
    prism = PrismSettings(noted=1, noted_chunk=1, max_revisions=1, step_tokens=60)
    outcome = run_find(FindRequest("multiply", "prism", top=4, candidates=4, prism=prism), calcrepo_search,
                       session=model_session)
    assert [r.qualname for r in outcome.results] == [r.qualname for r in calcrepo_search.search("multiply", top=4)]
    assert outcome.stats["chosen_by"] == "retrieval: the query names retrieval's first (multiply)"
    assert "signature_pmi" not in outcome.stats and "expansion" not in outcome.stats
    assert outcome.accounting.calls == outcome.stats["steps"]  # the notes only: nothing scored, nothing expanded
