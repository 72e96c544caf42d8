"""Calls resolved to what they really call, on real parses of tests/fixtures/callrepo.

zoo/ is a Python package with a class hierarchy across files (base.Animal, animals.Dog and
Cat), super() and inherited self calls, receivers typed by annotations and constructors,
names that shadow (a parameter, `from datetime import date` beside the repository's own
`date`, the builtin `open`), an imported list's `.append`, recursion and an abstract method
with two implementations; web/ is a TypeScript pair with an abstract class; kit/ is a
TypeScript class whose methods are module functions declaring `this: Selection<T>`, mixed into
its prototype with Object.assign, called through typed chains and on untyped receivers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_code.graph import CodeGraph, ResolvedCall, call_links, def_node, module_node
from prism_code.parse import parse_source

FIXTURE = Path(__file__).parent / "fixtures" / "callrepo"


def sources() -> dict[str, bytes]:
    return {p.relative_to(FIXTURE).as_posix(): p.read_bytes() for p in sorted(FIXTURE.rglob("*")) if p.is_file()}


def build(files: dict[str, bytes]) -> CodeGraph:
    graph = CodeGraph()
    graph.update([pf for path, text in files.items() if (pf := parse_source(path, text)) is not None])
    return graph


def edges(graph: CodeGraph) -> set[tuple[str, str, int]]:
    """(caller, callee, line) with nodes written as "path#qualname" (module code: "path")."""
    def short(node: str) -> str:
        return node[2:]
    return {(short(c.caller), short(c.callee), c.line) for c in graph.resolved_calls()}


EXPECTED = {
    # super().__init__ reaches the parent in another file; an inherited method through self.
    ("zoo/animals.py#Dog.__init__", "zoo/base.py#Animal.__init__", 7),
    ("zoo/animals.py#Dog.greet", "zoo/base.py#Animal.describe", 13),
    # Inside the base class, self.sound() is the base's own (abstract) method.
    ("zoo/base.py#Animal.describe", "zoo/base.py#Animal.sound", 15),
    # Recursion is kept.
    ("zoo/base.py#Animal.count_down", "zoo/base.py#Animal.count_down", 20),
    # The repository's open() where the module defines it; the builtin elsewhere (registry.read).
    ("zoo/base.py#read_plan", "zoo/base.py#open", 36),
    # `import zoo.dates` then zoo.dates.parse(); the repository's date() where it is seen.
    ("zoo/calendar.py#parsed", "zoo/dates.py#parse", 11),
    ("zoo/dates.py#parse", "zoo/dates.py#date", 6),
    # Calls to classes are calls of the class; receivers typed by simple local evidence.
    ("zoo/keeper.py#Keeper.__init__", "zoo/animals.py#Dog", 13),
    ("zoo/keeper.py#Keeper.feed", "zoo/base.py#Animal.describe", 16),  # animal: Animal
    ("zoo/keeper.py#Keeper.walk", "zoo/animals.py#Dog.greet", 19),  # self.pet = Dog(...)
    ("zoo/keeper.py#Keeper.adopt", "zoo/animals.py#Cat", 22),
    ("zoo/keeper.py#Keeper.adopt", "zoo/animals.py#Cat.register", 23),  # cat = Cat(...)
    ("zoo/keeper.py#Keeper.adopt", "zoo/registry.py#append", 24),  # an imported module's function
    ("zoo/keeper.py", "zoo/keeper.py#Keeper", 31),  # module-level code
    ("zoo/keeper.py#morning", "zoo/keeper.py#Keeper.walk", 35),  # DEFAULT_KEEPER = Keeper()
    # TypeScript: this and inherited methods, an imported function, `new`, a typed local.
    ("web/shape.ts#Shape.describe", "web/shape.ts#Shape.area", 5),
    ("web/circle.ts#Circle.label", "web/shape.ts#fmt", 13),
    ("web/circle.ts#Circle.label", "web/circle.ts#Circle.area", 13),
    ("web/circle.ts#Circle.label", "web/shape.ts#Shape.describe", 13),
    ("web/circle.ts#makeCircle", "web/circle.ts#Circle", 18),
    ("web/circle.ts#makeCircle", "web/circle.ts#Circle.label", 19),
    # TypeScript functions declaring `this: Selection<T>` are Selection's methods (mixed into its
    # prototype): `this.first()` in them, and chains typed by return annotations (`): this` too).
    ("kit/attributes.ts#attr", "kit/moves.ts#first", 4),
    ("kit/moves.ts#eq", "kit/moves.ts#first", 8),
    ("kit/use.ts#typed", "kit/moves.ts#eq", 4),
    ("kit/use.ts#typed", "kit/attributes.ts#attr", 4),  # sel.eq(0).attr()
    ("kit/use.ts#typed", "kit/selection.ts#Selection.marked", 5),
    ("kit/use.ts#typed", "kit/moves.ts#filter", 5),  # sel.marked().filter()
    # An untyped receiver: the repository's one method `attr`; not `filter`, which Array has.
    ("kit/use.ts#untyped", "kit/attributes.ts#attr", 9),
}


@pytest.fixture(scope="module")
def graph() -> CodeGraph:
    return build(sources())


def test_exactly_the_calls_a_careful_reader_finds(graph):
    assert edges(graph) == EXPECTED


def test_what_does_not_resolve_makes_no_call(graph):
    found = edges(graph)
    called = {callee for _, callee, _ in found}
    # `date(...)` in calendar.py is datetime's, not zoo/dates.py's.
    assert not any(caller == "zoo/calendar.py#today_label" for caller, _, _ in found)
    # KNOWN.append(...) on an imported list reaches no `append`, nor does KNOWN.append in registry.
    assert not any(caller in ("zoo/animals.py#Cat.register", "zoo/registry.py#append") for caller, _, _ in found)
    # fp.write(...) on a parameter of unknown type is not Journal.write, handle.read() not registry.read,
    # and a parameter named `helper` shadows the module's helper().
    assert "zoo/keeper.py#Journal.write" not in called and "zoo/registry.py#read" not in called
    assert "zoo/keeper.py#helper" not in called


def test_direction_and_queries(graph):
    describe, sound = def_node("zoo/base.py", "Animal.describe"), def_node("zoo/base.py", "Animal.sound")
    assert graph.calls_from(describe) == [ResolvedCall(describe, sound, 15)]
    assert [c.caller for c in graph.calls_to(describe)] == [def_node("zoo/animals.py", "Dog.greet"),
                                                            def_node("zoo/keeper.py", "Keeper.feed")]
    assert graph.calls_to(def_node("zoo/keeper.py", "Keeper")) == [
        ResolvedCall(module_node("zoo/keeper.py"), def_node("zoo/keeper.py", "Keeper"), 31)]
    count_down = def_node("zoo/base.py", "Animal.count_down")
    assert call_links(graph, count_down) == ({count_down}, {count_down})
    # The undirected relation graph still has no self-loop.
    assert not graph.g.has_edge(count_down, count_down)


def test_overrides_are_their_own_relation(graph):
    sound = def_node("zoo/base.py", "Animal.sound")
    assert graph.overrides(sound) == [def_node("zoo/animals.py", "Cat.sound"), def_node("zoo/animals.py", "Dog.sound")]
    assert graph.overridden(def_node("zoo/animals.py", "Dog.sound")) == [sound]
    assert graph.overridden(def_node("zoo/animals.py", "Dog.__init__")) == [def_node("zoo/base.py", "Animal.__init__")]
    assert graph.overrides(def_node("web/shape.ts", "Shape.area")) == [def_node("web/circle.ts", "Circle.area")]
    # An override is not a call: nothing calls Dog.sound.
    assert graph.calls_to(def_node("zoo/animals.py", "Dog.sound")) == []


def test_parse_records_bases_stubs_and_bindings():
    files = sources()
    animals = parse_source("zoo/animals.py", files["zoo/animals.py"])
    assert {d.qualname: d.bases for d in animals.definitions if d.kind == "class"} == {
        "Dog": ("Animal",), "Cat": ("Animal",)}
    base = parse_source("zoo/base.py", files["zoo/base.py"])
    by_name = {d.qualname: d for d in base.definitions}
    assert by_name["Animal.sound"].stub and by_name["Animal.sound"].decorators == ("abstractmethod",)
    assert not by_name["Animal.describe"].stub
    shape = parse_source("web/shape.ts", files["web/shape.ts"])
    assert {d.qualname for d in shape.definitions if d.stub} == {"Shape.area", "Named.name"}
    keeper = parse_source("zoo/keeper.py", files["zoo/keeper.py"])
    evidence = {(b.scope, b.name): (b.kind, b.evidence) for b in keeper.bindings}
    assert evidence[("Keeper.__init__", "self.pet")] == ("instance", "Dog")
    assert evidence[("Keeper.feed", "animal")] == ("instance", "Animal")
    assert evidence[(None, "DEFAULT_KEEPER")] == ("instance", "Keeper")
    assert evidence[("Keeper.save", "fp")] == ("local", "")
    # TypeScript: `this: Selection<T>` binds `this`; type arguments do not hide the class.
    attributes = parse_source("kit/attributes.ts", files["kit/attributes.ts"])
    assert [(b.scope, b.name, b.kind, b.evidence) for b in attributes.bindings if b.name == "this"] == [
        ("attr", "this", "instance", "Selection")]


def graph_state(graph: CodeGraph) -> dict[str, object]:
    nodes = sorted(graph.g.nodes)
    return {
        "calls": graph.resolved_calls(),
        "overrides": {n: graph.overrides(n) for n in nodes if graph.overrides(n)},
        "edges": sorted((min(u, v), max(u, v), round(w, 6)) for u, v, w in
                        ((e.u, e.v, e.weight) for e in graph.edges())),
    }


def replaced(files: dict[str, bytes], path: str, old: str, new: str) -> dict[str, bytes]:
    text = files[path].decode()
    assert old in text
    return {**files, path: text.replace(old, new).encode()}


# Each edit changes how calls resolve in the file named last, through what that file read.
EDITS = {
    "attribute now holds a cat": ("zoo/keeper.py", 'self.pet = Dog("rex")', 'self.pet = Cat("tom")',
                                  "zoo/keeper.py"),
    "base method renamed": ("zoo/base.py", "def describe(self):", "def explain(self):", "zoo/animals.py"),
    "no longer a subclass": ("zoo/animals.py", "class Cat(Animal):", "class Cat:", "zoo/keeper.py"),
    "imported list becomes an object": ("zoo/registry.py", "KNOWN = []",
                                        "class Known:\n    def append(self, item):\n        pass\n\n\n"
                                        "KNOWN = Known()", "zoo/animals.py"),
    "typescript base method renamed": ("web/shape.ts", "describe(): string {", "explain(): string {",
                                       "web/circle.ts"),
    "mixed-in function no longer declares its this": ("kit/attributes.ts", "this: Selection<T>, name",
                                                      "name", "kit/use.ts"),
    "a second method named attr": ("kit/selection.ts", "  marked(): this {",
                                   "  attr(): void {\n    return;\n  }\n\n  marked(): this {", "kit/use.ts"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_gives_what_a_rebuild_gives(edit):
    path, old, new, reader = EDITS[edit]
    before = sources()
    after = replaced(before, path, old, new)
    graph = build(before)
    graph.update([parse_source(path, after[path])])
    assert graph_state(graph) == graph_state(build(after))
    assert reader in graph.last_relinked
    assert graph_state(graph) != graph_state(build(before))


def test_delete_and_rename_give_what_a_rebuild_gives():
    files = sources()
    graph = build(files)
    graph.update([], removed=["zoo/animals.py"])
    without = {p: t for p, t in files.items() if p != "zoo/animals.py"}
    assert graph_state(graph) == graph_state(build(without))
    assert not any("zoo/animals.py" in c.callee for c in graph.resolved_calls())
    # Back under another name, imported under that name: the calls come back.
    renamed = {**replaced(without, "zoo/keeper.py", "from zoo.animals import", "from zoo.beasts import"),
               "zoo/beasts.py": files["zoo/animals.py"]}
    graph.update([parse_source(p, renamed[p]) for p in ("zoo/beasts.py", "zoo/keeper.py")])
    assert graph_state(graph) == graph_state(build(renamed))
    assert ("zoo/keeper.py#Keeper.walk", "zoo/beasts.py#Dog.greet", 19) in edges(graph)


def test_an_edit_inside_a_body_relinks_no_other_file():
    files = sources()
    graph = build(files)
    edited = replaced(files, "zoo/base.py", "return 0", "return -1")
    graph.update([parse_source("zoo/base.py", edited["zoo/base.py"])])
    assert graph.last_relinked == {"zoo/base.py"}
    assert graph_state(graph) == graph_state(build(edited))


def test_unresolved_calls_may_relate_but_never_call(graph):
    """`fp.write("fed")` may be Journal.write, the one `write` of the repository: a weaker link
    for relation strength, and no call."""
    save, write = def_node("zoo/keeper.py", "Keeper.save"), def_node("zoo/keeper.py", "Journal.write")
    assert graph.g[save][write]["weight"] < 0.5
    assert write not in call_links(graph, save)[1]
    # An import from outside the repository never links by name (date() is datetime's).
    assert not graph.g.has_edge(def_node("zoo/calendar.py", "today_label"), def_node("zoo/dates.py", "date"))


@pytest.mark.parametrize("source", [
    b"class A(A):\n    def f(self):\n        return self.g()\n",  # a class its own base
    b"class A(B):\n    pass\n\n\nclass B(A):\n    def f(self):\n        return super().f()\n",
    b"a = b\nb = a\n\n\ndef f():\n    return a.g()\n",  # aliases in a cycle
    b"def f(:\n    x = Y(\n    x.g()\n",  # syntax errors
    b"x = " + b"(" * 3000 + b"f()" + b")" * 3000 + b"\n",  # deep nesting
    b"\xff\xfe def f(): return f()\n",  # invalid UTF-8
    # Chains deeper than Python's stack: 1,500 classes each extending the last, 3,000 aliases.
    b"class C0:\n    def m(self):\n        pass\n" + b"".join(
        b"class C%d(C%d):\n    pass\n" % (i, i - 1) for i in range(1, 1500)) + b"def f(x: C1499):\n    return x.m()\n",
    b"a0 = print\n" + b"".join(b"a%d = a%d\n" % (i, i - 1) for i in range(1, 3000)) + b"a2999.x()\n",
])
def test_bad_input_resolves_partly_and_never_fails(source):
    graph = build({"bad.py": source, "other.py": b"from bad import *\n\n\ndef g():\n    return f()\n"})
    assert all(isinstance(c, ResolvedCall) for c in graph.resolved_calls())


@pytest.mark.parametrize("receiver", [
    "rows" + ".next()" * 3000,  # a chain longer than any real one
    "$(" * 200 + "'a'" + ")" * 200,  # brackets nested deeper than real calls
    "f(')'.x(",  # unbalanced, a bracket inside a string
    "a[0].b<T>()",  # an index and type arguments: no plain chain
])
def test_receiver_chains_of_any_shape_resolve_partly_and_never_fail(receiver):
    source = ("export function attr(this: Sel): Sel { return this; }\nexport class Sel {}\n"
              f"export function use(rows: Sel) {{ {receiver}.attr(); }}\n").encode()
    graph = build({"bad.ts": source})
    assert all(isinstance(c, ResolvedCall) for c in graph.resolved_calls())


def test_the_facts_survive_the_index_store():
    """Bindings, bases, stubs and decorators are stored with the parse and read back equal."""
    from prism_code.store.parsed_json import parsed_from_json, parsed_to_json

    for path, text in sources().items():
        pf = parse_source(path, text)
        assert parsed_from_json(path, parsed_to_json(pf)) == pf
