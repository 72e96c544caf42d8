"""The resolved call edges of an index, all of them or those touching one symbol (`prism-code calls`).

Each edge is a call site: the calling definition (or a file's module-level code), the
definition it calls, and the call's line. They are the graph's resolved calls
(prism_code.call_resolution): a call that cannot be resolved is not listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prism_code.graph import CodeGraph, ResolvedCall
from prism_code.index import RepoIndex


@dataclass(frozen=True)
class End:
    """One end of a call edge: a definition, or module-level code (qualname None)."""

    path: str
    qualname: str | None
    start_line: int

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "qualname": self.qualname, "start_line": self.start_line}

    def label(self) -> str:
        return f"{self.qualname or '<module>'} ({self.path}:{self.start_line})"


@dataclass(frozen=True)
class CallEdge:
    caller: End
    callee: End
    line: int  # 1-based line of the call in the caller's file

    def as_json(self) -> dict[str, Any]:
        return {"caller": self.caller.as_json(), "callee": self.callee.as_json(), "line": self.line}

    def text(self) -> str:
        return f"{self.caller.path}:{self.line}  {self.caller.label()} -> {self.callee.label()}"


def call_edges(index: RepoIndex, symbol: str | None = None) -> list[CallEdge]:
    """Every resolved call, or those whose caller or callee is `symbol` (a qualname such as
    "Keeper.walk", else a bare name such as "walk"). ValueError when no definition matches."""
    with index.lock:
        graph = index.graph
        if symbol is None:
            calls = graph.resolved_calls()
        else:
            nodes = matching_nodes(graph, symbol)
            if not nodes:
                raise ValueError(f"no function, method or class named {symbol!r} in the index")
            calls = sorted({call for node in nodes for call in graph.calls_from(node) + graph.calls_to(node)})
        return [_edge(graph, call) for call in calls]


def matching_nodes(graph: CodeGraph, symbol: str) -> list[str]:
    """Definition nodes whose qualname is `symbol`; failing that, whose name is."""
    nodes = graph.g.nodes
    definitions = [n for n, data in nodes(data=True) if "qualname" in data]
    exact = [n for n in definitions if nodes[n]["qualname"] == symbol]
    return sorted(exact or [n for n in definitions if nodes[n]["name"] == symbol])


def _end(graph: CodeGraph, node: str) -> End:
    data = graph.g.nodes[node]
    return End(data["path"], data.get("qualname"), data.get("start_line", 1))


def _edge(graph: CodeGraph, call: ResolvedCall) -> CallEdge:
    return CallEdge(_end(graph, call.caller), _end(graph, call.callee), call.line)
