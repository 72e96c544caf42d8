"""The repository code graph with FragRel edge weights (FragRel App. A).

Nodes are directories, files, each file's syntax root (the module), definitions and
top-level statement blocks. Every edge remembers which file contributed it, so a
re-parsed file can withdraw exactly its own edges: that is what keeps incremental
updates local.

Beside the undirected, weighted graph (FragRel's relation strength is symmetric), the graph
keeps the directed table of resolved calls (caller -> callee, with the call-site line) and
the overrides between methods, both from prism_code.call_resolution. Only those are calls:
hovers, notes and the call hierarchy read them, never the weighted edges.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prism_code.call_index import ResolutionCache
from prism_code.call_resolution import CallResolver, Target
from prism_code.parse.model import ParsedFile
from prism_code.parse.resolve import ModuleResolver

if TYPE_CHECKING:
    import networkx as nx

DIRECTORY_WEIGHT = 0.3
FILE_ROOT_WEIGHT = 1.0
SYNTAX_WEIGHT = 0.5
CALL_WEIGHT = 0.8
IMPORT_WEIGHT = 0.8
# A method call whose receiver's type is unknown, linked to the one definition of that name
# in the repository: right in 39 of 91 such calls (43%) on tomlkit, marshmallow and wtforms
# against jedi, so it weighs that share of a call (0.43 * 0.8). It relates code for FragRel;
# it is never shown as a call (the resolved calls are).
NAME_MATCH_WEIGHT = 0.35

# Directory edges belong to no single file: they are owned by this pseudo-file.
_TREE_OWNER = ""
# Owner suffix of a file's call and import links (its syntax edges are owned by the path).
_LINKS = "\0links"
# A node with more call/import links than this (a utility every module imports, an
# import block naming ten modules) may end a path but not carry one: through it,
# everything would be related to everything, which says nothing and costs quadratically.
HUB_LINKS = 8
# Path costs are sums of logs: two routes to the same strength can differ in the last
# bits. A strength at the cutoff must be in or out the same way in every computation
# (full or incremental), so the limit is widened by this and strengths are then clamped.
PATH_EPSILON = 1e-9


def path_limit(cutoff: float) -> float:
    return -math.log(cutoff) + PATH_EPSILON


def dir_node(path: str) -> str:
    return f"d:{path}"


def file_node(path: str) -> str:
    return f"f:{path}"


def module_node(path: str) -> str:
    return f"m:{path}"


def def_node(path: str, qualname: str) -> str:
    return f"s:{path}#{qualname}"


def block_node(path: str, start_line: int) -> str:
    return f"b:{path}#{start_line}"


def _parent_dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


@dataclass(frozen=True)
class Edge:
    u: str
    v: str
    weight: float


@dataclass(frozen=True, order=True)
class ResolvedCall:
    """A call from `caller` (a definition's or a module's node) to the definition `callee`,
    on 1-based line `line` of the caller's file. A recursive call has caller == callee."""

    caller: str
    callee: str
    line: int


