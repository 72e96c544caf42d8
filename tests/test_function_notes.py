"""The repository function memory: deterministic notes, file order, the model pass, skips and resumes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prism_code.cli import main as cli_main
from prism_code.file_order import file_order, functions_in_order
from prism_code.fragments import function_key
from prism_code.index import RepoIndex
from prism_code.memory import note_writer
from prism_code.memory.code_schemas import FunctionNote
from prism_code.memory.cok import ModuleSummarizer, files_ready_for_summary, module_summary
from prism_code.memory.deterministic_notes import (
    DETERMINISTIC,
    LLM,
    STUB,
    deterministic_note,
    notes_for,
    signature_parts,
)
from prism_code.memory.note_writer import NoteWriter, run_notes
from prism_code.memory.notes_store import NotesStore, function_hash

FIXTURE = Path(__file__).parent / "fixtures" / "pyrepo"
FIVE = {("pkg/b.py", "helper"), ("pkg/b.py", "unrelated"), ("pkg/a.py", "caller"), ("pkg/a.py", "Greeter.greet"),
        ("pkg/a.py", "Greeter.format")}


def fresh_index(tmp_path: Path) -> RepoIndex:
    root = tmp_path / "pyrepo"
    shutil.copytree(FIXTURE, root)
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    return index


@pytest.fixture
def index(tmp_path: Path):
    index = fresh_index(tmp_path)
    yield index
    index.close()


def fragment(index: RepoIndex, path: str, qualname: str):
    return index.fragments[function_key(path, qualname)]


def test_deterministic_notes_come_from_signature_doc_and_graph(index):
    caller = deterministic_note(index, fragment(index, "pkg/a.py", "caller"))
    assert caller == FunctionNote("Caller (function).", "x", "", "Calls helper.")
    helper = deterministic_note(index, fragment(index, "pkg/b.py", "helper"))
    assert (helper.input, helper.procedure) == ("v", "called by caller.")
    greet = deterministic_note(index, fragment(index, "pkg/a.py", "Greeter.greet"))
    assert (greet.purpose, greet.input, greet.procedure) == ("Greet (method of Greeter).", "name",
                                                             "Calls Greeter.format.")
    assert deterministic_note(index, fragment(index, "pkg/b.py", "unrelated")).input == "no parameters"


def test_notes_exist_before_any_model_runs(index):
    lookup = notes_for(index, "pkg/a.py", "caller")
    assert lookup.source == DETERMINISTIC and lookup.note.procedure == "Calls helper."
    assert notes_for(index, "pkg/a.py", "missing") is None


@pytest.mark.parametrize("signature, params, returns", [
    ("def parse(self, text: str, *, strict: bool = True) -> Tree", ["text: str", "*", "strict: bool = True"], "Tree"),
    ("async def fetch(url, headers: dict[str, str] = {}) -> bytes:", ["url", "headers: dict[str, str] = {}"],
     "bytes"),
    ("function add(a: number, b: number): number", ["a: number", "b: number"], "number"),
    ("func (s *Server) Serve(l net.Listener) error", ["l net.Listener"], "error"),
    ("pub fn area(&self, scale: f64) -> f64", ["scale: f64"], "f64"),
    ("int main(int argc, char **argv)", ["int argc", "char **argv"], ""),
])
def test_signature_parts(signature, params, returns):
    assert signature_parts(signature) == (params, returns)


def test_files_are_ordered_by_imports_with_priority_first(index):
    assert file_order(index) == ["pkg/__init__.py", "pkg/b.py", "pkg/a.py"]
    assert file_order(index, priority=["pkg/a.py", "nope.py"])[0] == "pkg/a.py"
    order = [(f.path, f.qualname) for f in functions_in_order(index)]
    assert order == [("pkg/b.py", "helper"), ("pkg/b.py", "unrelated"), ("pkg/a.py", "caller"),
                     ("pkg/a.py", "Greeter.greet"), ("pkg/a.py", "Greeter.format")]


def test_import_cycles_are_broken_by_path_order(tmp_path):
    root = tmp_path / "cyc"
    (root / "m").mkdir(parents=True)
    (root / "m" / "x.py").write_text("from m.y import g\n\ndef f():\n    return g()\n")
    (root / "m" / "y.py").write_text("from m.x import f\n\ndef g():\n    return 1\n")
    (root / "m" / "z.py").write_text("from m.x import f\n\ndef h():\n    return f()\n")
    (root / "a.py").write_text("def top():\n    return 0\n")
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        assert file_order(index) == ["a.py", "m/x.py", "m/y.py", "m/z.py"]
    finally:
        index.close()


def test_the_writer_prefix_is_stable_and_clips_long_functions(model_session):
    writer = NoteWriter(model_session)
    assert NoteWriter(model_session).prefix == writer.prefix
    long_source = "def f():\n" + "    x = 1\n" * 500
    tokens = writer._source_tokens("m.py", long_source)
    assert len(tokens) < note_writer.MAX_SOURCE_TOKENS + 20
    assert model_session.detokenize(tokens).rstrip().endswith("...\n```")


@pytest.mark.model
def test_model_pass_notes_every_function_then_skips_unchanged_ones(model_session, tmp_path):
    index = fresh_index(tmp_path)
    try:
        seen = []
        run = run_notes(model_session, index, progress=lambda done, total: seen.append((done, total)))
        assert (run.total, run.noted, run.failed, run.up_to_date) == (5, 5, 0, 0)
        assert seen[-1] == (5, 5)
        with NotesStore.for_index(index) as store:
            for path, qualname in FIVE:
                stored = store.get(path, qualname)
                assert stored is not None and stored.note.purpose.strip(), (path, qualname)
                assert stored.hash == function_hash(index, fragment(index, path, qualname))
                lookup = notes_for(index, path, qualname, store)
                assert lookup.source == LLM and lookup.note == stored.note
        assert 0 < run.decoded_per_note <= 4 * 32
        assert run.accounting.cache_hit > 0.5  # the instruction prefix is evaluated once

        again = run_notes(model_session, index)
        assert (again.noted, again.up_to_date, again.accounting.decoded) == (0, 5, 0)

        # Editing one function re-notes exactly that one.
        source = index.root / "pkg" / "b.py"
        source.write_text(source.read_text().replace("return v * 2", "return v * 3"))
        index.update()
        assert notes_for(index, "pkg/b.py", "helper").source == DETERMINISTIC
        edited = run_notes(model_session, index)
        assert (edited.noted, edited.up_to_date) == (1, 4)
        assert notes_for(index, "pkg/b.py", "helper").source == LLM
    finally:
        index.close()


@pytest.mark.model
def test_a_cut_short_run_resumes_where_it_stopped(model_session, tmp_path, capsys):
    index = fresh_index(tmp_path)
    try:
        first = run_notes(model_session, index, limit=2)
        assert (first.noted, first.total) == (2, 2)
        # A cancellation after the next note: that note is committed, the rest is left.
        written = []
        stopped = run_notes(model_session, index, on_note=lambda p, q, n: written.append(q),
                            cancelled=lambda: len(written) >= 1)
        assert stopped.cancelled and stopped.noted == 1 and stopped.up_to_date == 2
        rest = run_notes(model_session, index)
        assert (rest.noted, rest.up_to_date) == (2, 3)
        with NotesStore.for_index(index) as store:
            assert store.count() == 5
    finally:
        index.close()

    # `prism-code notes` prints what is stored, with where each note came from.
    assert cli_main(["notes", str(tmp_path / "pyrepo"), "pkg/b.py", "--cache-dir", str(tmp_path / "cache"),
                     "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["qualname"], r["source"]) for r in rows] == [("helper", "llm"), ("unrelated", "llm")]


# ---- Chain-of-Key module summaries ------------------------------------------------------------


def test_module_summary_before_any_model_runs(index):
    lookup = module_summary(index, "pkg/a.py")
    assert lookup.source == DETERMINISTIC
    assert lookup.summary["depends_on"] == ["pkg/b.py"]
    assert lookup.summary["purpose"] == "Defines caller, Greeter.greet, Greeter.format."
    assert set(lookup.summary["key_functions"]) == {"caller", "Greeter.greet", "Greeter.format"}


@pytest.mark.model
def test_cok_merges_arriving_notes_into_the_module_summary(model_session, index):
    notes = {"helper": FunctionNote("Doubles a number.", "a number", "twice the number", "Multiplies by two."),
             "unrelated": FunctionNote("Returns zero.", "nothing", "0", "Returns the constant 0.")}
    with NotesStore.for_index(index) as store:
        summarizer = ModuleSummarizer(model_session, index, store)
        summary = summarizer.notes_arrived("pkg/b.py", notes)
        # Only the grammar's paths can change: the purpose and entries for the arriving notes.
        assert set(summary["key_functions"]) <= {"helper", "unrelated"}
        assert summary["key_functions"] and all(v.strip() for v in summary["key_functions"].values())
        assert summary["depends_on"] == []
        assert summarizer.accounting.calls == 2 and summarizer.accounting.decoded > 0
        stored = module_summary(index, "pkg/b.py", store)
        assert stored.source == LLM and stored.summary == summary


def test_module_summaries_wait_until_every_function_of_the_file_has_its_model_note(index):
    note = FunctionNote("Does a thing.", "a value", "a result", "Computes it.")
    with NotesStore.for_index(index) as store:
        assert files_ready_for_summary(index, store) == []
        for path, qualname in FIVE:
            if path == "pkg/b.py":
                store.put(path, qualname, function_hash(index, fragment(index, path, qualname)), note, "test")
        store.put("pkg/a.py", "caller", function_hash(index, fragment(index, "pkg/a.py", "caller")), note, "test")
        # a.py still has two functions without a model note
        assert files_ready_for_summary(index, store) == ["pkg/b.py"]
        store.put_summary("pkg/b.py", "stale", {"purpose": "old"}, "test")
        assert files_ready_for_summary(index, store) == ["pkg/b.py"]  # a summary of older text is redone


def test_a_stub_note_says_it_does_nothing_and_names_its_implementations(tmp_path):
    """An abstract method's note is the deterministic one, for good: the model would invent
    behaviour that is not there. Its implementations are named; none of them is a call."""
    root = tmp_path / "shapes"
    root.mkdir()
    (root / "base.py").write_text(
        "class Shape:\n"
        "    def area(self):\n"
        '        """How much room the shape takes."""\n'
        "        raise NotImplementedError\n\n"
        "    def unused(self) -> int:\n"
        "        ...\n\n"
        "    def report(self):\n"
        "        return self.area()\n")
    (root / "square.py").write_text(
        "from base import Shape\n\n\n"
        "class Square(Shape):\n"
        "    def area(self):\n"
        "        return 4\n\n\n"
        "class Circle(Shape):\n"
        "    def area(self):\n"
        "        return 3\n")
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        area = notes_for(index, "base.py", "Shape.area")
        assert area.source == STUB
        assert area.note == FunctionNote(
            "How much room the shape takes.", "no parameters", "",
            "Does nothing itself (an abstract or placeholder body); implemented by Circle.area, Square.area; "
            "called by Shape.report.")
        unused = notes_for(index, "base.py", "Shape.unused")
        assert unused.source == STUB and unused.note.output == "returns int"
        assert unused.note.procedure == ("Does nothing itself (an abstract or placeholder body); nothing in the "
                                         "repository implements it.")
        assert notes_for(index, "square.py", "Square.area").source == DETERMINISTIC
        # Even a stored model note for a stub's text does not replace its deterministic note.
        with NotesStore.for_index(index) as store:
            stub = fragment(index, "base.py", "Shape.area")
            store.put("base.py", "Shape.area", function_hash(index, stub),
                      FunctionNote("Computes the area.", "the shape", "a number", "Multiplies the sides."), "test")
            assert notes_for(index, "base.py", "Shape.area", store).source == STUB
    finally:
        index.close()


def test_the_model_pass_skips_stubs_and_their_files_need_no_model_note(tmp_path):
    root = tmp_path / "protocols"
    root.mkdir()
    (root / "api.py").write_text(
        "class Reader:\n"
        "    def read(self, size: int) -> bytes:\n"
        "        ...\n\n"
        "    def close(self):\n"
        "        pass\n")
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        with NotesStore.for_index(index) as store:
            # Every function is a stub: the pass has nothing to ask a model (no session needed).
            run = run_notes(None, index, store=store)  # type: ignore[arg-type]
            assert (run.total, run.stubs, run.noted, run.up_to_date) == (2, 2, 0, 0)
            assert run.as_row()["stubs"] == 2
            assert store.hashes() == {}
            # Their file is ready for its module summary: no model note will ever come.
            assert files_ready_for_summary(index, store) == ["api.py"]
    finally:
        index.close()
