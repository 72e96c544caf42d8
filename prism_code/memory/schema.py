"""Memory schemas: typed hierarchies of dataclasses, their paths and value validation.

A schema is a dataclass whose fields are str, int, float, bool, list[T], dict[str, T],
Optional[T] or further dataclasses (PRISM Def. 3.2-3.3). The model sees it as Python
source; code uses it to resolve the type expected at a path and to check values.

Paths use PRISM's syntax: `$` for the root, then `.'key'` for a dataclass field or a
dict key and `[3]` for a list index, e.g. `$.'candidate_functions'.'parse_args'`.
Keys are quoted so that names with dots (`Greeter.greet`) stay one segment.
"""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
import types
import typing
from collections.abc import Iterator
from typing import Any, Union

PRIMITIVES: tuple[type, ...] = (str, int, float, bool)

Segment = str | int


class SchemaError(ValueError):
    """A type outside the allowed typed hierarchy."""


class PathError(ValueError):
    """A path that does not parse or does not fit the schema."""


# ---- types --------------------------------------------------------------------------


def is_record(t: Any) -> bool:
    return isinstance(t, type) and dataclasses.is_dataclass(t)


def optional_inner(t: Any) -> Any | None:
    """T for Optional[T] / T | None, else None."""
    if typing.get_origin(t) in (Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(t)) == 2:
            return args[0]
    return None


def fields_of(cls: type) -> dict[str, Any]:
    """Field name -> resolved type, in declaration order."""
    try:
        hints = typing.get_type_hints(cls)
    except NameError as exc:
        raise SchemaError(f"{cls.__name__}: {exc}") from None
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def check_type(t: Any, _seen: frozenset[type] = frozenset()) -> None:
    """Raise SchemaError unless `t` is in the typed hierarchy (recursion is refused)."""
    if t in PRIMITIVES:
        return
    inner = optional_inner(t)
    if inner is not None:
        check_type(inner, _seen)
        return
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is list and len(args) == 1:
        check_type(args[0], _seen)
        return
    if origin is dict and len(args) == 2:
        if args[0] is not str:
            raise SchemaError(f"dict keys must be str, not {type_name(args[0])}")
        check_type(args[1], _seen)
        return
    if is_record(t):
        if t in _seen:
            # A recursive schema has no finite source to show and no bound on paths.
            raise SchemaError(f"{t.__name__} refers to itself")
        for name, ft in fields_of(t).items():
            try:
                check_type(ft, _seen | {t})
            except SchemaError as exc:
                raise SchemaError(f"{t.__name__}.{name}: {exc}") from None
        return
    raise SchemaError(f"{t!r} is not an allowed memory type")


def type_name(t: Any) -> str:
    """The type as written in the schema source."""
    if t in PRIMITIVES or is_record(t):  # a class: its name
        name: str = t.__name__
        return name
    inner = optional_inner(t)
    if inner is not None:
        return f"Optional[{type_name(inner)}]"
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is list:
        return f"list[{type_name(args[0])}]"
    if origin is dict:
        return f"dict[str, {type_name(args[1])}]"
    return repr(t)


def records(root: type) -> list[type]:
    """Every dataclass reachable from `root`, dependencies before their users."""
    check_type(root)
    out: list[type] = []

    def visit(t: Any) -> None:
        inner = optional_inner(t)
        if inner is not None:
            visit(inner)
            return
        for arg in typing.get_args(t):
            visit(arg)
        if is_record(t) and t not in out:
            for ft in fields_of(t).values():
                visit(ft)
            out.append(t)

    visit(root)
    return out


def _doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__") or ""
    # dataclass() writes "Name(field: type, ...)" when a class has no docstring: not ours.
    try:
        generated = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    except (TypeError, ValueError):
        generated = ""
    return "" if doc == generated else inspect.cleandoc(doc)


