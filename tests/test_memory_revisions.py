"""Memory revisions per PRISM Def. 3.4: add vs update, rejections with reasons, tolerant reading."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import pytest

from prism_code.llm.json_grammar import json_layout_grammar
from prism_code.memory.code_schemas import FunctionNote
from prism_code.memory.revisions import (
    Applied,
    Rejected,
    Revision,
    Target,
    apply,
    apply_all,
    parse_revisions,
    replay,
    revision_json_schema,
    targets_of,
)
from prism_code.memory.schema import PLAIN_TEXT


@dataclass
class Memory:
    candidate_functions: dict[str, FunctionNote]
    groups: dict[str, dict[str, str]]
    seen: list[str]
    summary: str


NOTE = {"purpose": "p", "input": "i", "output": "o", "procedure": "r"}


def rejected(memory: dict, revision: Revision, allow_updates: bool = True) -> str:
    before = copy.deepcopy(memory)
    outcome = apply(memory, revision, Memory, allow_updates)
    assert isinstance(outcome, Rejected), outcome
    assert memory == before, "a rejected revision must leave the memory unchanged"
    return outcome.reason


def test_add_creates_a_new_path_and_its_missing_dict_parent():
    memory: dict = {}
    outcome = apply(memory, Revision("$.'candidate_functions'.'parse_args'", "add", NOTE), Memory)
    assert isinstance(outcome, Applied)
    assert memory == {"candidate_functions": {"parse_args": NOTE}}
    # Two levels of missing dict-typed slots are created on the way.
    assert isinstance(apply(memory, Revision("$.'groups'.'io'.'read'", "add", "reads"), Memory), Applied)
    assert memory["groups"] == {"io": {"read": "reads"}}
    assert isinstance(apply(memory, Revision("$.'summary'", "add", "s"), Memory), Applied)


def test_add_refuses_an_existing_path():
    memory = {"candidate_functions": {"f": NOTE}}
    reason = rejected(memory, Revision("$.'candidate_functions'.'f'", "add", NOTE))
    assert reason == "$.'candidate_functions'.'f' already exists: use update to replace it"


def test_update_replaces_an_existing_value_only():
    memory = {"candidate_functions": {"f": NOTE}, "summary": "old"}
    new = dict(NOTE, purpose="better")
    assert isinstance(apply(memory, Revision("$.'candidate_functions'.'f'", "update", new), Memory), Applied)
    assert isinstance(apply(memory, Revision("$.'candidate_functions'.'f'.'output'", "update", "x"), Memory), Applied)
    assert memory["candidate_functions"]["f"] == dict(new, output="x")
    reason = rejected(memory, Revision("$.'candidate_functions'.'g'", "update", NOTE))
    assert reason == "$.'candidate_functions'.'g' does not exist: use add to create it"
    # update never creates parents either
    assert rejected(memory, Revision("$.'groups'.'io'.'read'", "update", "r")) == "the parent $.'groups' does not exist"


def test_values_must_fit_the_schema_type_at_their_path():
    memory: dict = {}
    reason = rejected(memory, Revision("$.'candidate_functions'.'f'", "add", {"purpose": 3}))
    assert reason.startswith("value does not fit the schema: ")
    assert "$.'candidate_functions'.'f'.'purpose': expected str, got int" in reason
    assert "missing field 'input'" in reason
    assert "expected list[str], got str" in rejected(memory, Revision("$.'seen'", "add", "a"))


@pytest.mark.parametrize("path, message", [
    ("candidate_functions.f", "bad path: a path starts with $"),
    ("$.'candidate_functions", "bad path: unterminated quote"),
    ("$.'nope'", "bad path: 'nope' is not a field of Memory"),
    ("$", "the root cannot be revised"),
    ("$.'candidate_functions'.'<key>'", "'<key>' is a placeholder, not a real key"),
])
def test_malformed_paths_are_rejected_with_a_reason(path, message):
    assert rejected({}, Revision(path, "add", NOTE)).startswith(message)


def test_placeholder_values_copied_from_the_example_are_rejected():
    value = dict(NOTE, input="<input>")
    assert rejected({}, Revision("$.'candidate_functions'.'f'", "add", value)) == \
        "the value holds a <placeholder> from the example, not content"
    assert isinstance(apply({}, Revision("$.'summary'", "add", "a < b <c> d"), Memory), Applied)


def test_record_parents_are_not_invented():
    # A missing record cannot be created empty: its fields are required.
    reason = rejected({}, Revision("$.'candidate_functions'.'f'.'purpose'", "add", "p"))
    assert reason == "the parent $.'candidate_functions'.'f' does not exist"


def test_list_adds_append_at_the_end_only():
    memory = {"seen": ["a"]}
    assert isinstance(apply(memory, Revision("$.'seen'[1]", "add", "b"), Memory), Applied)
    assert memory["seen"] == ["a", "b"]
    assert rejected(memory, Revision("$.'seen'[5]", "add", "c")) == "add appends at index 2, not [5]"
    expected = "$.'seen'[0] already exists: use update to replace it"
    assert rejected(memory, Revision("$.'seen'[0]", "add", "c")) == expected
    assert isinstance(apply(memory, Revision("$.'seen'[0]", "update", "z"), Memory), Applied)
    assert memory["seen"] == ["z", "b"]


def test_updates_can_be_disabled_and_unknown_ops_are_refused():
    memory = {"summary": "s"}
    assert rejected(memory, Revision("$.'summary'", "update", "t"), allow_updates=False) == \
        "updates are disabled in this pass: only add"
    assert rejected(memory, Revision("$.'summary'", "delete", None)) == "unknown op 'delete' (add or update)"


def test_apply_all_counts_and_replay_rebuilds_amendments():
    revisions = [Revision("$.'summary'", "add", "v1"), Revision("$.'summary'", "add", "again"),
                 Revision("$.'summary'", "update", "v2"), Revision("$.'seen'", "add", ["x"])]
    memory: dict = {}
    applied, refused = apply_all(memory, revisions, Memory)
    assert [a.revision.value for a in applied] == ["v1", "v2", ["x"]]
    assert [r.revision.value for r in refused] == ["again"]
    assert replay({}, [a.revision for a in applied], Memory) == memory == {"summary": "v2", "seen": ["x"]}


# ---- reading model output -----------------------------------------------------------------


def test_parse_a_plain_list():
    revisions, errors = parse_revisions('[{"path": "$.\'summary\'", "op": "add", "value": "s"}]')
    assert revisions == [Revision("$.'summary'", "add", "s")] and errors == []


def test_parse_fenced_output_with_chatter_and_trailing_junk():
    text = ('Sure! Here are the revisions:\n```json\n[\n  {"path": "$.\'seen\'", "op": "ADD", "value": ["a"]},\n'
            '  {"path": "$.\'summary\'", "op": "update", "value": "line one\nline two"}\n]\n```\nHope this helps.')
    revisions, errors = parse_revisions(text)
    assert revisions == [Revision("$.'seen'", "add", ["a"]), Revision("$.'summary'", "update", "line one\nline two")]
    assert errors == []


def test_parse_keeps_the_complete_items_of_a_cut_off_list():
    text = '[{"path": "$.\'seen\'", "op": "add", "value": ["a"]}, {"path": "$.\'summary\'", "op": "add", "val'
    revisions, errors = parse_revisions(text)
    assert revisions == [Revision("$.'seen'", "add", ["a"])]
    assert len(errors) == 1 and errors[0].startswith("unreadable list item after 1 item(s)")


def test_parse_prism_dict_form_and_json_lines():
    text = ('{"$.\'candidate_functions\'.\'f\'": {"add": {"purpose": "p"}}}\n'
            '{"path": "$.\'summary\'", "op": "add", "value": "s"}')
    revisions, errors = parse_revisions(text)
    assert revisions == [Revision("$.'candidate_functions'.'f'", "add", {"purpose": "p"}),
                         Revision("$.'summary'", "add", "s")]
    assert errors == []


def test_parse_reports_what_it_cannot_read():
    revisions, errors = parse_revisions('[{"path": "$.\'a\'", "value": 1}, 3, {"foo": 1}]')
    assert revisions == []
    assert errors == ["item 1 lacks op", "item 2 is int, not an object", 'item 3 is not a revision: {"foo": 1}']
    assert parse_revisions("I cannot help with that.") == ([], ["no JSON found in the answer"])
    assert parse_revisions("") == ([], [])


# ---- grammars -------------------------------------------------------------------------------


def test_typed_revision_schema_pairs_each_place_with_its_type():
    places = {t.path or t.pattern: t.type for t in targets_of(Memory)}
    assert places["$.'summary'"] is str
    assert places["^[$][.]'candidate_functions'[.]'[^'\"\\\\<>]+'$"] is FunctionNote
    schema = revision_json_schema(Memory, ops=("add",))
    variants = schema["items"]["anyOf"]
    summary = next(v for v in variants if v["properties"]["path"] == {"const": "$.'summary'"})
    assert summary["properties"]["value"] == PLAIN_TEXT
    assert summary["properties"]["op"] == {"enum": ["add"]}


@pytest.mark.parametrize("typed", [True, False])
def test_revision_schemas_convert_to_llama_grammars(typed):
    grammar = json_layout_grammar(revision_json_schema(Memory, typed=typed, min_items=1, max_items=3))
    text = grammar._grammar
    assert 'space ::= ("\\n" [ ]{0,12} | " ")?' in text
    assert "root ::=" in text


def test_explicit_targets_narrow_the_grammar():
    schema = revision_json_schema(targets=[Target(str, path="$.'summary'")], ops=("update",), max_items=1)
    assert schema["items"]["properties"]["path"] == {"const": "$.'summary'"}
    assert schema["maxItems"] == 1
