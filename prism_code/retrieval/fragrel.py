"""FragRel relation-aware reranking (Yue et al., "FragRel", Eq. 9-10).

    s_env_i = sum_j w_ij * s_ind_j / sum_j w_ij     over fragment i's related set  (Eq. 9)
    s_rel_i = s_ind_i + alpha * s_env_i                                            (Eq. 10)

A fragment with no related fragments (an empty row, or weights summing to 0) has no
environment. We set s_env_i = s_ind_i for it rather than 0: the independent scores
are usually z-scores, centred on 0, so s_env = 0 would lift isolated fragments with
negative scores and sink isolated fragments with positive ones relative to their
neighbour-rich peers. With s_env_i = s_ind_i an isolated fragment is simply scaled by
(1 + alpha), the same as a fragment whose neighbours score exactly like itself, so
isolation is neither rewarded nor penalised.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def relation_aware_scores(independent: np.ndarray, related: sp.csr_matrix, alpha: float) -> np.ndarray:
    """s_rel for every fragment. `related` is n x n with related[i, j] = w_ij (row i is
    fragment i's related set, no diagonal). alpha = 0 returns `independent` unchanged."""
    s_ind = np.asarray(independent, dtype=np.float32)
    if alpha == 0:
        return s_ind
    n = s_ind.shape[0]
    if related.shape != (n, n):
        raise ValueError(f"related is {related.shape}, expected ({n}, {n})")
    weights = sp.csr_matrix(related, dtype=np.float64)
    weighted_sum = weights @ s_ind.astype(np.float64)
    weight_total = np.asarray(weights.sum(axis=1)).ravel()
    has_env = weight_total > 0
    s_env = s_ind.astype(np.float64)  # isolated fragments: s_env = s_ind (see module doc)
    s_env[has_env] = weighted_sum[has_env] / weight_total[has_env]
    return (s_ind + alpha * s_env).astype(np.float32)
