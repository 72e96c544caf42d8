"""Hover notes on real parses: the symbol under the cursor, its docstring, callers and callees."""

import shutil
from pathlib import Path

import pytest

from prism_code.graph import call_links
from prism_code.index import RepoIndex
from prism_code.parse.languages import parser
from prism_code.tasks.hover import (
    ModuleHover,
    ParsedBuffers,
    describe,
    hover_at,
    module_at,
    summary,
    symbol_at,
)

FIXTURE = Path(__file__).parent / "fixtures" / "multilang"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> RepoIndex:
    root = tmp_path_factory.mktemp("hover") / "multilang"
    shutil.copytree(FIXTURE, root)
    index = RepoIndex(root, cache_dir=root.parent / "cache")
    index.update()
    yield index
    index.close()


def at(index: RepoIndex, path: str, line_text: str, word: str, text: str | None = None):
    """symbol_at with the cursor on the middle of `word` in the first line holding `line_text`."""
    lines = (text if text is not None else "\n".join(index.lines[path])).split("\n")
    row = next(i for i, line in enumerate(lines) if line_text in line)
    column = lines[row].index(word, lines[row].index(line_text)) + len(word) // 2
    return symbol_at(index, path, row + 1, column, text)


def test_call_site_resolves_across_files(index):
    symbol = at(index, "pkg/core.py", "scaled = helper(count)", "helper")
    assert (symbol.qualname, symbol.path, symbol.found_at) == ("helper", "pkg/util.py", "call")
    assert (symbol.start_line, symbol.end_line) == (9, 11)
    assert symbol.signature == "def helper(value, scale=DEFAULT_SCALE)"
    # The cursor's identifier, for the hover range.
    line = index.lines["pkg/core.py"][symbol.line - 1]
    assert line[symbol.start_col:symbol.end_col] == "helper"


def test_callers_are_calls_not_imports(index):
    note = describe(index, at(index, "pkg/util.py", "def helper", "helper"))
    # core.py also imports helper: that import edge has the call weight but is no caller.
    assert note.callers == ["Inventory.add (pkg/core.py:26)", "build (pkg/core.py:42)",
                            "main (tools/report.py:8)"]
    assert note.callees == []
    assert note.summary == "Scale a value and round it up."


def test_definition_hover_note(index):
    note = describe(index, at(index, "pkg/core.py", "def build(", "build"))
    assert note.symbol.found_at == "definition"
    assert note.summary == "Build an inventory holding one item."  # the comment above it
    # Module-level code is named by its call's line.
    assert note.callers == ["main (tools/report.py:8)", "module code (pkg/core.py:49)"]
    assert note.callees == ["Inventory (pkg/core.py:12)", "Inventory.add (pkg/core.py:26)",
                            "helper (pkg/util.py:9)"]
    text = note.markdown()
    assert text.startswith("```python\ndef build(item: str, count: int = 1) -> Inventory\n```")
    assert "function `build`, defined in `pkg/core.py:42`" in text
    assert "callers: 2 (`main (tools/report.py:8)`, `module code (pkg/core.py:49)`)" in text
    assert "callees: 3" in text


def test_docstring_summary_is_the_first_paragraph(index):
    note = describe(index, at(index, "pkg/core.py", "class Inventory", "Inventory"))
    assert note.symbol.kind == "class"
    assert note.summary == "Keeps item counts."
    assert summary("  One line\n  continued.\n\n  Second paragraph.") == "One line continued."
    assert summary("") == ""


def test_methods_and_nested_functions(index):
    method = at(index, "pkg/core.py", "def add(", "add")
    assert method.qualname == "Inventory.add" and method.kind == "method"
    callers, callees = call_links(index.graph, method.node)
    # build() calls it on `inventory = Inventory("main")`: a local typed by its constructor.
    assert {index.graph.g.nodes[n]["qualname"] for n in callers} == {"Inventory.load", "build"}
    assert {index.graph.g.nodes[n]["qualname"] for n in callees} == {"helper"}
    nested = at(index, "pkg/core.py", "rows = [parse(line)", "parse")
    assert nested.qualname == "Inventory.load.parse" and nested.found_at == "call"


