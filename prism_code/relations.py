"""Fragment relations: code structure (FragRel Eq. 8) and context structure (Eq. 7).

Eq. 8 is a length-weighted mean of node relation strengths, so for a fragment-by-node
length matrix M and node strength matrix S it is (M S M^T)_ij / (m_i m_j), with m the
row sums of M. Sparse products keep a 100k-line repository in seconds; recomputing
only the rows near a change keeps edits in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from prism_code.fragments import WINDOW, Fragment
from prism_code.graph import PATH_EPSILON, CodeGraph, path_limit

Related = list[tuple[int, float]]  # (fragment index, relation weight), strongest first

_BATCH = 256


class Strengths:
    """Node relation strengths (max-product path weight >= cutoff) from the cost matrix
    alone, computed once per node and kept until `forget()`.

    Holds no graph, so it can be sent to another process (relation_pool): `costs` are the
    directed -log w edge costs with hubs' rows empty (paths may end at a hub but not leave
    it), `hub_steps` each hub's own first steps, since a path may start at one.
    """

    def __init__(self, costs: sparse.csr_matrix, hub_steps: dict[int, dict[int, float]], cutoff: float) -> None:
        self.costs = costs
        self.hub_steps = hub_steps
        self.cutoff = cutoff
        self._rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._extended: tuple[sparse.csr_matrix, dict[int, int]] | None = None

    @property
    def size(self) -> int:
        return int(self.costs.shape[0])

    def forget(self) -> None:
        """Drop the computed rows: a pass over a large corpus keeps only a group's."""
        self._rows.clear()

    def _compute(self, missing: list[int]) -> None:
        limit = path_limit(self.cutoff)
        costs, copy_of = self._with_hub_copies()
        # A hub's paths start from its copy, which only leaves (by the hub's own edges): one
        # Dijkstra gives the best first step plus the rest in the hub-blocking graph.
        sources = list(dict.fromkeys(copy_of.get(s, s) for s in missing))
        found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for start in range(0, len(sources), _BATCH):
            found.update(_bounded_distances(costs, sources[start:start + _BATCH], limit))
        for source in missing:
            if source in copy_of:
                cols, dist = _as_hub(source, *found[copy_of[source]], self.size)
            else:
                cols, dist = found[source]
            strengths = np.exp(-dist)
            near = strengths >= self.cutoff * (1 - PATH_EPSILON)
            self._rows[source] = (cols[near].astype(np.int32), strengths[near])  # node ids fit 32 bits

    def _with_hub_copies(self) -> tuple[sparse.csr_matrix, dict[int, int]]:
        """The costs plus one node per hub, numbered after the others, whose edges are the
        hub's first steps and which no edge enters; each hub's copy."""
        if self._extended is None:
            n, hubs = self.size, sorted(self.hub_steps)
            copy_of = {h: n + k for k, h in enumerate(hubs)}
            rows = [n + k for k, h in enumerate(hubs) for _ in self.hub_steps[h]]
            cols = [j for h in hubs for j in self.hub_steps[h]]
            # A step of weight 1.0 would cost 0, which a sparse matrix reads as "no edge".
            steps = np.maximum(np.array([c for h in hubs for c in self.hub_steps[h].values()], dtype=np.float64),
                               1e-12)
            base = self.costs.tocoo()
            size = n + len(hubs)
            extended = sparse.csr_matrix(
                (np.concatenate([base.data, steps]), (np.concatenate([base.row, np.array(rows, dtype=np.int64)]),
                                                      np.concatenate([base.col, np.array(cols, dtype=np.int64)]))),
                shape=(size, size))
            self._extended = (extended, copy_of)
        return self._extended

    def matrix(self, sources: Sequence[int]) -> sparse.csr_matrix:
        """Rows: the given node indices; columns: every node of the table."""
        missing = [s for s in dict.fromkeys(sources) if s not in self._rows]
        if missing:
            self._compute(missing)
        rows = [self._rows[s] for s in sources]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(c) for c, _ in rows])
        indices = np.concatenate([c for c, _ in rows]) if rows else np.zeros(0, dtype=np.int64)
        data = np.concatenate([v for _, v in rows]) if rows else np.zeros(0)
        return sparse.csr_matrix((data, indices, indptr), shape=(len(rows), self.size))


