"""Turn one tree-sitter tree into a ParsedFile: definitions, call sites, imports, top-level blocks.

One query per language finds every definition, callee and import node in a single pass in C;
Python then only touches those nodes, which keeps parse + extract well above 100k lines/s.

What one file may add to the index is bounded (issue #13): every function fragment lists the
graph nodes of the definitions it encloses, each named by its dotted qualname, so a chain of
n nested definitions would cost O(n^3) characters. Definitions nested deeper than
MAX_DEFINITION_DEPTH or with a qualname longer than MAX_QUALNAME_CHARS are therefore part of
the enclosing definition, and a file whose definitions would still take more than
MAX_DEFINITION_CHARS is indexed without them (as text windows), with a logged reason. No walk
here recurses in Python, so no nesting depth raises RecursionError.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import tree_sitter
from tree_sitter import Node

from prism_code.parse.bindings import read_facts
from prism_code.parse.calls import call_target
from prism_code.parse.clauses import merge_clauses
from prism_code.parse.definitions import DefinitionHead
from prism_code.parse.docs import comment_above, python_docstring
from prism_code.parse.macros import macro_items, without_hiding_macros
from prism_code.parse.model import CallSite, Definition, DefinitionKind, Import, ParsedFile
from prism_code.parse.nodes import collapse, last_line, text
from prism_code.parse.specs import LanguageSpec, language_query, language_spec
from prism_code.parse.tagged import collect

log = logging.getLogger(__name__)

# tree-sitter's query cursor breaks down in a tree deeper than 65,535 nodes (a 16-bit limit,
# it seems): on a 70,000-term `g() + g() + ...` (binary expressions nest to the left) it
# missed 4,000 calls and took 14 s, 120 s at 100,000 terms. Matches may not start deeper than
# this, which no real file comes near; what lies deeper belongs to the enclosing definition.
MAX_QUERY_START_DEPTH = 60_000
# Real code nests definitions a few levels (4 at most in the 6,500 files measured below);
# deeper ones are part of their enclosing definition, which bounds how many function
# fragments list a node, how often a line repeats in function text and how long a qualname
# grows.
MAX_DEFINITION_DEPTH = 64
# A qualname is repeated in graph node ids, fragment keys, node lists and call sites; real
# ones are well under 200 characters (164 at most in those files).
MAX_QUALNAME_CHARS = 512
# Budget of one file's definitions in the index, in characters: each definition's node id
# times the fragments that may list it (see _node_lists), plus the caller qualnames of the
# call sites. Ordinary code uses one to two per byte of source (at most 2.0 Mi, for a 0.9 MiB
# bundle, on 6,500 files of numpy, scipy and npm), so 8 Mi only stops pathological files.
# (Function text is not counted: the depth limit bounds how often a line repeats in it.)
MAX_DEFINITION_CHARS = 8 << 20
# Macro calls holding items nest (`cfg_rt! { cfg_net! {...} }`, three levels in tokio); each body
# is a parse of its own, so a file gets at most this many (tokio's most is 17, in lib.rs).
MAX_MACRO_DEPTH = 4
MAX_MACRO_BODIES = 1_000


@dataclass(frozen=True, slots=True)
class _Nested:
    """The definitions kept from one file, in source order, with what the budget needs."""

    definitions: list[Definition]
    depths: list[int]  # how many kept definitions enclose each one
    anchors: set[int]  # ids of the statement nodes the kept definitions start (see _blocks)
    dropped: int  # definitions left to their enclosing one: too deep or too long a qualname


def extract(path: str, language: str, source: bytes, tree: tree_sitter.Tree,
            macros_hidden: bool = False) -> ParsedFile:
    """What `tree`, a parse of `source`, defines, calls and imports. `macros_hidden`: the tree is
    of the source with C/C++ macros that derail the grammar blanked (parse_source's); otherwise
    the blanked source is tried too where the tree has errors (parse.macros)."""
    spec = language_spec(language)
    if spec.hiding_macros and not macros_hidden and tree.root_node.has_error:
        tree = without_hiding_macros(language, source, tree)
    root = tree.root_node
    found = _found(language, spec, root, source)
    shallow, too_deep = _shallow(found.definitions)
    nested = _definitions(_heads(shallow, found.head), spec, source)
    if spec.tagged is not None and spec.tagged.merge_clauses:
        nested = _Nested(*merge_clauses(nested.definitions, nested.depths), nested.anchors, nested.dropped)
    dropped = too_deep + nested.dropped
    if dropped:
        log.info("%s: %d definitions nested deeper than %d levels or with qualnames over %d "
                 "characters are indexed as part of their enclosing definition",
                 path, dropped, MAX_DEFINITION_DEPTH, MAX_QUALNAME_CHARS)
    nested, calls = _within_budget(path, nested, found.callees, source)
    facts = read_facts(language, root, source, nested.definitions, calls, MAX_QUERY_START_DEPTH)
    return ParsedFile(
        path=path,
        language=language,
        definitions=facts.annotate(nested.definitions),
        calls=calls,
        imports=found.imports,
        blocks=_blocks(root, nested.anchors | found.containers, spec),
        line_count=source.count(b"\n") + (0 if not source or source.endswith(b"\n") else 1),
        has_errors=root.has_error,
        bindings=facts.bindings,
    )


def _captures(language: str, root: Node) -> dict[str, list[Node]]:
    cursor = tree_sitter.QueryCursor(language_query(language))
    cursor.set_max_start_depth(MAX_QUERY_START_DEPTH)
    return cursor.captures(root)


def _with_macro_items(language: str, source: bytes,
                      captures: dict[str, list[Node]]) -> tuple[dict[str, list[Node]], set[int]]:
    """The captures with those of the items inside macro calls (@items: Rust's `cfg_rt! {...}`)
    added, and the ids of the macro calls that held items: containers, not top-level statements."""
    pending = [(body, 1) for body in captures.get("items", [])]
    if not pending:
        return captures, set()
    merged = {name: list(nodes) for name, nodes in captures.items() if name != "items"}
    containers: set[int] = set()
    parses = 0
    while pending and parses < MAX_MACRO_BODIES:
        body, depth = pending.pop()
        parses += 1
        items = macro_items(language, source, body)
        if items is None:
            continue
        if body.parent is not None:
            containers.add(body.parent.id)
        for name, nodes in _captures(language, items).items():
            if name != "items":
                merged.setdefault(name, []).extend(nodes)
            elif depth < MAX_MACRO_DEPTH:
                pending.extend((node, depth + 1) for node in nodes)
    return merged, containers


def _shallow(nodes: list[Node]) -> tuple[list[Node], int]:
    """The definition nodes enclosed by fewer than MAX_DEFINITION_DEPTH others, and how many
    were not. Done on the raw nodes, before any head is read: some readers ask for a node's
    parent, which tree-sitter finds by walking down from the root, so reading every head of
    a 5,000-deep chain would cost depth^2 steps."""
    ordered = sorted(nodes, key=lambda node: (node.start_byte, -node.end_byte))
    open_ends: list[int] = []  # end bytes of the nodes enclosing the current one, innermost last
    kept = []
    for node in ordered:
        while open_ends and open_ends[-1] <= node.start_byte:
            open_ends.pop()
        if len(open_ends) < MAX_DEFINITION_DEPTH:
            kept.append(node)
            open_ends.append(node.end_byte)
        # A dropped node is not pushed: its descendants are deeper still and fail the same test.
    return kept, len(ordered) - len(kept)


def _within_budget(path: str, nested: _Nested, callees: list[Node],
                   source: bytes) -> tuple[_Nested, list[CallSite]]:
    """The definitions and call sites to index: without any definition when they would take
    more than MAX_DEFINITION_CHARS (the file stays searchable through its windows)."""
    calls = _calls(callees, nested.definitions, source)
    cost = _definition_chars(path, nested, calls)
    if cost <= MAX_DEFINITION_CHARS:
        return nested, calls
    log.warning("%s: indexed as plain text without its %d definitions: they would take %d "
                "characters of the index, more than the %d allowed per file",
                path, len(nested.definitions), cost, MAX_DEFINITION_CHARS)
    return _Nested([], [], set(), nested.dropped + len(nested.definitions)), _calls(callees, [], source)


def _definition_chars(path: str, nested: _Nested, calls: list[CallSite]) -> int:
    """What the definitions add to the index, in characters (see MAX_DEFINITION_CHARS)."""
    node_id_overhead = len(path) + 3  # "s:" + path + "#" + qualname
    total = sum(len(call.caller) for call in calls if call.caller)
    lists = _node_lists(nested.definitions, nested.depths)
    for definition, count in zip(nested.definitions, lists):
        total += (node_id_overhead + len(definition.qualname)) * count
    return total


# Windows of the default IndexConfig (20 lines every 10): each line lies in two of them.
_WINDOW_STRIDE = 10
_WINDOWS_PER_LINE = 2


def _node_lists(definitions: list[Definition], depths: list[int]) -> list[int]:
    """How many fragments may list each definition's node, at most: its own function fragment
    and those of the definitions enclosing it, and the windows over the lines it owns (not
    those of the definitions inside it, which `innermost_nodes` gives to them)."""
    spans = [definition.end_line - definition.start_line + 1 for definition in definitions]
    owned = list(spans)
    enclosing: list[int] = []  # indices of the definitions around the current one, outermost first
    for index, depth in enumerate(depths):
        del enclosing[depth:]
        if enclosing:
            owned[enclosing[-1]] -= spans[index]
        enclosing.append(index)
    return [depth + 1 + min(_WINDOWS_PER_LINE * max(lines, 1), span // _WINDOW_STRIDE + 2)
            for depth, lines, span in zip(depths, owned, spans)]


@dataclass(frozen=True, slots=True)
class _Found:
    """What the language's query found: definition nodes and how to read one, callees, imports."""

    definitions: list[Node]
    head: Callable[[Node], DefinitionHead | None]
    callees: list[Node]
    imports: list[Import]
    containers: set[int]  # ids of macro calls holding items: not top-level statements (see _blocks)


def _found(language: str, spec: LanguageSpec, root: Node, source: bytes) -> _Found:
    if spec.tagged is not None:  # rules in a query file: one pass over its matches
        query = language_query(language)
        cursor = tree_sitter.QueryCursor(query)
        cursor.set_max_start_depth(MAX_QUERY_START_DEPTH)
        tagged = collect(query, cursor, root, source)
        return _Found(tagged.definitions, tagged.head, tagged.callees, tagged.imports, set())
    captures, containers = _with_macro_items(language, source, _captures(language, root))
    readers = spec.definitions
    return _Found(captures.get("definition", []), lambda node: readers[node.type](node, source),
                  captures.get("callee", []), _imports(captures.get("import", []), spec, source), containers)


def _heads(nodes: list[Node], read: Callable[[Node], DefinitionHead | None]) -> list[DefinitionHead]:
    heads = []
    for node in nodes:
        head = read(node)
        if head is not None:
            heads.append(head)
    # Outer before inner, so a stack of open definitions yields each one's parent.
    heads.sort(key=lambda head: (head.span.start_byte, -head.span.end_byte))
    return heads


def _definitions(heads: list[DefinitionHead], spec: LanguageSpec, source: bytes) -> _Nested:
    lines = source.split(b"\n") if heads else []
    # (end_byte, qualname, holds_methods), innermost last; qualname None for a definition left to
    # its enclosing one, so that everything inside it is left there too.
    open_scopes: list[tuple[int, str | None, bool]] = []
    found: list[Definition] = []
    depths: list[int] = []
    anchors: set[int] = set()
    dropped = 0
    for head in heads:
        span = head.span
        start, end = span.start_byte, span.end_byte
        while open_scopes and open_scopes[-1][0] <= start:
            open_scopes.pop()
        enclosing = open_scopes[-1] if open_scopes else None
        parent = enclosing[1] if enclosing else None
        if head.qualifier:
            parent = f"{parent}.{head.qualifier}" if parent else head.qualifier
        qualname = f"{parent}.{head.name}" if parent else head.name
        if (enclosing is not None and enclosing[1] is None) or len(open_scopes) >= MAX_DEFINITION_DEPTH \
                or len(qualname) > MAX_QUALNAME_CHARS:
            dropped += 1
            open_scopes.append((end, None, False))
            continue
        kind: DefinitionKind = head.kind
        if kind == "function" and (head.qualifier or (enclosing is not None and enclosing[2])):
            kind = "method"
        anchor = _doc_anchor(span, spec)
        anchors.add(anchor.id)
        doc = python_docstring(head.body, source) if spec.python_docstrings else ""
        if not doc:
            doc = comment_above(lines, anchor.start_point[0], spec.hash_comments, spec.doc_skipped_prefixes,
                                spec.tagged.line_comment if spec.tagged is not None else None)
        found.append(
            Definition(
                name=head.name,
                qualname=qualname,
                kind=kind,
                start_line=span.start_point[0] + 1,
                end_line=last_line(span),
                start_byte=start,
                end_byte=end,
                signature=_signature(source, start, head.header_end),
                doc=doc,
                parent=parent,
            )
        )
        depths.append(len(open_scopes))
        open_scopes.append((end, qualname, kind == "class" and not head.namespace))
    return _Nested(found, depths, anchors, dropped)


def _signature(source: bytes, start: int, end: int) -> str:
    signature = collapse(text(source, start, max(start, end)))
    # A bodiless C++/Java/Rust declaration ends in ";"; a Python header's ":" is excluded by the readers.
    return signature[:-1].rstrip() if signature.endswith(";") else signature


def _doc_anchor(node: Node, spec: LanguageSpec) -> Node:
    """The outermost wrapper (decorators, `export`, `template<>`) whose first line the doc comment precedes."""
    parent = node.parent
    while parent is not None and parent.type in spec.doc_wrappers:
        node, parent = parent, parent.parent
    return node


def _calls(callees: list[Node], definitions: list[Definition], source: bytes) -> list[CallSite]:
    """Call sites in source order, each attributed to the innermost definition around it."""
    # Callees starting on one byte (`f(x).g()`: `f` and `f(x).g`) inner first: tree-sitter
    # returns such ties in an order that changed with unrelated edits to this package.
    ordered = sorted(callees, key=lambda node: (node.start_byte, node.end_byte))
    open_scopes: list[tuple[int, str]] = []  # (end_byte, qualname), innermost last
    next_definition = 0
    found = []
    for callee in ordered:
        position = callee.start_byte
        while next_definition < len(definitions) and definitions[next_definition].start_byte <= position:
            definition = definitions[next_definition]
            while open_scopes and open_scopes[-1][0] <= definition.start_byte:
                open_scopes.pop()
            open_scopes.append((definition.end_byte, definition.qualname))
            next_definition += 1
        while open_scopes and open_scopes[-1][0] <= position:
            open_scopes.pop()
        target = call_target(callee, source)
        if target is not None:
            name, receiver = target
            caller = open_scopes[-1][1] if open_scopes else None
            found.append(CallSite(name, receiver, callee.start_point[0] + 1, caller))
    return found


def _imports(nodes: list[Node], spec: LanguageSpec, source: bytes) -> list[Import]:
    found: list[Import] = []
    for node in sorted(nodes, key=lambda node: node.start_byte):
        found.extend(spec.imports[node.type](node, source))
    return found


def _blocks(root: Node, definition_anchors: set[int], spec: LanguageSpec) -> list[tuple[int, int]]:
    """Maximal runs of top-level statements not interrupted by a definition; comments are neutral."""
    blocks: list[tuple[int, int]] = []
    extending = False
    for statement in _top_level_statements(root, spec):
        if statement.id in definition_anchors:
            extending = False
        elif extending:
            blocks[-1] = (blocks[-1][0], last_line(statement))
        else:
            blocks.append((statement.start_point[0] + 1, last_line(statement)))
            extending = True
    return blocks


def _top_level_statements(root: Node, spec: LanguageSpec) -> Iterator[Node]:
    """Statements of the file, looking through namespaces, inline modules and `#ifdef` guards
    (namespaces only outside guards: a guard's children are taken as they are).

    Depth-first in source order with a stack of pending child lists rather than recursion:
    a file may nest thousands of namespaces or guards."""
    # (children still to visit, whether a namespace among them is looked through)
    pending: list[tuple[Iterator[Node], bool]] = [(iter(root.named_children), True)]
    while pending:
        children, open_bodies = pending[-1]
        child = next(children, None)
        if child is None:
            pending.pop()
            continue
        kind = child.type
        if kind in spec.comments:
            continue
        if kind in spec.inline_containers:
            pending.append((_inline_container_children(child), False))
            continue
        body = child.child_by_field_name("body") if open_bodies and kind in spec.body_containers else None
        if body is not None and body.type == "declaration_list":
            pending.append((iter(body.named_children), True))
        else:
            yield child


def _inline_container_children(node: Node) -> Iterator[Node]:
    """Children of `#if`/`#ifdef`/`#else` except the guard's name and condition."""
    for index, child in enumerate(node.named_children):
        if node.field_name_for_named_child(index) not in ("name", "condition"):
            yield child
