"""Property-based checks of the revision engine: whatever a model proposes, memory stays valid.

Revisions are drawn from a mix of real paths, wrong paths, both ops and values of every
JSON type, the way a small model's output varies. Memory is partial by construction (a
field appears when its first revision adds it), so "valid" means every value present fits
its schema type.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from prism_code.memory.code_schemas import FunctionNote
from prism_code.memory.revisions import Applied, Revision, apply, parse_revisions, replay
from prism_code.memory.schema import PathError, format_path, parse_path, type_at, validate


@dataclass
class Memory:
    candidate_functions: dict[str, FunctionNote]
    groups: dict[str, dict[str, str]]
    seen: list[str]
    summary: str
    best: Optional[str] = None
    rounds: int = 0


KEYS = st.sampled_from(["parse_args", "load", "Greeter.greet", "a b", "it's", "x.y"])
FIELDS = st.sampled_from(["candidate_functions", "groups", "seen", "summary", "best", "rounds", "nope"])
NOTE_FIELDS = st.sampled_from(["purpose", "input", "output", "procedure", "extra"])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
notes = st.fixed_dictionaries({f: st.text(max_size=10) for f in ("purpose", "input", "output", "procedure")})


@st.composite
def paths(draw) -> str:
    segments = [draw(FIELDS)]
    for _ in range(draw(st.integers(0, 3))):
        segments.append(draw(KEYS | NOTE_FIELDS | st.integers(0, 2)))
    return format_path(tuple(segments))


def values_for(path: str) -> st.SearchStrategy:
    # Mostly values of the right type, so revisions get applied; sometimes anything.
    try:
        t = type_at(Memory, parse_path(path))
    except PathError:
        return json_values
    by_type = {str: st.text(max_size=12), int: st.integers(0, 9), FunctionNote: notes,
               dict[str, str]: st.dictionaries(KEYS, st.text(max_size=6), max_size=2),
               list[str]: st.lists(st.text(max_size=6), max_size=2),
               dict[str, FunctionNote]: st.dictionaries(KEYS, notes, max_size=2),
               dict[str, dict[str, str]]: st.dictionaries(KEYS, st.dictionaries(KEYS, st.text(max_size=4)),
                                                          max_size=2)}
    return by_type.get(t, json_values) | json_values


@st.composite
def revisions(draw) -> Revision:
    path = draw(paths())
    op = draw(st.sampled_from(["add", "update", "add", "delete"]))
    return Revision(path, op, draw(values_for(path)))


def present_problems(memory: dict) -> list[str]:
    return [p for p in validate(memory, Memory) if "missing field" not in p]


def existing_paths(memory: object, prefix: tuple = ()) -> list[str]:
    out = [format_path(prefix)] if prefix else []
    if isinstance(memory, dict):
        for key, value in memory.items():
            out += existing_paths(value, prefix + (key,))
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_memory_is_valid_after_every_revision_and_rejections_change_nothing(data: st.DataObject) -> None:
    memory: dict = {}
    applied: list[Revision] = []
    for _ in range(data.draw(st.integers(0, 25))):
        revision = data.draw(revisions())
        known = existing_paths(memory)
        if known and data.draw(st.booleans()):
            # Revisit a path the memory has, as a model does when it corrects itself.
            path = data.draw(st.sampled_from(known))
            revision = Revision(path, data.draw(st.sampled_from(["update", "add"])), data.draw(values_for(path)))
        before = copy.deepcopy(memory)
        outcome = apply(memory, revision, Memory)
        if isinstance(outcome, Applied):
            applied.append(revision)
        else:
            assert memory == before, outcome.reason
            assert outcome.reason
        assert present_problems(memory) == []
    # The amendments encoding shows base + applied revisions; replaying them must give
    # back the memory the in-place encoding shows.
    assert replay({}, applied, Memory) == memory


@settings(max_examples=200, deadline=None)
@given(st.lists(revisions(), max_size=12))
def test_add_creates_and_update_replaces(steps: list[Revision]) -> None:
    memory: dict = {}
    for revision in steps:
        segments = parse_path(revision.path) if _parses(revision.path) else None
        existed = segments is not None and _lookup(memory, segments) is not _MISSING
        outcome = apply(memory, revision, Memory)
        if isinstance(outcome, Applied):
            assert existed == (revision.op == "update")
            assert _lookup(memory, segments) == revision.value


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | st.lists(revisions(), max_size=4).map(
    lambda rs: "[" + ", ".join(r.line() for r in rs)))
def test_reading_any_model_output_never_raises(text: str) -> None:
    proposed, errors = parse_revisions(text)
    assert all(isinstance(r, Revision) for r in proposed)
    assert all(isinstance(e, str) for e in errors)


_MISSING = object()


def _parses(path: str) -> bool:
    try:
        parse_path(path)
        return True
    except PathError:
        return False


def _lookup(memory: object, segments: tuple) -> object:
    for segment in segments:
        if isinstance(memory, dict) and isinstance(segment, str) and segment in memory:
            memory = memory[segment]
        elif isinstance(memory, list) and isinstance(segment, int) and 0 <= segment < len(memory):
            memory = memory[segment]
        else:
            return _MISSING
    return memory
