"""The names a model strategy offers the model: unique, and always a grammar llama.cpp parses."""

from __future__ import annotations

import json
from dataclasses import dataclass

from prism_code.parse import parse_source
from prism_code.tasks.find_outcome import answer_grammar, candidate_labels, parse_function_json
from prism_code.tasks.find_wim import name_grammar

CPP = b'''
namespace nl {
struct json_pointer { const char* text; };
json_pointer operator""_json_pointer(const char* s, unsigned long n) { return json_pointer{s}; }
json_pointer operator""_json(const char* s, unsigned long n) { return json_pointer{s}; }
}
'''


@dataclass(frozen=True)
class Candidate:
    path: str
    qualname: str


def test_a_user_defined_literal_operator_is_offered_under_a_grammar_that_parses():
    parsed = parse_source("json.hpp", CPP)
    assert parsed is not None
    found = [Candidate("json.hpp", d.qualname) for d in parsed.definitions]
    assert any('"' in c.qualname for c in found)  # C++ names this operator with two quotes
    labels = candidate_labels(found + [Candidate("other.hpp", found[-1].qualname)])
    assert len(set(labels)) == len(labels)
    assert all('"' not in label and "\\" not in label for label in labels)
    answer_grammar(labels)  # raised "error parsing grammar" on semble's nlohmann-json question
    name_grammar(labels, "why", 40)
    answer = json.dumps({"function": labels[-1]})
    assert parse_function_json(answer, labels) == labels[-1]