class CodeGraph:
    """Undirected weighted graph; weight of an edge = max over the files that add it."""

    def __init__(self) -> None:
        # networkx is imported here, not at the top: a find answered from the saved lexical
        # index (tasks/corpus_files.py) builds no graph and should not pay ~0.3 s to import it.
        import networkx as nx

        self.g: nx.Graph[str] = nx.Graph()
        self.parsed: dict[str, ParsedFile] = {}
        self._owned: dict[str, list[tuple[str, str]]] = defaultdict(list)
        # How many call/import links end at each node; see is_hub().
        self.link_degree: Counter[str] = Counter()
        self._defs_by_name: dict[str, set[str]] = defaultdict(set)
        self._resolver: ModuleResolver | None = None
        # Which files each file's links read (its imports' targets, the files its calls resolve
        # through), and the reverse: an edit relinks the files that read the edited one.
        self._consulted: dict[str, frozenset[str]] = {}
        self._consulted_by: dict[str, set[str]] = defaultdict(set)
        self._resolution_cache = ResolutionCache()  # file indexes and import answers, across updates
        # Resolved calls and overrides by the file whose links found them, and both directions.
        self._calls_of: dict[str, list[ResolvedCall]] = {}
        self._calls_from: dict[str, list[ResolvedCall]] = defaultdict(list)
        self._calls_to: dict[str, list[ResolvedCall]] = defaultdict(list)
        self._overrides_of: dict[str, list[tuple[str, str]]] = {}
        self._overridden: dict[str, list[str]] = defaultdict(list)  # method -> what it overrides
        self._overriders: dict[str, list[str]] = defaultdict(list)  # method -> what overrides it
        # Files by the names they call: which files a vanished name affects, without a scan
        # of every call site in the repository on each edit.
        self._callers: dict[str, set[str]] = defaultdict(set)
        self.last_relinked: set[str] = set()  # files whose cross-file links the last update redid
        self.last_appeared: set[str] = set()  # files the last update added
        # Changed nodes of the last update whose only change is a leaf that appeared or vanished
        # under them (or that are such a leaf): see update().
        self.last_leaf_only: set[str] = set()

    def __del__(self) -> None:
        # networkx caches views (`edges`, `degree`) that point back at their graph: a cycle,
        # which only the cyclic collector frees, and a long-running process may keep that
        # collector off its long-lived objects (prism_code/lsp/heap.py). Dropping the views lets
        # reference counting free a replaced graph with everything in it.
        for view in ("edges", "degree", "nodes", "adj"):
            vars(self.g).pop(view, None)

    # ---- building -------------------------------------------------------------

    def update(self, parsed_files: Iterable[ParsedFile], removed: Iterable[str] = ()) -> set[str]:
        """Add or replace files, drop removed ones; returns the node ids that changed."""
        incoming = {pf.path: pf for pf in parsed_files}
        gone = set(removed) | set(incoming)
        appeared_or_vanished = {p for p in incoming if p not in self.parsed}
        appeared_or_vanished |= {p for p in removed if p in self.parsed}
        old_nodes = {p: set(_file_nodes(self.parsed[p])) for p in gone if p in self.parsed}
        new_nodes = {p: set(_file_nodes(pf)) for p, pf in incoming.items()}
        # Definitions that keep their node keep the links other files made to them, so only
        # names that appeared or vanished can change how other files' calls resolve.
        flipped = set().union(*(old_nodes.get(p, set()) ^ new_nodes.get(p, set()) for p in gone))
        stale_names = {n.rsplit("#", 1)[1].rsplit(".", 1)[-1] for n in flipped if n.startswith("s:")}
        # Other files read a file's definitions (not its top-level blocks, named by their first
        # line) and its facts (_facts): an edit that leaves both alone (inside a function body,
        # lines moving) relinks no other file.
        reread = {p for p in gone if {n for n in old_nodes.get(p, set()) ^ new_nodes.get(p, set())
                                      if not n.startswith("b:")}
                  or p not in self.parsed or p not in incoming or _facts(self.parsed[p]) != _facts(incoming[p])}
        dependents = set(incoming) | self._dependents(reread, stale_names, appeared_or_vanished)
        links_before = {p: set(self.edges_of([p + _LINKS])) for p in dependents}
        nodes_before = set().union(*old_nodes.values())
        edges_before = self._incident(nodes_before)
        for path in gone:
            old = self.parsed.pop(path, None)
            if old is not None:
                self._drop_file(path, old, keep=new_nodes.get(path, set()))
        for path, pf in incoming.items():
            self.parsed[path] = pf
            self._add_structure(pf)
            for call in pf.calls:
                self._callers[call.name].add(path)
        if appeared_or_vanished:
            self._resolver = None
        self.last_relinked = {p for p in dependents if p in self.parsed}
        self.last_appeared = appeared_or_vanished & set(incoming)
        touched: set[str] = set()
        calls = self.call_resolver()
        for path in sorted(self.last_relinked):
            owner = path + _LINKS
            self._withdraw(owner)
            self._withdraw_calls(path)
            self._link(self.parsed[path], owner, calls)
            changed = links_before[path] ^ set(self.edges_of([owner]))
            touched |= {n for _, u, v, _ in changed for n in (u, v)}
        relinked = set(touched)
        # Only what really differs counts as changed: a re-parsed file whose definitions and
        # links came back identical must not make its whole neighbourhood look new.
        nodes_after = set().union(*new_nodes.values())
        changed_edges = edges_before ^ self._incident(nodes_after)
        touched |= nodes_before ^ nodes_after
        touched |= {n for u, v, _ in changed_edges for n in (u, v)}
        self.last_leaf_only = self._leaf_only(touched, relinked, changed_edges, edges_before,
                                              nodes_before, nodes_after)
        return {n for n in touched if n in self.g} | (nodes_before - nodes_after)

    def _leaf_only(self, touched: set[str], relinked: set[str],
                   changed_edges: set[tuple[str, str, float]],
                   edges_before: set[tuple[str, str, float]],
                   nodes_before: set[str], nodes_after: set[str]) -> set[str]:
        """Changed nodes whose only change is a leaf (a node with one edge) appearing or
        vanishing under them, and those leaves: a path may end at a leaf but never pass
        through it, so no strength between two other nodes changed. A function added at
        the end of a file is such a leaf under the module, whose neighbourhood is large."""
        old_degree = Counter(n for u, v, _ in edges_before for n in (u, v))
        leaves = {n for n in nodes_after - nodes_before if n in self.g and self.g.degree(n) == 1}
        leaves |= {n for n in nodes_before - nodes_after if old_degree[n] == 1}
        other = relinked | ((nodes_before ^ nodes_after) - leaves)
        other |= {n for u, v, _ in changed_edges if u not in leaves and v not in leaves
                  for n in (u, v)}
        return touched - other

    def _incident(self, nodes: set[str]) -> set[tuple[str, str, float]]:
        return {(min(u, v), max(u, v), d["weight"])
                for u, v, d in self.g.edges(nodes & self.g.nodes, data=True)}

    def _dependents(self, reread: set[str], names: set[str], added_or_removed: set[str]) -> set[str]:
        """Files whose cross-file links may resolve differently: those that read a file whose
        facts changed, those calling a name that appeared or vanished (a name defined once
        links by name alone in some languages), and, when a file appeared or vanished, those
        whose imports name it."""
        out = {path for name in names for path in self._callers.get(name, ())}
        for path in reread:
            out |= self._consulted_by.get(path, set())
        keys = {_module_key(p) for p in added_or_removed}
        if keys:
            out |= {path for path, pf in self.parsed.items()
                    if path not in out and any(keys & _import_words(imp.module, imp.names) for imp in pf.imports)}
        return out

    def _add_edge(self, owner: str, u: str, v: str, weight: float) -> str | None:
        if u == v:
            return None
        data = self.g.get_edge_data(u, v)
        if data is None:
            self.g.add_edge(u, v, owners={}, weight=weight)
            data = self.g[u][v]
        if owner not in data["owners"] and owner.endswith(_LINKS):
            self.link_degree[u] += 1
            self.link_degree[v] += 1
        data["owners"][owner] = max(weight, data["owners"].get(owner, 0.0))
        data["weight"] = max(data["owners"].values())
        self._owned[owner].append((u, v))
        return u

    def _withdraw(self, owner: str) -> set[str]:
        """Remove the edges `owner` contributed; returns the nodes they touched."""
        touched: set[str] = set()
        for u, v in self._owned.pop(owner, []):
            data = self.g.get_edge_data(u, v)
            if data is None or owner not in data["owners"]:
                continue
            del data["owners"][owner]
            if owner.endswith(_LINKS):
                self.link_degree[u] -= 1
                self.link_degree[v] -= 1
            touched.update((u, v))
            if data["owners"]:
                data["weight"] = max(data["owners"].values())
            else:
                self.g.remove_edge(u, v)
        return touched

    def _add_structure(self, pf: ParsedFile) -> set[str]:
        path = pf.path
        fnode, mnode = file_node(path), module_node(path)
        self.g.add_node(fnode, kind="file", path=path)
        self.g.add_node(mnode, kind="module", path=path, start_line=1,
                        end_line=max(pf.line_count, 1))
        touched = {fnode, mnode} | self._add_directories(path)
        self._add_edge(path, fnode, mnode, FILE_ROOT_WEIGHT)
        for d in pf.definitions:
            node = def_node(path, d.qualname)
            self.g.add_node(node, kind=d.kind, path=path, name=d.name, qualname=d.qualname,
                            start_line=d.start_line, end_line=d.end_line)
            parent = def_node(path, d.parent) if d.parent else mnode
            self._add_edge(path, parent if parent in self.g else mnode, node, SYNTAX_WEIGHT)
            self._defs_by_name[d.name].add(node)
            touched.add(node)
        for start, end in pf.blocks:
            node = block_node(path, start)
            self.g.add_node(node, kind="block", path=path, start_line=start, end_line=end)
            self._add_edge(path, mnode, node, SYNTAX_WEIGHT)
            touched.add(node)
        return touched

    def _add_directories(self, path: str) -> set[str]:
        touched: set[str] = set()
        child, parent = file_node(path), _parent_dir(path)
        while True:
            dnode = dir_node(parent)
            new = dnode not in self.g
            if new:
                self.g.add_node(dnode, kind="directory", path=parent)
            if not self.g.has_edge(dnode, child):
                self._add_edge(_TREE_OWNER, dnode, child, DIRECTORY_WEIGHT)
                touched.update((dnode, child))
            if not new or parent == "":
                return touched
            child, parent = dnode, _parent_dir(parent)

    def _drop_file(self, path: str, old: ParsedFile, keep: set[str]) -> None:
        """Withdraw the file's own edges and remove its nodes, except those in `keep`."""
        self._withdraw(path)
        self._withdraw(f"{path}{_LINKS}")
        self._withdraw_calls(path)
        self._resolution_cache.forget(path)
        for call in old.calls:
            self._callers[call.name].discard(path)
        nodes = [n for n in _file_nodes(old) if n in self.g and n not in keep]
        for d in old.definitions:
            if def_node(path, d.qualname) not in keep:
                self._defs_by_name[d.name].discard(def_node(path, d.qualname))
        # Links from other files into these nodes vanish with them: keep the counts true.
        for u, v, data in self.g.edges(nodes, data=True):
            links = sum(owner.endswith(_LINKS) for owner in data["owners"])
            self.link_degree[u] -= links
            self.link_degree[v] -= links
        self.g.remove_nodes_from(nodes)
        for node in nodes:
            self.link_degree.pop(node, None)
        if not keep:
            self._prune_directories(_parent_dir(path))

    def _prune_directories(self, directory: str) -> None:
        while True:
            dnode = dir_node(directory)
            if dnode not in self.g or self.g.degree(dnode) > (1 if directory else 0):
                return
            self.g.remove_node(dnode)
            if directory == "":
                return
            directory = _parent_dir(directory)

    # ---- cross-file links -----------------------------------------------------

    @property
    def resolver(self) -> ModuleResolver:
        if self._resolver is None:
            self._resolver = ModuleResolver(frozenset(self.parsed))
        return self._resolver

    def call_resolver(self, files: Mapping[str, ParsedFile] | None = None) -> CallResolver:
        """A resolver over this graph's files (or `files`: an editor buffer in place of its file);
        its memo holds until the files change."""
        # The cache's file indexes are checked against the very ParsedFile they were made of.
        return CallResolver(self.parsed if files is None else files, self.resolver, self._named,
                            self._resolution_cache)

    def _named(self, name: str, limit: int | None = None) -> list[Target]:
        """Every definition named `name`; none when there are more than `limit` of them."""
        found = self._defs_by_name.get(name, ())
        if limit is not None and len(found) > limit:
            return []
        nodes = self.g.nodes
        return [(nodes[n]["path"], nodes[n]["qualname"]) for n in found]

    def _link(self, pf: ParsedFile, owner: str, calls: CallResolver) -> None:
        owner_of_line = _line_owners(pf)
        consulted: set[str] = set()
        for imp in pf.imports:
            targets = calls.import_files(pf.path, imp)
            consulted.update(targets)
            source = owner_of_line(imp.line)
            for target in targets:
                if target == pf.path:
                    continue
                linked = False
                for name, _alias in imp.names:
                    for node in self._top_level_defs(target, name):
                        self._add_edge(owner, source, node, IMPORT_WEIGHT)
                        linked = True
                if not linked:
                    self._add_edge(owner, source, file_node(target), IMPORT_WEIGHT)
        resolution = calls.resolve_file(pf)
        resolved: dict[ResolvedCall, None] = {}
        for call, callees in resolution.calls:
            caller = def_node(pf.path, call.caller) if call.caller else module_node(pf.path)
            source = owner_of_line(call.line)
            for path, qualname in callees:
                callee = def_node(path, qualname)
                if callee in self.g and caller in self.g:
                    resolved[ResolvedCall(caller, callee, call.line)] = None
                    self._add_edge(owner, source, callee, CALL_WEIGHT)
        for call, (path, qualname) in resolution.name_matches:
            callee = def_node(path, qualname)
            if callee in self.g:
                self._add_edge(owner, owner_of_line(call.line), callee, NAME_MATCH_WEIGHT)
        overrides = [(def_node(*method), def_node(*base)) for method, base in resolution.overrides]
        self._record(pf.path, list(resolved), overrides, frozenset(consulted | resolution.consulted))

    def _record(self, path: str, calls: list[ResolvedCall], overrides: list[tuple[str, str]],
                consulted: frozenset[str]) -> None:
        self._calls_of[path] = calls
        for call in calls:
            self._calls_from[call.caller].append(call)
            self._calls_to[call.callee].append(call)
        self._overrides_of[path] = overrides
        for method, base in overrides:
            self._overridden[method].append(base)
            self._overriders[base].append(method)
        self._consulted[path] = consulted
        for other in consulted:
            self._consulted_by[other].add(path)

    def _withdraw_calls(self, path: str) -> None:
        """Forget the calls, overrides and reads that `path`'s links recorded."""
        for call in self._calls_of.pop(path, []):
            _discard(self._calls_from, call.caller, call)
            _discard(self._calls_to, call.callee, call)
        for method, base in self._overrides_of.pop(path, []):
            _discard(self._overridden, method, base)
            _discard(self._overriders, base, method)
        for other in self._consulted.pop(path, frozenset()):
            readers = self._consulted_by.get(other)
            if readers is not None:
                readers.discard(path)
                if not readers:
                    del self._consulted_by[other]

    def _top_level_defs(self, path: str, name: str) -> list[str]:
        node = def_node(path, name)
        return [node] if node in self.g else []

    # ---- resolved calls -------------------------------------------------------------------

    def resolved_calls(self) -> list[ResolvedCall]:
        """Every resolved call of the repository, sorted."""
        return sorted(call for calls in self._calls_of.values() for call in calls)

    def calls_from(self, node: str) -> list[ResolvedCall]:
        """The calls made by `node` (a definition or a module), sorted."""
        return sorted(self._calls_from.get(node, ()))

    def calls_to(self, node: str) -> list[ResolvedCall]:
        """The calls of `node` (a definition), sorted."""
        return sorted(self._calls_to.get(node, ()))

    def overrides(self, node: str) -> list[str]:
        """The methods of subclasses that override the method `node`, sorted."""
        return sorted(set(self._overriders.get(node, ())))

    def overridden(self, node: str) -> list[str]:
        """What the method `node` overrides: per base, the nearest method of that name."""
        return sorted(set(self._overridden.get(node, ())))

    # ---- relation strength ----------------------------------------------------

    def is_hub(self, node: str) -> bool:
        return self.link_degree.get(node, 0) > HUB_LINKS

    def _path_cost(self, sources: set[str]) -> Callable[[str, str, dict[str, Any]], float | None]:
        """Dijkstra edge cost: -log w turns max-product into min-sum; hubs end paths."""
        def cost(u: str, v: str, data: dict[str, Any]) -> float | None:
            if u not in sources and self.is_hub(u):
                return None
            return -math.log(data["weight"])
        return cost

    def relation_strengths(self, source: str, cutoff: float) -> dict[str, float]:
        """Max over paths of the product of edge weights, for nodes at or above cutoff."""
        if source not in self.g:
            return {}
        import networkx as nx

        lengths = nx.single_source_dijkstra_path_length(
            self.g, source, cutoff=path_limit(cutoff), weight=self._path_cost({source}))
        return {node: math.exp(-d) for node, d in lengths.items()
                if math.exp(-d) >= cutoff * (1 - PATH_EPSILON)}

    def ball(self, sources: Iterable[str], cutoff: float) -> set[str]:
        """Every node related to some source with strength >= cutoff."""
        present = {s for s in sources if s in self.g}
        if not present:
            return set()
        import networkx as nx

        return set(nx.multi_source_dijkstra_path_length(
            self.g, present, cutoff=path_limit(cutoff), weight=self._path_cost(present)))

    def edges(self) -> list[Edge]:
        return [Edge(u, v, d["weight"]) for u, v, d in self.g.edges(data=True)]

    @staticmethod
    def owners_of(paths: Iterable[str], tree_changed: bool) -> set[str]:
        """Edge owners for these files: their syntax edges, their links, maybe the tree."""
        owners = {o for p in paths for o in (p, f"{p}{_LINKS}")}
        return owners | {_TREE_OWNER} if tree_changed else owners

    def edges_of(self, owners: Iterable[str]) -> list[tuple[str, str, str, float]]:
        """(owner, u, v, weight) for what each owner contributed: the persisted edge rows."""
        rows = []
        for owner in owners:
            for u, v in dict.fromkeys(self._owned.get(owner, [])):
                data = self.g.get_edge_data(u, v)
                if data is not None and owner in data["owners"]:
                    rows.append((owner, u, v, data["owners"][owner]))
        return rows


