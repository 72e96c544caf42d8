"""Per-grammar readers turning a definition node into its name, kind, span and header."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from prism_code.parse.nodes import collapse, first_named_child, node_text, text, unquote

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
    # A namespace or module (C++ `namespace`, Rust `mod x {}`, TS `namespace X {}`): a
    # class-kind container whose functions stay functions, since they are not a type's methods.
    namespace: bool = False


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


def python_lambda(node: Node, source: bytes) -> DefinitionHead | None:
    """`key = lambda item: item.rank`: a function named after the variable (the query admits
    only a plain name assigned a lambda)."""
    name = node.child_by_field_name("left")
    value = node.child_by_field_name("right")
    if name is None or value is None:
        return None
    header = value.child_by_field_name("parameters") or value.child(0) or value
    statement = node.parent
    span = statement if statement is not None and statement.type == "expression_statement" else node
    return DefinitionHead(node_text(source, name), "function", span, header.end_byte)


# JavaScript / TypeScript --------------------------------------------------------------------


_JS_FUNCTIONS = frozenset({"arrow_function", "function_expression", "generator_function"})
# What may wrap a value without changing it: `{...} as const`, `{...} satisfies T`, `(function () {})`.
_JS_VALUE_WRAPPERS = frozenset({"as_expression", "satisfies_expression", "parenthesized_expression"})
# Statements whose children are a module's own statements (an exported declaration sits in `export`).
_JS_MODULE_LEVEL = frozenset({"program", "export_statement"})


def _js_unwrapped(value: Node) -> Node:
    for _ in range(4):
        inner = first_named_child(value) if value.type in _JS_VALUE_WRAPPERS else None
        if inner is None:
            break
        value = inner
    return value


def _js_function_argument(call: Node) -> Node | None:
    """The first function passed to a call: `$constructor("X", (inst, def) => {...})`."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return None
    return next((argument for argument in arguments.named_children if argument.type in _JS_FUNCTIONS), None)


def _js_value_head(value: Node) -> tuple[HeadKind, int]:
    """Kind and signature end of a value the query admitted: a function, a class, an object
    literal holding functions (a class-like container of its members) or a call wrapping a function."""
    if value.type == "call_expression":
        function = _js_function_argument(value)
        body = function.child_by_field_name("body") if function is not None else None
        return "function", _header_end(value, body)
    if value.type == "object":
        return "class", value.start_byte
    kind: HeadKind = "class" if value.type == "class" else "function"
    return kind, _header_end(value, value.child_by_field_name("body"))


def js_variable(node: Node, source: bytes) -> DefinitionHead | None:
    """`const f = (a) => ...` / `let C = class {...}` / `const api = { get() {...} }` /
    `export const X = wrap("X", (a) => {...})`: the definition takes the variable's name."""
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name is None or value is None:
        return None
    value = _js_unwrapped(value)
    declaration = node.parent
    if value.type == "call_expression":
        # A module's wrapped functions are its definitions; inside a function such a call is
        # mostly a computation (`const doubled = xs.map((x) => 2 * x)`), not something named.
        container = declaration.parent if declaration is not None else None
        if container is None or container.type not in _JS_MODULE_LEVEL:
            return None
    # A lone declarator spans its whole `const ... ;` statement, so the header reads "const f = ...".
    span = declaration if declaration is not None and declaration.named_child_count == 1 else node
    kind, header_end = _js_value_head(value)
    return DefinitionHead(node_text(source, name), kind, span, header_end)


# Chains that name the module itself (CommonJS exports) rather than an object of it.
_JS_MODULE_OBJECTS = (("module", "exports"), ("exports",))


def _js_member_path(node: Node, source: bytes) -> list[str] | None:
    """`res.send` -> ["res", "send"]; None for anything but identifiers, `this` and plain properties."""
    parts: list[str] = []
    while node.type == "member_expression":
        object_node = node.child_by_field_name("object")
        property_node = node.child_by_field_name("property")
        if object_node is None or property_node is None or property_node.type not in (
                "property_identifier", "private_property_identifier"):
            return None
        parts.append(node_text(source, property_node))
        node = object_node
    if node.type not in ("identifier", "this"):
        return None
    parts.append(node_text(source, node))
    parts.reverse()
    return parts


