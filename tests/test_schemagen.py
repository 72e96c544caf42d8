"""Model-written schemas: read with ast, built with make_dataclass, never executed."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Optional

import pytest

from prism_code.llm.runtime import Generation, GenerationStats
from prism_code.memory.revisions import Applied, Revision, apply
from prism_code.memory.schema import fields_of, schema_source, type_at, validate
from prism_code.memory.schemagen import (
    DEFAULT_FALLBACK,
    SchemaParseError,
    generate_schema,
    parse_schema_source,
    schema_prompt,
)

VALID = '''Here is the schema:
```python
@dataclass
class FunctionInfo:
    """What one function does."""
    purpose: str
    arguments: list[str]
    returns: Optional[str] = None
    confidence: float

@dataclasses.dataclass
class FunctionMatch:
    """functions is keyed by the exact function name."""
    functions: dict[str, "FunctionInfo"]
    best: str | None
    @dataclass
    class Evidence:
        quote: str
        line: int
    evidence: dict[str, list[Evidence]]
```
'''


def test_a_valid_answer_becomes_dataclasses():
    root = parse_schema_source(VALID)
    assert root.__name__ == "FunctionMatch" and dataclasses.is_dataclass(root)
    fields = fields_of(root)
    info = fields["functions"].__args__[1]
    assert info.__name__ == "FunctionInfo"
    assert fields_of(info) == {"purpose": str, "arguments": list[str], "returns": Optional[str],
                               "confidence": float}
    assert fields["best"] == Optional[str]
    assert type_at(root, "$.'evidence'.'parse'[0].'line'") is int
    assert root.__doc__ == "functions is keyed by the exact function name."
    source = schema_source(root)
    assert source.index("class FunctionInfo:") < source.index("class FunctionMatch:")
    assert validate({"functions": {}, "best": None, "evidence": {"f": [{"quote": "q", "line": 3}]}}, root) == []
    # The revision engine works on it like on a hand-written schema.
    memory: dict = {}
    note = {"purpose": "p", "arguments": ["x"], "returns": None, "confidence": 0.5}
    assert isinstance(apply(memory, Revision("$.'functions'.'f'", "add", note), root), Applied)


@pytest.mark.parametrize("answer, reason", [
    ("import os\n@dataclass\nclass A:\n    x: str\n", "line 1: Import is not allowed"),
    ("from typing import Optional\n@dataclass\nclass A:\n    x: str\n", "line 1: ImportFrom is not allowed"),
    ("@dataclass\nclass A:\n    x: int = len('abc')\n", "field x may only default to None"),
    ("@dataclass\nclass A:\n    x: str\nexec('print(1)')\n", "line 4: Expr is not allowed"),
    ("@dataclass\nclass A:\n    x: str\n    def run(self):\n        return 1\n", "FunctionDef is not allowed"),
    ("@dataclass\nclass A:\n    x: str\n    y = __import__('os')\n", "Assign is not allowed"),
    ("@dataclass(frozen=True)\nclass A:\n    x: str\n", "not decorated with a plain @dataclass"),
    ("class A:\n    x: str\n", "not decorated with a plain @dataclass"),
    ("@dataclass\nclass A(dict):\n    x: str\n", "may not have bases"),
    ("@dataclass\nclass A:\n    x: tuple[str, str]\n", "unknown type tuple"),
    ("@dataclass\nclass A:\n    x: list[str, int]\n", "list takes one type, not (str, int)"),
    ("@dataclass\nclass A:\n    x: dict[int, str]\n", "dict keys must be str"),
    ("@dataclass\nclass A:\n    x: Mystery\n", "unknown type Mystery"),
    ("@dataclass\nclass A:\n    x: 'os.system(1)'\n", "unknown type os"),
    ("@dataclass\nclass A:\n    kids: list['A']\n", "class A refers to itself"),
    ("@dataclass\nclass A:\n    x: str\n    x: int\n", "field x is declared twice"),
    ("@dataclass\nclass A:\n    x str\n", "not valid Python"),
    ("Sorry, I cannot write that.", "not valid Python"),
    ("x = 1\n", "line 1: Assign is not allowed"),
    ("", "no dataclass in the answer"),
])
def test_anything_but_plain_dataclasses_is_refused_with_a_reason(answer, reason):
    with pytest.raises(SchemaParseError, match=re.escape(reason)):
        parse_schema_source(answer)


def test_parsing_never_runs_the_answer(tmp_path: Path):
    marker = tmp_path / "ran"
    for answer in (f"@dataclass\nclass A:\n    x: str = open({str(marker)!r}, 'w').write('x')\n",
                   f"__import__('pathlib').Path({str(marker)!r}).touch()\n@dataclass\nclass A:\n    x: str\n",
                   f"@dataclass\nclass A:\n    x: str\n    __import__('pathlib').Path({str(marker)!r}).touch()\n"):
        with pytest.raises(SchemaParseError):
            parse_schema_source(answer)
    assert not marker.exists()


class CannedSession:
    """The real tokenizer and prompt building, with a fixed answer instead of decoding."""

    def __init__(self, session, answer: str) -> None:
        self._session = session
        self._answer = answer

    def __getattr__(self, name):
        return getattr(self._session, name)

    def generate(self, prompt_tokens, max_tokens=256, stop=(), **kwargs) -> Generation:
        return Generation(self._answer, [], GenerationStats(len(prompt_tokens), 0, 0, 1, 0.0, 0.0, "stop"))


def test_a_refused_answer_falls_back_and_says_why(model_session):
    hostile = ' Notes:\n    facts: dict[str, str]\n\nimport subprocess\nsubprocess.run(["rm", "-rf", "/"])\n'
    result = generate_schema(CannedSession(model_session, hostile), "Code search.", "Find the parser.")
    assert not result.generated
    assert result.schema is DEFAULT_FALLBACK
    assert result.reason == "line 5: Import is not allowed; only classes"
    assert result.source == schema_source(DEFAULT_FALLBACK)
    good = generate_schema(CannedSession(model_session, ' Memo:\n    """k"""\n    facts: dict[str, str]\n'),
                           "Code search.", "Find the parser.")
    assert good.generated and good.reason == "" and good.schema.__name__ == "Memo"


def test_the_prompt_opens_the_answer_inside_a_dataclass(model_session):
    tokens = schema_prompt(model_session, "Code search over a repository.", "Find the function that parses flags.")
    text = model_session.detokenize(tokens)
    assert text.endswith("assistant\n```python\n@dataclass\nclass")
    assert "[Query domain]\nCode search over a repository." in text


@pytest.mark.model
def test_the_model_writes_a_schema_or_a_reasoned_fallback(model_session):
    result = generate_schema(
        model_session,
        "Retrieving the exact name of a function from a description of its purpose, input, output and "
        "procedure. Documents are files of code.",
        "Find the function that turns a title into a URL slug by lowercasing it and joining its words.")
    assert result.generated or result.reason
    # Whatever was chosen is a usable schema whose source parses back to the same fields.
    reparsed = parse_schema_source(result.source)
    assert list(fields_of(reparsed)) == list(fields_of(result.schema))
