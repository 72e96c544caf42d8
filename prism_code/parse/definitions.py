"""Per-grammar readers turning a definition node into its name, kind, span and header."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from prism_code.parse.nodes import first_named_child, node_text

# Functions become methods once their enclosing class is known (parse.model.DefinitionKind).
HeadKind = Literal["function", "class"]


@dataclass(frozen=True, slots=True)
class DefinitionHead:
    """What one definition node says about itself, before nesting is known."""

    name: str
    kind: HeadKind
    span: Node  # the node whose range is the definition's range
    header_end: int  # byte offset where the signature stops (the body's start)
    qualifier: str | None = None  # owner written outside any body: Go receiver type, C++ "A::f"
    body: Node | None = None  # where a Python docstring would be


HeadReader = Callable[[Node, bytes], "DefinitionHead | None"]


def _header_end(node: Node, body: Node | None) -> int:
    return body.start_byte if body is not None else node.end_byte


def named(kind: HeadKind, name_field: str = "name", needs_body: bool = False) -> HeadReader:
    """Reader for the common shape: a `name` field and an optional `body` field."""

    def read(node: Node, source: bytes) -> DefinitionHead | None:
        name = node.child_by_field_name(name_field)
        body = node.child_by_field_name("body")
        if name is None or (needs_body and body is None):
            return None
        return DefinitionHead(node_text(source, name), kind, node, _header_end(node, body))

    return read


# Python -------------------------------------------------------------------------------------


def python_function(node: Node, source: bytes) -> DefinitionHead | None:
    name = node.child_by_field_name("name")
    if name is None:
        return None
    header = node.child_by_field_name("return_type") or node.child_by_field_name("parameters") or name
    body = node.child_by_field_name("body")
    return DefinitionHead(node_text(source, name), "function", node, header.end_byte, body=body)


def python_class(node: Node, source: bytes) -> DefinitionHead | None:
    name = node.child_by_field_name("name")
    if name is None:
        return None
    header = node.child_by_field_name("superclasses") or node.child_by_field_name("type_parameters") or name
    body = node.child_by_field_name("body")
    return DefinitionHead(node_text(source, name), "class", node, header.end_byte, body=body)


# JavaScript / TypeScript --------------------------------------------------------------------


def js_variable(node: Node, source: bytes) -> DefinitionHead | None:
    """`const f = (a) => ...` / `let C = class {...}`: the definition takes the variable's name."""
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name is None or value is None:
        return None
    declaration = node.parent
    # A lone declarator spans its whole `const ... ;` statement, so the header reads "const f = ...".
    span = declaration if declaration is not None and declaration.named_child_count == 1 else node
    kind: HeadKind = "class" if value.type == "class" else "function"
    return DefinitionHead(node_text(source, name), kind, span, _header_end(node, value.child_by_field_name("body")))


def js_field(name_field: str) -> HeadReader:
    """A class field holding a function: `onClick = (e) => {...}`."""

    def read(node: Node, source: bytes) -> DefinitionHead | None:
        name = node.child_by_field_name(name_field)
        value = node.child_by_field_name("value")
        if name is None or value is None:
            return None
        body = value.child_by_field_name("body")
        return DefinitionHead(node_text(source, name), "function", node, _header_end(node, body))

    return read


# Go -----------------------------------------------------------------------------------------


def go_method(node: Node, source: bytes) -> DefinitionHead | None:
    name = node.child_by_field_name("name")
    if name is None:
        return None
    receiver_type = None
    receiver = node.child_by_field_name("receiver")
    if receiver is not None and receiver.named_child_count:
        parameter = receiver.named_child(0)
        receiver_type = parameter.child_by_field_name("type") if parameter is not None else None
    qualifier = type_name(receiver_type, source) if receiver_type is not None else None
    body = node.child_by_field_name("body")
    return DefinitionHead(node_text(source, name), "function", node, _header_end(node, body), qualifier)


def go_type(node: Node, source: bytes) -> DefinitionHead | None:
    """`type Store struct {...}` / `type Getter interface {...}` (the query admits only those)."""
    name = node.child_by_field_name("name")
    type_node = node.child_by_field_name("type")
    if name is None or type_node is None:
        return None
    declaration = node.parent
    span = declaration if declaration is not None and declaration.named_child_count == 1 else node
    brace = source.find(b"{", type_node.start_byte, type_node.end_byte)
    return DefinitionHead(node_text(source, name), "class", span, brace if brace >= 0 else span.end_byte)


# Rust ---------------------------------------------------------------------------------------


def rust_impl(node: Node, source: bytes) -> DefinitionHead | None:
    """`impl Trait for Type {...}` is a class named after Type, so its methods read "Type.method"."""
    implemented = node.child_by_field_name("type")
    if implemented is None:
        return None
    body = node.child_by_field_name("body")
    return DefinitionHead(type_name(implemented, source), "class", node, _header_end(node, body))


# C / C++ ------------------------------------------------------------------------------------


def c_function(node: Node, source: bytes) -> DefinitionHead | None:
    """Name from the declarator chain: `int *f(...)`, `T& A::f(...)`, `A::~A()`."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator") or first_named_child(declarator)
    target = declarator.child_by_field_name("declarator") if declarator is not None else None
    if target is None:
        return None
    owner: Node | None = None
    while target is not None and target.type == "qualified_identifier":
        owner = target.child_by_field_name("scope") or owner
        target = target.child_by_field_name("name")
    if target is None:
        return None
    if target.type == "template_function":
        target = target.child_by_field_name("name") or target
    qualifier = type_name(owner, source) if owner is not None else None
    body = node.child_by_field_name("body")
    return DefinitionHead(node_text(source, target), "function", node, _header_end(node, body), qualifier)


def cpp_class(node: Node, source: bytes) -> DefinitionHead | None:
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name is None or body is None:
        return None
    return DefinitionHead(type_name(name, source), "class", node, body.start_byte)


# Shared -------------------------------------------------------------------------------------

# Wrappers around a type's own name: `*T`, `&'a T`, `Vec<T>`, `a::T`, `A<int>`, `pkg.T`.
_TYPE_NAME_STEPS = {
    "pointer_type": "type",
    "reference_type": "type",
    "generic_type": "type",
    "scoped_type_identifier": "name",
    "qualified_type": "name",
    "qualified_identifier": "name",
    "template_type": "name",
}


def type_name(node: Node, source: bytes) -> str:
    """The bare name of a (possibly pointer, generic or qualified) type: `*pkg.Store[T]` -> "Store"."""
    for _ in range(8):
        field = _TYPE_NAME_STEPS.get(node.type)
        inner = node.child_by_field_name(field) if field is not None else None
        if inner is None and node.type == "pointer_type":
            inner = first_named_child(node)  # Go's pointer_type has no field
        if inner is None:
            break
        node = inner
    if node.type == "generic_type":  # Java generics: `List<T>` has no `type` field
        first = first_named_child(node)
        node = first if first is not None else node
    return node_text(source, node)
