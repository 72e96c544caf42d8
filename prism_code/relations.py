"""Fragment relations: code structure (FragRel Eq. 8) and context structure (Eq. 7).

Eq. 8 is a length-weighted mean of node relation strengths, so for a fragment-by-node
length matrix M and node strength matrix S it is (M S M^T)_ij / (m_i m_j), with m the
row sums of M. Sparse products keep a 100k-line repository in seconds; recomputing
only the rows near a change keeps edits in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx
import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from prism_code.fragments import WINDOW, Fragment
from prism_code.graph import CodeGraph

Related = list[tuple[int, float]]  # (fragment index, relation weight), strongest first

# Below this many sources networkx's Dijkstra beats converting the graph for scipy.
_SCIPY_MIN_SOURCES = 200
_SCIPY_BATCH = 256


class StrengthTable:
    """Node relation strengths (max-product path weight >= cutoff), computed once per node."""

    def __init__(self, graph: CodeGraph, cutoff: float) -> None:
        self.graph = graph
        self.cutoff = cutoff
        self.order = list(graph.g.nodes)
        self.index = {node: i for i, node in enumerate(self.order)}
        self._rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._costs: sparse.csr_matrix | None = None

    def _cost_matrix(self) -> sparse.csr_matrix:
        if self._costs is None:
            weights = nx.to_scipy_sparse_array(self.graph.g, nodelist=self.order, weight="weight",
                                               format="csr")
            # Dijkstra minimises sums, so max-product becomes min of -log w; a weight of 1.0
            # would give cost 0, which a sparse matrix would read as "no edge".
            costs = sparse.csr_matrix((np.maximum(-np.log(weights.data), 1e-12), weights.indices,
                                       weights.indptr), shape=weights.shape)
            # Directed: a hub's own row is emptied so paths may end at it but not pass it.
            keep = np.array([0.0 if self.graph.is_hub(n) else 1.0 for n in self.order])
            directed = sparse.csr_matrix(sparse.diags(keep) @ costs)
            directed.eliminate_zeros()
            self._costs = directed
        return self._costs

    def _compute(self, missing: list[int]) -> None:
        limit = -math.log(self.cutoff)
        hubs = [s for s in missing if self.graph.is_hub(self.order[s])]
        missing = [s for s in missing if not self.graph.is_hub(self.order[s])]
        if len(missing) >= _SCIPY_MIN_SOURCES:
            matrix = self._cost_matrix()
            for start in range(0, len(missing), _SCIPY_BATCH):
                batch = missing[start:start + _SCIPY_BATCH]
                dist = csgraph.dijkstra(matrix, directed=True, indices=batch, limit=limit)
                for source, row in zip(batch, dist):
                    cols = np.flatnonzero(np.isfinite(row))
                    self._rows[source] = (cols, np.exp(-row[cols]))
            missing = []
        for source in missing + hubs:
            strengths = self.graph.relation_strengths(self.order[source], self.cutoff)
            cols = np.fromiter((self.index[n] for n in strengths), dtype=np.int64, count=len(strengths))
            self._rows[source] = (cols, np.fromiter(strengths.values(), dtype=np.float64,
                                                    count=len(strengths)))

    def matrix(self, sources: Sequence[int]) -> sparse.csr_matrix:
        """Rows: the given node indices; columns: every node."""
        missing = [s for s in dict.fromkeys(sources) if s not in self._rows]
        if missing:
            self._compute(missing)
        rows = [self._rows[s] for s in sources]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(c) for c, _ in rows])
        indices = np.concatenate([c for c, _ in rows]) if rows else np.zeros(0, dtype=np.int64)
        data = np.concatenate([v for _, v in rows]) if rows else np.zeros(0)
        return sparse.csr_matrix((data, indices, indptr), shape=(len(rows), len(self.order)))

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


def code_relation_rows(table: StrengthTable, fragments: Sequence[Fragment],
                       rows: Sequence[int]) -> sparse.csr_matrix:
    """FragRel Eq. 8 for the given rows against every fragment (len(rows) x n)."""
    lengths = table.length_matrix(fragments)
    sub = lengths[list(rows)]
    used = np.unique(sub.indices)
    numerator = sub[:, used] @ table.matrix(used.tolist()) @ lengths.T
    totals = np.asarray(lengths.sum(axis=1)).ravel()
    totals[totals == 0] = 1.0
    scale_rows = sparse.diags(1.0 / totals[list(rows)])
    scale_cols = sparse.diags(1.0 / totals)
    return sparse.csr_matrix(scale_rows @ numerator @ scale_cols)


def context_relation(position_i: int, position_j: int, weight: float) -> float:
    """FragRel Eq. 7: w_rel ** |loc_i - loc_j| for windows of one file."""
    return weight ** abs(position_i - position_j)


def _strongest(cols: np.ndarray, vals: np.ndarray, top_k: int) -> Related:
    # Round before ranking and break ties by index, so that an incremental update and a
    # rebuild keep exactly the same fragments when weights tie at the top_k boundary.
    vals = np.round(vals, 6)
    order = np.lexsort((cols, -vals))[:top_k]
    return [(int(cols[o]), float(vals[o])) for o in order]


def relation_rows(table: StrengthTable, fragments: Sequence[Fragment], rows: Sequence[int],
                  top_k: int, context_weight: float) -> dict[int, Related]:
    """Each row's sparse related set: the top_k other fragments by max(Eq. 8, Eq. 7)."""
    if not rows:
        return {}
    code = code_relation_rows(table, fragments, rows)
    window_at = {(f.path, f.position): j for j, f in enumerate(fragments) if f.kind == WINDOW}
    cutoff = table.cutoff
    reach = int(math.log(cutoff) / math.log(context_weight)) if 0 < context_weight < 1 else 0
    out: dict[int, Related] = {}
    for r, i in enumerate(rows):
        start, end = code.indptr[r], code.indptr[r + 1]
        cols, vals = code.indices[start:end], code.data[start:end]
        fragment = fragments[i]
        if fragment.kind == WINDOW and reach:
            extra = {}
            for delta in range(-reach, reach + 1):
                j = window_at.get((fragment.path, fragment.position + delta))
                if j is not None:
                    extra[j] = context_relation(fragment.position, fragment.position + delta, context_weight)
            if extra:
                merged = dict(zip(cols.tolist(), vals.tolist()))
                for j, w in extra.items():
                    merged[j] = max(merged.get(j, 0.0), w)
                cols = np.fromiter(merged.keys(), dtype=np.int64, count=len(merged))
                vals = np.fromiter(merged.values(), dtype=np.float64, count=len(merged))
        keep = (cols != i) & (vals >= cutoff)
        out[i] = _strongest(cols[keep], vals[keep], top_k)
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
