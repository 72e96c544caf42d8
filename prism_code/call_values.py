"""What an expression denotes for call resolution, and the pure rules about it (issue #26).

A `Value` is a module, a class, an instance of a class or a function of the repository;
`OPAQUE` stands for a class from outside it, which may define any member. The functions here
read a definition's text (its return annotation, its decorators) and merge base orders (C3);
prism_code.call_resolution does the lookups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prism_code.parse.bindings import annotation_class
from prism_code.parse.model import Definition

Target = tuple[str, str]  # (path, qualname) of a definition
ValueKind = Literal["module", "class", "instance", "function"]

_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "setter", "getter", "deleter"})


@dataclass(frozen=True)
class Value:
    """What an expression denotes: a module (its file), a class, an instance of a class, a function."""

    kind: ValueKind
    path: str
    qualname: str = ""  # "" for a module
    # Reached through an assignment (`factory = Dog`): followed, but not a call of Dog.
    via_assignment: bool = field(default=False, compare=False)


# A base the repository does not define: it may define any member.
OPAQUE = Value("class", "", "?")
# Returned by a module-level lookup for a name the module does not bind (not None: a bound
# name may be of unknown value, and that shadows what a star import would give).
UNBOUND = Value("module", "", "unbound")


def is_property(definition: Definition) -> bool:
    """A method read as an attribute: `@property`, `@cached_property`, `@x.setter`."""
    decorators = definition.decorators
    return bool(decorators) and any(d.rsplit(".", 1)[-1] in _PROPERTY_DECORATORS for d in decorators)


def definition_value(path: str, definition: Definition) -> Value:
    return Value("class" if definition.kind == "class" else "function", path, definition.qualname)


def join_module(module: str, name: str) -> str:
    return f"{module}.{name}" if module else name


def return_annotation(signature: str) -> str:
    """The class a signature's return annotation names: `def f() -> Dog`, `f(): Dog`."""
    if "->" in signature:
        return annotation_class(signature.rsplit("->", 1)[1].rstrip(":").strip())
    start = signature.find("(")
    if start < 0:
        return ""
    depth = 0
    for position in range(start, len(signature)):
        if signature[position] in "([{<":
            depth += 1
        elif signature[position] in ")]}>" and signature[position - 1] != "=":  # `=>` is no bracket
            depth -= 1
            if depth == 0:
                rest = signature[position + 1:].strip()
                return annotation_class(rest[1:].rstrip("{").strip()) if rest.startswith(":") else ""
    return ""


def c3_merge(sequences: list[list[Value]]) -> list[Value]:
    """C3 merge, cut after the first unknown base (what follows it cannot be trusted to come
    first); an inconsistent hierarchy falls back to depth-first order without repeats."""
    pending = [list(sequence) for sequence in sequences if sequence]
    merged: list[Value] = []
    while pending:
        for sequence in pending:
            head = sequence[0]
            if head is OPAQUE or not any(head in other[1:] for other in pending):
                break
        else:
            flat = [item for sequence in sequences for item in sequence]
            return merged + [item for item in dict.fromkeys(flat) if item not in merged]
        merged.append(head)
        if head is OPAQUE:
            return merged
        pending = [rest for rest in ([item for item in sequence if item != head] for sequence in pending) if rest]
    return merged