def _module_key(path: str) -> str:
    """The word an import would use for this file: its stem, or its folder for index files."""
    parts = path.rsplit("/", 2)
    stem = parts[-1].split(".")[0]
    if stem in ("__init__", "index", "mod") and len(parts) > 1:
        return parts[-2]
    return stem


def _import_words(module: str, names: tuple[tuple[str, str | None], ...] = ()) -> set[str]:
    """The words of an import that could name a file: `from . import dates` names "dates"."""
    words = set(re.split(r"[./:\\\-<>]+", module)) | {name for name, _alias in names}
    return words - {"", "*"}


def _facts(pf: ParsedFile) -> tuple[object, ...]:
    """What other files' resolution may read of this file, without line numbers: definitions,
    bindings and imports in source order (which of two bindings of a name wins)."""
    items: list[tuple[int, int, object]] = []
    items += [(d.start_line, 0, (d.qualname, d.kind, d.parent, d.bases, d.signature)) for d in pf.definitions]
    items += [(b.line, 1, (b.scope, b.name, b.kind, b.evidence)) for b in pf.bindings]
    items += [(i.line, 2, (i.module, i.names, i.alias, i.level)) for i in pf.imports]
    items.sort(key=lambda item: (item[0], item[1]))
    return (pf.language, *(item[2] for item in items))


