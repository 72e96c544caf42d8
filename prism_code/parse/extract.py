"""Turn one tree-sitter tree into a ParsedFile: definitions, call sites, imports, top-level blocks.

One query per language finds every definition, callee and import node in a single pass in C;
Python then only touches those nodes, which keeps parse + extract well above 100k lines/s.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter
from tree_sitter import Node

from prism_code.parse.calls import call_target
from prism_code.parse.definitions import DefinitionHead
from prism_code.parse.docs import comment_above, python_docstring
from prism_code.parse.model import CallSite, Definition, Import, ParsedFile
from prism_code.parse.nodes import collapse, last_line, text
from prism_code.parse.specs import LanguageSpec, language_query, language_spec


def extract(path: str, language: str, source: bytes, tree: tree_sitter.Tree) -> ParsedFile:
    spec = language_spec(language)
    root = tree.root_node
    captures = tree_sitter.QueryCursor(language_query(language)).captures(root)
    heads = _heads(captures.get("definition", ()), spec, source)
    anchors = [_doc_anchor(head.span, spec) for head in heads]
    definitions = _definitions(heads, anchors, spec, source)
    return ParsedFile(
        path=path,
        language=language,
        definitions=definitions,
        calls=_calls(captures.get("callee", ()), definitions, source),
        imports=_imports(captures.get("import", ()), spec, source),
        blocks=_blocks(root, {anchor.id for anchor in anchors}, spec),
        line_count=source.count(b"\n") + (0 if not source or source.endswith(b"\n") else 1),
        has_errors=root.has_error,
    )


def _heads(nodes: list[Node], spec: LanguageSpec, source: bytes) -> list[DefinitionHead]:
    readers = spec.definitions
    heads = []
    for node in nodes:
        head = readers[node.type](node, source)
        if head is not None:
            heads.append(head)
    # Outer before inner, so a stack of open definitions yields each one's parent.
    heads.sort(key=lambda head: (head.span.start_byte, -head.span.end_byte))
    return heads


def _definitions(
    heads: list[DefinitionHead], anchors: list[Node], spec: LanguageSpec, source: bytes
) -> list[Definition]:
    lines = source.split(b"\n") if heads else []
    open_scopes: list[tuple[int, str, bool]] = []  # (end_byte, qualname, is_class), innermost last
    found = []
    for head, anchor in zip(heads, anchors):
        span = head.span
        start, end = span.start_byte, span.end_byte
        while open_scopes and open_scopes[-1][0] <= start:
            open_scopes.pop()
        enclosing = open_scopes[-1] if open_scopes else None
        parent = enclosing[1] if enclosing else None
        if head.qualifier:
            parent = f"{parent}.{head.qualifier}" if parent else head.qualifier
        qualname = f"{parent}.{head.name}" if parent else head.name
        kind = head.kind
        if kind == "function" and (head.qualifier or (enclosing is not None and enclosing[2])):
            kind = "method"
        doc = python_docstring(head.body, source) if spec.python_docstrings else ""
        if not doc:
            doc = comment_above(lines, anchor.start_point[0], spec.hash_comments, spec.doc_skipped_prefixes)
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
        open_scopes.append((end, qualname, kind == "class"))
    return found


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
    ordered = sorted(callees, key=lambda node: node.start_byte)
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


def _top_level_statements(node: Node, spec: LanguageSpec) -> Iterator[Node]:
    """Statements of the file, looking through namespaces, inline modules and `#ifdef` guards."""
    for child in node.named_children:
        kind = child.type
        if kind in spec.comments:
            continue
        if kind in spec.inline_containers:
            yield from _inline_container_statements(child, spec)
            continue
        body = child.child_by_field_name("body") if kind in spec.body_containers else None
        if body is not None and body.type == "declaration_list":
            yield from _top_level_statements(body, spec)
        else:
            yield child


def _inline_container_statements(node: Node, spec: LanguageSpec) -> Iterator[Node]:
    """Children of `#if`/`#ifdef`/`#else` except the guard's name and condition."""
    for index, child in enumerate(node.named_children):
        if node.field_name_for_named_child(index) in ("name", "condition"):
            continue
        if child.type in spec.comments:
            continue
        if child.type in spec.inline_containers:
            yield from _inline_container_statements(child, spec)
        else:
            yield child
