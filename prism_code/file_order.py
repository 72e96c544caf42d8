"""The order in which the function memory is written: files after the files they import.

A function's note reads better once the functions it uses are noted, so the model pass
(prism_code.memory.note_writer) and the Chain-of-Key summaries take files in import
order, with the files open in the editor first.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from prism_code.fragments import Fragment
from prism_code.index import RepoIndex


def file_order(index: RepoIndex, priority: Sequence[str] = ()) -> list[str]:
    """Indexed files, imported ones before their importers; `priority` files come first.

    Import cycles are condensed and their files taken in path order; among files free to
    go next, the smallest path goes first, so the order is the same on every run.
    """
    with index.lock:
        parsed = dict(index.graph.parsed)
        resolver = index.graph.resolver
        deps = {path: {t for imp in pf.imports for t in resolver.resolve(imp, path, pf.language)
                       if t != path and t in parsed}
                for path, pf in parsed.items()}
    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_nodes_from(parsed)
    g.add_edges_from((dep, path) for path, targets in deps.items() for dep in targets)
    condensed = nx.condensation(g)
    members = {c: sorted(condensed.nodes[c]["members"]) for c in condensed}
    order = [p for c in nx.lexicographical_topological_sort(condensed, key=lambda c: members[c][0])
             for p in members[c]]
    first = [p for p in dict.fromkeys(priority) if p in parsed]
    return first + [p for p in order if p not in set(first)]


def functions_in_order(index: RepoIndex, priority: Sequence[str] = ()) -> list[Fragment]:
    by_file: dict[str, list[Fragment]] = {}
    for fragment in index.functions():
        by_file.setdefault(fragment.path, []).append(fragment)
    return [f for path in file_order(index, priority)
            for f in sorted(by_file.get(path, []), key=lambda f: (f.start_line, f.qualname))]