def schema_source(root: type) -> str:
    """The schema as Python source, dependencies first, for the prompt."""
    blocks = []
    for cls in records(root):
        lines = ["@dataclass", f"class {cls.__name__}:"]
        doc = _doc(cls)
        if doc:
            body = textwrap.indent(doc, "    ").lstrip()
            lines.append(f'    """{body}"""' if "\n" not in doc else f'    """{body}\n    """')
        hints = fields_of(cls)
        for f in dataclasses.fields(cls):
            comment = f.metadata.get("doc", "")
            lines.append(f"    {f.name}: {type_name(hints[f.name])}" + (f"  # {comment}" if comment else ""))
        if not hints and not doc:
            lines.append("    pass")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


# ---- paths ----------------------------------------------------------------------------


def quote_key(key: str) -> str:
    return "'" + key.replace("\\", "\\\\").replace("'", "\\'") + "'"


def format_path(segments: tuple[Segment, ...] | list[Segment]) -> str:
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else "." + quote_key(s) for s in segments)


def _quoted(text: str, i: int) -> tuple[str, int]:
    """The string quoted at text[i] (' or "), backslash escapes allowed; returns (key, next i)."""
    quote = text[i]
    out = []
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if c == quote:
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise PathError(f"unterminated quote in {text!r}")


def parse_path(text: str) -> tuple[Segment, ...]:
    """`$.'a'.'b'[2]` -> ("a", "b", 2).

    Beyond the quoted form, bare keys (`$.attributes.Noise Level`, as CoK writes them)
    and bracketed quoted keys (`$['a']`) are read too: a small model mixes them up, and
    the meaning is not in doubt.
    """
    text = text.strip()
    if not text.startswith("$"):
        raise PathError(f"a path starts with $: {text!r}")
    segments: list[Segment] = []
    i = 1
    while i < len(text):
        c = text[i]
        if c == ".":
            i += 1
            if i < len(text) and text[i] in "'\"":
                key, i = _quoted(text, i)
            else:
                start = i
                while i < len(text) and text[i] not in ".[":
                    i += 1
                key = text[start:i].strip()
                if not key:
                    raise PathError(f"empty key in {text!r}")
            segments.append(key)
        elif c == "[":
            i += 1
            if i < len(text) and text[i] in "'\"":
                key, i = _quoted(text, i)
                segments.append(key)
            else:
                end = text.find("]", i)
                if end < 0:
                    raise PathError(f"unclosed [ in {text!r}")
                raw = text[i:end].strip()
                if not raw.isdigit():
                    raise PathError(f"a list index is a non-negative integer, not {raw!r}")
                segments.append(int(raw))
                i = end
            if i >= len(text) or text[i] != "]":
                raise PathError(f"unclosed [ in {text!r}")
            i += 1
        else:
            raise PathError(f"unexpected {c!r} at position {i} of {text!r}")
    return tuple(segments)


def step_type(t: Any, segment: Segment, where: str) -> Any:
    """The type one segment below a value of type `t`."""
    inner = optional_inner(t)
    if inner is not None:
        t = inner
    origin = typing.get_origin(t)
    if isinstance(segment, int):
        if origin is list:
            return typing.get_args(t)[0]
        raise PathError(f"{where} is {type_name(t)}, which has no index [{segment}]")
    if origin is dict:
        return typing.get_args(t)[1]
    if is_record(t):
        hints = fields_of(t)
        if segment not in hints:
            raise PathError(f"{segment!r} is not a field of {t.__name__} (fields: {', '.join(hints)})")
        return hints[segment]
    raise PathError(f"{where} is {type_name(t)}, which has no key {segment!r}")


def type_at(schema: type, path: str | tuple[Segment, ...]) -> Any:
    """The type a value at `path` must have."""
    segments = parse_path(path) if isinstance(path, str) else tuple(path)
    t: Any = schema
    for n, segment in enumerate(segments):
        t = step_type(t, segment, format_path(segments[:n]))
    return t


# ---- values ---------------------------------------------------------------------------


