"""Name and receiver of a call from its callee node: `self.parser.parse_args` -> ("parse_args", "self.parser")."""

from __future__ import annotations

from tree_sitter import Node

from prism_code.parse.nodes import collapse

MAX_RECEIVER_CHARS = 80

# Node types that are the called name itself.
_NAME_TYPES = frozenset(
    {
        "identifier",
        "property_identifier",
        "private_property_identifier",
        "field_identifier",
        "type_identifier",
        "destructor_name",
        "operator_name",
        # Bash, Ruby, Haskell, Kotlin/Swift, PHP (prism_code/parse/queries/*.scm)
        "word",
        "constant",
        "variable",
        "constructor",
        "simple_identifier",
        "name",
    }
)

# Node type -> field leading toward the called name (member accesses, qualified and generic names);
# None where the grammar has no field for it (_UNFIELDED_STEPS says which child then).
_STEPS: dict[str, str | None] = {
    "attribute": "attribute",
    "member_expression": "property",
    "selector_expression": "field",
    "field_expression": "field",
    "scoped_identifier": "name",
    "scoped_type_identifier": "name",
    "qualified_identifier": "name",
    "method_invocation": "name",
    "generic_function": "function",
    "template_function": "name",
    "generic_type": "type",
    # The grammars of prism_code/parse/queries/*.scm
    "call": "method",  # Ruby `recv.m(...)`
    "member_access_expression": "name",  # C#
    "member_binding_expression": "name",  # C# `a?.B`
    "dot": "right",  # Elixir `Mod.f`
    "qualified": "id",  # Haskell `M.f`
    "dot_index_expression": "field",  # Lua `t.f`
    "method_index_expression": "method",  # Lua `t:m`
    "member_call_expression": "name",  # PHP `$o->m()`
    "nullsafe_member_call_expression": "name",  # PHP `$o?->m()`
    "scoped_call_expression": "name",  # PHP `A::m()`
    "navigation_expression": "suffix",  # Swift `a.b` (Kotlin's has no fields)
    "navigation_suffix": "suffix",
    "qualified_name": "name",  # C# `A.B`, PHP `\A\f` (no field: see below)
    "generic_name": None,  # C# `F<T>`
    "conditional_access_expression": None,  # C# `a?.B`
    "command_name": None,  # Bash
    "user_type": None,  # Kotlin `Base()` in a class header, Swift `Foo<T>()`
}

# Fallback when a grammar gives the step no field (Java generic and scoped types; Kotlin's
# `a.b`, Zig's `a.b` (`member`, not `field`), PHP `\A\f`, C# `F<T>` and `a?.B`, a Bash command).
_UNFIELDED_STEPS = {"generic_type": 0, "scoped_type_identifier": -1, "navigation_expression": -1,
                    "field_expression": -1, "qualified_name": -1, "generic_name": 0,
                    "conditional_access_expression": -1, "command_name": 0, "user_type": 0}

# Longest first where one ends another (PHP "?->" before "->", "::" before Lua's ":").
_SEPARATORS = ("?.", "?->", "->", "::", "&.", ".", ":", "\\")
# Bound checked before decoding: a UTF-8 character takes at most 4 bytes.
_MAX_RECEIVER_BYTES = 4 * MAX_RECEIVER_CHARS


def call_target(callee: Node, source: bytes) -> tuple[str, str | None] | None:
    """(name, receiver) of the call whose function part is `callee`; None when it has no name (`f()()`)."""
    kind = callee.type
    if kind in _NAME_TYPES:  # the common bare call, kept cheap
        return source[callee.start_byte : callee.end_byte].decode("utf-8", "replace"), None
    node = callee
    for _ in range(16):
        step = _STEPS.get(kind, "")
        if not step and kind not in _UNFIELDED_STEPS:
            return None
        inner = node.child_by_field_name(step) if step else None
        if inner is None and kind in _UNFIELDED_STEPS and node.named_child_count:
            inner = node.named_children[_UNFIELDED_STEPS[kind]]
        if inner is None:
            return None
        node, kind = inner, inner.type
        if kind in _NAME_TYPES:
            name = source[node.start_byte : node.end_byte].decode("utf-8", "replace")
            return name, _receiver(source, callee.start_byte, node.start_byte)
    return None


def _receiver(source: bytes, start: int, name_start: int) -> str | None:
    if name_start <= start or name_start - start > _MAX_RECEIVER_BYTES:
        return None
    receiver = source[start:name_start].decode("utf-8", "replace").rstrip()
    for separator in _SEPARATORS:
        if receiver.endswith(separator):
            receiver = receiver[: -len(separator)].rstrip()
            break
    if "\n" in receiver or "\t" in receiver or "  " in receiver:
        receiver = collapse(receiver)
    return receiver if receiver and len(receiver) <= MAX_RECEIVER_CHARS else None
