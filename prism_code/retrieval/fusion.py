"""Fixed-weight fusion of retrieval scores on a common z-score scale.

BM25 scores are unbounded and query-dependent while cosines live in [-1, 1]; z-scoring
each component over the candidate set puts them on one scale without tuning.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Fixed in advance, not tuned on any benchmark, so reported results are not fitted to
# it: every component counts equally.
#   bm25       - BM25 over the function's source
#   dense_code - MiniLM cosine between the query and the function's source
#   dense_card - MiniLM cosine between the query and the function's card
#                (name split into words + signature + docstring)
FUSION_WEIGHTS: dict[str, float] = {"bm25": 1.0, "dense_code": 1.0, "dense_card": 1.0}


def zscore(scores: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance over the array (float32); empty or constant -> zeros."""
    x = np.asarray(scores, dtype=np.float64)
    if x.size == 0:
        return np.zeros(0, dtype=np.float32)
    std = x.std()
    # A constant component carries no ranking signal; zeros keep it from adding NaN.
    if not np.isfinite(std) or std <= 1e-12 * max(1.0, float(np.abs(x).max())):
        return np.zeros(x.shape, dtype=np.float32)
    scaled: np.ndarray = ((x - x.mean()) / std).astype(np.float32)
    return scaled


def fuse(components: Sequence[tuple[np.ndarray, float]]) -> np.ndarray:
    """Weighted sum of the components' z-scores; all arrays must have the same length."""
    if not components:
        return np.zeros(0, dtype=np.float32)
    n = len(components[0][0])
    total = np.zeros(n, dtype=np.float32)
    for scores, weight in components:
        if len(scores) != n:
            raise ValueError(f"component lengths differ: {len(scores)} != {n}")
        total += np.float32(weight) * zscore(scores)
    return total
