"""Fragment relations: code structure (FragRel Eq. 8) and context structure (Eq. 7).

Eq. 8 is a length-weighted mean of node relation strengths, so for a fragment-by-node
length matrix M and node strength matrix S it is (M S M^T)_ij / (m_i m_j), with m the
row sums of M. Computing it with sparse products keeps a 100k-line repository in
seconds; recomputing only the rows near a change keeps edits in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx
import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from prism_code.fragments import WINDOW, Fragment
from prism_code.graph import CodeGraph, _edge_cost

Related = list[tuple[int, float]]  # (fragment index, relation weight), strongest first

# Below this many sources networkx's Dijkstra beats converting the graph for scipy.
_SCIPY_MIN_SOURCES = 300
_SCIPY_BATCH = 256


def node_strengths(graph: CodeGraph, sources: Sequence[str], columns: dict[str, int],
                   cutoff: float) -> sparse.csr_matrix:
    """Rows: sources; columns: `columns`; value: max-product path strength >= cutoff."""
    rows, cols, vals = [], [], []
    limit = -math.log(cutoff)
    if len(sources) >= _SCIPY_MIN_SOURCES:
        order = list(graph.g.nodes)
        index = {n: i for i, n in enumerate(order)}
        adjacency = nx.to_scipy_sparse_array(graph.g, nodelist=order, weight=None, format="coo")
        costs = np.array([_edge_cost(order[u], order[v], graph.g[order[u]][order[v]])
                          for u, v in zip(adjacency.row, adjacency.col)], dtype=np.float64)
        # Dijkstra treats a zero-cost edge (weight 1.0) as absent in a sparse matrix.
        costs = np.maximum(costs, 1e-12)
        matrix = sparse.csr_matrix((costs, (adjacency.row, adjacency.col)), shape=adjacency.shape)
        col_of = np.full(len(order), -1, dtype=np.int64)
        for node, c in columns.items():
            if node in index:
                col_of[index[node]] = c
        for start in range(0, len(sources), _SCIPY_BATCH):
            batch = sources[start:start + _SCIPY_BATCH]
            dist = csgraph.dijkstra(matrix, directed=False, indices=[index[s] for s in batch],
                                    limit=limit)
            for r, row in enumerate(dist):
                hit = np.flatnonzero(np.isfinite(row) & (col_of >= 0))
                rows.extend([start + r] * len(hit))
                cols.extend(col_of[hit].tolist())
                vals.extend(np.exp(-row[hit]).tolist())
    else:
        for r, source in enumerate(sources):
            for node, strength in graph.relation_strengths(source, cutoff).items():
                c = columns.get(node)
                if c is not None:
                    rows.append(r)
                    cols.append(c)
                    vals.append(strength)
    return sparse.csr_matrix((vals, (rows, cols)), shape=(len(sources), len(columns)))


def length_matrix(fragments: Sequence[Fragment], columns: dict[str, int]) -> sparse.csr_matrix:
    rows, cols, vals = [], [], []
    for i, fragment in enumerate(fragments):
        for node, length in fragment.nodes:
            rows.append(i)
            cols.append(columns[node])
            vals.append(float(length))
    return sparse.csr_matrix((vals, (rows, cols)), shape=(len(fragments), len(columns)))


def code_relation_rows(graph: CodeGraph, fragments: Sequence[Fragment], rows: Sequence[int],
                       cutoff: float) -> sparse.csr_matrix:
    """FragRel Eq. 8 for the given rows against every fragment (len(rows) x n)."""
    columns: dict[str, int] = {}
    for fragment in fragments:
        for node, _ in fragment.nodes:
            columns.setdefault(node, len(columns))
    lengths = length_matrix(fragments, columns)
    sub = lengths[list(rows)]
    used = np.unique(sub.indices)
    names = list(columns)  # insertion order is column order
    strengths = node_strengths(graph, [names[c] for c in used], columns, cutoff)
    numerator = sub[:, used] @ strengths @ lengths.T
    totals = np.asarray(lengths.sum(axis=1)).ravel()
    totals[totals == 0] = 1.0
    scale_rows = sparse.diags(1.0 / totals[list(rows)])
    scale_cols = sparse.diags(1.0 / totals)
    return sparse.csr_matrix(scale_rows @ numerator @ scale_cols)


def context_relation(position_i: int, position_j: int, weight: float) -> float:
    """FragRel Eq. 7: w_rel ** |loc_i - loc_j| for windows of one file."""
    return weight ** abs(position_i - position_j)


def relation_rows(graph: CodeGraph, fragments: Sequence[Fragment], rows: Sequence[int],
                  cutoff: float, top_k: int, context_weight: float) -> dict[int, Related]:
    """Each row's sparse related set: the top_k other fragments by max(Eq. 8, Eq. 7)."""
    if not rows:
        return {}
    code = code_relation_rows(graph, fragments, rows, cutoff)
    window_at = {(f.path, f.position): j for j, f in enumerate(fragments) if f.kind == WINDOW}
    reach = int(math.log(cutoff) / math.log(context_weight)) if 0 < context_weight < 1 else 0
    out: dict[int, Related] = {}
    for r, i in enumerate(rows):
        start, end = code.indptr[r], code.indptr[r + 1]
        weights = dict(zip(code.indices[start:end].tolist(), code.data[start:end].tolist()))
        fragment = fragments[i]
        if fragment.kind == WINDOW:
            for delta in range(-reach, reach + 1):
                j = window_at.get((fragment.path, fragment.position + delta))
                if j is not None:
                    w = context_relation(fragment.position, fragment.position + delta, context_weight)
                    weights[j] = max(weights.get(j, 0.0), w)
        weights.pop(i, None)
        ranked = sorted(((j, w) for j, w in weights.items() if w >= cutoff),
                        key=lambda jw: (-jw[1], jw[0]))
        out[i] = [(j, round(w, 6)) for j, w in ranked[:top_k]]
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