class StrengthTable:
    """The graph's nodes (all, or those of a `region`) as Strengths' indices.

    With a `region`, only nodes inside it are considered: callers pass a region holding
    every node within the cutoff of the sources they will ask for, so the answers are
    exact while an incremental update touches a few hundred nodes instead of the graph.
    """

    def __init__(self, graph: CodeGraph, cutoff: float, region: set[str] | None = None) -> None:
        self.graph = graph
        self.cutoff = cutoff
        self.order = list(graph.g.nodes) if region is None else [n for n in region if n in graph.g]
        self.index = {node: i for i, node in enumerate(self.order)}
        self._strengths: Strengths | None = None

    @property
    def strengths(self) -> Strengths:
        if self._strengths is None:
            self._strengths = Strengths(self._cost_matrix(), self._hub_steps(), self.cutoff)
        return self._strengths

    def _cost_matrix(self) -> sparse.csr_matrix:
        """Directed -log w costs over the table's nodes."""
        # Built by hand: networkx's converter walks filtered subgraph views, which costs
        # more than the Dijkstra itself on the few thousand nodes of an edit's region.
        rows, cols, weights = [], [], []
        adjacency = self.graph.g.adj
        for i, node in enumerate(self.order):
            if self.graph.is_hub(node):
                continue  # an empty row: paths may end at a hub but not leave it
            for neighbour, data in adjacency[node].items():
                j = self.index.get(neighbour)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
                    weights.append(data["weight"])
        # Weight 1.0 would cost 0, which a sparse matrix reads as "no edge".
        costs = np.maximum(-np.log(np.asarray(weights, dtype=np.float64)), 1e-12)
        return sparse.csr_matrix((costs, (rows, cols)), shape=(len(self.order), len(self.order)))

    def _hub_steps(self) -> dict[int, dict[int, float]]:
        return {i: {self.index[n]: -math.log(data["weight"])
                    for n, data in self.graph.g[node].items() if n in self.index}
                for i, node in enumerate(self.order) if self.graph.is_hub(node)}

    def matrix(self, sources: Sequence[int]) -> sparse.csr_matrix:
        """Rows: the given node indices; columns: every node of the table."""
        return self.strengths.matrix(sources)

    def length_matrix(self, fragments: Sequence[Fragment]) -> sparse.csr_matrix:
        rows, cols, vals = [], [], []
        for i, fragment in enumerate(fragments):
            for node, length in fragment.nodes:
                c = self.index.get(node)
                if c is not None:
                    rows.append(i)
                    cols.append(c)
                    vals.append(float(length))
        return sparse.csr_matrix((vals, (rows, cols)), shape=(len(fragments), len(self.order)))


def _bounded_distances(costs: sparse.csr_matrix, batch: list[int],
                       limit: float) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each source's nodes within `limit` (ascending) and their distances.

    A path of cost <= limit runs only through nodes within `limit` of its source, so
    Dijkstra on the subgraph of the batch's balls gives the very distances the whole graph
    does. The batch's balls come from one multi-source pass; a dense sources x all-nodes
    distance matrix (hundreds of MB per batch on a 750k-line repository, written and read
    in full) is never made.
    """
    # Imported here: a find answered from the saved lexical index never needs it (~0.2 s).
    from scipy.sparse import csgraph

    nearest = csgraph.dijkstra(costs, directed=True, indices=batch, limit=limit, min_only=True)
    ball = np.flatnonzero(np.isfinite(nearest))
    local = sparse.csr_matrix(costs[ball][:, ball])
    dist = csgraph.dijkstra(local, directed=True, indices=np.searchsorted(ball, batch), limit=limit)
    out = {}
    for source, row in zip(batch, dist):
        reached = np.flatnonzero(np.isfinite(row))
        out[source] = (ball[reached], row[reached])
    return out


def _as_hub(hub: int, cols: np.ndarray, dist: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A hub copy's distances as the hub's own (ascending nodes): the copy dropped, the hub
    itself at 0."""
    inside = cols < size
    cols, dist = cols[inside], dist[inside].copy()
    at = int(np.searchsorted(cols, hub))
    if at < len(cols) and cols[at] == hub:
        dist[at] = 0.0
        return cols, dist
    return np.insert(cols, at, hub), np.insert(dist, at, 0.0)


