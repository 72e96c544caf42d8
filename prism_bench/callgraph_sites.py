"""Call sites of a file as the call-graph bench sees them: where, what name, which shape.

Read with tree-sitter and the grammars prism parses with, but independently of prism's own
extraction, so that the reference side (jedi's positions, each call's enclosing definition)
and the shape of every edge come from the source text alone.

A site's line is the first line of its callee expression (`a.b(\\n).c()` is two calls on
`a`'s line), the rule prism's `CallSite.line` follows; a site's shape is decided by its text
(`SHAPES`, first rule that matches):

- `super`: the receiver is `super()`/`super(C, self)` (Python) or `super`, and the
  `super(...)` constructor call of TypeScript;
- `self`: the receiver is exactly `self` or `this`; `cls`: exactly `cls`;
- `constructor`: `new C()`, or in Python a called name in CapWords (`C()`, `mod.C()`);
- `module`: the receiver is a dotted name whose head is bound to a module by an import
  anywhere in the file (Python `import a.b [as c]`, `from p import m` where `p.m` is a module
  of the project; TypeScript `import * as m`, `m = require(...)`);
- `bare`: no receiver, `f()`; `receiver`: any other receiver, `x.m()`, `a.b().m()`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from tree_sitter import Node

from prism_code.parse.languages import language_for_path, parser

# Shape id -> how the report names it, in the report's order.
SHAPES: dict[str, str] = {
    "bare": "bare `f()`",
    "self": "`self.m()` / `this.m()`",
    "cls": "`cls.m()`",
    "super": "`super().m()` / `super.m()`",
    "module": "`module.f()`",
    "receiver": "other receiver `x.m()`",
    "constructor": "constructor `C()` / `new C()`",
}
# An edge whose site tree-sitter did not find (the two sides parsed a line differently).
UNKNOWN_SHAPE = "unknown"

# A definition: (path relative to the project root, 1-based first line of the def/class node,
# decorators excluded). Line 0 is the module: top-level code and class bodies call from it.
DefKey = tuple[str, int]

_DOTTED_NAME = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")
_PY_SCOPES = ("function_definition", "class_definition")


@dataclass(frozen=True)
class Site:
    path: str
    line: int  # 1-based first line of the callee expression
    name: str  # the called name: `m` of `x.m()`, `C` of `new C()`, "super" of TS `super(...)`
    receiver: str | None  # text left of the name's dot, None for a bare call
    name_line: int  # 1-based line of the called name (jedi's goto position)
    name_column: int  # 0-based column of the called name, in characters
    shape: str
    caller: DefKey  # Python only (TypeScript's caller comes from the language service)


def is_capwords(name: str) -> bool:
    """`Parser`, `HTTPError`: a Python class name by convention (not `f`, `CONSTANT`)."""
    return name[:1].isupper() and any(c.islower() for c in name)


def shape_of(name: str, receiver: str | None, *, constructor_syntax: bool, python: bool,
             modules: frozenset[str]) -> str:
    """The shape of a call from its text; see the module docstring."""
    if name == "super" and receiver is None and not python:
        return "super"
    if receiver is not None and (receiver == "super" or re.fullmatch(r"super\s*\(.*\)", receiver, re.S)):
        return "super"
    if receiver in ("self", "this"):
        return "self"
    if receiver == "cls":
        return "cls"
    if constructor_syntax or (python and is_capwords(name)):
        return "constructor"
    if receiver is None:
        return "bare"
    if _DOTTED_NAME.fullmatch(receiver) and receiver.split(".", 1)[0] in modules:
        return "module"
    return "receiver"


def _text(node: Node, source: bytes) -> str:
    return source[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _column(source_lines: list[bytes], node: Node) -> int:
    row, byte_column = node.start_point
    return len(source_lines[row][:byte_column].decode("utf-8", "replace"))


def _walk(root: Node) -> Iterator[tuple[Node, tuple[Node, ...]]]:
    """Every node with its enclosing scope nodes, iteratively (deep trees must not recurse)."""
    stack: list[tuple[Node, tuple[Node, ...]]] = [(root, ())]
    while stack:
        node, scopes = stack.pop()
        yield node, scopes
        inner = (*scopes, node) if node.type in _PY_SCOPES else scopes
        stack.extend((child, inner) for child in reversed(node.named_children))


# ---- Python ---------------------------------------------------------------------------------


def project_modules(files: list[str]) -> frozenset[str]:
    """Dotted module names of a project's Python files (`pkg/__init__.py` is `pkg`)."""
    names = set()
    for file in files:
        parts = list(PurePosixPath(file).with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        if parts:
            names.add(".".join(parts))
    return frozenset(names)


def _python_module_names(root: Node, source: bytes, path: str, modules: frozenset[str]) -> frozenset[str]:
    """Names an import in this file binds to a module (see the module docstring)."""
    bound: set[str] = set()
    package = list(PurePosixPath(path).parts[:-1])
    for node, _ in _walk(root):
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "aliased_import":
                    alias = child.child_by_field_name("alias")
                    if alias is not None:
                        bound.add(_text(alias, source))
                elif child.type == "dotted_name":
                    bound.add(_text(child, source).split(".", 1)[0])
        elif node.type == "import_from_statement":
            base = _from_base(node, source, package)
            if base is None:
                continue
            for name_node in node.children_by_field_name("name"):
                target = name_node.child_by_field_name("name") if name_node.type == "aliased_import" else name_node
                alias = name_node.child_by_field_name("alias") if name_node.type == "aliased_import" else None
                if target is None:
                    continue
                if ".".join([*base, _text(target, source)]) in modules:
                    bound.add(_text(alias or target, source))
    return frozenset(bound)


def _from_base(node: Node, source: bytes, package: list[str]) -> list[str] | None:
    """The package a `from X import ...` names, as parts; None when it climbs out of the project."""
    module = node.child_by_field_name("module_name")
    if module is None:
        return None
    text = _text(module, source)
    level = len(text) - len(text.lstrip("."))
    rest = [p for p in text.lstrip(".").split(".") if p]
    if level == 0:
        return rest
    if level - 1 > len(package):
        return None
    return package[:len(package) - (level - 1)] + rest


def _python_callee(function: Node, source: bytes) -> tuple[Node, str | None] | None:
    if function.type == "identifier":
        return function, None
    if function.type == "attribute":
        name = function.child_by_field_name("attribute")
        target = function.child_by_field_name("object")
        if name is not None and target is not None:
            return name, " ".join(_text(target, source).split())
    return None


def python_sites(path: str, source: bytes, modules: frozenset[str]) -> list[Site]:
    """Every call `f(...)` / `x.f(...)` of a Python file, with its caller (see DefKey)."""
    tree = parser("python").parse(source)
    bound = _python_module_names(tree.root_node, source, path, modules)
    lines = source.split(b"\n")
    sites = []
    for node, scopes in _walk(tree.root_node):
        if node.type != "call":
            continue
        function = node.child_by_field_name("function")
        callee = _python_callee(function, source) if function is not None else None
        if function is None or callee is None:
            continue
        name_node, receiver = callee
        name = _text(name_node, source)
        innermost = scopes[-1] if scopes else None
        caller = (path, innermost.start_point[0] + 1) if innermost is not None \
            and innermost.type == "function_definition" else (path, 0)
        sites.append(Site(path, function.start_point[0] + 1, name, receiver, name_node.start_point[0] + 1,
                          _column(lines, name_node), shape_of(name, receiver, constructor_syntax=False,
                                                              python=True, modules=bound), caller))
    return sorted(sites, key=lambda s: (s.line, s.name_line, s.name_column))


# ---- TypeScript / JavaScript ----------------------------------------------------------------


def _ts_module_names(root: Node, source: bytes) -> frozenset[str]:
    bound: set[str] = set()
    for node, _ in _walk(root):
        if node.type == "namespace_import":
            bound.update(_text(c, source) for c in node.named_children if c.type == "identifier")
        elif node.type == "import_statement":
            for child in node.named_children:
                if child.type == "import_require_clause":
                    bound.update(_text(c, source) for c in child.named_children[:1] if c.type == "identifier")
        elif node.type == "variable_declarator":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            function = value.child_by_field_name("function") if value is not None \
                and value.type == "call_expression" else None
            if name is not None and name.type == "identifier" and function is not None \
                    and _text(function, source) == "require":
                bound.add(_text(name, source))
    return frozenset(bound)


def _ts_callee(function: Node, source: bytes) -> tuple[Node, str | None] | None:
    if function.type in ("identifier", "super"):
        return function, None
    if function.type == "member_expression":
        name = function.child_by_field_name("property")
        target = function.child_by_field_name("object")
        if name is not None and target is not None and name.type in ("property_identifier", "identifier"):
            return name, " ".join(_text(target, source).split())
    return None


def typescript_sites(path: str, source: bytes) -> list[Site]:
    """Every call `f()`, `x.m()`, `super(...)` and `new C()` of a TS/JS file (caller left as the module)."""
    language = language_for_path(path) or "typescript"
    tree = parser(language).parse(source)
    bound = _ts_module_names(tree.root_node, source)
    lines = source.split(b"\n")
    sites = []
    for node, _ in _walk(tree.root_node):
        if node.type not in ("call_expression", "new_expression"):
            continue
        field = "constructor" if node.type == "new_expression" else "function"
        function = node.child_by_field_name(field)
        callee = _ts_callee(function, source) if function is not None else None
        if function is None or callee is None:
            continue
        name_node, receiver = callee
        name = _text(name_node, source)
        shape = shape_of(name, receiver, constructor_syntax=node.type == "new_expression", python=False,
                         modules=bound)
        sites.append(Site(path, function.start_point[0] + 1, name, receiver, name_node.start_point[0] + 1,
                          _column(lines, name_node), shape, (path, 0)))
    return sorted(sites, key=lambda s: (s.line, s.name_line, s.name_column))


def sites_of(path: str, source: bytes, modules: frozenset[str]) -> list[Site]:
    """The call sites of one file in whichever language its extension says."""
    if language_for_path(path) == "python":
        return python_sites(path, source, modules)
    return typescript_sites(path, source)


def python_definition_lines(path: str, source: bytes) -> set[int]:
    """1-based first lines of the file's `def`/`class` nodes (decorators excluded)."""
    tree = parser("python").parse(source)
    return {node.start_point[0] + 1 for node, _ in _walk(tree.root_node) if node.type in _PY_SCOPES}