def _discard(table: dict[str, list[Any]], key: str, item: object) -> None:
    items = table.get(key)
    if items is not None:
        items.remove(item)
        if not items:
            del table[key]


def _line_owners(pf: ParsedFile) -> Callable[[int], str]:
    """A function mapping a line to its innermost definition or block node."""
    table = innermost_nodes(pf)
    mnode = module_node(pf.path)

    def owner(line: int) -> str:
        node = table[line] if 0 < line < len(table) else None
        return node or mnode
    return owner


def _file_nodes(pf: ParsedFile) -> list[str]:
    nodes = [file_node(pf.path), module_node(pf.path)]
    nodes += [def_node(pf.path, d.qualname) for d in pf.definitions]
    return nodes + [block_node(pf.path, start) for start, _ in pf.blocks]


def innermost_nodes(pf: ParsedFile) -> list[str | None]:
    """Index = 1-based line; value = the innermost definition/block node covering it."""
    table: list[str | None] = [None] * (max(pf.line_count, 1) + 1)
    for start, end in pf.blocks:
        node = block_node(pf.path, start)
        for line in range(max(start, 1), min(end, pf.line_count) + 1):
            table[line] = node
    # Outer definitions start first in source order; writing them in order of span
    # length (longest first) leaves each line owned by its innermost definition.
    for d in sorted(pf.definitions, key=lambda d: d.start_line - d.end_line):
        node = def_node(pf.path, d.qualname)
        for line in range(max(d.start_line, 1), min(d.end_line, pf.line_count) + 1):
            table[line] = node
    return table


# ---- queries ------------------------------------------------------------------------------


def call_links(graph: CodeGraph, node: str) -> tuple[set[str], set[str]]:
    """(callers, callees) of a graph node, from the resolved calls (a recursive function is
    among its own callers and callees)."""
    callers = {call.caller for call in graph.calls_to(node)}
    callees = {call.callee for call in graph.calls_from(node)}
    return callers, callees
