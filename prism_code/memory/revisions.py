"""Memory revisions (PRISM Def. 3.4): validated, then applied, or rejected with a reason.

A revision is (path, op, value). `add` creates a path that does not exist yet; its
parent must exist, or be a missing dict-typed slot that is created empty on the way.
`update` replaces the value at a path that exists. The value must fit the schema type
at its path. A rejected revision leaves the memory exactly as it was.
"""

from __future__ import annotations

import copy
import json
import re
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prism_code.memory.schema import (
    PathError,
    Segment,
    format_path,
    json_schema,
    optional_inner,
    parse_path,
    type_at,
    validate,
    walk_templates,
)

Op = Literal["add", "update"]
OPS: tuple[str, ...] = ("add", "update")


@dataclass(frozen=True)
class Revision:
    path: str
    op: str
    value: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "op": self.op, "value": self.value}

    def line(self) -> str:
        """One JSON line, the form the model writes and the amendments encoding shows."""
        return json.dumps(self.to_json(), ensure_ascii=False)


@dataclass(frozen=True)
class Applied:
    revision: Revision


@dataclass(frozen=True)
class Rejected:
    revision: Revision
    reason: str


Outcome = Applied | Rejected


def apply(memory: dict[str, Any], revision: Revision, schema: type, allow_updates: bool = True) -> Outcome:
    """Apply `revision` to `memory` in place, or reject it and leave `memory` untouched."""
    def reject(reason: str) -> Rejected:
        return Rejected(revision, reason)

    if revision.op not in OPS:
        return reject(f"unknown op {revision.op!r} (add or update)")
    if revision.op == "update" and not allow_updates:
        return reject("updates are disabled in this pass: only add")
    if not isinstance(revision.path, str):
        return reject("the path is not a string")
    try:
        segments = parse_path(revision.path)
        if not segments:
            return reject("the root cannot be revised; name a field")
        expected = type_at(schema, segments)
    except PathError as exc:
        return reject(f"bad path: {exc}")
    placeholder = next((s for s in segments if isinstance(s, str) and _PLACEHOLDER.fullmatch(s)), None)
    if placeholder is not None:
        return reject(f"{placeholder!r} is a placeholder, not a real key")
    if _has_placeholder(revision.value):
        return reject("the value holds a <placeholder> from the example, not content")
    problems = validate(revision.value, expected, revision.path)
    if problems:
        return reject("value does not fit the schema: " + "; ".join(problems[:3]))

    # Walk to the parent, noting the dict-typed slots an add may create; nothing is
    # written until every check has passed.
    container: Any = memory
    created: list[Segment] = []  # missing dict slots below `container`, outermost first
    for n, segment in enumerate(segments[:-1]):
        here = format_path(segments[: n + 1])
        child = _MISSING if created else _child(container, segment)
        if child is _MISSING:
            slot_type = type_at(schema, segments[: n + 1])
            slot_type = optional_inner(slot_type) or slot_type
            if (revision.op == "add" and typing.get_origin(slot_type) is dict
                    and isinstance(container, dict)):
                created.append(segment)
                continue
            return reject(f"the parent {here} does not exist")
        if not isinstance(child, (dict, list)):
            return reject(f"{here} holds a {type(child).__name__}, not a container")
        container = child

    last = segments[-1]
    exists = not created and _child(container, last) is not _MISSING
    if revision.op == "add" and exists:
        if not allow_updates:
            return reject(f"{revision.path} already exists (and updates are disabled in this pass)")
        return reject(f"{revision.path} already exists: use update to replace it")
    if revision.op == "update" and not exists:
        return reject(f"{revision.path} does not exist: use add to create it")
    if isinstance(last, int):
        if created:
            return reject(f"the list at {format_path(segments[:-1])} does not exist")
        if not isinstance(container, list):
            return reject(f"{format_path(segments[:-1])} is not a list")
        if revision.op == "add" and last != len(container):
            return reject(f"add appends at index {len(container)}, not [{last}]")
    elif not created and not isinstance(container, dict):
        return reject(f"{format_path(segments[:-1])} is not an object")

    value = copy.deepcopy(revision.value)
    for key in created:
        container[key] = {}
        container = container[key]
    if isinstance(last, int) and revision.op == "add":
        container.append(value)
    else:
        container[last] = value
    return Applied(revision)


