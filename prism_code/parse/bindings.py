"""What a file says about the names it binds: class bases, local names and their evidence, stubs.

Call resolution (prism_code.call_resolution) reads a call the way a careful reader does: a
name bound in the calling function shadows the module's; `x = Dog()`, `x: Dog` or a
parameter `animal: Animal` say which class `x.m()` looks in; `self.pet = Dog()` in any
method types `self.pet`; a class's bases say where an inherited method lives. This module
collects those facts from the tree with one query per language, in C, and Python touches
only the captured nodes.

Python, JavaScript and TypeScript are read; other languages keep no bindings (their calls
resolve by conservative rules), but Java's bases and bodiless methods are recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cache

import tree_sitter
from tree_sitter import Node

from prism_code.parse.languages import grammar
from prism_code.parse.model import Binding, BindingKind, Definition
from prism_code.parse.nodes import node_text

# A dotted name: what a receiver, a base or an annotation must be for us to follow it.
DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
# Nothing longer is read as a type or a base: real ones are a few words.
MAX_EVIDENCE_CHARS = 120
# A JS/TS body that only throws this kind of message is a placeholder, not behaviour.
_NOT_IMPLEMENTED = re.compile(r"not[\s_-]*implemented|abstract|must\s+(?:be\s+)?(?:implement|overrid)", re.I)
# Annotation wrappers that still mean "an instance of the inner type" for a call on it.
_OPTIONAL = re.compile(r"^(?:typing\.)?Optional\[(.*)\]$")
_NOTHING = frozenset({"None", "null", "undefined"})

_PYTHON = """
(class_definition superclasses: (argument_list) @bases) @class
(decorated_definition definition: (_) @decorated) @wrapper
(function_definition parameters: (parameters) @params body: (block) @body) @function
(assignment left: (_) @left) @assign
(augmented_assignment left: (identifier) @name)
(for_statement left: (_) @targets)
(for_in_clause left: (_) @targets)
(as_pattern_target) @targets
(named_expression name: (identifier) @name)
"""

_JS_COMMON = """
(class_declaration (class_heritage) @heritage) @class
(formal_parameters) @params
(variable_declarator name: (_) @left) @declare
(assignment_expression left: (member_expression object: (this) property: (property_identifier)) @left) @assign
(for_in_statement left: (_) @targets)
(catch_clause parameter: (_) @targets)
(method_definition body: (statement_block) @body) @function
(function_declaration body: (statement_block) @body) @function
"""

_TYPESCRIPT = _JS_COMMON + """
(abstract_class_declaration (class_heritage) @heritage) @class
(interface_declaration (extends_type_clause) @heritage) @class
(public_field_definition) @field
(abstract_method_signature) @stub
(interface_body (method_signature) @stub)
"""

_JAVASCRIPT = _JS_COMMON + """
(field_definition) @field
"""

_JAVA = """
(class_declaration superclass: (superclass (_) @base)) @class
(class_declaration interfaces: (super_interfaces (type_list (_) @base))) @class
(interface_declaration (extends_interfaces (type_list (_) @base))) @class
(method_declaration !body) @stub
"""

_PATTERNS = {"python": _PYTHON, "javascript": _JAVASCRIPT, "typescript": _TYPESCRIPT, "tsx": _TYPESCRIPT,
             "java": _JAVA}


@cache
def _query(language: str) -> tree_sitter.Query:
    return tree_sitter.Query(grammar(language), _PATTERNS[language])


@dataclass
class FileFacts:
    """Bindings in source order; bases, stubs and decorators by their definition's start byte."""

    bindings: list[Binding]
    bases: dict[int, tuple[str, ...]]
    stubs: set[int]
    decorators: dict[int, tuple[str, ...]]

    def annotate(self, definitions: list[Definition]) -> list[Definition]:
        """The definitions with their bases, stub flags and decorators filled in."""
        marked = self.bases.keys() | self.stubs | self.decorators.keys()
        if not marked:
            return definitions
        return [replace(d, bases=self.bases.get(d.start_byte, ()), stub=d.start_byte in self.stubs,
                        decorators=self.decorators.get(d.start_byte, ()))
                if d.start_byte in marked else d
                for d in definitions]


