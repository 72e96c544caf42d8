"""Fragment relations: code structure (FragRel Eq. 8) and context structure (Eq. 7).

Eq. 8 is a length-weighted mean of node relation strengths, so for a fragment-by-node
length matrix M and node strength matrix S it is (M S M^T)_ij / (m_i m_j), with m the
row sums of M. Sparse products keep a 100k-line repository in seconds; recomputing
only the rows near a change keeps edits in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from prism_code.fragments import WINDOW, Fragment
from prism_code.graph import PATH_EPSILON, CodeGraph, path_limit

Related = list[tuple[int, float]]  # (fragment index, relation weight), strongest first

_BATCH = 256


class StrengthTable:
    """Node relation strengths (max-product path weight >= cutoff), computed once per node.

    With a `region`, only nodes inside it are considered: callers pass a region holding
    every node within the cutoff of the sources they will ask for, so the answers are
    exact while an incremental update touches a few hundred nodes instead of the graph.
    """

    def __init__(self, graph: CodeGraph, cutoff: float, region: set[str] | None = None) -> None:
        self.graph = graph
        self.cutoff = cutoff
        self.order = list(graph.g.nodes) if region is None else [n for n in region if n in graph.g]
        self.index = {node: i for i, node in enumerate(self.order)}
        self._rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._costs: sparse.csr_matrix | None = None

    def _cost_matrix(self) -> sparse.csr_matrix:
        """Directed -log w costs over the table's nodes."""
        if self._costs is None:
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
            self._costs = sparse.csr_matrix((costs, (rows, cols)),
                                            shape=(len(self.order), len(self.order)))
        return self._costs

    def _compute(self, missing: list[int]) -> None:
        limit = path_limit(self.cutoff)
        costs = self._cost_matrix()
        hubs = [s for s in missing if self.graph.is_hub(self.order[s])]
        # A hub may start a path: its distances are the best first step to a neighbour
        # plus that neighbour's distances in the hub-blocking graph.
        first_steps = {h: self._neighbour_costs(h) for h in hubs}
        sources = list(dict.fromkeys(
            [s for s in missing if s not in first_steps]
            + [n for steps in first_steps.values() for n in steps]))
        found: dict[int, np.ndarray] = {}
        for start in range(0, len(sources), _BATCH):
            batch = sources[start:start + _BATCH]
            dist = csgraph.dijkstra(costs, directed=True, indices=batch, limit=limit)
            found.update(zip(batch, dist))
        for source in missing:
            if source in first_steps:
                row = np.full(len(self.order), np.inf)
                for neighbour, step in first_steps[source].items():
                    np.minimum(row, found[neighbour] + step, out=row)
                row[source] = 0.0
                row[row > limit] = np.inf
            else:
                row = found[source]
            strengths = np.exp(-row)
            cols = np.flatnonzero(strengths >= self.cutoff * (1 - PATH_EPSILON))
            self._rows[source] = (cols, strengths[cols])

    def _neighbour_costs(self, hub: int) -> dict[int, float]:
        node = self.order[hub]
        return {self.index[n]: -math.log(data["weight"])
                for n, data in self.graph.g[node].items() if n in self.index}

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
    # Totals count every node of a fragment, also those outside the table's region.
    totals = np.array([sum(n for _, n in f.nodes) for f in fragments], dtype=np.float64)
    totals[totals == 0] = 1.0
    scale_rows = sparse.diags(1.0 / totals[list(rows)])
    scale_cols = sparse.diags(1.0 / totals)
    return sparse.csr_matrix(scale_rows @ numerator @ scale_cols)


def context_relation(position_i: int, position_j: int, weight: float) -> float:
    """FragRel Eq. 7: w_rel ** |loc_i - loc_j| for windows of one file."""
    return weight ** abs(position_i - position_j)


def _strongest(cols: np.ndarray, vals: np.ndarray, top_k: int) -> Related:
    # Ties break by index, so an incremental update and a rebuild keep exactly the same
    # fragments when weights tie at the top_k boundary.
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
        # Rounded before the cutoff test: sparse products sum in different orders in a
        # full and an incremental pass, and a weight at the cutoff must not flip.
        vals = np.round(vals, 6)
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