@pytest.mark.parametrize("path, line_text, word, qualname, target", [
    ("web/app.ts", "return fmt(total(this.items))", "total", "total", "web/lib.ts"),
    ("web/app.ts", "this.render();", "render", "Checkout.render", "web/app.ts"),
    ("go/cmd/main.go", "s := st.New()", "New", "New", "go/store/store.go"),
    ("go/cmd/main.go", 's.Add("apple", 2)', "Add", "Store.Add", "go/store/store.go"),
    ("java/com/acme/Shop.java", "shop.checkout(", "checkout", "Shop.checkout",
     "java/com/acme/Shop.java"),
    ("c/math.c", "clamp((int)mean(xs, n)", "mean", "mean", "c/math.c"),
    ("rust/src/lib.rs", "Point::new(0.0, 0.0)", "new", "Point.new", "rust/src/geo/mod.rs"),
])
def test_call_sites_in_other_languages(index, path, line_text, word, qualname, target):
    symbol = at(index, path, line_text, word)
    assert (symbol.qualname, symbol.path, symbol.found_at) == (qualname, target, "call")


def test_nothing_to_say_is_none(index):
    assert symbol_at(index, "rust/Cargo.toml", 1, 1) is None  # no grammar for TOML
    assert symbol_at(index, "pkg/core.py", 2, 0) is None  # an empty line
    assert symbol_at(index, "pkg/core.py", 999, 0) is None
    assert at(index, "pkg/core.py", "import logging", "logging") is None  # a name, not a definition
    # A call that does not resolve: a method of a value of unknown type (a str here).
    assert at(index, "pkg/core.py", "line.strip()", "strip") is None
    assert at(index, "pkg/core.py", "inventory.add(item", "add").qualname == "Inventory.add"


def test_cursor_just_after_the_name(index):
    row = next(i for i, line in enumerate(index.lines["pkg/core.py"]) if "def build(" in line)
    line = index.lines["pkg/core.py"][row]
    assert symbol_at(index, "pkg/core.py", row + 1, line.index("(")).qualname == "build"


def test_unsaved_buffer_counts(index):
    disk = "\n".join(index.lines["pkg/core.py"])
    # Three new lines on top shift every line; the call is still resolved through its caller.
    buffer = "# one\n# two\n# three\n" + disk + (
        "\n\ndef restock(inventory):\n    \"\"\"Top every item up.\"\"\"\n    return helper(3)\n")
    shifted = at(index, "pkg/core.py", "scaled = helper(count)", "helper", buffer)
    assert shifted.qualname == "helper" and shifted.path == "pkg/util.py"
    new = at(index, "pkg/core.py", "def restock", "restock", buffer)
    assert (new.qualname, new.signature, new.found_at) == ("restock", "def restock(inventory)",
                                                           "definition")
    note = describe(index, new)  # not in the graph yet: no links, no error
    assert note.callers == [] and note.callees == [] and note.summary == "Top every item up."


def test_callers_list_is_capped_but_counted(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "lib.py").write_text("def target():\n    return 1\n")
    (root / "use.py").write_text("from lib import target\n\n" + "".join(
        f"def caller_{i}():\n    return target()\n\n" for i in range(7)))
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    note = describe(index, symbol_at(index, "lib.py", 1, 5))
    index.close()
    assert len(note.callers) == 7
    assert "callers: 7 (" in note.markdown() and "and 2 more)" in note.markdown()


def test_a_cpp_header_named_h_hovers_as_cpp(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "box.h").write_text("namespace geo {\nclass Box {\npublic:\n    int area() const { return w * h; }\n"
                                "    int w, h;\n};\n}\n")
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    symbol = symbol_at(index, "box.h", 4, 9)
    index.close()
    assert symbol is not None
    assert (symbol.qualname, symbol.start_line, symbol.end_line) == ("Box.area", 4, 4)


def test_a_function_without_a_model_note_shows_the_deterministic_one(index):
    note = describe(index, at(index, "pkg/util.py", "def helper", "helper"))
    assert note.note_source == "deterministic"
    assert note.note["purpose"] == "Scale a value and round it up."
    assert note.note["input"] == "value, scale=DEFAULT_SCALE"
    text = note.markdown()
    assert "the model has not noted this version yet" in text
    assert "**input**: value, scale=DEFAULT_SCALE" in text
    # The docstring is the purpose already: it is not repeated above the note.
    assert text.count("Scale a value and round it up.") == 1
    # Classes have no function note.
    assert describe(index, at(index, "pkg/core.py", "class Inventory", "Inventory")).note == {}