@dataclass(frozen=True)
class RelationCorpus:
    """What Eqs. 7-8 read of a corpus of fragments, as arrays and plain tuples (picklable,
    without the fragments): node lengths, each fragment's total, and each window's place."""

    lengths: sparse.csr_matrix  # fragments x table nodes: lines of the fragment each node owns
    totals: np.ndarray  # every node's lines of a fragment, also those outside the table's region
    places: tuple[tuple[str, int] | None, ...]  # a window's (path, position); None for others

    @classmethod
    def of(cls, table: StrengthTable, fragments: Sequence[Fragment]) -> RelationCorpus:
        totals = np.array([sum(n for _, n in f.nodes) for f in fragments], dtype=np.float64)
        totals[totals == 0] = 1.0
        places = tuple((f.path, f.position) if f.kind == WINDOW else None for f in fragments)
        return cls(table.length_matrix(fragments), totals, places)

    def __len__(self) -> int:
        return len(self.totals)

    def window_at(self) -> dict[tuple[str, int], int]:
        """Each window's index by (path, position)."""
        return {place: j for j, place in enumerate(self.places) if place is not None}


def code_relation_rows(table: StrengthTable, fragments: Sequence[Fragment],
                       rows: Sequence[int]) -> sparse.csr_matrix:
    """FragRel Eq. 8 for the given rows against every fragment (len(rows) x n)."""
    return _code_rows(table.strengths, RelationCorpus.of(table, fragments), rows)


def _code_rows(strengths: Strengths, corpus: RelationCorpus, rows: Sequence[int]) -> sparse.csr_matrix:
    lengths, totals = corpus.lengths, corpus.totals
    sub = lengths[list(rows)]
    used = np.unique(sub.indices)
    numerator = sparse.csr_matrix(sub[:, used] @ strengths.matrix(used.tolist()) @ lengths.T)
    # Scaled in place: the same products as multiplying by the two diagonal matrices, in the
    # same order (row scale first), without two more sparse products and their copies.
    row_of = np.repeat(np.arange(len(rows)), np.diff(numerator.indptr))
    numerator.data *= (1.0 / totals[list(rows)])[row_of]
    numerator.data *= (1.0 / totals)[numerator.indices]
    return numerator


def context_relation(position_i: int, position_j: int, weight: float) -> float:
    """FragRel Eq. 7: w_rel ** |loc_i - loc_j| for windows of one file."""
    return weight ** abs(position_i - position_j)


def _context_rows(corpus: RelationCorpus, rows: Sequence[int], shape: tuple[int, int],
                  context_weight: float, cutoff: float,
                  window_at: dict[tuple[str, int], int]) -> sparse.csr_matrix:
    """FragRel Eq. 7 for the given rows: each window against the windows near it in its file."""
    reach = int(math.log(cutoff) / math.log(context_weight)) if 0 < context_weight < 1 else 0
    r_idx, c_idx, vals = [], [], []
    if reach:
        for r, i in enumerate(rows):
            place = corpus.places[i]
            if place is None:
                continue
            path, position = place
            for delta in range(-reach, reach + 1):
                j = window_at.get((path, position + delta))
                if j is not None and j != i:
                    r_idx.append(r)
                    c_idx.append(j)
                    vals.append(context_relation(position, position + delta, context_weight))
    return sparse.csr_matrix((vals, (r_idx, c_idx)), shape=shape)