def js_assignment(node: Node, source: bytes) -> DefinitionHead | None:
    """`res.send = function send(body) {...}`: a method "send" of `res` (qualname "res.send").

    `X.prototype.m = ...` is a method of X, `this.m = ...` belongs to the enclosing definition,
    and `exports.f = ...` / `module.exports.f = ...` define the module's own function f.
    """
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    path = _js_member_path(left, source) if left is not None else None
    if path is None or right is None:
        return None
    value = _js_unwrapped(right)
    path = [part for part in path if part != "prototype"]
    if path[:1] == ["this"]:
        path = path[1:]
    module_object = next((prefix for prefix in _JS_MODULE_OBJECTS if tuple(path[: len(prefix)]) == prefix), ())
    path = path[len(module_object):]
    if not path:  # `module.exports = function name() {...}`: the module's default export
        if not module_object or value.type == "object":
            return None  # `this.prototype = ...`; an object's members are the module's own
        own_name = value.child_by_field_name("name")
        path = [node_text(source, own_name) if own_name is not None else "default"]
    statement = node.parent
    span = statement if statement is not None and statement.type == "expression_statement" else node
    kind, header_end = _js_value_head(value)
    qualifier = ".".join(path[:-1]) or None
    return DefinitionHead(path[-1], kind, span, header_end, qualifier)


def js_pair(node: Node, source: bytes) -> DefinitionHead | None:
    """An object literal's member holding a function or an object of them: `{ send: (x) => ... }`."""
    key = node.child_by_field_name("key")
    value = node.child_by_field_name("value")
    if key is None or value is None or key.type not in ("property_identifier", "string", "number"):
        return None
    name = unquote(node_text(source, key))
    if not name:
        return None
    kind, header_end = _js_value_head(_js_unwrapped(value))
    return DefinitionHead(name, kind, node, header_end)


def js_default_export(node: Node, source: bytes) -> DefinitionHead | None:
    """`export default function () {...}` / `export default class {...}`: named "default", as
    importers see it, unless the function or class has a name of its own."""
    value = node.child_by_field_name("value")
    if value is None:
        return None
    own_name = value.child_by_field_name("name")
    name = node_text(source, own_name) if own_name is not None else "default"
    kind, header_end = _js_value_head(value)
    return DefinitionHead(name, kind, node, header_end)


def js_named_argument(node: Node, source: bytes) -> DefinitionHead | None:
    """`defineGetter(req, 'ip', function ip() {...});`: a named function passed to a call is a
    definition of that name; the last argument of a call made as a statement spans the statement."""
    name = node.child_by_field_name("name")
    if name is None:
        return None
    span = node
    arguments = node.parent
    call = arguments.parent if arguments is not None else None
    statement = call.parent if call is not None else None
    if statement is not None and statement.type == "expression_statement" and node.next_named_sibling is None:
        span = statement
    return DefinitionHead(node_text(source, name), "function", span,
                          _header_end(node, node.child_by_field_name("body")))


def ts_namespace(node: Node, source: bytes) -> DefinitionHead | None:
    """`namespace A.B {...}` / `module M {...}`: a container named B inside A. A module named by
    a string (`declare module "x" {...}`) adds to another module and is not captured."""
    name = node.child_by_field_name("name")
    if name is None or name.type not in ("identifier", "nested_identifier"):
        return None
    *outer, last = node_text(source, name).split(".")
    statement = node.parent
    span = statement if statement is not None and statement.type == "expression_statement" else node
    body = node.child_by_field_name("body")
    return DefinitionHead(last.strip(), "class", span, _header_end(node, body),
                          ".".join(part.strip() for part in outer) or None, namespace=True)


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


# Java ---------------------------------------------------------------------------------------


def java_anonymous_class(node: Node, source: bytes) -> DefinitionHead | None:
    """`new Runnable() { public void run() {...} }`: a class named after the type it implements,
    so its methods read "Runnable.run" inside the definition that creates it."""
    created = node.child_by_field_name("type")
    body = next((child for child in node.named_children if child.type == "class_body"), None)
    if created is None or body is None:
        return None
    return DefinitionHead(type_name(created, source), "class", node, body.start_byte)


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
    """`type Store struct {...}`, `type HandlerFunc func(*Context)`, `type ID = string`: a type
    of its own; a struct's or interface's header stops at its brace, another's is the whole spec."""
    name = node.child_by_field_name("name")
    type_node = node.child_by_field_name("type")
    if name is None or type_node is None:
        return None
    declaration = node.parent
    span = declaration if declaration is not None and declaration.named_child_count == 1 else node
    brace = -1
    if type_node.type in ("struct_type", "interface_type"):
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


def rust_macro(node: Node, source: bytes) -> DefinitionHead | None:
    """`macro_rules! name {...}`: a function-like definition; its rules are its body."""
    name = node.child_by_field_name("name")
    if name is None:
        return None
    return DefinitionHead(node_text(source, name), "function", node, name.end_byte)


def rust_module(node: Node, source: bytes) -> DefinitionHead | None:
    """`mod tests {...}`: a container of the items inside it (a `mod x;` without body is an import)."""
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name is None or body is None:
        return None
    return DefinitionHead(node_text(source, name), "class", node, body.start_byte, namespace=True)


# C / C++ ------------------------------------------------------------------------------------


