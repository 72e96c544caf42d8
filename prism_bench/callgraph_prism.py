"""Prism's call edges, read off the code graph of a lexical index, as the bench's CallEdges.

`CodeGraph.resolved_calls()` (one `ResolvedCall(caller, callee, line)` per resolved call site)
is used when the graph has it; before it existed the edges are derived from `call_links`,
which tells a node's callers: every (caller, callee) pair it reports, at each line of the
caller's file where a call of the callee's name lies on the caller's lines. That is the
graph's own rule for adding the link, so every site of the name counts, whatever its
receiver.

Graph nodes become definition keys (see callgraph_sites.DefKey): a function or method is
(path, start_line); a caller that is a class, a top-level block or the module is the module,
(path, 0); a callee must be a function, method or class.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from prism_bench.callgraph_score import CallEdge
from prism_bench.callgraph_sites import DefKey
from prism_code.graph import CodeGraph, call_links, innermost_nodes, module_node
from prism_code.index import RepoIndex

CALLER_KINDS = frozenset({"function", "method"})
CALLEE_KINDS = frozenset({"function", "method", "class"})


@dataclass(frozen=True)
class PrismEdges:
    edges: list[CallEdge]
    source: str  # "resolved_calls" or "call_links (baseline)"
    index_seconds: float  # the lexical index's first update (parse, graph, fragments)


def _caller_key(graph: CodeGraph, node: str) -> DefKey | None:
    attrs = graph.g.nodes[node]
    path = attrs.get("path")
    if path is None:
        return None
    return (path, int(attrs["start_line"])) if attrs.get("kind") in CALLER_KINDS else (path, 0)


def _callee_key(graph: CodeGraph, node: str) -> DefKey | None:
    attrs = graph.g.nodes[node]
    if attrs.get("kind") not in CALLEE_KINDS:
        return None
    return attrs["path"], int(attrs["start_line"])


def _call_links_triples(graph: CodeGraph) -> Iterable[tuple[str, str, int]]:
    """(caller node, callee node, line) for every call_links pair, at each line of the name."""
    lines_by_owner: dict[str, dict[tuple[str, str], list[int]]] = {}

    def call_lines(path: str) -> dict[tuple[str, str], list[int]]:
        if path not in lines_by_owner:
            pf = graph.parsed[path]
            table = innermost_nodes(pf)
            by_owner: dict[tuple[str, str], list[int]] = defaultdict(list)
            for call in pf.calls:
                owner = table[call.line] if 0 < call.line < len(table) else None
                by_owner[(owner or module_node(path), call.name)].append(call.line)
            lines_by_owner[path] = by_owner
        return lines_by_owner[path]

    for callee in list(graph.g.nodes):
        attrs = graph.g.nodes[callee]
        if attrs.get("kind") not in CALLEE_KINDS:
            continue
        callers, _ = call_links(graph, callee)
        for caller in callers:
            path = graph.g.nodes[caller].get("path")
            if path not in graph.parsed:
                continue
            for line in sorted(set(call_lines(path).get((caller, attrs["name"]), []))):
                yield caller, callee, line


def graph_edges(graph: CodeGraph) -> tuple[list[CallEdge], str]:
    """The graph's call edges as CallEdges, and which of the two ways they were read."""
    resolved_calls = getattr(graph, "resolved_calls", None)
    if callable(resolved_calls):
        triples: Iterable[tuple[str, str, int]] = ((c.caller, c.callee, c.line) for c in resolved_calls())
        source = "resolved_calls"
    else:
        triples = _call_links_triples(graph)
        source = "call_links (baseline)"
    edges = set()
    for caller, callee, line in triples:
        if caller not in graph.g or callee not in graph.g:
            continue
        caller_key, callee_key = _caller_key(graph, caller), _callee_key(graph, callee)
        if caller_key is not None and callee_key is not None:
            edges.add(CallEdge(caller_key, callee_key, int(line), str(graph.g.nodes[callee].get("name", ""))))
    return sorted(edges), source


def prism_edges(index: RepoIndex) -> list[CallEdge]:
    """The call edges of an updated index's graph (see the module docstring)."""
    with index.lock:
        return graph_edges(index.graph)[0]


def index_and_read(root: Path) -> PrismEdges:
    """A fresh lexical index of `root` (no embeddings, no relations) and its call edges."""
    with tempfile.TemporaryDirectory(prefix="prism-callgraph-") as cache:
        index = RepoIndex(root, cache_dir=Path(cache))
        try:
            started = time.perf_counter()
            index.update(relations=False)
            seconds = time.perf_counter() - started
            with index.lock:
                edges, source = graph_edges(index.graph)
        finally:
            index.close()
    return PrismEdges(edges, source, seconds)