# Weights are kept to 6 decimals. Sparse products sum in different orders in a full and an
# incremental pass (and Eq. 8 is read from either fragment's side), so the last bits differ;
# the rounding boundary is moved off the decimal grid because weights built from 0.8, 0.5,
# 0.3 and small line counts often fall exactly on a half step (0.6100005), where such noise
# would round one way in one pass and the other way in the next.
_STEPS = 1e6  # per unit of weight
_BOUNDARY_SHIFT = 1.2345678e-5  # of a step: far above float noise, off every short decimal


def quantize(values: np.ndarray) -> np.ndarray:
    # Divided, not multiplied, so a weight of 0.05 is exactly the float 0.05.
    return np.floor(values * _STEPS + (0.5 - _BOUNDARY_SHIFT)) / _STEPS


def _by_strength(r: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                 n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort by row, strongest first within a row, ties by index (so an incremental update
    and a rebuild keep the same fragments when weights tie at the top_k boundary)."""
    micro = np.rint(vals * _STEPS).astype(np.int64)  # exact: vals are quantized
    col_bits = max(int(n).bit_length(), 1)
    value_bits = max(int(micro.max(initial=0)).bit_length(), 1)
    row_bits = max(int(r.max(initial=0)).bit_length(), 1)
    if col_bits + value_bits + row_bits > 62:
        order = np.lexsort((cols, -vals, r))
    else:
        # One int64 key sorts several times faster than a three-key lexsort.
        top = (1 << value_bits) - 1
        key = (r << (value_bits + col_bits)) | ((top - micro) << col_bits) | cols
        order = np.argsort(key)  # keys are unique: (row, col) pairs are
    return r[order], cols[order], vals[order]


Ranked = tuple[np.ndarray, np.ndarray, np.ndarray]

# Rows per sparse product: a whole 100k-line corpus at once holds tens of millions of pairs.
# Each batch's temporaries (products, ranked pair arrays) grow with it, and so does each
# C call that holds the GIL: on torch-geometric, 1024 rows peaked 215 MB above the index,
# 256 rows 130 MB, for 20% more time. On sympy a relation worker's batches of 256 window
# rows of its largest files peaked 635 MB above its base, of 64 rows 295 MB: the first
# index's summed peak 1,786 -> 1,490 MB for 71.4 -> 75.0 s (quiet host, paired); the
# 100k-line index 5.63 -> 6.03 s, 216 -> 197 MB.
ROW_BATCH = 64


def ranked_batches(table: StrengthTable, fragments: Sequence[Fragment], rows: Sequence[int],
                   context_weight: float, top_k: int | None = None) -> Iterator[tuple[list[int], Ranked]]:
    """ranked_relations() over `rows` in batches of ROW_BATCH: (batch, its ranked arrays);
    with `top_k`, each row's arrays may stop after its `top_k` strongest (and their ties)."""
    corpus = RelationCorpus.of(table, fragments)
    yield from corpus_batches(table.strengths, corpus, rows, context_weight, top_k)


def corpus_batches(strengths: Strengths, corpus: RelationCorpus, rows: Sequence[int], context_weight: float,
                   top_k: int | None = None) -> Iterator[tuple[list[int], Ranked]]:
    """ranked_batches() on a corpus already in arrays (what a relation_pool worker holds)."""
    window_at = corpus.window_at()
    for start in range(0, len(rows), ROW_BATCH):
        batch = list(rows[start:start + ROW_BATCH])
        yield batch, ranked_relations(strengths, corpus, batch, context_weight, window_at, top_k)


def ranked_relations(strengths: Strengths, corpus: RelationCorpus, rows: Sequence[int],
                     context_weight: float, window_at: dict[tuple[str, int], int],
                     top_k: int | None = None) -> Ranked:
    """Every relation >= cutoff of the given rows, as (row position, fragment, weight) arrays
    sorted by row and strongest first: max(Eq. 8, Eq. 7), self excluded. With `top_k`, a
    row's relations weaker than its `top_k`-th strongest are left out before the sort."""
    code = _code_rows(strengths, corpus, rows)
    # Both relations are non-negative, so the element-wise maximum of the sparse matrices
    # is max(Eq. 8, Eq. 7) on every pair either one relates.
    merged = sparse.csr_matrix(code.maximum(_context_rows(corpus, rows, code.shape, context_weight,
                                                          strengths.cutoff, window_at)))
    # A cheap test first (most pairs are far below the cutoff), the exact one after rounding.
    near = merged.data >= strengths.cutoff - 1e-6
    r = np.repeat(np.arange(len(rows), dtype=np.int64), np.diff(merged.indptr))[near]
    cols = merged.indices[near].astype(np.int64)
    vals = quantize(merged.data[near])
    keep = (cols != np.asarray(rows, dtype=np.int64)[r]) & (vals >= strengths.cutoff)
    r, cols, vals = r[keep], cols[keep], vals[keep]
    if top_k is not None:
        strongest = _strongest(r, vals, len(rows), top_k)
        r, cols, vals = r[strongest], cols[strongest], vals[strongest]
    return _by_strength(r, cols, vals, len(corpus))


def _strongest(r: np.ndarray, vals: np.ndarray, n_rows: int, top_k: int) -> np.ndarray:
    """Which pairs may be among their row's `top_k` strongest: all of a row with at most
    `top_k`, else those at or above its `top_k`-th largest weight (ties kept, so the sort
    still picks among them by index). `r` is ascending. Windows of a large file relate to
    thousands of fragments each; sorting all of them to keep 24 was most of a first index."""
    counts = np.bincount(r, minlength=n_rows)
    starts = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    keep = np.ones(len(r), dtype=bool)
    for row in np.flatnonzero(counts > top_k).tolist():
        segment = vals[starts[row]:starts[row + 1]]
        kth = np.partition(segment, len(segment) - top_k)[len(segment) - top_k]
        keep[starts[row]:starts[row + 1]] = segment >= kth
    return keep


def split_rows(rows: Sequence[int], ranked: Ranked, top_k: int | None) -> dict[int, Related]:
    """Each row's strongest `top_k` relations (all of them with None)."""
    r, cols, vals = ranked
    if top_k is not None:
        starts = np.searchsorted(r, np.arange(len(rows)))
        top = np.arange(len(r)) - starts[r] < top_k
        r, cols, vals = r[top], cols[top], vals[top]
    cols, vals = cols.tolist(), vals.tolist()
    bounds = np.searchsorted(r, np.arange(len(rows) + 1)).tolist()
    return {i: list(zip(cols[bounds[n]:bounds[n + 1]], vals[bounds[n]:bounds[n + 1]]))
            for n, i in enumerate(rows)}


def relation_rows(table: StrengthTable, fragments: Sequence[Fragment], rows: Sequence[int],
                  top_k: int, context_weight: float) -> dict[int, Related]:
    """Each row's sparse related set: the top_k other fragments by max(Eq. 8, Eq. 7)."""
    out: dict[int, Related] = {}
    for batch, ranked in ranked_batches(table, fragments, rows, context_weight):
        out.update(split_rows(batch, ranked, top_k))
    return out


def related_matrix(related: dict[int, Related], n: int) -> sparse.csr_matrix:
    """The w_ij matrix FragRel's rerank (Eq. 9) multiplies with."""
    rows, cols, vals = [], [], []
    for i, pairs in related.items():
        for j, w in pairs:
            if i < n and j < n:
                rows.append(i)
                cols.append(j)
                vals.append(w)
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))
