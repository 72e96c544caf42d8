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
from prism_code.parse.model import Binding, BindingKind, CallSite, Definition
from prism_code.parse.nodes import node_text

# A dotted name: what a receiver, a base or an annotation must be for us to follow it.
DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
# Nothing longer is read as a type or a base: real ones are a few words.
MAX_EVIDENCE_CHARS = 120
# A JS/TS body that only throws this kind of message is a placeholder, not behaviour.
_NOT_IMPLEMENTED = re.compile(r"not[\s_-]*implemented|abstract|must\s+(?:be\s+)?(?:implement|overrid)", re.I)
# Annotation wrappers that still mean "an instance of the inner type" for a call on it.
_OPTIONAL = re.compile(r"^(?:typing\.)?Optional\[(.*)\]$")
_NOTHING = frozenset({"None", "null", "undefined", "void"})

# Binding sites other than parameters, in one alternation (a single query pass, in C); the
# definitions themselves (parameters, bases, bodies, decorators) are read from their nodes.
_PYTHON = """
[(assignment) (augmented_assignment) (for_statement) (for_in_clause) (as_pattern_target)
 (named_expression)] @binding
"""
_JS_BINDINGS = "(variable_declarator) (assignment_expression) (for_in_statement) (catch_clause)"
_PATTERNS = {
    "python": _PYTHON,
    "javascript": f"[{_JS_BINDINGS} (field_definition)] @binding",
    "typescript": f"[{_JS_BINDINGS} (public_field_definition)] @binding",
    "tsx": f"[{_JS_BINDINGS} (public_field_definition)] @binding",
}
# Languages whose definitions carry bases and stubs; only those in _PATTERNS carry bindings.
_READ = frozenset({*_PATTERNS, "java"})
# Definition nodes whose parameters and body are read.
_FUNCTIONS = frozenset({
    "function_definition", "method_definition", "function_declaration", "generator_function_declaration",
    "arrow_function", "function_expression", "generator_function", "abstract_method_signature",
    "method_signature",
})
# Parameters that name the instance or the class: resolution knows them without a binding.
_RECEIVERS = frozenset({"self", "cls"})


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
               calls: list[CallSite], max_start_depth: int) -> FileFacts:
    """The bindings, bases, stubs and decorators of one parsed file (empty for other languages).

    A name bound inside a function matters only to the calls of this file, and only if some
    call names it or reads it as its receiver (or another binding's value names it): the
    others are left out, a quarter of them in real code."""
    reader = _Reader(source)
    if language not in _READ:
        return FileFacts([], {}, set(), {})
    for definition in definitions:
        node = root.descendant_for_byte_range(definition.start_byte, definition.end_byte)
        if node is not None:
            reader.definition(node, definition)
    if language in _PATTERNS:
        cursor = tree_sitter.QueryCursor(_query(language))
        cursor.set_max_start_depth(max_start_depth)
        for node in cursor.captures(root).get("binding", ()):
            reader.binding(node)
    heads = {call.name if call.receiver is None else call.receiver.split(".", 1)[0] for call in calls}
    heads.update(item[5].split(".", 1)[0] for item in reader.found if item[5])
    return FileFacts(_scoped(reader.found, definitions, heads), reader.bases, reader.stubs, reader.decorators)


# (start byte, scope if already known else None, name, line, kind, evidence)
_Found = tuple[int, str | None, str, int, BindingKind, str]


def _scoped(found: list[_Found], definitions: list[Definition], heads: set[str]) -> list[Binding]:
    """Bindings in source order, each in its innermost definition (parameters know theirs),
    without the names local to a function that no call of the file reads (not in `heads`)."""
    functions = {d.qualname for d in definitions if d.kind != "class"}
    found.sort(key=_position)
    open_scopes: list[tuple[int, str]] = []  # (end_byte, qualname), innermost last
    following = 0
    out = []
    for position, known, name, line, kind, evidence in found:
        while following < len(definitions) and definitions[following].start_byte <= position:
            definition = definitions[following]
            while open_scopes and open_scopes[-1][0] <= definition.start_byte:
                open_scopes.pop()
            open_scopes.append((definition.end_byte, definition.qualname))
            following += 1
        while open_scopes and open_scopes[-1][0] <= position:
            open_scopes.pop()
        scope = known if known is not None else (open_scopes[-1][1] if open_scopes else None)
        if kind == "local" and name not in heads and scope in functions and "." not in name:
            continue
        out.append(Binding(scope, name, line, kind, evidence))
    return out


def _position(item: _Found) -> int:
    return item[0]


def dotted(text: str) -> str:
    """`text` when it is a dotted name short enough to follow, else ""."""
    if text.isidentifier():  # the common case, without the regular expression
        return text
    text = text.strip()
    return text if len(text) <= MAX_EVIDENCE_CHARS and DOTTED.fullmatch(text) else ""


