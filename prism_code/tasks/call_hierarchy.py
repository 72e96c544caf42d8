"""The call hierarchy and the implementations of a definition, from the graph's resolved calls.

Editors ask three things (LSP `prepareCallHierarchy`, `incomingCalls`, `outgoingCalls`):
which definition the cursor names, who calls it, and what it calls, each caller or callee
with the lines of its call sites. A fourth, `implementation`, asks which methods override
the one under the cursor. Every answer comes from the same resolved, directed call edges
the hovers and notes use (`CodeGraph.calls_to`, `calls_from`, `overrides`), so the
"callers: 3" of a hover and the three rows of "Show Call Hierarchy" agree.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from prism_code.graph import CodeGraph, ResolvedCall
from prism_code.index import RepoIndex
from prism_code.tasks.hover import ParsedBuffers, symbol_at


@dataclass(frozen=True)
class CallTarget:
    """A definition or module in the hierarchy: what an editor shows as one row."""

    node: str  # the graph node id; editors hand it back in the next request
    name: str
    qualname: str
    kind: str  # function, method, class or module
    path: str  # workspace-relative
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str


@dataclass(frozen=True)
class CallGroup:
    """One caller (incoming) or callee (outgoing) with the call sites that link it."""

    target: CallTarget
    path: str  # the file the call sites are in: the caller's
    lines: tuple[int, ...]  # 1-based call-site lines, ascending
    name: str  # the called name, to find it on those lines


def prepare(index: RepoIndex, path: str, line: int, col: int, text: str | None = None,
            buffers: ParsedBuffers | None = None) -> CallTarget | None:
    """The definition at (1-based `line`, 0-based `col`), where it is defined or called."""
    symbol = symbol_at(index, path, line, col, text, buffers)
    if symbol is None:
        return None
    with index.lock:
        return target_of(index.graph, symbol.node)


def target_of(graph: CodeGraph, node: str) -> CallTarget | None:
    """The row for a graph node; None when it is gone (the file changed since)."""
    if node not in graph.g:
        return None
    data = graph.g.nodes[node]
    path = data["path"]
    if "qualname" not in data:  # module-level code calls too
        name = path.rsplit("/", 1)[-1]
        return CallTarget(node, name, name, "module", path, 1, data.get("end_line", 1), "")
    pf = graph.parsed.get(path)
    definition = next((d for d in pf.definitions if d.qualname == data["qualname"]), None) if pf else None
    signature = definition.signature if definition is not None else data["qualname"]
    return CallTarget(node, data["name"], data["qualname"], data["kind"], path,
                      data["start_line"], data["end_line"], signature)


def incoming(index: RepoIndex, node: str) -> list[CallGroup]:
    """Who calls `node`, each caller once with its call-site lines (in the caller's file)."""
    with index.lock:
        return _groups(index.graph, node, index.graph.calls_to(node), callers=True)


def outgoing(index: RepoIndex, node: str) -> list[CallGroup]:
    """What `node` calls, each callee once with the lines of `node`'s calls to it."""
    with index.lock:
        return _groups(index.graph, node, index.graph.calls_from(node), callers=False)


def implementations(index: RepoIndex, path: str, line: int, col: int, text: str | None = None,
                    buffers: ParsedBuffers | None = None) -> list[CallTarget]:
    """The methods overriding the one at the cursor, nearest subclasses first."""
    symbol = symbol_at(index, path, line, col, text, buffers)
    if symbol is None:
        return []
    with index.lock:
        graph = index.graph
        found = (target_of(graph, node) for node in graph.overrides(symbol.node))
        return [target for target in found if target is not None]


def _groups(graph: CodeGraph, node: str, calls: list[ResolvedCall], callers: bool) -> list[CallGroup]:
    """The calls grouped by their other end: the caller when `callers`, else the callee."""
    lines: dict[str, set[int]] = defaultdict(set)
    for call in calls:
        lines[call.caller if callers else call.callee].add(call.line)
    groups = []
    for other, found in lines.items():
        target = target_of(graph, other)
        if target is None:
            continue
        # Call sites lie in the caller's file; they name the callee.
        site_path = target.path if callers else graph.g.nodes[node]["path"]
        called = graph.g.nodes[node if callers else other].get("name", "")
        groups.append(CallGroup(target, site_path, tuple(sorted(found)), called))
    groups.sort(key=lambda group: (group.target.path, group.target.start_line, group.target.qualname))
    return groups
