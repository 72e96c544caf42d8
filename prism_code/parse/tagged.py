"""The generic reader of the languages whose rules are a query file, `queries/<language>.scm`.

The captures follow tree-sitter's tags queries:

- `@definition.<kind>` on a definition's node; `function`, `method`, `constructor`, `macro` and
  `test` make a function (a method once it sits in a class), any other kind (`class`, `module`,
  `interface`, `protocol`, `object`, ...) a class-kind unit.
- `@name` inside it: the name (several `@name` captures name it by the text they span, as
  Haskell's `instance Show Int`); `@qualifier`: an owner written outside any body (Lua's
  `function M.f()`, Kotlin's `fun String.f()`), as Go receivers are; `@body`: where the signature
  stops (else the node's `body` field, else the end of its first line).
- `@callee` on a call's function part, read by `calls.call_target`. A definition's own name is
  never a call (Elixir's `def f(x)` is a call of `def` around a call of `f`).
- `@import` on an import's node with `@import.module` (one Import each), `@import.alias` and
  `@import.name` inside, or `(#set! import.read "<reader>")` naming a reader of
  `tagged_imports.READERS` for a shape a capture cannot say.

Pattern settings (`#set!`): `name.fixed` names a definition that has no name in the source
(Kotlin's `init` block, an unnamed `companion object`); `name.split` splits a dotted name
(Elixir's `defmodule A.B`) into a qualifier and the name; `definition.child` lists node types
one of the node's children must have for it to be a definition (that child is its body: a
pattern that names the child itself costs time quadratic in the nesting depth, 56 s on 5,000
nested Zig structs); `definition.check` names a test of DEFINITION_CHECKS the node must pass,
for the same reason (a Lua table is a class-kind unit when a field holds a function: 8.9 s on
3,000 nested tables as a pattern, 0.04 s as a check); `import.prefix` is put before every
module (Ruby's `require_relative` records "./x").

One node matched by several patterns (Kotlin's extension function matches the plain one too)
gets the union of their captures.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter
from tree_sitter import Node

from prism_code.parse.definitions import DefinitionHead, HeadKind
from prism_code.parse.model import Import
from prism_code.parse.nodes import collapse, node_text, unquote
from prism_code.parse.tagged_imports import READERS, Captures, Settings, read_import

QUERY_DIRECTORY = Path(__file__).parent / "queries"

# Kinds of `@definition.<kind>` that are functions; every other kind is a class-kind unit.
FUNCTION_KINDS = frozenset({"function", "method", "constructor", "macro", "test"})

# A name or qualifier longer than this is not a name (a parse gone wrong); the definition is skipped.
MAX_NAME_CHARS = 200

def query_text(language: str) -> str:
    return (QUERY_DIRECTORY / f"{language}.scm").read_text(encoding="utf-8")


@dataclass(slots=True)
class _Tag:
    """One definition node and what its matches captured."""

    kind: HeadKind
    captures: Captures
    settings: Settings


@dataclass
class Collected:
    """What one query pass found in a file, in the shapes `extract` reads."""

    source: bytes
    definitions: list[Node] = field(default_factory=list)
    callees: list[Node] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    _tags: dict[int, _Tag] = field(default_factory=dict)

    def head(self, node: Node) -> DefinitionHead | None:
        """The head of a definition node found by `collect`."""
        tag = self._tags[node.id]
        return _head(node, tag, self.source)


def collect(query: tree_sitter.Query, cursor: tree_sitter.QueryCursor, root: Node, source: bytes) -> Collected:
    """Run `query` (the cursor's) once and sort its matches into definitions, callees and imports."""
    query_settings: dict[int, Settings] = {}
    found = Collected(source)
    tags = found._tags
    callees: dict[int, Node] = {}
    imports: list[tuple[int, Node, Captures, Settings]] = []
    for pattern, captures in cursor.matches(root):
        settings = query_settings.get(pattern)
        if settings is None:
            settings = query_settings[pattern] = dict(query.pattern_settings(pattern))
        definition = _definition_capture(captures)
        if definition is not None:
            kind_name, node = definition
            tag = tags.get(node.id)
            if tag is None:
                tags[node.id] = _Tag(_kind(kind_name), dict(captures), dict(settings))
                found.definitions.append(node)
            else:  # another pattern on the same node: add what it saw
                for name, nodes in captures.items():
                    tag.captures.setdefault(name, nodes)
                for key, value in settings.items():
                    tag.settings.setdefault(key, value)
        for callee in captures.get("callee", ()):
            callees[callee.id] = callee
        for node in captures.get("import", ()):
            imports.append((node.start_byte, node, captures, settings))
    names = {name.id for tag in tags.values() for name in tag.captures.get("name", ())}
    found.callees = [callee for key, callee in callees.items() if key not in names]
    seen: set[Import] = set()
    for _start, node, captures, settings in sorted(imports, key=lambda item: item[0]):
        reader = READERS.get(settings.get("import.read") or "", read_import)
        for imp in reader(node, captures, settings, source):
            if imp not in seen:  # two patterns on one import say it once
                seen.add(imp)
                found.imports.append(imp)
    return found


def _definition_capture(captures: Captures) -> tuple[str, Node] | None:
    for name, nodes in captures.items():
        if name.startswith("definition.") and nodes:
            return name[len("definition."):], nodes[0]
    return None


def _kind(kind_name: str) -> HeadKind:
    return "function" if kind_name in FUNCTION_KINDS else "class"


# Generic arguments and nullability are not part of an owner's name: `List<T>?` -> "List".
_TYPE_DECORATION = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|[?!*&]")


def _head(node: Node, tag: _Tag, source: bytes) -> DefinitionHead | None:
    name = tag.settings.get("name.fixed") or _name(tag.captures.get("name"), source)
    if name is None:
        return None
    qualifiers = [_owner(owner, source) for owner in tag.captures.get("qualifier", ())]
    separator = tag.settings.get("name.split")
    if separator and separator in name:
        owner, _, name = name.rpartition(separator)
        qualifiers.append(owner.replace(separator, "."))
    qualifier = ".".join(part for part in qualifiers if part) or None
    if not name or len(name) > MAX_NAME_CHARS or (qualifier and len(qualifier) > MAX_NAME_CHARS):
        return None
    bodies = tag.captures.get("body")
    body = bodies[0] if bodies else node.child_by_field_name("body")
    wanted = tag.settings.get("definition.child")
    if wanted:  # the node is a definition only when such a child says so (see zig.scm)
        child = next((child for child in node.named_children if child.type in wanted.split()), None)
        if child is None:
            return None
        body = child.child_by_field_name("body") or child
    check = tag.settings.get("definition.check")
    if check and not DEFINITION_CHECKS[check](node, body):
        return None
    return DefinitionHead(name, tag.kind, node, _header_end(node, body, source), qualifier)


def _lua_function_table(node: Node, body: Node | None) -> bool:
    """`{ select = function() ... end, ... }`: a table with a function among its fields."""
    if body is None or body.type != "table_constructor":
        return False
    for entry in body.named_children:
        value = entry.child_by_field_name("value") if entry.type == "field" else None
        if value is not None and value.type == "function_definition":
            return True
    return False


# (definition node, its body) -> whether it is a definition; named by `definition.check`.
DEFINITION_CHECKS: dict[str, Callable[[Node, Node | None], bool]] = {
    "lua_function_table": _lua_function_table,
}


def _name(names: list[Node] | None, source: bytes) -> str | None:
    """The text the `@name` captures span, whitespace collapsed and quotes removed."""
    if not names:
        return None
    start = min(name.start_byte for name in names)
    end = max(name.end_byte for name in names)
    if end - start > 4 * MAX_NAME_CHARS:
        return None
    return unquote(collapse(source[start:end].decode("utf-8", "replace")))


# Tokens between a signature and its body that belong to neither: Scala's `def f: Int = ...`.
_BODY_OPENERS = frozenset({"=", "do", "then", "where"})


def _header_end(node: Node, body: Node | None, source: bytes) -> int:
    """Where the signature stops: after the last part before the body that is not a comment
    (Ruby's `module Shop  # note` keeps its comment out) nor a body opener (`=`, `do`, `where`);
    the first line when there is no body."""
    if body is None or body.start_byte <= node.start_byte:
        line_end = source.find(b"\n", node.start_byte, node.end_byte)
        return line_end if line_end >= 0 else node.end_byte
    end = node.start_byte
    for child in node.children:
        if child.start_byte >= body.start_byte:
            break
        if "comment" not in child.type and child.type not in _BODY_OPENERS:
            end = max(end, min(child.end_byte, body.start_byte))
    end = end if end > node.start_byte else body.start_byte
    while end > node.start_byte and source[end - 1] in b" \t\r\n,":  # Elixir's `def f(x), do: ...`
        end -= 1
    return end


def _owner(node: Node, source: bytes) -> str:
    """An owner's name as qualnames write it: `List<T>` -> "List", `Shop::Cart` -> "Shop.Cart"."""
    if node.end_byte - node.start_byte > 4 * MAX_NAME_CHARS:
        return ""
    written = collapse(node_text(source, node))
    for _ in range(4):  # nested generics peel one level per pass
        bare = _TYPE_DECORATION.sub("", written)
        if bare == written:
            break
        written = bare
    return written.replace("::", ".").replace(" ", "").strip(".")