_MISSING = object()
_PLACEHOLDER = re.compile(r"<[^<>]*>")


def _has_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return _PLACEHOLDER.fullmatch(value.strip()) is not None
    if isinstance(value, dict):
        return any(_has_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_placeholder(v) for v in value)
    return False


def _child(container: Any, segment: Segment) -> Any:
    if isinstance(segment, int):
        if isinstance(container, list) and 0 <= segment < len(container):
            return container[segment]
        return _MISSING
    if isinstance(container, dict):
        return container.get(segment, _MISSING)
    return _MISSING


def apply_all(memory: dict[str, Any], revisions: Iterable[Revision], schema: type,
              allow_updates: bool = True) -> tuple[list[Applied], list[Rejected]]:
    applied: list[Applied] = []
    rejected: list[Rejected] = []
    for revision in revisions:
        outcome = apply(memory, revision, schema, allow_updates)
        if isinstance(outcome, Applied):
            applied.append(outcome)
        else:
            rejected.append(outcome)
    return applied, rejected


def replay(base: dict[str, Any], revisions: Iterable[Revision], schema: type) -> dict[str, Any]:
    """The memory a base plus a list of amendments stands for (later ones win)."""
    memory = copy.deepcopy(base)
    apply_all(memory, revisions, schema)
    return memory


