"""Import readers of the query-file languages (`tagged.py`): the generic one and the shapes it cannot read.

A query names a reader of READERS with `(#set! import.read "<name>")` on its `@import` pattern;
without one the generic reader turns each `@import.module` capture into an Import.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from prism_code.parse.model import Import
from prism_code.parse.nodes import collapse, first_line, node_text, unquote

Settings = dict[str, str | None]
Captures = dict[str, list[Node]]
# (import node, its match's captures, the pattern's settings, source) -> Imports
TaggedImportReader = Callable[[Node, Captures, Settings, bytes], list[Import]]
Names = tuple[tuple[str, str | None], ...]

# An import path longer than this is not one a resolver could use.
MAX_MODULE_CHARS = 512


def read_import(node: Node, captures: Captures, settings: Settings, source: bytes) -> list[Import]:
    """One Import per `@import.module`, with the match's `@import.alias` and `@import.name`s;
    `@import.wildcard` (Kotlin's `import a.b.*`) appends ".*" as Java's imports write it."""
    prefix = settings.get("import.prefix") or ""
    aliases = captures.get("import.alias")
    alias = _text(source, aliases[0]) if aliases else None
    names = tuple((_text(source, name), None) for name in captures.get("import.name", ()))
    wildcard = ".*" if captures.get("import.wildcard") else ""
    line = first_line(node)
    found = []
    for module_node in captures.get("import.module", ()):
        module = unquote(_text(source, module_node))
        if module and len(module) <= MAX_MODULE_CHARS:
            found.append(Import(prefix + module + wildcard, line, names, alias))
    return found


def _text(source: bytes, node: Node) -> str:
    return collapse(node_text(source, node)) if node.end_byte - node.start_byte <= MAX_MODULE_CHARS else ""


# C# ------------------------------------------------------------------------------------------


def csharp_using(node: Node, captures: Captures, settings: Settings, source: bytes) -> list[Import]:
    """`using A.B;`, `using static A.B.C;`, `global using A;`, `using X = A.B;` (alias X)."""
    alias_node = node.child_by_field_name("name")
    target = None
    for index, child in enumerate(node.named_children):
        if child.type in ("qualified_name", "identifier", "generic_name", "alias_qualified_name") \
                and node.field_name_for_named_child(index) != "name":
            target = child
    if target is None:
        return []
    module = re.sub(r"\s+|<.*", "", _text(source, target))  # `A.B<int>` names the type A.B
    alias = _text(source, alias_node) if alias_node is not None else None
    return [Import(module, first_line(node), alias=alias)] if module else []


# Scala ---------------------------------------------------------------------------------------


def scala_import(node: Node, captures: Captures, settings: Settings, source: bytes) -> list[Import]:
    """`import a.b.C`, `import a.b._` / `a.b.*` ("a.b.*"), `import a.b.{C, D => E}` (names), and
    `import a.B, c.D` (one Import per path)."""
    found: list[Import] = []
    line = first_line(node)
    path: list[str] = []

    def flush(names: Names = (), wildcard: bool = False) -> None:
        if path:
            module = ".".join(path) + (".*" if wildcard else "")
            if len(module) <= MAX_MODULE_CHARS:
                found.append(Import(module, line, names))
        path.clear()

    for index, child in enumerate(node.named_children):
        kind = child.type
        if node.field_name_for_named_child(index) == "path":
            path.append(_text(source, child))
        elif kind == "namespace_wildcard":
            flush(wildcard=True)
        elif kind == "namespace_selectors":
            flush(_scala_selectors(child, source))
        elif kind == "as_renamed_identifier" or kind == "arrow_renamed_identifier":
            name, alias = child.child_by_field_name("name"), child.child_by_field_name("alias")
            if name is not None:
                path.append(_text(source, name))
            module = ".".join(path)
            path.clear()
            if module:
                found.append(Import(module, line, alias=_text(source, alias) if alias is not None else None))
    flush()
    return found


def _scala_selectors(selectors: Node, source: bytes) -> Names:
    names: list[tuple[str, str | None]] = []
    for child in selectors.named_children:
        if child.type == "identifier":
            names.append((_text(source, child), None))
        elif child.type in ("arrow_renamed_identifier", "as_renamed_identifier"):
            name, alias = child.child_by_field_name("name"), child.child_by_field_name("alias")
            if name is not None:
                names.append((_text(source, name), _text(source, alias) if alias is not None else None))
        elif child.type == "namespace_wildcard":
            names.append(("*", None))
    return tuple(names)


# PHP -----------------------------------------------------------------------------------------


def php_use(node: Node, captures: Captures, settings: Settings, source: bytes) -> list[Import]:
    """`use A\\B\\C;`, `use A\\B\\C as D;`, `use A\\{B, C as D};`, `use function A\\f;`: one Import
    per clause, its module the full name with "\\" separators."""
    line = first_line(node)
    group_prefix = ""
    group = node.child_by_field_name("body")
    clauses: list[Node] = []
    for child in node.named_children:
        if child.type == "namespace_name" and group is not None:
            group_prefix = _text(source, child).strip("\\") + "\\"
        elif child.type == "namespace_use_clause":
            clauses.append(child)
    if group is not None:
        clauses.extend(child for child in group.named_children if child.type == "namespace_use_clause")
    found = []
    for clause in clauses:
        alias_node = clause.child_by_field_name("alias")
        name = next((child for child in clause.named_children
                     if child.type in ("qualified_name", "name") and child != alias_node), None)
        if name is None:
            continue
        module = group_prefix + _text(source, name).strip("\\")
        alias = _text(source, alias_node) if alias_node is not None else None
        if module.strip("\\"):
            found.append(Import(module, line, alias=alias))
    return found


def php_require(node: Node, captures: Captures, settings: Settings, source: bytes) -> list[Import]:
    """`require 'x.php'` and `require __DIR__ . '/x.php'`: a path relative to the file ("./x.php");
    a path built any other way is not read."""
    argument = node.named_children[0] if node.named_child_count else None
    if argument is None:
        return []
    if argument.type == "parenthesized_expression" and argument.named_child_count:
        argument = argument.named_children[0]
    if argument.type == "binary_expression":
        left, right = argument.child_by_field_name("left"), argument.child_by_field_name("right")
        if left is None or right is None or _text(source, left) not in ("__DIR__", "dirname(__FILE__)") \
                or right.type not in ("string", "encapsed_string"):
            return []
        path = "." + unquote(_text(source, right))
    elif argument.type in ("string", "encapsed_string"):
        path = unquote(_text(source, argument))
    else:
        return []
    return [Import(path, first_line(node))] if path.endswith(".php") else []


# Elixir --------------------------------------------------------------------------------------


def elixir_alias(node: Node, captures: Captures, settings: Settings, source: bytes) -> list[Import]:
    """`alias A.B`, `alias A.B, as: C` (alias C), `alias A.{B, C}` (A.B and A.C), and `import`,
    `use`, `require` of a module name."""
    arguments = next((child for child in node.named_children if child.type == "arguments"), None)
    if arguments is None or not arguments.named_child_count:
        return []
    target = arguments.named_children[0]
    line = first_line(node)
    alias = None
    for pair in arguments.named_children[1:]:
        if pair.type == "keywords":
            for item in pair.named_children:
                key, value = item.child_by_field_name("key"), item.child_by_field_name("value")
                if key is not None and value is not None and _text(source, key).rstrip(": ") == "as":
                    alias = _text(source, value)
    if target.type == "alias":
        return [Import(_text(source, target), line, alias=alias)]
    if target.type == "dot":  # A.{B, C}
        left, right = target.child_by_field_name("left"), target.child_by_field_name("right")
        if left is None or right is None or left.type != "alias" or right.type != "tuple":
            return []
        prefix = _text(source, left)
        return [Import(f"{prefix}.{_text(source, member)}", line)
                for member in right.named_children if member.type == "alias"]
    return []


# Bash ----------------------------------------------------------------------------------------

# `$DIR/`, `${BASH_SOURCE%/*}/`, `$(dirname "$0")/`: the script's own directory, in practice.
_LEADING_EXPANSION = re.compile(r'^(?:\$\{[^}]*\}|\$\([^)]*\)|\$\w+|"\$\{[^}]*\}"|"\$\([^)]*\)")+/')


# The user's home, like `~`: never the workspace.
_HOME = ("$HOME", "${HOME}", '"$HOME"', '"${HOME}"')


def bash_source(node: Node, captures: Captures, settings: Settings, source: bytes) -> list[Import]:
    """`source lib.sh`, `. ./lib.sh`, `source "$DIR/lib.sh"`: a path relative to the script
    ("./lib.sh"; a leading variable is taken for the script's or the project's folder); a path
    in the user's home or one that still expands a variable is not read."""
    modules = captures.get("import.module")
    if not modules:
        return []
    written = unquote(_text(source, modules[0]))
    if written.startswith(_HOME):
        return []
    path = _LEADING_EXPANSION.sub("./", written)
    path = unquote(path) if path.startswith(("'", '"')) else path
    if not path or any(mark in path for mark in "$`{}<>(~") or path.startswith("/"):
        return []
    if not path.startswith("."):
        path = "./" + path
    return [Import(path, first_line(node))]


READERS: dict[str, TaggedImportReader] = {
    "csharp_using": csharp_using,
    "scala_import": scala_import,
    "php_use": php_use,
    "php_require": php_require,
    "elixir_alias": elixir_alias,
    "bash_source": bash_source,
}
