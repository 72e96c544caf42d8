"""Find's search corpus follows edits incrementally and gives what a cold build gives."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from prism_code.index import RepoIndex
from prism_code.tasks.find_function import FunctionCorpus, FunctionSearch

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture()
def index(tmp_path: Path):
    root = tmp_path / "multilang"
    shutil.copytree(FIXTURES / "multilang", root)
    idx = RepoIndex(root, cache_dir=tmp_path / "cache")
    idx.update()
    yield idx
    idx.close()


def test_search_after_an_edit_equals_a_cold_corpus(index: RepoIndex):
    search = FunctionSearch(index, None)
    search.search("compute the area of a shape")  # builds the corpus the edit will reuse
    path = index.root / "pkg" / "tax.py"
    path.write_text("from pkg.cart import Cart\n\n\ndef apply_sales_tax(amount, rate):\n"
                    "    \"\"\"Add sales tax to an amount.\"\"\"\n    return amount * (1 + rate)\n")
    index.update()

    found = search.search("add sales tax to an amount", alpha=0.5)
    assert found[0].qualname == "apply_sales_tax"

    warm, cold = search.corpus, FunctionCorpus(index)
    assert warm.code == cold.code and warm.cards == cold.cards and warm.tokens == cold.tokens
    query = ["sales", "tax", "amount", "cart"]
    assert np.allclose(warm.lexical.scores(query), cold.lexical.scores(query))
    assert (warm.related != cold.related).nnz == 0
    assert warm.related.nnz > 0  # the fixture's functions do have related sets


def test_relations_finished_later_reach_the_rerank(index: RepoIndex):
    search = FunctionSearch(index, None)
    path = index.root / "pkg" / "tax.py"
    path.write_text("def apply_sales_tax(amount, rate):\n    return amount * (1 + rate)\n")
    index.update(relations=False)
    before = search.corpus
    assert index.finish_relations() > 0
    after = search.corpus
    assert after is not before  # a new generation, so the related sets are read again
    assert (after.related != FunctionCorpus(index).related).nnz == 0
