"""The long-description tuning bench: disjoint halves, and grid ranks equal to find's fuse."""

from pathlib import Path

import numpy as np

from prism_bench.fusion_tuning import ScoredQuery
from prism_bench.long_fusion_tuning import choose, grid_ranks, rank_with, split_halves, weight_sets
from prism_bench.repoqa_data import Haystack
from prism_bench.repoqa_retrieval import rank_of
from prism_code.retrieval.fusion import LONG_QUERY_WEIGHTS, fuse


def test_halves_alternate_repositories_in_name_order_and_never_share_one():
    haystacks = [Haystack(repo=f"org/{name}", package=name, version="1", root=Path(name), needles=[])
                 for name in ("delta", "alpha", "charlie", "bravo", "echo")]
    tune, test = split_halves(haystacks)
    assert [h.repo for h in tune] == ["org/alpha", "org/charlie", "org/echo"]
    assert [h.repo for h in test] == ["org/bravo", "org/delta"]
    assert split_halves(list(reversed(haystacks))) == (tune, test)


def _query(seed: int, target: int) -> ScoredQuery:
    rng = np.random.default_rng(seed)
    parts = {c: rng.normal(size=50).astype(np.float32) for c in ("bm25", "bm25_name", "dense_code", "dense_card")}
    parts["dense_code"][target] += 3.0  # only the source embedding knows the answer
    return ScoredQuery("synthetic", parts, target, words=120)


def test_grid_ranks_are_the_ranks_finds_fuse_gives():
    queries = [_query(seed, target=seed) for seed in range(6)]
    components = ["bm25", "dense_code", "dense_card"]
    weights = weight_sets(components, grid=(0.0, 1.0, 2.0))
    ranks = grid_ranks(queries, components, weights)
    for w, row in zip(weights, ranks):
        expected = [rank_of(fuse([(q.components[c], float(x)) for c, x in zip(components, w)]), q.target)
                    for q in queries]
        assert row.tolist() == expected
    # The fixed long weights through the length rule: the same fuse.
    fixed = rank_with(queries, LONG_QUERY_WEIGHTS)
    assert fixed.ranks.tolist() == ranks[next(i for i, w in enumerate(weights) if w.tolist() == [1, 1, 1])].tolist()


def test_choose_finds_the_component_that_carries_the_answer():
    chosen = choose([_query(seed, target=seed) for seed in range(8)], ["bm25", "bm25_name", "dense_code"])
    assert chosen["dense_code"] > 0 and chosen["bm25"] == chosen["bm25_name"] == 0