# ---- reading model output --------------------------------------------------------------

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n(.*?)(?:```|\Z)", re.DOTALL)


def parse_revisions(text: str) -> tuple[list[Revision], list[str]]:
    """Revisions found in model output, and what could not be read.

    Reads a JSON list of {"path", "op", "value"} objects, also inside ```json fences,
    after chatter, with trailing junk, or cut off mid-list (the complete items count);
    one object per line; and PRISM's own form {"<path>": {"add": value}}.
    """
    fenced = _FENCE.findall(text)
    body = "\n".join(fenced) if fenced else text
    decoder = json.JSONDecoder(strict=False)  # models put raw newlines in strings
    revisions: list[Revision] = []
    errors: list[str] = []
    i = 0
    found_any = False
    while i < len(body):
        start = _next_json_start(body, i)
        if start < 0:
            break
        try:
            value, end = decoder.raw_decode(body, start)
        except json.JSONDecodeError:
            if body[start] == "[":
                items, item_errors, end = _salvage_list(body, start + 1)
                found_any = True
                _collect(items, revisions, errors)
                errors += item_errors
                i = end
                continue
            i = start + 1
            continue
        found_any = True
        _collect(value if isinstance(value, list) else [value], revisions, errors)
        i = end
    if not found_any and text.strip():
        errors.append("no JSON found in the answer")
    return revisions, errors


def _next_json_start(text: str, i: int) -> int:
    starts = [p for p in (text.find("[", i), text.find("{", i)) if p >= 0]
    return min(starts) if starts else -1


def _salvage_list(text: str, i: int) -> tuple[list[Any], list[str], int]:
    """The complete items of a list whose end is missing or broken."""
    decoder = json.JSONDecoder(strict=False)  # models put raw newlines in strings
    items: list[Any] = []
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            return items, [], min(i + 1, len(text))
        try:
            value, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            return items, [f"unreadable list item after {len(items)} item(s): {exc.msg}"], len(text)
        items.append(value)


def _collect(items: Sequence[Any], out: list[Revision], errors: list[str]) -> None:
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            errors.append(f"item {n} is {type(item).__name__}, not an object")
            continue
        if "path" in item or "op" in item:
            missing = [k for k in ("path", "op", "value") if k not in item]
            if missing:
                errors.append(f"item {n} lacks {', '.join(missing)}")
                continue
            path, op = item["path"], item["op"]
            if not isinstance(path, str) or not isinstance(op, str):
                errors.append(f"item {n}: path and op must be strings")
                continue
            out.append(Revision(path.strip(), op.strip().lower(), item["value"]))
            continue
        # PRISM's form: {"$.'a'.'b'": {"add": value}}, several paths per object.
        readable = False
        for path, body in item.items():
            if isinstance(path, str) and path.strip().startswith("$") and isinstance(body, dict) and len(body) == 1:
                (op, value), = body.items()
                out.append(Revision(path.strip(), str(op).strip().lower(), value))
                readable = True
        if not readable:
            errors.append(f"item {n} is not a revision: {json.dumps(item)[:80]}")


# ---- grammar --------------------------------------------------------------------------

# Any quoted key; dict keys may hold dots, so only quotes and backslashes are excluded,
# and angle brackets: a small model copies the <key> placeholder of the example.
_KEY = r"""'[^'"\\<>]+'"""


def _template_pattern(template: tuple[Segment | None, ...]) -> str:
    parts = []
    for segment in template:
        if segment is None:
            parts.append("[.]" + _KEY)
        else:
            parts.append("[.]'" + re.escape(str(segment)).replace("'", "") + "'")
    # [$] and [.] rather than backslash escapes: llama.cpp's converter copies those into
    # the grammar literally.
    return "^[$]" + "".join(parts) + "$"


@dataclass(frozen=True)
class Target:
    """One kind of place a revision may name: a fixed path or a pattern, and its type."""

    type: Any
    path: str | None = None  # exact path, e.g. "$.'purpose'"
    pattern: str | None = None  # regular expression for the path


def targets_of(schema: type, max_depth: int = 2) -> list[Target]:
    """Every addressable place of the schema down to `max_depth` segments."""
    out = []
    for template, t in walk_templates(schema, max_depth):
        concrete = [segment for segment in template if segment is not None]
        if len(concrete) < len(template):
            out.append(Target(t, pattern=_template_pattern(template)))
        else:
            out.append(Target(t, path=format_path(concrete)))
    return out


def revision_json_schema(schema: type | None = None, *, ops: Sequence[str] = OPS, typed: bool = True,
                         targets: Sequence[Target] | None = None, min_items: int = 0, max_items: int = 8,
                         max_string: int | None = None, max_depth: int = 2) -> dict[str, Any]:
    """A JSON schema for a list of revisions, for llama.cpp's grammar converter.

    Generic (`typed=False`): any path in PRISM syntax and any JSON value. Typed: one
    alternative per place in the schema (or per given target), so a path can only come
    with a value of its type.
    """
    op_schema = {"enum": list(ops)}
    if not typed:
        item = {"type": "object",
                "properties": {"path": {"type": "string", "pattern": "^[$]([.]" + _KEY + ")+$"},
                               "op": op_schema, "value": {}},
                "required": ["path", "op", "value"], "additionalProperties": False}
    else:
        if targets is not None:
            places = list(targets)
        elif schema is not None:
            places = targets_of(schema, max_depth)
        else:
            raise ValueError("a typed revision grammar needs a schema or targets")
        if not places:
            raise ValueError("no targets for a typed revision grammar")
        variants = []
        for place in places:
            path = {"const": place.path} if place.path is not None else {"type": "string", "pattern": place.pattern}
            variants.append({"type": "object",
                             "properties": {"path": path, "op": op_schema,
                                            "value": json_schema(place.type, max_string, plain_text=True)},
                             "required": ["path", "op", "value"], "additionalProperties": False})
        item = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {"type": "array", "items": item, "minItems": min_items, "maxItems": max(max_items, min_items)}
