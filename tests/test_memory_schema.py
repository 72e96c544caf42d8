"""Memory schemas: source rendering, PRISM paths, type resolution and value validation."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

import pytest

from prism_code.memory.code_schemas import FunctionMemory, FunctionNote
from prism_code.memory.schema import (
    PathError,
    SchemaError,
    check_type,
    format_path,
    json_schema,
    parse_path,
    records,
    schema_source,
    type_at,
    validate,
)


@dataclass
class Description:
    """What a function does."""

    purpose: str
    input: str = field(metadata={"doc": "its parameters"})


@dataclass
class Finding:
    score: float
    tags: list[str]
    seen: bool


@dataclass
class Candidates:
    """candidate_functions is keyed by the exact function name."""

    candidate_functions: dict[str, Description]
    findings: list[Finding]
    best: Optional[str] = None
    count: int = 0


@dataclass
class Node:
    children: list[Node]


def test_schema_source_lists_dependencies_first_and_parses_back():
    source = schema_source(Candidates)
    tree = ast.parse(source)
    assert [n.name for n in tree.body] == ["Description", "Finding", "Candidates"]
    assert '"""candidate_functions is keyed by the exact function name."""' in source
    assert "    candidate_functions: dict[str, Description]" in source
    assert "    best: Optional[str]" in source
    assert "    input: str  # its parameters" in source
    # dataclass() invents a docstring for classes without one; it must not be shown.
    assert "Finding(score" not in source
    assert [c.__name__ for c in records(FunctionMemory)] == ["FunctionNote", "FunctionMemory"]


@pytest.mark.parametrize("text, segments", [
    ("$.'candidate_functions'.'parse_args'", ("candidate_functions", "parse_args")),
    ("$.'functions'.'Greeter.greet'.'purpose'", ("functions", "Greeter.greet", "purpose")),
    ("$.'findings'[3].'tags'[0]", ("findings", 3, "tags", 0)),
    ("$.'it\\'s'", ("it's",)),
    ("$.attributes.Noise Level", ("attributes", "Noise Level")),  # CoK's bare form
    ("$['candidate_functions']['f']", ("candidate_functions", "f")),
    ("  $  ", ()),
])
def test_parse_path(text, segments):
    assert parse_path(text) == segments


@pytest.mark.parametrize("text", ["candidate_functions.f", "$.'open", "$[x]", "$[-1]", "$.", "$..'a'", "$[2",
                                  "$ 'a'"])
def test_malformed_paths_are_refused(text):
    with pytest.raises(PathError):
        parse_path(text)


def test_format_path_round_trips():
    segments = ("functions", "Greeter.greet", 2, "it's")
    assert format_path(segments) == "$.'functions'.'Greeter.greet'[2].'it\\'s'"
    assert parse_path(format_path(segments)) == segments


def test_type_at_follows_fields_dict_keys_and_indices():
    assert type_at(Candidates, "$.'candidate_functions'.'parse_args'") is Description
    assert type_at(Candidates, "$.'candidate_functions'.'parse_args'.'purpose'") is str
    assert type_at(Candidates, "$.'findings'[0].'tags'[1]") is str
    assert type_at(Candidates, "$.'best'") == Optional[str]
    assert type_at(Candidates, "$") is Candidates


@pytest.mark.parametrize("path, message", [
    ("$.'nope'", "'nope' is not a field of Candidates"),
    ("$.'candidate_functions'[0]", "has no index [0]"),
    ("$.'findings'.'x'", "has no key 'x'"),
    ("$.'count'.'x'", "int, which has no key"),
    ("$.'candidate_functions'.'f'.'colour'", "'colour' is not a field of Description"),
])
def test_type_at_explains_paths_outside_the_schema(path, message):
    with pytest.raises(PathError, match=message.replace("[", r"\[").replace("]", r"\]")):
        type_at(Candidates, path)


def test_validate_accepts_fitting_values():
    value = {"candidate_functions": {"f": {"purpose": "p", "input": "i"}},
             "findings": [{"score": 1, "tags": ["a"], "seen": False}], "best": None}
    assert validate(value, Candidates) == []
    assert validate(2.5, float) == [] and validate(2, float) == []


def test_validate_reports_each_problem_with_its_path():
    value = {"candidate_functions": {"f": {"purpose": 3}}, "findings": [{"score": True, "tags": "a", "seen": 1}],
             "extra": 1}
    problems = validate(value, Candidates)
    assert "$.'candidate_functions'.'f'.'purpose': expected str, got int" in problems
    assert "$.'candidate_functions'.'f': missing field 'input' of Description" in problems
    assert "$.'findings'[0].'score': expected float, got bool" in problems
    assert "$.'findings'[0].'tags': expected list[str], got str" in problems
    assert "$.'findings'[0].'seen': expected bool, got int" in problems
    assert "$: 'extra' is not a field of Candidates" in problems
    # Fields with defaults or Optional types may be left out; the others may not.
    assert any("missing field 'findings'" in p for p in validate({"candidate_functions": {}}, Candidates))
    assert validate(True, int) == ["$: expected int, got bool"]
    assert validate(None, str) == ["$: expected str, got null"]


def test_check_type_refuses_types_outside_the_hierarchy():
    check_type(Candidates)

    @dataclass
    class WithTuple:
        pair: tuple[str, str]

    @dataclass
    class IntKeys:
        by_id: dict[int, str]

    @dataclass
    class Dangling:
        other: Missing  # noqa: F821 - undefined on purpose: the schema check must report it

    for bad, message in ((WithTuple, "not an allowed memory type"), (IntKeys, "dict keys must be str"),
                         (Node, "refers to itself"),
                         (Dangling, "'Missing' is not defined")):
        with pytest.raises(SchemaError, match=message):
            check_type(bad)


def test_json_schema_of_a_record_lists_fields_in_order():
    schema = json_schema(FunctionNote)
    assert list(schema["properties"]) == ["purpose", "input", "output", "procedure"]
    assert schema["required"] == ["purpose", "input", "output", "procedure"]
    assert json_schema(Candidates)["properties"]["best"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert json_schema(dict[str, list[int]]) == {"type": "object",
                                                  "additionalProperties": {"type": "array",
                                                                           "items": {"type": "integer"}}}