# Declarators around a function's name: `*f`, `&f`, `(f)`, `f(...)`, `f [[nodiscard]]`.
_C_DECLARATOR_WRAPPERS = frozenset({"pointer_declarator", "reference_declarator", "parenthesized_declarator",
                                    "attributed_declarator", "function_declarator"})
# Declarators nest a few levels (`int (*f(int))(double)` is four); a misparse may nest more.
_MAX_DECLARATOR_STEPS = 16


def c_function(node: Node, source: bytes) -> DefinitionHead | None:
    """Name from the declarator chain: `int *f(...)`, `T& A::f(...)`, `A::~A()`, `operator int()`,
    and a name a macro wraps: `static LIBSSH2_ALLOC_FUNC(my_malloc) {...}` is "my_malloc"."""
    return_type = node.child_by_field_name("type")
    if return_type is not None and return_type.child_by_field_name("body") is not None:
        # `class X {...} f() {...}`: no type may be defined in a return type; this is a class
        # whose end the parser lost (a macro it could not read), which is the definition.
        return None
    target = node.child_by_field_name("declarator")
    # The name must come out of a parameter list, `operator T()` or a macro's parentheses:
    # `ABSL_NAMESPACE_BEGIN namespace {...}` reads as a function "namespace" otherwise.
    wrapped = first_named_child(target) if target is not None and target.type == "parenthesized_declarator" else None
    declared = wrapped is not None and wrapped.type == "identifier" and wrapped.next_named_sibling is None
    for _ in range(_MAX_DECLARATOR_STEPS):
        if target is None or target.type not in _C_DECLARATOR_WRAPPERS:
            break
        if target.type == "function_declarator":
            declared = True
            inner = target.child_by_field_name("declarator")
            wrapped_name = _macro_wrapped_name(inner, source) if inner is not None else None
            if wrapped_name is not None:
                body = node.child_by_field_name("body")
                return DefinitionHead(wrapped_name, "function", node, _header_end(node, body))
        target = target.child_by_field_name("declarator") or first_named_child(target)
    owner: Node | None = None
    while target is not None and target.type == "qualified_identifier":
        owner = target.child_by_field_name("scope") or owner
        target = target.child_by_field_name("name")
    if target is None or not (declared or target.type == "operator_cast"):
        return None
    if target.type == "template_function":
        target = target.child_by_field_name("name") or target
    if target.type == "operator_cast":  # `operator int() const`: the name stops at the parameters
        parameters = target.child_by_field_name("declarator")
        name = collapse(text(source, target.start_byte, parameters.start_byte if parameters else target.end_byte))
    else:
        name = collapse(node_text(source, target))
    qualifier = type_name(owner, source) if owner is not None else None
    body = node.child_by_field_name("body")
    return DefinitionHead(name, "function", node, _header_end(node, body), qualifier)


# `(name)` or `( name )`: one name in parentheses.
_PARENTHESIZED_NAME = re.compile(r"\(\s*([A-Za-z_]\w*)\s*\)")


def _macro_wrapped_name(declarator: Node, source: bytes) -> str | None:
    """`ABSL_INTERNAL_C_SYMBOL(AbslInternalTraceWait)(...)` and `result_type(min)() const` (the
    parentheses keep `min` from a macro): a name in parentheses before the parameter list is the
    function's; None for any other declarator."""
    if declarator.type != "function_declarator":
        return None
    parameters = declarator.child_by_field_name("parameters")
    match = _PARENTHESIZED_NAME.fullmatch(node_text(source, parameters)) if parameters is not None else None
    return match.group(1) if match is not None else None


def c_macro_function(node: Node, source: bytes) -> DefinitionHead | None:
    """`#define MAX(a, b) ...`: a function-like macro is called like a function and read as one."""
    name = node.child_by_field_name("name")
    parameters = node.child_by_field_name("parameters")
    if name is None or parameters is None:
        return None
    return DefinitionHead(node_text(source, name), "function", node, parameters.end_byte)


def cpp_class(node: Node, source: bytes) -> DefinitionHead | None:
    """A class, struct, union or enum with a body; one a typedef names is that typedef's (c_typedef)."""
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name is None or body is None:
        return None
    parent = node.parent
    if parent is not None and parent.type == "type_definition":
        return None
    return DefinitionHead(type_name(name, source), "class", node, body.start_byte)


def c_typedef(node: Node, source: bytes) -> DefinitionHead | None:
    """`typedef struct [tag] {...} name;` (or `*name`): the type code uses is the typedef's name."""
    specifier = node.child_by_field_name("type")
    body = specifier.child_by_field_name("body") if specifier is not None else None
    name = node.child_by_field_name("declarator")
    while name is not None and name.type == "pointer_declarator":
        name = name.child_by_field_name("declarator")
    if body is None or name is None or name.type != "type_identifier":
        return None
    return DefinitionHead(node_text(source, name), "class", node, body.start_byte)


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