def read_facts(language: str, root: Node, source: bytes, definitions: list[Definition],
               max_start_depth: int) -> FileFacts:
    """The bindings, bases and stubs of one parsed file (empty for unsupported languages)."""
    if language not in _PATTERNS:
        return FileFacts([], {}, set(), {})
    cursor = tree_sitter.QueryCursor(_query(language))
    cursor.set_max_start_depth(max_start_depth)
    reader = _Reader(source)
    for _pattern, captures in cursor.matches(root):
        reader.read(captures)
    return FileFacts(_scoped(reader.found, definitions), reader.bases, reader.stubs, reader.decorators)


def _scoped(found: list[tuple[int, str, int, BindingKind, str]],
            definitions: list[Definition]) -> list[Binding]:
    """Bindings from (byte, name, line, kind, evidence), each in its innermost definition."""
    found.sort(key=lambda item: item[0])
    open_scopes: list[tuple[int, str]] = []  # (end_byte, qualname), innermost last
    following = 0
    out = []
    for position, name, line, kind, evidence in found:
        while following < len(definitions) and definitions[following].start_byte <= position:
            definition = definitions[following]
            while open_scopes and open_scopes[-1][0] <= definition.start_byte:
                open_scopes.pop()
            open_scopes.append((definition.end_byte, definition.qualname))
            following += 1
        while open_scopes and open_scopes[-1][0] <= position:
            open_scopes.pop()
        out.append(Binding(open_scopes[-1][1] if open_scopes else None, name, line, kind, evidence))
    return out


def dotted(text: str) -> str:
    """`text` when it is a dotted name short enough to follow, else ""."""
    text = text.strip()
    return text if len(text) <= MAX_EVIDENCE_CHARS and DOTTED.fullmatch(text) else ""


def annotation_class(text: str) -> str:
    """The class an annotation says a value is an instance of: `Dog`, `"Dog"`, `Optional[Dog]`,
    `Dog | None`; "" for anything else (`list[Dog]`, `type[Dog]`, `Callable[...]`)."""
    text = text.strip().lstrip(":").strip()
    if len(text) > MAX_EVIDENCE_CHARS:
        return ""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    optional = _OPTIONAL.match(text)
    if optional:
        text = optional.group(1)
    parts = [part.strip() for part in text.split("|")]
    kept = [part for part in parts if part not in _NOTHING]
    return dotted(kept[0]) if len(kept) == 1 else ""


