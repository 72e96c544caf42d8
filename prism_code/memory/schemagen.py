"""Model-written memory schemas (PRISM Sec. 3.4, App. D), read as data and never run.

The model gets a query domain and an example query, after two worked examples, and
answers with dataclass source. The answer is parsed with `ast` and accepted only if
it is nothing but @dataclass classes whose bodies are a docstring and annotated fields
of the allowed types; the classes are then built with dataclasses.make_dataclass.
Anything else (a call, an import, a method, a default that is not None) means the
fallback schema is used, and the result says why.
"""

from __future__ import annotations

import ast
import dataclasses
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass
from textwrap import dedent
from typing import TYPE_CHECKING, Any

from prism_code.memory.schema import SchemaError, check_type, schema_source

if TYPE_CHECKING:
    from prism_code.llm.runtime import LlamaSession  # loads llama.cpp's library: typing only

MAX_CLASSES = 12
MAX_FIELDS = 30


class SchemaParseError(ValueError):
    pass


@dataclass
class SchemaResult:
    schema: type
    source: str  # the accepted schema as shown to the model later
    generated: bool  # False: the fallback is in use
    reason: str  # why the answer was refused ("" when accepted)
    raw: str  # the model's answer


@dataclass
class _Notes:
    """facts is keyed by a short name for each fact that bears on the query."""

    facts: dict[str, list[str]]


DEFAULT_FALLBACK: type = _Notes

_PRIMITIVES = {"str": str, "int": int, "float": float, "bool": bool}
_LISTS = {"list", "List"}
_DICTS = {"dict", "Dict"}


