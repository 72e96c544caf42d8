"""The sentence's second query: the fusion of two rankings and the language the guess is written in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from prism_code.index import RepoIndex
from prism_code.retrieval.fusion import reciprocal_rank_fusion
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.query_expansion import language_name

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_function_both_queries_rank_well_beats_one_only_the_first_likes() -> None:
    sentence = np.array([0.9, 0.8, 0.1, 0.0])  # ranks 1, 2, 3, 4
    guess = np.array([0.0, 0.7, 0.6, 0.5])  # ranks 4, 1, 2, 3
    fused = reciprocal_rank_fusion([sentence, guess])
    assert int(np.argmax(fused)) == 1
    assert list(np.argsort(-fused, kind="stable")) == [1, 0, 2, 3]
    # Ranks, not scores: scaling one query's scores changes nothing.
    assert np.array_equal(fused, reciprocal_rank_fusion([sentence * 100, guess]))
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([])


def test_the_guess_is_asked_for_in_the_language_most_results_are_in() -> None:
    assert language_name(["a/b.rs", "a/c.rs", "d.py"]) == "Rust"
    assert language_name(["src/x.cc", "include/y.hpp"]) == "C++"
    assert language_name(["README", "notes.txt"]) == "Python"  # nothing parsed: the default


def test_an_empty_guess_leaves_retrieval_as_it_was(tmp_path: Path) -> None:
    index = RepoIndex(FIXTURES / "calcrepo", cache_dir=tmp_path / "cache")
    index.update()
    try:
        search = FunctionSearch(index)
        plain = search.search("Total price of an order.", top=4)
        assert search.search("Total price of an order.", top=4, expansion="  \n") == plain
        guessed = search.search("Total price of an order.", top=4,
                                expansion="def total_price(prices, quantities):\n    return sum(p * q)")
        assert guessed[0].qualname == "total_price"
    finally:
        index.close()