def validate(value: Any, t: Any, where: str = "$") -> list[str]:
    """Problems with `value` as a JSON value of type `t`; empty when it fits."""
    inner = optional_inner(t)
    if inner is not None:
        return [] if value is None else validate(value, inner, where)
    if t is bool:
        return [] if isinstance(value, bool) else [_expected(where, t, value)]
    if t is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [_expected(where, t, value)]
    if t is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [_expected(where, t, value)]
    if t is str:
        return [] if isinstance(value, str) else [_expected(where, t, value)]
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is list:
        if not isinstance(value, list):
            return [_expected(where, t, value)]
        return [p for i, item in enumerate(value) for p in validate(item, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [_expected(where, t, value)]
        return [p for k, item in value.items() for p in validate(item, args[1], f"{where}.{quote_key(str(k))}")]
    if is_record(t):
        if not isinstance(value, dict):
            return [_expected(where, t, value)]
        hints = fields_of(t)
        problems = [f"{where}: {k!r} is not a field of {t.__name__}" for k in value if k not in hints]
        for name, ft in hints.items():
            if name in value:
                problems += validate(value[name], ft, f"{where}.{quote_key(name)}")
            elif optional_inner(ft) is None and not _has_default(t, name):
                problems.append(f"{where}: missing field {name!r} of {t.__name__}")
        return problems
    return [f"{where}: {t!r} is not a memory type"]


def _has_default(cls: type, name: str) -> bool:
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _expected(where: str, t: Any, value: Any) -> str:
    got = "null" if value is None else type(value).__name__
    return f"{where}: expected {type_name(t)}, got {got}"


# ---- JSON schema (for llama.cpp grammars) ------------------------------------------------


# A string that does not open with "<": a small model fills a slot with the <placeholder>
# of an example when it may. Quotes and backslashes are left out with it (no escapes).
PLAIN_TEXT = {"type": "string", "pattern": '^[^<"\\\\][^"\\\\]*$'}


def json_schema(t: Any, max_string: int | None = None, plain_text: bool = False) -> dict[str, Any]:
    """A JSON schema for values of `t`: records list their fields in order, all required.

    `plain_text` makes every string a PLAIN_TEXT (for grammars; `max_string` is then ignored).
    """
    inner = optional_inner(t)
    if inner is not None:
        return {"anyOf": [json_schema(inner, max_string, plain_text), {"type": "null"}]}
    if t is str:
        if plain_text:
            return dict(PLAIN_TEXT)
        return {"type": "string", "maxLength": max_string} if max_string else {"type": "string"}
    if t is bool:
        return {"type": "boolean"}
    if t is int:
        return {"type": "integer"}
    if t is float:
        return {"type": "number"}
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is list:
        return {"type": "array", "items": json_schema(args[0], max_string, plain_text)}
    if origin is dict:
        return {"type": "object", "additionalProperties": json_schema(args[1], max_string, plain_text)}
    if is_record(t):
        hints = fields_of(t)
        return {"type": "object",
                "properties": {k: json_schema(v, max_string, plain_text) for k, v in hints.items()},
                "required": list(hints), "additionalProperties": False}
    raise SchemaError(f"{t!r} is not a memory type")


def walk_templates(schema: type, max_depth: int = 3) -> Iterator[tuple[tuple[Segment | None, ...], Any]]:
    """(path template, type) for every addressable place; None stands for any dict key.

    List positions are left out: a small model cannot count, and adding a whole list
    (or a record holding one) says the same thing.
    """
    def walk(t: Any, prefix: tuple[Segment | None, ...]) -> Iterator[tuple[tuple[Segment | None, ...], Any]]:
        if len(prefix) >= max_depth:
            return
        inner = optional_inner(t)
        t = inner if inner is not None else t
        origin = typing.get_origin(t)
        if origin is dict:
            child = typing.get_args(t)[1]
            yield prefix + (None,), child
            yield from walk(child, prefix + (None,))
        elif is_record(t):
            for name, ft in fields_of(t).items():
                yield prefix + (name,), ft
                yield from walk(ft, prefix + (name,))

    yield from walk(schema, ())
