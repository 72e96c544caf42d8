"""Weighted fusion of retrieval scores on a common z-score scale, weights by query length.

BM25 scores are unbounded and query-dependent while cosines live in [-1, 1]; z-scoring
each component over the candidate set puts them on one scale without tuning.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The components:
#   bm25       - BM25 over the function's source
#   bm25_name  - BM25 over the function's name, signature and the names it calls
#   dense_code - MiniLM cosine between the query and the function's source
#   dense_card - MiniLM cosine between the query and the function's card
#                (name split into words + signature + docstring, and the model's note)
# and, for a structured description only (retrieval/query_sections.py):
#   dense_card_purpose   - MiniLM between its purpose section (docstring-like) and the card
#   dense_code_procedure - MiniLM between its procedure section (body-like) and the source
#
# A long description (RepoQA's numbered purpose / input / output / procedure lists) keeps the
# weights fixed in advance: every body-level component equal, untuned, so RepoQA is not fitted.
# The section components were measured with weights chosen on a tuning half of repoqa-multi
# (`prism-code bench fusion --long`): they fitted the tuning half and lost on the other, so they
# stay at 0 and are not computed (docs/decisions.md).
LONG_QUERY_WEIGHTS: dict[str, float] = {"bm25": 1.0, "bm25_name": 0.0, "dense_code": 1.0, "dense_card": 1.0,
                                        "dense_card_purpose": 0.0, "dense_code_procedure": 0.0}
SECTION_COMPONENTS = ("dense_card_purpose", "dense_code_procedure")
# What people type, a sentence or two, leans on what a function is called: chosen by MRR@10 on
# the docstrings benchmark's tuning split only (`prism-code bench fusion`, docs/benchmarks.md).
# A sentence has no sections, so the section components never weigh in.
SHORT_QUERY_WEIGHTS: dict[str, float] = {"bm25": 0.5, "bm25_name": 1.0, "dense_code": 1.0, "dense_card": 0.5,
                                         "dense_card_purpose": 0.0, "dense_code_procedure": 0.0}
# Up to SHORT words the short weights apply, from LONG words the long ones, linearly between.
# Not tuned: the benchmarks' queries are either <= 37 words (docstrings) or >= 72 (RepoQA).
SHORT_QUERY_WORDS, LONG_QUERY_WORDS = 40, 60


def fusion_weights(words: int, short: dict[str, float] | None = None,
                   long: dict[str, float] | None = None) -> dict[str, float]:
    """The component weights for a query of `words` words (`short`, `long`: other weights for
    short or long queries, as a tuning run tries them)."""
    short = SHORT_QUERY_WEIGHTS if short is None else short
    long = LONG_QUERY_WEIGHTS if long is None else long
    t = min(1.0, max(0.0, (words - SHORT_QUERY_WORDS) / (LONG_QUERY_WORDS - SHORT_QUERY_WORDS)))
    return {c: (1 - t) * short.get(c, 0.0) + t * long.get(c, 0.0) for c in LONG_QUERY_WEIGHTS}


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


# Reciprocal rank fusion's constant: chosen on the docstrings tuning split among 10 and 60
# (a query fused with the model's guess at its code, tasks/query_expansion.py).
RRF_K = 10


def reciprocal_rank_fusion(rankings: Sequence[np.ndarray], k: int = RRF_K) -> np.ndarray:
    """Sum over score arrays of 1 / (k + rank), rank 1 for each array's highest score."""
    if not rankings:
        raise ValueError("nothing to fuse")
    fused = np.zeros(len(rankings[0]), dtype=np.float64)
    for scores in rankings:
        order = np.argsort(-np.asarray(scores), kind="stable")
        ranks = np.empty(len(order), dtype=np.float64)
        ranks[order] = np.arange(1, len(order) + 1)
        fused += 1.0 / (k + ranks)
    return fused
