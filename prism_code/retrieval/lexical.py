"""BM25 over pre-tokenized documents (Lucene variant, k1=1.2, b=0.75).

Scores equal those of ``bm25s.BM25(method="lucene")`` (tests check this), but
the index is built with vectorized scipy operations rather than through
``bm25s.BM25.index``: bm25s loops over documents in Python (a Counter and a set
intersection per document), which took ~4x longer than this on 15,000 documents of
150 tokens (0.3 s against 0.8-1.0 s). Each document becomes a bag of term ids over
a vocabulary that only grows, so a caller that keeps its bags rebuilds the index after
an edit by concatenating arrays: only the changed documents are mapped to ids again. The
bags of consecutive documents are kept joined (`BagRun`: find's corpus keeps every row's
joined, and one run per file and kind of unit), so an edit costs a few concatenations, not
one per document. Every weight depends on the corpus's document count, document frequencies
and mean length, which any edit moves, so the weights themselves are recomputed each time,
in vectorized numpy (about 1.5 ms for 150,000 postings).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported where an index is built: a query reads the arrays with numpy, and
    # scipy.sparse costs a cold CLI find ~0.25 s to import (see `ColumnArrays`)
    import scipy.sparse as sp

K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class TermBag:
    """One document as sorted unique term ids with their counts, and its length."""

    ids: np.ndarray  # int32, ascending
    counts: np.ndarray  # float32, same length
    length: int


class TermNumbering:
    """BM25's term numbering: token -> term id, only ever growing, so bags made for one index stay valid for
    the next: after an edit only the changed documents are turned into bags again."""

    def __init__(self) -> None:
        # A defaultdict numbering unseen tokens as they come keeps the per-token loop in C.
        self._numbering: defaultdict[str, int] = defaultdict(count().__next__)

    @property
    def ids(self) -> dict[str, int]:
        return self._numbering

    def __len__(self) -> int:
        return len(self._numbering)

    def bag(self, tokens: Sequence[str]) -> TermBag:
        ids = np.fromiter(map(self._numbering.__getitem__, tokens), dtype=np.int32, count=len(tokens))
        unique, counts = np.unique(ids, return_counts=True)
        return TermBag(unique.astype(np.int32), counts.astype(np.float32), len(tokens))


@dataclass(frozen=True)
class BagRun:
    """Consecutive documents' bags joined into arrays. An index is made from one run; a run is
    joined from others (one concatenation per run, whatever its number of documents) and cut
    into stretches of documents, so a corpus after an edit is the previous one's run cut around
    the edited file's documents and joined again with that file's new run."""

    ids: np.ndarray  # int32: each document's term ids, one document after the other
    counts: np.ndarray  # float32, same length
    lengths: np.ndarray  # int64: each document's length in tokens
    offsets: np.ndarray  # int64, one more than documents: where each document's terms start in `ids`

    @classmethod
    def of(cls, bags: Sequence[TermBag]) -> BagRun:
        n = len(bags)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(bag.ids) for bag in bags), dtype=np.int64, count=n), out=offsets[1:])
        return cls(
            np.concatenate([bag.ids for bag in bags]) if n else np.zeros(0, np.int32),
            np.concatenate([bag.counts for bag in bags]) if n else np.zeros(0, np.float32),
            np.fromiter((bag.length for bag in bags), dtype=np.int64, count=n), offsets)

    @classmethod
    def joined(cls, runs: Sequence[BagRun]) -> BagRun:
        if len(runs) == 1:
            return runs[0]
        if not runs:
            return cls.of([])
        sizes = np.concatenate([np.diff(run.offsets) for run in runs])
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return cls(np.concatenate([run.ids for run in runs]), np.concatenate([run.counts for run in runs]),
                   np.concatenate([run.lengths for run in runs]), offsets)

    def __len__(self) -> int:
        return len(self.lengths)

    def part(self, start: int, stop: int) -> BagRun:
        """Documents start..stop (views of this run's arrays)."""
        first, last = int(self.offsets[start]), int(self.offsets[stop])
        return BagRun(self.ids[first:last], self.counts[first:last], self.lengths[start:stop],
                      self.offsets[start:stop + 1] - first)


@dataclass(frozen=True)
class ColumnArrays:
    """A canonical CSC matrix as its three arrays, which is all `LexicalIndex.scores` reads:
    the saved copy (tasks/corpus_files.py) opens its memory-mapped arrays as this, so a find
    from it never imports scipy."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]


@dataclass(frozen=True, eq=False)
class LexicalIndex:
    # Token -> column; may hold tokens added after this index was built (a shared
    # TermNumbering grows), which `scores` ignores.
    vocab: dict[str, int]
    # (n_docs, n_vocab) precomputed per-(doc, term) BM25 weights; CSC so a query
    # reads one contiguous column of postings per term.
    weights: sp.csc_matrix | ColumnArrays

    @classmethod
    def build(cls, token_lists: Sequence[list[str]], k1: float = K1, b: float = B) -> LexicalIndex:
        vocabulary = TermNumbering()
        return cls.from_bags([vocabulary.bag(t) for t in token_lists], vocabulary, k1, b)

    @classmethod
    def from_bags(cls, bags: Sequence[TermBag], vocabulary: TermNumbering,
                  k1: float = K1, b: float = B) -> LexicalIndex:
        return cls.from_run(BagRun.of(bags), vocabulary, k1, b)

    @classmethod
    def from_run(cls, run: BagRun, vocabulary: TermNumbering, k1: float = K1, b: float = B) -> LexicalIndex:
        """The index of the run's documents, in order."""
        n_vocab, n_docs = len(vocabulary), len(run)
        doc_lens, indptr, indices, tf = run.lengths, run.offsets, run.ids, run.counts

        df = np.bincount(indices, minlength=n_vocab)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        avg_len = float(doc_lens.mean()) if n_docs and doc_lens.any() else 1.0
        length_norm = (k1 * (1.0 - b + b * doc_lens / avg_len)).astype(np.float32)
        row_norm = np.repeat(length_norm, np.diff(indptr))
        data = idf[indices] * tf / (row_norm + tf)
        import scipy.sparse as sp

        # Each bag's ids are unique and ascending: a canonical CSR matrix as it stands.
        weights = sp.csr_matrix((data, indices, indptr), shape=(n_docs, n_vocab))
        weights.has_canonical_format = True
        return cls(vocab=vocabulary.ids, weights=weights.tocsc())

    def __len__(self) -> int:
        return self.weights.shape[0]

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document, float32; each query-token occurrence counts
        once, as in Lucene, so a repeated query word weighs more."""
        lookup, n_vocab = self.vocab.get, self.weights.shape[1]
        ids = [i for i in map(lookup, query_tokens) if i is not None and i < n_vocab]
        if not ids:
            return np.zeros(len(self), dtype=np.float32)
        cols, counts = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
        # The columns' postings summed in column order, in float32: the additions scipy's
        # `weights[:, cols] @ counts` makes, so the scores are the same to the bit.
        weights, out = self.weights, np.zeros(len(self), dtype=np.float32)
        for column, times in zip(cols.tolist(), counts.astype(np.float32)):
            start, end = int(weights.indptr[column]), int(weights.indptr[column + 1])
            out[weights.indices[start:end]] += weights.data[start:end] * times
        return out

    def top(self, query_tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Up to k (doc, score) pairs with a positive score, best first; ties by doc index."""
        scores = self.scores(query_tokens)
        hits = np.flatnonzero(scores > 0)
        if k <= 0 or hits.size == 0:
            return []
        if hits.size > k:
            # Partition on the k-th best score, then keep every doc tied with it so
            # the stable sort below breaks ties by index, not by partition order.
            kth = np.partition(scores[hits], hits.size - k)[hits.size - k]
            hits = hits[scores[hits] >= kth]
        order = np.argsort(-scores[hits], kind="stable")[:k]
        return [(int(i), float(scores[i])) for i in hits[order]]
