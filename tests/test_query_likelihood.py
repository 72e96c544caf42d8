"""Reranking by how likely the model finds the user's description after a candidate's body."""

from pathlib import Path

import pytest

from prism_code.index import RepoIndex
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_prism import candidate_text
from prism_code.tasks.query_likelihood import body_text, description_likelihood, rank_by_likelihood

FIXTURES = Path(__file__).parent / "fixtures"
ORDER_TOTAL = ("Work out what an order costs in all: take the unit prices and how many of each item "
               "were bought, multiply each pair and sum the products.")


def test_retrieval_first_stays_unless_another_candidate_wins_by_the_margin():
    assert rank_by_likelihood([-1.0, -0.8, -0.5], margin=0.3) == 2
    assert rank_by_likelihood([-1.0, -0.8, -0.9], margin=0.3) is None  # better, not by enough
    assert rank_by_likelihood([-0.5, -0.8, -0.9], margin=0.0) is None  # the first is the best
    assert rank_by_likelihood([-0.5, -0.5], margin=0.0) == 1  # a tie at margin 0 moves (margin is ">=")
    assert rank_by_likelihood([-0.5], margin=0.0) is None
    assert rank_by_likelihood([], margin=0.0) is None


@pytest.mark.model
def test_the_description_is_most_likely_after_the_function_it_describes(tmp_path, model_session):
    index = RepoIndex(FIXTURES / "calcrepo", cache_dir=tmp_path / "cache")
    index.update()
    try:
        found = FunctionSearch(index).search(ORDER_TOTAL, top=4)
        bodies = {f.qualname: candidate_text(index, f, f.qualname, "bodies", None, 30) for f in found}
    finally:
        index.close()
    assert "total_price" in bodies
    scored = {name: description_likelihood(model_session, body, ORDER_TOTAL) for name, body in bodies.items()}
    assert max(scored, key=lambda n: scored[n].mean_logprob) == "total_price"
    assert all(s.stats.decoded == 0 and s.stats.encoded > 0 for s in scored.values())
    # The system turn is the same for every candidate: after the first it comes from the cache.
    assert all(s.stats.reused > 0 for s in list(scored.values())[1:])


def test_a_candidate_read_as_code_only_loses_its_docstring_and_comments_not_its_code(tmp_path):
    """A look-alike's docstring must not echo a sentence's words into the likelihood."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "tax.py").write_text(
        'def add_tax(amount, rate):\n    """Add sales tax to an amount."""\n'
        '    # rounding is the caller\'s job\n    return amount * (1 + rate)\n')
    index = RepoIndex(tmp_path / "repo", cache_dir=tmp_path / "cache")
    index.update()
    try:
        found = FunctionSearch(index).search("add sales tax", top=1)[0]
        written = body_text(index, found, "add_tax", 30)
        code = body_text(index, found, "add_tax", 30, code_only=True)
    finally:
        index.close()
    assert "Add sales tax" in written and "rounding" in written
    assert "Add sales tax" not in code and "rounding" not in code
    assert code.startswith("### add_tax\n# tax.py:1\n") and "return amount * (1 + rate)" in code


def test_a_class_candidate_is_read_as_its_skeleton_not_its_name_alone(tmp_path):
    """A type is a find result of its own; the model strategies must read what it is."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "ledger.py").write_text(
        'class Ledger:\n    """Keeps every posting of an account and its running balance."""\n\n'
        '    currency = "EUR"\n\n'
        '    def post(self, amount):\n        self.entries.append(amount)\n        return sum(self.entries)\n')
    index = RepoIndex(tmp_path / "repo", cache_dir=tmp_path / "cache")
    index.update()
    try:
        found = next(f for f in FunctionSearch(index).search("Ledger", top=3) if f.kind == "class")
        text = body_text(index, found, "Ledger", 30)
    finally:
        index.close()
    assert found.qualname == "Ledger"
    assert "running balance" in text and 'currency = "EUR"' in text
    assert "def post(self, amount):" in text and "self.entries.append" not in text
