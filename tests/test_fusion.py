import numpy as np
import pytest

from prism_code.retrieval.fusion import (
    LONG_QUERY_WEIGHTS,
    LONG_QUERY_WORDS,
    SECTION_COMPONENTS,
    SHORT_QUERY_WEIGHTS,
    SHORT_QUERY_WORDS,
    fuse,
    fusion_weights,
    zscore,
)


def test_zscore_standardises():
    z = zscore(np.array([1.0, 2.0, 3.0, 6.0]))
    assert z.dtype == np.float32
    assert abs(float(z.mean())) < 1e-6 and abs(float(z.std()) - 1.0) < 1e-6


def test_zscore_constant_and_empty_are_zeros_without_nan():
    with np.errstate(all="raise"):
        assert zscore(np.full(5, 3.7, dtype=np.float32)).tolist() == [0.0] * 5
        assert zscore(np.zeros(0)).shape == (0,)
        assert zscore(np.array([42.0])).tolist() == [0.0]


def test_fuse_is_weighted_sum_of_zscores():
    a = np.array([10.0, 0.0, 5.0])
    b = np.array([0.1, 0.9, 0.5], dtype=np.float32)
    got = fuse([(a, 1.0), (b, 2.0)])
    np.testing.assert_allclose(got, zscore(a) + 2.0 * zscore(b), rtol=1e-6)
    # scale of a component does not matter, only its shape
    np.testing.assert_allclose(fuse([(a * 1000, 1.0)]), zscore(a), rtol=1e-6)


def test_fuse_edge_cases():
    assert fuse([]).shape == (0,)
    assert fuse([(np.zeros(0), 1.0), (np.zeros(0), 1.0)]).shape == (0,)
    assert fuse([(np.ones(3), 1.0)]).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        fuse([(np.ones(3), 1.0), (np.ones(2), 1.0)])


def test_a_sentence_leans_on_names_and_a_long_description_on_bodies():
    assert fusion_weights(8) == fusion_weights(SHORT_QUERY_WORDS) == SHORT_QUERY_WEIGHTS
    assert fusion_weights(LONG_QUERY_WORDS) == fusion_weights(150) == LONG_QUERY_WEIGHTS
    between = fusion_weights((SHORT_QUERY_WORDS + LONG_QUERY_WORDS) // 2)
    for component, weight in between.items():
        assert min(SHORT_QUERY_WEIGHTS[component], LONG_QUERY_WEIGHTS[component]) <= weight \
            <= max(SHORT_QUERY_WEIGHTS[component], LONG_QUERY_WEIGHTS[component])
    assert LONG_QUERY_WEIGHTS["bm25_name"] == 0 < SHORT_QUERY_WEIGHTS["bm25_name"]


def test_section_components_weigh_nothing_unless_chosen_and_long_weights_can_be_tried():
    for words in (8, 50, 150):
        assert all(fusion_weights(words)[c] == 0 for c in SECTION_COMPONENTS)
    tried = {"bm25": 1.0, "dense_code": 2.0, "dense_card_purpose": 0.5}
    assert fusion_weights(150, long=tried) == {c: tried.get(c, 0.0) for c in LONG_QUERY_WEIGHTS}
    assert fusion_weights(8, long=tried) == SHORT_QUERY_WEIGHTS  # a sentence keeps its own