class _Reader:
    """Turns the captures of one match at a time into bindings, bases and stubs."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.found: list[tuple[int, str, int, BindingKind, str]] = []
        self.bases: dict[int, tuple[str, ...]] = {}
        self.stubs: set[int] = set()
        self.decorators: dict[int, tuple[str, ...]] = {}

    def text(self, node: Node) -> str:
        return node_text(self.source, node)

    def add(self, at: Node, name: str, kind: BindingKind = "local", evidence: str = "") -> None:
        if kind != "local" and not evidence:
            kind = "local"
        self.found.append((at.start_byte, name, at.start_point[0] + 1, kind, evidence))

    def read(self, captures: dict[str, list[Node]]) -> None:
        if "bases" in captures:
            self._python_bases(captures["class"][0], captures["bases"][0])
        elif "decorated" in captures:
            decorators = (self._decorator(child) for child in captures["wrapper"][0].named_children
                          if child.type == "decorator")
            self.decorators[captures["decorated"][0].start_byte] = tuple(d for d in decorators if d)
        elif "heritage" in captures:
            self._js_bases(captures["class"][0], captures["heritage"][0])
        elif "base" in captures:
            cls = captures["class"][0]
            names = tuple(n for n in (_type_name(self.text(b)) for b in captures["base"]) if n)
            self.bases[cls.start_byte] = self.bases.get(cls.start_byte, ()) + names
        elif "params" in captures:
            self._parameters(captures["params"][0])
            if "body" in captures:
                self._body(captures["function"][0], captures["body"][0])
        elif "body" in captures:
            self._body(captures["function"][0], captures["body"][0])
        elif "assign" in captures or "declare" in captures:
            node = (captures.get("assign") or captures["declare"])[0]
            self._assignment(node, captures["left"][0])
        elif "field" in captures:
            self._field(captures["field"][0])
        elif "targets" in captures:
            for name in _identifiers(captures["targets"][0]):
                self.add(name, self.text(name))
        elif "name" in captures:
            name = captures["name"][0]
            self.add(name, self.text(name))
        elif "stub" in captures:
            self.stubs.add(captures["stub"][0].start_byte)

    # ---- classes --------------------------------------------------------------------------

    def _python_bases(self, cls: Node, arguments: Node) -> None:
        names = []
        for base in arguments.named_children:
            if base.type == "subscript":  # Generic[T], Base[int]: the class is the subscripted one
                value = base.child_by_field_name("value")
                base = value if value is not None else base
            if base.type in ("identifier", "attribute"):
                name = dotted(self.text(base))
                if name:
                    names.append(name)
        self.bases[cls.start_byte] = tuple(names)

    def _js_bases(self, cls: Node, heritage: Node) -> None:
        names = []
        clauses = heritage.named_children if heritage.type != "extends_type_clause" else [heritage]
        for clause in clauses:
            if clause.type == "extends_clause":
                value = clause.child_by_field_name("value")
                parts = [value] if value is not None else []
            elif clause.type in ("implements_clause", "extends_type_clause"):
                parts = list(clause.named_children)
            else:  # JavaScript: `extends Expression` directly under class_heritage
                parts = [clause]
            names += [n for n in (_type_name(self.text(part)) for part in parts) if n]
        self.bases[cls.start_byte] = self.bases.get(cls.start_byte, ()) + tuple(names)

    def _decorator(self, decorator: Node) -> str:
        """`@app.route("/")` -> "app.route"."""
        expression = decorator.named_children[0] if decorator.named_child_count else None
        if expression is not None and expression.type == "call":
            expression = expression.child_by_field_name("function")
        return dotted(self.text(expression)) if expression is not None else ""

    # ---- functions ------------------------------------------------------------------------

    def _parameters(self, parameters: Node) -> None:
        for parameter in parameters.named_children:
            kind = parameter.type
            if kind == "identifier":
                self.add(parameter, self.text(parameter))
            elif kind in ("typed_parameter", "typed_default_parameter", "default_parameter"):
                name = parameter.child_by_field_name("name") or parameter.named_child(0)
                annotation = parameter.child_by_field_name("type")
                if name is None:
                    continue
                if name.type != "identifier":  # `*args: int` is a tuple of ints, not an int
                    for inner in _identifiers(name):
                        self.add(inner, self.text(inner))
                    continue
                evidence = annotation_class(self.text(annotation)) if annotation is not None else ""
                self.add(name, self.text(name), "instance", evidence)
            elif kind in ("required_parameter", "optional_parameter"):
                self._ts_parameter(parameter)
            else:  # splats, JS patterns and defaults
                for inner in _identifiers(parameter):
                    self.add(inner, self.text(inner))

    def _ts_parameter(self, parameter: Node) -> None:
        pattern = parameter.child_by_field_name("pattern")
        annotation = parameter.child_by_field_name("type")
        if pattern is None:
            return
        if pattern.type != "identifier":
            for inner in _identifiers(pattern):
                self.add(inner, self.text(inner))
            return
        evidence = annotation_class(self.text(annotation)) if annotation is not None else ""
        name = self.text(pattern)
        self.add(pattern, name, "instance", evidence)
        # `constructor(private r: Radius)` also declares the field `this.r`.
        if any(child.type in ("accessibility_modifier", "readonly") for child in parameter.children):
            self.add(pattern, f"this.{name}", "instance", evidence)

    def _body(self, function: Node, body: Node) -> None:
        statements = [child for child in body.named_children if child.type != "comment"]
        if function.type == "function_definition":
            if statements and _is_docstring(statements[0]):
                statements = statements[1:]
            if all(self._python_placeholder(s) for s in statements):
                self.stubs.add(function.start_byte)
        elif not statements or (len(statements) == 1 and statements[0].type == "throw_statement"
                                and _NOT_IMPLEMENTED.search(self.text(statements[0]))):
            self.stubs.add(function.start_byte)

    def _python_placeholder(self, statement: Node) -> bool:
        if statement.type == "pass_statement":
            return True
        if statement.type == "expression_statement":
            return statement.named_child_count == 1 and statement.named_children[0].type == "ellipsis"
        if statement.type == "raise_statement":
            raised = statement.named_children[0] if statement.named_child_count else None
            if raised is not None and raised.type == "call":
                raised = raised.child_by_field_name("function")
            return raised is not None and self.text(raised) in ("NotImplementedError",
                                                                "builtins.NotImplementedError")
        return False

    # ---- assignments ----------------------------------------------------------------------

    def _assignment(self, node: Node, left: Node) -> None:
        value = node.child_by_field_name("right") or node.child_by_field_name("value")
        while value is not None and value.type in ("assignment", "assignment_expression"):
            value = value.child_by_field_name("right")  # a = b = Dog(): both are dogs
        annotation = node.child_by_field_name("type")
        if left.type == "identifier":
            name = self.text(left)
        elif left.type in ("attribute", "member_expression") and _is_self(left, self.source):
            name = _self_attribute(left, self.source)
        else:
            for inner in _identifiers(left) if left.type not in ("attribute", "subscript",
                                                                 "member_expression") else ():
                self.add(inner, self.text(inner))
            return
        if annotation is not None:
            evidence = annotation_class(self.text(annotation))
            if evidence:
                self.add(left, name, "instance", evidence)
                return
        self.add(left, name, *self._value(value))

    def _field(self, field: Node) -> None:
        name = field.child_by_field_name("name") or field.child_by_field_name("property")
        if name is None:
            return
        annotation = field.child_by_field_name("type")
        evidence = annotation_class(self.text(annotation)) if annotation is not None else ""
        if evidence:
            self.add(name, self.text(name), "instance", evidence)
        else:
            self.add(name, self.text(name), *self._value(field.child_by_field_name("value")))

    def _value(self, value: Node | None) -> tuple[BindingKind, str]:
        """What an assigned value says: an instance of the class it calls, or another name."""
        if value is None:
            return "local", ""
        if value.type in ("call", "call_expression", "new_expression"):
            callee = value.child_by_field_name("function") or value.child_by_field_name("constructor")
            return ("instance", dotted(self.text(callee))) if callee is not None else ("local", "")
        if value.type in ("identifier", "attribute", "member_expression"):
            return "alias", dotted(self.text(value))
        return "local", ""


def _type_name(text: str) -> str:
    """`Base<T>` / `Base[int]` -> "Base"; a dotted name stays; anything else -> ""."""
    return dotted(re.split(r"[<\[(]", text, maxsplit=1)[0])


def _is_docstring(statement: Node) -> bool:
    return (statement.type == "expression_statement" and statement.named_child_count == 1
            and statement.named_children[0].type in ("string", "concatenated_string"))


def _is_self(attribute: Node, source: bytes) -> bool:
    obj = attribute.child_by_field_name("object")
    return obj is not None and (obj.type == "this" or node_text(source, obj) == "self")


def _self_attribute(attribute: Node, source: bytes) -> str:
    obj = attribute.child_by_field_name("object")
    name = attribute.child_by_field_name("attribute") or attribute.child_by_field_name("property")
    if obj is None or name is None:
        return ""
    return f"{node_text(source, obj)}.{node_text(source, name)}"


_BOUND_NAMES = frozenset({"identifier", "shorthand_property_identifier_pattern"})
# Patterns that hold further names; expressions (an attribute, a subscript, a default value's
# right side) do not bind what they mention.
_PATTERN_TYPES = frozenset({
    "pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern", "dictionary_splat_pattern",
    "as_pattern_target", "parenthesized_expression", "tuple", "list", "expression_list",
    "array_pattern", "object_pattern", "rest_pattern", "assignment_pattern", "pair_pattern",
    "object_assignment_pattern", "lexical_declaration", "variable_declaration", "variable_declarator",
})
# Bounds the walk over one pattern: destructuring is never this wide in real code.
_MAX_PATTERN_NODES = 256


def _identifiers(node: Node) -> Iterator[Node]:
    """The names a binding pattern binds: `a, (b, *c)` -> a, b, c; `{x, y: z}` -> x, z."""
    pending: list[Node] = [node]
    seen = 0
    while pending and seen < _MAX_PATTERN_NODES:
        current = pending.pop()
        seen += 1
        if current.type in _BOUND_NAMES:
            yield current
        elif current.type in _PATTERN_TYPES:
            children: Iterable[Node] = current.named_children
            if current.type in ("assignment_pattern", "object_assignment_pattern"):
                left = current.child_by_field_name("left")
                children = [left] if left is not None else []
            elif current.type == "pair_pattern":
                value = current.child_by_field_name("value")
                children = [value] if value is not None else []
            elif current.type == "variable_declarator":
                name = current.child_by_field_name("name")
                children = [name] if name is not None else []
            pending.extend(reversed(list(children)))