def test_a_model_note_for_the_current_text_wins_and_a_stale_one_does_not(index):
    from prism_code.memory.code_schemas import FunctionNote
    from prism_code.memory.notes_store import NotesStore, function_hash

    fragment = index.fragments["pkg/core.py#build"]
    written = FunctionNote("Makes a one-item inventory.", "an item and a count",
                           "the new Inventory", "Creates it and adds the scaled count.")
    with NotesStore.for_index(index) as store:
        store.put("pkg/core.py", "build", function_hash(index, fragment), written, "test")
        store.put("pkg/core.py", "Inventory.size", "an-older-text", written, "test")
        note = describe(index, at(index, "pkg/core.py", "def build(", "build"), store)
        stale = describe(index, at(index, "pkg/core.py", "def size(", "size"), store)
    assert note.note_source == "llm" and note.note["purpose"] == "Makes a one-item inventory."
    text = note.markdown()
    assert "written by the model for this version" in text
    assert "**output**: the new Inventory" in text
    assert "Build an inventory holding one item." in text  # the docstring still shows
    assert stale.note_source == "deterministic"


def test_an_import_of_a_workspace_module_shows_its_summary(index):
    row = next(i for i, line in enumerate(index.lines["pkg/core.py"]) if "from .util import" in line)
    hovered = hover_at(index, "pkg/core.py", row + 1, index.lines["pkg/core.py"][row].index("util") + 1)
    assert isinstance(hovered, ModuleHover)
    assert (hovered.path, hovered.source) == ("pkg/util.py", "deterministic")
    assert hovered.summary["purpose"] == "Small helpers shared by the inventory code."
    assert hovered.summary["key_functions"]["helper"] == "Scale a value and round it up."
    assert "module `pkg/util.py`" in hovered.markdown() and "no model summary yet" in hovered.markdown()
    # An import of a module outside the workspace has nothing to show.
    assert at(index, "pkg/core.py", "import logging", "logging") is None
    assert module_at(index, "pkg/core.py", 5, 9) is None


def test_the_first_line_shows_the_files_own_summary_and_a_cok_one_when_current(index):
    from prism_code.workspace import content_hash

    own = hover_at(index, "pkg/core.py", 1, 0)
    assert isinstance(own, ModuleHover) and own.path == "pkg/core.py"
    assert own.summary["purpose"] == "Core inventory model."
    assert own.summary["depends_on"] == ["pkg/util.py"]
    from prism_code.memory.notes_store import NotesStore

    made = {"purpose": "The inventory model and its builder.", "key_functions": {"build": "makes one"},
            "depends_on": ["pkg/util.py"]}
    text_hash = content_hash("\n".join(index.lines["pkg/core.py"]).encode("utf-8"))
    with NotesStore.for_index(index) as store:
        store.put_summary("pkg/core.py", text_hash, made, "test")
        cok = hover_at(index, "pkg/core.py", 1, 0, store=store)
    assert cok.source == "llm" and cok.summary == made
    assert "Chain-of-Key summary" in cok.markdown() and "- `build`: makes one" in cok.markdown()


def test_hovers_on_unchanged_text_parse_it_once_and_an_edit_is_seen(index):
    buffers = ParsedBuffers()
    text = "\n".join(index.lines["pkg/core.py"])
    row = next(i for i, line in enumerate(index.lines["pkg/core.py"]) if "def build(" in line)
    first = hover_at(index, "pkg/core.py", row + 1, 5, text, buffers=buffers)
    # An equal text (not the same object) and a module hover, which looks twice: one parse.
    again = hover_at(index, "pkg/core.py", row + 1, 5, text[:10] + text[10:], buffers=buffers)
    module = hover_at(index, "pkg/core.py", 1, 0, text, buffers=buffers)
    assert first.symbol.qualname == again.symbol.qualname == "build"
    assert isinstance(module, ModuleHover)
    assert buffers.stats()["parsed"] == 1 and buffers.stats()["reparsed"] == 0
    assert buffers.stats()["reused"] == 3
    # The buffer is edited: the hover shows the new text, reparsed from the old tree.
    edited = text.replace("def build(", "def assemble(")
    renamed = hover_at(index, "pkg/core.py", row + 1, 5, edited, buffers=buffers)
    assert renamed.symbol.qualname == "assemble"
    assert renamed.symbol.signature.startswith("def assemble(item: str")
    assert buffers.stats()["parsed"] == 1 and buffers.stats()["reparsed"] == 1
    assert hover_at(index, "pkg/core.py", row + 1, 5, text, buffers=buffers).symbol.qualname == "build"