def annotation_class(text: str) -> str:
    """The class an annotation says a value is an instance of: `Dog`, `"Dog"`, `Optional[Dog]`,
    `Dog | None`; "" for anything else (`list[Dog]`, `type[Dog]`, `Callable[...]`)."""
    if text.isidentifier():  # the common case, without the rest
        return text
    text = text.strip().lstrip(":").strip()
    if len(text) > MAX_EVIDENCE_CHARS:
        return ""
    if "<" in text:  # TypeScript's type arguments: `Cheerio<T>` is a Cheerio
        text = _without_type_arguments(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    optional = _OPTIONAL.match(text)
    if optional:
        text = optional.group(1)
    parts = [part.strip() for part in text.split("|")]
    kept = [part for part in parts if part not in _NOTHING]
    return dotted(kept[0]) if len(kept) == 1 else ""


def _without_type_arguments(text: str) -> str:
    """`Cheerio<T> | null` -> `Cheerio | null`; unbalanced brackets give ""."""
    kept = []
    depth = 0
    for position, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">" and text[position - 1] != "=":  # `=>` closes nothing
            depth -= 1
            if depth < 0:
                return ""
        elif depth == 0:
            kept.append(char)
    return "".join(kept).strip() if depth == 0 else ""


class _Reader:
    """Reads definitions and binding sites into bindings, bases, stubs and decorators."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.found: list[_Found] = []
        self.bases: dict[int, tuple[str, ...]] = {}
        self.stubs: set[int] = set()
        self.decorators: dict[int, tuple[str, ...]] = {}

    def text(self, node: Node) -> str:
        return node_text(self.source, node)

    def add(self, at: Node, name: str, kind: BindingKind = "local", evidence: str = "",
            scope: str | None = None) -> None:
        if kind != "local" and not evidence:
            kind = "local"
        self.found.append((at.start_byte, scope, name, at.start_point[0] + 1, kind, evidence))

    # ---- definitions ----------------------------------------------------------------------

    def definition(self, node: Node, definition: Definition) -> None:
        kind, key = node.type, definition.start_byte
        if kind in ("variable_declarator", "lexical_declaration", "variable_declaration",
                    "public_field_definition", "field_definition"):
            node = self._function_value(node) or node  # `const f = (x) => ...`: read the function
            kind = node.type
        if kind == "class_definition":
            arguments = node.child_by_field_name("superclasses")
            if arguments is not None:
                self.bases[key] = self._python_bases(arguments)
        elif kind in ("class_declaration", "abstract_class_declaration", "interface_declaration", "class"):
            self._class_bases(node, key)
        elif kind == "method_declaration":  # Java: an interface's or abstract method has no body
            if node.child_by_field_name("body") is None:
                self.stubs.add(key)
        elif kind in _FUNCTIONS:
            parameters = node.child_by_field_name("parameters")
            if parameters is not None:
                self._parameters(parameters, definition.qualname)
            body = node.child_by_field_name("body")
            if kind in ("abstract_method_signature", "method_signature"):
                self.stubs.add(key)
            elif body is not None and self._does_nothing(kind, body):
                self.stubs.add(key)
            parent = node.parent
            if kind == "function_definition" and parent is not None and parent.type == "decorated_definition":
                decorators = (self._decorator(child) for child in parent.named_children if child.type == "decorator")
                self.decorators[key] = tuple(d for d in decorators if d)

    @staticmethod
    def _function_value(node: Node) -> Node | None:
        if node.type in ("lexical_declaration", "variable_declaration"):
            declarator = node.named_children[0] if node.named_child_count else None
            node = declarator if declarator is not None else node
        value = node.child_by_field_name("value")
        return value if value is not None and value.type in _FUNCTIONS else None

    def _python_bases(self, arguments: Node) -> tuple[str, ...]:
        names = []
        for base in arguments.named_children:
            if base.type == "subscript":  # Generic[T], Base[int]: the class is the subscripted one
                value = base.child_by_field_name("value")
                base = value if value is not None else base
            if base.type in ("identifier", "attribute"):
                name = dotted(self.text(base))
                if name:
                    names.append(name)
        return tuple(names)

    def _class_bases(self, node: Node, key: int) -> None:
        """JS/TS `extends` and `implements`, a TS interface's `extends`, Java's superclass and interfaces."""
        parts: list[Node] = []
        for child in node.children:
            kind = child.type
            if kind == "class_heritage":
                for clause in child.named_children:
                    if clause.type == "extends_clause":
                        value = clause.child_by_field_name("value")
                        parts += [value] if value is not None else []
                    elif clause.type == "implements_clause":
                        parts += clause.named_children
                    else:  # JavaScript: `extends Expression` right under class_heritage
                        parts.append(clause)
            elif kind in ("extends_type_clause", "superclass"):
                parts += child.named_children
            elif kind in ("super_interfaces", "extends_interfaces"):
                for group in child.named_children:
                    parts += group.named_children if group.type == "type_list" else [group]
        names = tuple(n for n in (_type_name(self.text(part)) for part in parts) if n)
        if names:
            self.bases[key] = names

    def _decorator(self, decorator: Node) -> str:
        """`@app.route("/")` -> "app.route"."""
        expression = decorator.named_children[0] if decorator.named_child_count else None
        if expression is not None and expression.type == "call":
            expression = expression.child_by_field_name("function")
        return dotted(self.text(expression)) if expression is not None else ""

    def _parameters(self, parameters: Node, scope: str) -> None:
        for parameter in parameters.named_children:
            kind = parameter.type
            if kind == "identifier":
                name = self.text(parameter)
                if name not in _RECEIVERS:
                    self.add(parameter, name, scope=scope)
            elif kind in ("typed_parameter", "typed_default_parameter", "default_parameter"):
                name_node = parameter.child_by_field_name("name") or parameter.named_child(0)
                if name_node is None:
                    continue
                if name_node.type != "identifier":  # `*args: int` is a tuple of ints, not an int
                    for inner in _identifiers(name_node):
                        self.add(inner, self.text(inner), scope=scope)
                    continue
                annotation = parameter.child_by_field_name("type") if kind != "default_parameter" else None
                evidence = annotation_class(self.text(annotation)) if annotation is not None else ""
                self.add(name_node, self.text(name_node), "instance", evidence, scope)
            elif kind in ("required_parameter", "optional_parameter"):
                self._ts_parameter(parameter, scope)
            else:  # splats, JS patterns and defaults
                for inner in _identifiers(parameter):
                    self.add(inner, self.text(inner), scope=scope)

    def _ts_parameter(self, parameter: Node, scope: str) -> None:
        pattern = parameter.child_by_field_name("pattern")
        if pattern is None:
            return
        if pattern.type == "this":
            # `function attr(this: Cheerio<T>, ...)`: a function written to be a method of the
            # class its `this` names (mixed into its prototype); `this` in it is such an instance.
            annotation = parameter.child_by_field_name("type")
            evidence = annotation_class(self.text(annotation)) if annotation is not None else ""
            self.add(pattern, "this", "instance", evidence, scope)
            return
        if pattern.type != "identifier":
            for inner in _identifiers(pattern):
                self.add(inner, self.text(inner), scope=scope)
            return
        annotation = parameter.child_by_field_name("type")
        evidence = annotation_class(self.text(annotation)) if annotation is not None else ""
        name = self.text(pattern)
        self.add(pattern, name, "instance", evidence, scope)
        # `constructor(private r: Radius)` also declares the field `this.r`.
        if any(child.type in ("accessibility_modifier", "readonly") for child in parameter.children):
            self.add(pattern, f"this.{name}", "instance", evidence, scope)

    def _does_nothing(self, kind: str, body: Node) -> bool:
        statements = [child for child in body.named_children if child.type != "comment"]
        if kind == "function_definition":
            if statements and _is_docstring(statements[0]):
                statements = statements[1:]
            return all(self._python_placeholder(s) for s in statements)
        if body.type != "statement_block":  # an arrow function's expression body
            return False
        return not statements or (len(statements) == 1 and statements[0].type == "throw_statement"
                                  and bool(_NOT_IMPLEMENTED.search(self.text(statements[0]))))

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

    # ---- binding sites --------------------------------------------------------------------

    def binding(self, node: Node) -> None:
        kind = node.type
        if kind in ("assignment", "variable_declarator"):
            left = node.child_by_field_name("left") or node.child_by_field_name("name")
            if left is not None:
                self._assignment(node, left)
        elif kind == "assignment_expression":  # JS/TS: only `this.x = ...` binds anything we read
            left = node.child_by_field_name("left")
            if left is not None and left.type == "member_expression" and _is_self(left, self.source):
                self._assignment(node, left)
        elif kind in ("public_field_definition", "field_definition"):
            self._field(node)
        elif kind in ("augmented_assignment", "named_expression"):
            name = node.child_by_field_name("left") or node.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                self.add(name, self.text(name))
        else:  # for loops, comprehensions, `as` targets, catch clauses
            target = node if kind == "as_pattern_target" else (
                node.child_by_field_name("left") or node.child_by_field_name("parameter"))
            for name in _identifiers(target) if target is not None else ():
                self.add(name, self.text(name))

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