def _is_dataclass_decorator(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "dataclass"
    return (isinstance(node, ast.Attribute) and node.attr == "dataclass"
            and isinstance(node.value, ast.Name) and node.value.id == "dataclasses")


@dataclass
class _ClassSpec:
    name: str
    doc: str
    fields: list[tuple[str, ast.expr]]
    line: int


def _collect(node: ast.ClassDef, out: list[_ClassSpec]) -> None:
    where = f"line {node.lineno}"
    if not node.decorator_list or not all(_is_dataclass_decorator(d) for d in node.decorator_list):
        raise SchemaParseError(f"{where}: class {node.name} is not decorated with a plain @dataclass")
    if node.bases or node.keywords:
        raise SchemaParseError(f"{where}: class {node.name} may not have bases or keywords")
    if not node.name.isidentifier() or keyword.iskeyword(node.name) or node.name in _PRIMITIVES:
        raise SchemaParseError(f"{where}: {node.name!r} is not a usable class name")
    body = list(node.body)
    doc = ""
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc = body.pop(0).value.value
    fields: list[tuple[str, ast.expr]] = []
    for item in body:
        at = f"line {item.lineno}"
        if isinstance(item, ast.ClassDef):
            _collect(item, out)
        elif isinstance(item, ast.AnnAssign):
            if not isinstance(item.target, ast.Name) or not item.simple:
                raise SchemaParseError(f"{at}: a field must be a plain name")
            if item.value is not None and not (isinstance(item.value, ast.Constant) and item.value.value is None):
                raise SchemaParseError(f"{at}: field {item.target.id} may only default to None")
            name = item.target.id
            if name.startswith("__") or keyword.iskeyword(name):
                raise SchemaParseError(f"{at}: {name!r} is not a usable field name")
            if any(name == f for f, _ in fields):
                raise SchemaParseError(f"{at}: field {name} is declared twice")
            fields.append((name, item.annotation))
        elif isinstance(item, ast.Pass):
            continue
        else:
            raise SchemaParseError(f"{at}: {type(item).__name__} is not allowed in a schema class")
    if len(fields) > MAX_FIELDS:
        raise SchemaParseError(f"{where}: class {node.name} has more than {MAX_FIELDS} fields")
    out.append(_ClassSpec(node.name, doc, fields, node.lineno))


def _refs(annotation: ast.expr) -> set[str]:
    """Class names a field type mentions, forward references ("Name") included."""
    names = set()
    for n in ast.walk(annotation):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            try:
                names |= _refs(ast.parse(n.value, mode="eval").body)
            except SyntaxError:
                continue  # reported when the type itself is read
    return names - set(_PRIMITIVES) - _LISTS - _DICTS - {"Optional", "None"}


def _annotation(node: ast.expr, classes: dict[str, type], depth: int = 0) -> Any:
    if depth > 6:
        raise SchemaParseError("a field type is nested too deeply")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            inner = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            raise SchemaParseError(f"unreadable type {node.value!r}") from None
        return _annotation(inner, classes, depth + 1)
    if isinstance(node, ast.Name):
        if node.id in _PRIMITIVES:
            return _PRIMITIVES[node.id]
        if node.id in classes:
            return classes[node.id]
        raise SchemaParseError(f"unknown type {node.id}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [node.left, node.right]
        nones = [s for s in sides if isinstance(s, ast.Constant) and s.value is None]
        if len(nones) != 1:
            raise SchemaParseError("only `T | None` unions are allowed")
        other = next(s for s in sides if s is not nones[0])
        return _annotation(other, classes, depth + 1) | None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        head, arg = node.value.id, node.slice
        if (head in _LISTS or head == "Optional") and isinstance(arg, ast.Tuple):
            raise SchemaParseError(f"{head} takes one type, not {ast.unparse(arg)}")
        if head in _LISTS:
            return list[_annotation(arg, classes, depth + 1)]
        if head == "Optional":
            return _annotation(arg, classes, depth + 1) | None
        if head in _DICTS:
            if not (isinstance(arg, ast.Tuple) and len(arg.elts) == 2):
                raise SchemaParseError("dict takes two types")
            key = _annotation(arg.elts[0], classes, depth + 1)
            if key is not str:
                raise SchemaParseError("dict keys must be str")
            return dict[str, _annotation(arg.elts[1], classes, depth + 1)]
    raise SchemaParseError(f"type {ast.unparse(node)!r} is not allowed")


def _code_of(answer: str) -> str:
    fenced = re.findall(r"```(?:python|py)?\s*\n(.*?)(?:```|\Z)", answer, re.DOTALL)
    return fenced[0] if fenced else answer


def parse_schema_source(answer: str) -> type:
    """The root dataclass of a schema written as source; SchemaParseError says what is wrong.

    The root is the class no other class refers to (the last such one if several).
    """
    code = _code_of(answer)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise SchemaParseError(f"not valid Python: {exc.msg} (line {exc.lineno})") from None
    specs: list[_ClassSpec] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            _collect(node, specs)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a stray string is harmless
        else:
            raise SchemaParseError(f"line {node.lineno}: {type(node).__name__} is not allowed; only classes")
    if not specs:
        raise SchemaParseError("no dataclass in the answer")
    if len(specs) > MAX_CLASSES:
        raise SchemaParseError(f"more than {MAX_CLASSES} classes")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise SchemaParseError("a class name is used twice")
    by_name = {s.name: s for s in specs}
    deps = {s.name: set().union(*(_refs(a) for _, a in s.fields)) if s.fields else set() for s in specs}
    unknown = sorted(set().union(*deps.values()) - set(by_name))
    if unknown:
        raise SchemaParseError(f"unknown type {unknown[0]}")
    built: dict[str, type] = {}
    visiting: set[str] = set()

    def build(name: str) -> type:
        if name in built:
            return built[name]
        if name in visiting:
            raise SchemaParseError(f"class {name} refers to itself")
        visiting.add(name)
        for dep in sorted(deps[name]):
            build(dep)
        spec = by_name[name]
        fields = [(f, _annotation(a, built)) for f, a in spec.fields]
        cls = dataclasses.make_dataclass(name, fields, namespace={"__doc__": spec.doc.strip() or None},
                                         frozen=False)
        cls.__module__ = __name__
        visiting.discard(name)
        built[name] = cls
        return cls

    for name in names:
        build(name)
    referenced = set().union(*deps.values())
    roots = [n for n in names if n not in referenced]
    root = built[roots[-1] if roots else names[-1]]
    try:
        check_type(root)
    except SchemaError as exc:
        raise SchemaParseError(str(exc)) from None
    return root


# ---- the prompt -------------------------------------------------------------------------

_SYSTEM = (
    "You design memory schemas. A system answers a query by reading many documents one at a "
    "time, each only once, and keeps what matters for the query in a JSON memory; at the end "
    "it answers from that memory alone. Write the memory's schema as Python dataclasses whose "
    "fields are str, int, float, bool, list[T], dict[str, T], Optional[T] or another "
    "dataclass. Give every class a docstring that says how to fill it. Keep it small: what the "
    "answer needs, a little more when unsure. Answer with the code only: no imports, no "
    "methods, no defaults."
)

# Two worked examples written for this prompt, from domains away from the usual targets.
_EXAMPLES = (
    ("Finding which configuration options a code base reads, from its source files.",
     "Which environment variables does the billing service read, and what are their defaults?",
     dedent('''\
        @dataclass
        class OptionUse:
            \"\"\"Where one option is read and what it controls.\"\"\"
            files: list[str]
            default: Optional[str]
            meaning: str

        @dataclass
        class ConfigMemory:
            \"\"\"options is keyed by the exact option name.\"\"\"
            options: dict[str, OptionUse]
        ''')),
    ("Putting the events of an incident in order, from incident reports and chat logs.",
     "What went wrong during the March outage, and in which order?",
     dedent('''\
        @dataclass
        class Event:
            \"\"\"One thing that happened, with its time as the report gives it.\"\"\"
            time: str
            what: str
            cause: Optional[str]

        @dataclass
        class Timeline:
            \"\"\"events in the order they happened; actors maps each person or system to its part.\"\"\"
            events: list[Event]
            actors: dict[str, str]
        ''')),
)


def _user(domain: str, query: str) -> str:
    return f"[Query domain]\n{domain.strip()}\n\n[Example query]\n{query.strip()}\n\n[Schema]"


def schema_prompt(session: LlamaSession, domain: str, example_query: str) -> list[int]:
    s = session
    start, end = s.special_token("<|im_start|>"), s.special_token("<|im_end|>")
    newline = s.tokenize_text("\n")

    def turn(role: str, text: str) -> list[int]:
        return [start, *s.tokenize_text(f"{role}\n{text}"), end, *newline]

    tokens = s.prompt_start() + turn("system", _SYSTEM)
    for ex_domain, ex_query, ex_schema in _EXAMPLES:
        tokens += turn("user", _user(ex_domain, ex_query))
        tokens += turn("assistant", f"```python\n{ex_schema}```")
    tokens += turn("user", _user(domain, example_query))
    # The answer's opening is given: the model continues inside a class, not with imports.
    return tokens + [start, *s.tokenize_text("assistant\n```python\n@dataclass\nclass")]


def generate_schema(session: LlamaSession, domain: str, example_query: str, *,
                    fallback: type = DEFAULT_FALLBACK, max_tokens: int = 320,
                    cancelled: Callable[[], bool] | None = None) -> SchemaResult:
    """A schema for the domain written by the model, or `fallback` with the reason."""
    gen = session.generate(schema_prompt(session, domain, example_query), max_tokens=max_tokens,
                           stop=("```", "[Query domain]"), cancelled=cancelled)
    answer = "@dataclass\nclass" + gen.text
    try:
        if gen.stats.finish_reason == "length":
            raise SchemaParseError(f"the answer did not end within {max_tokens} tokens")
        schema = parse_schema_source(answer)
    except SchemaParseError as exc:
        return SchemaResult(fallback, schema_source(fallback), False, str(exc), answer)
    return SchemaResult(schema, schema_source(schema), True, "", answer)
