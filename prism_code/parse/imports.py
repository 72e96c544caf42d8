"""Per-grammar readers turning an import-like node into `Import` records."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from prism_code.parse.model import Import
from prism_code.parse.nodes import first_line, first_named_child, node_text, unquote

ImportReader = Callable[[Node, bytes], list[Import]]
Names = tuple[tuple[str, str | None], ...]


# Python -------------------------------------------------------------------------------------


def python_import(node: Node, source: bytes) -> list[Import]:
    """`import a.b, c as d` -> one Import per module."""
    line = first_line(node)
    found: list[Import] = []
    for item in node.children_by_field_name("name"):
        if item.type == "aliased_import":
            module, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
            if module is not None:
                found.append(Import(node_text(source, module), line, alias=_optional_text(source, alias)))
        else:
            found.append(Import(node_text(source, item), line))
    return found


def python_from_import(node: Node, source: bytes) -> list[Import]:
    """`from ..a.b import c as d, e` / `from . import x` / `from a import *`."""
    module_node = node.child_by_field_name("module_name")
    if module_node is None:
        return []
    module, level = node_text(source, module_node), 0
    if module_node.type == "relative_import":
        dots = first_named_child(module_node)
        level = dots.end_byte - dots.start_byte if dots is not None and dots.type == "import_prefix" else 0
        module = module[level:]
    names: list[tuple[str, str | None]] = []
    for item in node.children_by_field_name("name"):
        if item.type == "aliased_import":
            name, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
            if name is not None:
                names.append((node_text(source, name), _optional_text(source, alias)))
        else:
            names.append((node_text(source, item), None))
    if any(child.type == "wildcard_import" for child in node.named_children):
        names.append(("*", None))
    return [Import(module, first_line(node), tuple(names), level=level)]


# JavaScript / TypeScript --------------------------------------------------------------------


def js_import(node: Node, source: bytes) -> list[Import]:
    """`import D, {a as b} from "m"`, `import * as ns from "m"`, `import "m"`, TS `import x = require("m")`."""
    source_node = node.child_by_field_name("source")
    names: list[tuple[str, str | None]] = []
    alias: str | None = None
    for child in node.named_children:
        if child.type == "import_clause":
            names.extend(_js_import_clause(child, source))
        elif child.type == "import_require_clause":
            source_node = child.child_by_field_name("source")
            bound = first_named_child(child)
            alias = _optional_text(source, bound) if bound is not None and bound.type == "identifier" else None
    if source_node is None:
        return []
    return [Import(unquote(node_text(source, source_node)), first_line(node), tuple(names), alias)]


def _js_import_clause(clause: Node, source: bytes) -> Names:
    names: list[tuple[str, str | None]] = []
    for part in clause.named_children:
        if part.type == "identifier":
            names.append(("default", node_text(source, part)))
        elif part.type == "namespace_import":
            bound = first_named_child(part)
            names.append(("*", _optional_text(source, bound)))
        elif part.type == "named_imports":
            names.extend(_specifiers(part, source))
    return tuple(names)


def _specifiers(container: Node, source: bytes) -> Names:
    """`{a, b as c}` in imports and re-exports."""
    names: list[tuple[str, str | None]] = []
    for specifier in container.named_children:
        name = specifier.child_by_field_name("name")
        if name is not None:
            names.append((node_text(source, name), _optional_text(source, specifier.child_by_field_name("alias"))))
    return tuple(names)


def js_reexport(node: Node, source: bytes) -> list[Import]:
    """`export {a as b} from "m"`, `export * from "m"`, `export * as ns from "m"`."""
    source_node = node.child_by_field_name("source")
    if source_node is None:
        return []
    names: list[tuple[str, str | None]] = []
    for child in node.named_children:
        if child.type == "export_clause":
            names.extend(_specifiers(child, source))
        elif child.type == "namespace_export":
            bound = first_named_child(child)
            names.append(("*", _optional_text(source, bound)))
    if not names:
        names.append(("*", None))
    return [Import(unquote(node_text(source, source_node)), first_line(node), tuple(names))]


def js_require(node: Node, source: bytes) -> list[Import]:
    """`const x = require("m")` (alias x) and `const {a, b: c} = require("m")` (names)."""
    call, target = node.child_by_field_name("value"), node.child_by_field_name("name")
    arguments = call.child_by_field_name("arguments") if call is not None else None
    specifier = first_named_child(arguments) if arguments is not None else None
    if target is None or specifier is None or specifier.type not in ("string", "template_string"):
        return []
    module = unquote(node_text(source, specifier))
    if target.type == "identifier":
        return [Import(module, first_line(node), alias=node_text(source, target))]
    names: list[tuple[str, str | None]] = []
    for part in target.named_children:
        if part.type == "shorthand_property_identifier_pattern":
            names.append((node_text(source, part), None))
        elif part.type == "pair_pattern":
            key, value = part.child_by_field_name("key"), part.child_by_field_name("value")
            if key is not None:
                names.append((node_text(source, key), _optional_text(source, value)))
    return [Import(module, first_line(node), tuple(names))]


# Java / Go / C ------------------------------------------------------------------------------


def java_import(node: Node, source: bytes) -> list[Import]:
    """`import a.b.C;` -> "a.b.C", `import a.b.*;` -> "a.b.*", static imports alike."""
    path = next((child for child in node.named_children if child.type in ("scoped_identifier", "identifier")), None)
    if path is None:
        return []
    module = node_text(source, path)
    if any(child.type == "asterisk" for child in node.named_children):
        module += ".*"
    return [Import(module, first_line(node))]


def go_import(node: Node, source: bytes) -> list[Import]:
    """One `import_spec`: path plus optional alias (`st`, `_`, `.`)."""
    path = node.child_by_field_name("path")
    if path is None:
        return []
    alias = _optional_text(source, node.child_by_field_name("name"))
    return [Import(unquote(node_text(source, path)), first_line(node), alias=alias)]


def c_include(node: Node, source: bytes) -> list[Import]:
    """Quoted includes only: `<...>` system headers never live in the workspace."""
    path = node.child_by_field_name("path")
    if path is None or path.type != "string_literal":
        return []
    return [Import(unquote(node_text(source, path)), first_line(node))]


# Rust ---------------------------------------------------------------------------------------


def rust_use(node: Node, source: bytes) -> list[Import]:
    """`use a::b::C;`, `use a::{b, c as d};`, `use a::*;` flattened to one Import per group."""
    argument = node.child_by_field_name("argument")
    return _rust_use_tree(argument, first_line(node), source) if argument is not None else []


def rust_mod(node: Node, source: bytes) -> list[Import]:
    """`mod geo;` loads a file like an import does; recorded as module "self::geo"."""
    name = node.child_by_field_name("name")
    return [Import("self::" + node_text(source, name), first_line(node))] if name is not None else []


# Real `use` paths are a few segments long; groups under a longer prefix are not read.
MAX_RUST_USE_PREFIX_CHARS = 512


def _rust_use_tree(tree: Node, line: int, source: bytes) -> list[Import]:
    """The imports of one `use` tree, each group's nested groups before its own simple names.

    Walked with an explicit stack, not recursion: `use a::{b::{c::{...}}}` may nest deeply."""
    found: list[Import] = []
    # Work in reverse order of execution: a tree to read under its prefix, or a finished Import.
    pending: list[tuple[Node, str] | Import] = [(tree, "")]
    while pending:
        item = pending.pop()
        if isinstance(item, Import):
            found.append(item)
            continue
        node, prefix = item
        kind = node.type
        if kind == "use_as_clause":
            path, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
            if path is not None:
                found.append(Import(_join(prefix, node_text(source, path)), line, alias=_optional_text(source, alias)))
        elif kind == "use_wildcard":
            path = first_named_child(node)
            module = _join(prefix, node_text(source, path)) if path is not None else prefix
            found.append(Import(module, line, (("*", None),)))
        elif kind == "scoped_use_list":
            path, items = node.child_by_field_name("path"), node.child_by_field_name("list")
            if items is not None:
                inner = _join(prefix, node_text(source, path)) if path is not None else prefix
                # Each group repeats its prefix: deep nesting would cost depth^2 characters.
                if len(inner) <= MAX_RUST_USE_PREFIX_CHARS:
                    pending.append((items, inner))
        elif kind == "use_list":
            names: list[tuple[str, str | None]] = []
            nested: list[Node] = []
            for child in node.named_children:
                simple = child.child_by_field_name("path") if child.type == "use_as_clause" else child
                if simple is not None and simple.type in ("identifier", "self"):
                    alias = child.child_by_field_name("alias") if child.type == "use_as_clause" else None
                    names.append((node_text(source, simple), _optional_text(source, alias)))
                else:
                    nested.append(child)
            if names:
                pending.append(Import(prefix, line, tuple(names)))
            pending.extend((child, prefix) for child in reversed(nested))
        elif kind not in ("line_comment", "block_comment"):
            found.append(Import(_join(prefix, node_text(source, node)), line))
    return found


def _join(prefix: str, path: str) -> str:
    return f"{prefix}::{path}" if prefix else path


def _optional_text(source: bytes, node: Node | None) -> str | None:
    return node_text(source, node) if node is not None else None
