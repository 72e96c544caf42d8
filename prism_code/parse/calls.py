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
    }
)

# Node type -> field leading toward the called name (member accesses, qualified and generic names).
_STEPS = {
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
}

# Fallback when a grammar gives the step no field (Java generic and scoped types).
_UNFIELDED_STEPS = {"generic_type": 0, "scoped_type_identifier": -1}

_SEPARATORS = ("?.", "->", "::", ".")
# Bound checked before decoding: a UTF-8 character takes at most 4 bytes.
_MAX_RECEIVER_BYTES = 4 * MAX_RECEIVER_CHARS


def call_target(callee: Node, source: bytes) -> tuple[str, str | None] | None:
    """(name, receiver) of the call whose function part is `callee`; None when it has no name (`f()()`)."""
    kind = callee.type
    if kind in _NAME_TYPES:  # the common bare call, kept cheap
        return source[callee.start_byte : callee.end_byte].decode("utf-8", "replace"), None
    node = callee
    for _ in range(16):
        step = _STEPS.get(kind)
        if step is None:
            return None
        inner = node.child_by_field_name(step)
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
