import numpy as np
import pytest
import scipy.sparse as sp

from prism_code.retrieval.fragrel import relation_aware_scores

# Four fragments with independent scores s_ind = [1.0, 2.0, -1.0, 0.5] and related sets
#   0: {1: 0.5, 2: 0.5}   s_env_0 = (0.5*2.0 + 0.5*(-1.0)) / (0.5+0.5) = 0.5 / 1.0   = 0.5
#   1: {0: 1.0, 3: 3.0}   s_env_1 = (1.0*1.0 + 3.0*0.5) / (1.0+3.0)    = 2.5 / 4.0   = 0.625
#   2: {}                 no environment -> s_env_2 = s_ind_2          = -1.0
#   3: {1: 0.2}           s_env_3 = (0.2*2.0) / 0.2                    = 2.0
# With alpha = 0.5, s_rel = s_ind + 0.5 * s_env:
#   [1.0 + 0.25, 2.0 + 0.3125, -1.0 - 0.5, 0.5 + 1.0] = [1.25, 2.3125, -1.5, 1.5]
S_IND = np.array([1.0, 2.0, -1.0, 0.5], dtype=np.float32)
RELATED = sp.csr_matrix(
    (
        [0.5, 0.5, 1.0, 3.0, 0.2],
        ([0, 0, 1, 1, 3], [1, 2, 0, 3, 1]),
    ),
    shape=(4, 4),
)


def test_hand_computed_example():
    got = relation_aware_scores(S_IND, RELATED, alpha=0.5)
    np.testing.assert_allclose(got, [1.25, 2.3125, -1.5, 1.5], rtol=1e-6)
    assert got.dtype == np.float32


def test_alpha_zero_is_identity():
    np.testing.assert_array_equal(relation_aware_scores(S_IND, RELATED, alpha=0.0), S_IND)


def test_isolated_fragments_keep_their_relative_order():
    # No relations at all: every score is scaled by (1 + alpha), so ranking is unchanged
    # whatever the sign of the scores.
    got = relation_aware_scores(S_IND, sp.csr_matrix((4, 4)), alpha=2.0)
    np.testing.assert_allclose(got, 3.0 * S_IND)


def test_zero_weight_row_counts_as_isolated():
    related = sp.csr_matrix(([0.0], ([0], [1])), shape=(4, 4))
    got = relation_aware_scores(S_IND, related, alpha=1.0)
    np.testing.assert_allclose(got, 2.0 * S_IND)


def test_empty_and_mismatched_inputs():
    assert relation_aware_scores(np.zeros(0), sp.csr_matrix((0, 0)), alpha=0.3).shape == (0,)
    with pytest.raises(ValueError):
        relation_aware_scores(S_IND, sp.csr_matrix((3, 3)), alpha=0.3)