@pytest.mark.parametrize("edit", [
    lambda t: "x = 1\n" + t,  # at the start
    lambda t: t + "\ndef tail():\n    return 0\n",  # at the end
    lambda t: t.replace("def helper(", "def helper_with_a_longer_name("),
    lambda t: t.replace("    return", "    return  \u00e9 and", 1),  # multi-byte text
    lambda t: t.replace('"""Scale a value and round it up."""\n', ""),  # a deletion
    lambda t: t.replace("\n", "\n\U0001F600 = 1\n", 3),  # several spans: one edit covers them
    lambda t: t[: len(t) // 2],  # half the file gone
    lambda t: "",
])
def test_an_edited_buffer_is_reparsed_to_the_tree_a_fresh_parse_gives(index, edit):
    buffers = ParsedBuffers()
    old = "\n".join(index.lines["pkg/util.py"])
    buffers.get("pkg/util.py", "python", old)
    new = edit(old)
    reparsed = buffers.get("pkg/util.py", "python", new)
    fresh = parser("python").parse(new.encode("utf-8"))
    assert nodes(reparsed.tree) == nodes(fresh)
    assert buffers.stats()["reparsed"] == 1


def nodes(tree) -> list[tuple]:
    """Every node of a tree with its byte and (row, column) span, in document order."""
    found, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        found.append((node.type, node.start_byte, node.end_byte, node.start_point, node.end_point))
        stack.extend(reversed(node.children))
    return found


def test_few_parsed_buffers_are_kept(index):
    buffers = ParsedBuffers(kept=2, kept_bytes=10_000)
    for path in ("pkg/core.py", "pkg/util.py", "tools/report.py"):
        buffers.get(path, "python", "\n".join(index.lines[path]))
    assert buffers.stats()["kept"] == 2  # the oldest went
    big = "x = 1\n" * 5000  # 30 kB: over the byte budget, kept alone as the most recent
    buffers.get("big.py", "python", big)
    assert buffers.stats()["kept"] == 1 and buffers.stats()["keptBytes"] == len(big)
    buffers.discard("big.py")
    assert buffers.stats()["kept"] == 0


CALLREPO = Path(__file__).parent / "fixtures" / "callrepo"


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> RepoIndex:
    root = tmp_path_factory.mktemp("zoo") / "callrepo"
    shutil.copytree(CALLREPO, root)
    index = RepoIndex(root, cache_dir=root.parent / "cache")
    index.update()
    yield index
    index.close()


def test_hover_lists_only_real_callers_and_callees(zoo):
    # super().__init__ is the parent's, in another file.
    parent = at(zoo, "zoo/animals.py", "super().__init__(name)", "__init__")
    assert (parent.qualname, parent.path, parent.found_at) == ("Animal.__init__", "zoo/base.py", "call")
    dog_init = describe(zoo, at(zoo, "zoo/animals.py", "def __init__", "__init__"))
    assert dog_init.callers == [] and dog_init.callees == ["Animal.__init__ (zoo/base.py:6)"]
    assert dog_init.overrides == ["Animal.__init__ (zoo/base.py:6)"]
    # No sibling __init__ is a caller or callee of another one.
    enclosure = describe(zoo, at(zoo, "zoo/base.py", "def __init__(self, size)", "__init__"))
    assert (enclosure.callers, enclosure.callees) == ([], [])
    # `date` imported from datetime is not the repository's date().
    assert at(zoo, "zoo/calendar.py", "return date(year", "date") is None


def test_an_abstract_method_names_its_implementations(zoo):
    note = describe(zoo, at(zoo, "zoo/base.py", "def sound(self)", "sound"))
    assert note.overridden_by == ["Cat.sound (zoo/animals.py:17)", "Dog.sound (zoo/animals.py:9)"]
    assert note.callers == ["Animal.describe (zoo/base.py:14)"]
    assert note.note_source == "stub"
    assert note.note["procedure"].startswith(
        "Does nothing itself (an abstract or placeholder body); implemented by Cat.sound, Dog.sound")
    text = note.markdown()
    assert "overridden by: 2 (`Cat.sound (zoo/animals.py:17)`, `Dog.sound (zoo/animals.py:9)`)" in text
    assert "the body does nothing, so the model is not asked to describe it" in text
    implementation = describe(zoo, at(zoo, "zoo/animals.py", "def sound(self):", "sound"))
    assert implementation.overrides == ["Animal.sound (zoo/base.py:10)"]
    assert implementation.note_source == "deterministic"
