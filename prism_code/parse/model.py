"""What a parse of one source file yields: definitions, call sites, imports, blocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

DefinitionKind = Literal["function", "method", "class"]


@dataclass(frozen=True)
class Definition:
    """A function, method or class. Lines are 1-based and inclusive.

    A method defined outside its type's body (Go receiver methods, C++ `double A::f()`) gets
    qualname "A.f" and parent "A", the owner type's name, even when no enclosing definition
    exists in this file. Rust `impl` blocks are classes named after the implemented type.
    """

    name: str
    qualname: str  # dotted path inside the file: "Parser.parse_args", "outer.inner"
    kind: DefinitionKind
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    signature: str  # header up to the body, whitespace-collapsed: "def f(a, b=1) -> int"
    doc: str  # docstring, else the comment block right above; "" when none
    parent: str | None = None  # qualname of the enclosing definition
    # A class's bases as written, dotted: Python superclasses, JS/TS `extends` and `implements`.
    bases: tuple[str, ...] = ()
    # The body does nothing: abstract (TS abstract or interface method, Java without a body),
    # only `pass`, `...`, a docstring or `raise NotImplementedError`; an empty JS/TS body.
    stub: bool = False
    # Python decorators as dotted names without arguments: ("property",), ("app.route",).
    decorators: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallSite:
    """A call expression. `receiver` is the text left of the last '.', '->' or '::'."""

    name: str  # "parse_args" in "self.parser.parse_args(x)"
    receiver: str | None  # "self.parser"; None for a bare call
    line: int
    caller: str | None  # qualname of the innermost enclosing definition; None at top level


@dataclass(frozen=True)
class Import:
    """One imported module, as written in the source.

    Python `from ..a.b import c as d` -> module "a.b", level 2, names (("c", "d"),).
    Python `import a.b as x` -> module "a.b", alias "x". JS/TS `import {f} from "./u"` ->
    module "./u", names (("f", None),). C `#include "x.h"` -> module "x.h".
    Rust `mod geo;` (which loads a file) is recorded as module "self::geo".
    """

    module: str
    line: int
    names: tuple[tuple[str, str | None], ...] = ()
    alias: str | None = None
    level: int = 0  # Python relative-import dots


BindingKind = Literal["local", "instance", "alias"]


@dataclass(frozen=True, slots=True)
class Binding:
    """A name a file binds, with what the code says about its value (prism_code.parse.bindings).

    `x = Dog("rex")`, `x: Dog` and a parameter `x: Dog` -> kind "instance", evidence "Dog"
    (the dotted name of a class, or of a function whose return annotation says the class);
    `x = Dog` or `x = y.z` -> "alias" of that dotted name; any other binding (a loop
    variable, `x = []`) -> "local", evidence "". An attribute of the instance in a method
    (`self.pet = Dog()`, `this.pet = ...`) is named "self.pet" / "this.pet".
    """

    scope: str | None  # qualname of the innermost enclosing definition; None at module level
    name: str
    line: int
    kind: BindingKind = "local"
    evidence: str = ""


@dataclass
class ParsedFile:
    path: str  # workspace-relative, "/" separated
    language: str
    definitions: list[Definition] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    # top-level statement runs outside any definition, as (start_line, end_line), 1-based inclusive
    blocks: list[tuple[int, int]] = field(default_factory=list)
    line_count: int = 0
    has_errors: bool = False
    bindings: list[Binding] = field(default_factory=list)
