"""The docstrings benchmark's sampler and stripper on a small package, and its stored tasks."""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from prism_bench.docstrings_data import (
    DATA_FILE,
    PROJECTS,
    SPLITS,
    DocTask,
    candidates,
    docstring_functions,
    load_tasks,
    query_of,
    sample_project,
    source_hash,
    strip_docstrings,
    verify_tasks,
)
from prism_bench.docstrings_report import bucket_of
from prism_code.index import RepoIndex
from prism_code.parse import parse_source

FILES = {
    "pkg/__init__.py": '''
        """The package."""


        def greet(name):
            """Say hello to somebody by name, politely and loudly."""
            return "hello " + name.upper()


        def copy_a(x):
            """Copied docstring that two functions share word for word."""
            return x + 1


        def copy_b(x):
            """Copied docstring that two functions share word for word, and more."""
            return x + 2
        ''',
    "pkg/shapes.py": '''
        import functools


        class Box:
            """A box."""

            def __init__(self, size):
                """Make a box of the given size in centimetres."""
                self.size = size

            @functools.lru_cache(maxsize=None)
            @staticmethod
            def volume_of(size):
                """Compute the volume of a cube with edges of this size.

                Longer explanation that is not part of the query.
                """
                return size ** 3

            @property
            def label(self):
                """The label printed on the side of the box."""
                return f"box {self.size}"

            def get_size(self):
                """Return the size this box was created with."""
                return self.size

            def interface(self):
                """Subclasses override this hook to pack the box contents."""

            def one_liner(self): """Pack the box in one single line of code."""; return 1

            def nested(self):
                """Walk every corner of the box and count the corners seen."""
                def corner(i):
                    """Visit one corner of the box and report its index."""
                    # a comment after the docstring
                    return i * 2
                return sum(corner(i) for i in range(8))
        ''',
    "pkg/tests/test_shapes.py": '''
        def test_volume():
            """Check that a cube of size two has volume eight."""
            assert 2 ** 3 == 8
        ''',
    "pkg/test_more.py": '''
        def helper():
            """A helper used only by the tests of the package here."""
            return 1
        ''',
}


@pytest.fixture
def package(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _strip_tree(root: Path, dest: Path, tasks: list[DocTask]) -> None:
    by_path: dict[str, set[int]] = {}
    for t in tasks:
        by_path.setdefault(t.path, set()).add(t.start_line)
    for path in sorted(p for p in root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        source = path.read_bytes()
        out.write_bytes(strip_docstrings(rel, source, by_path[rel]) if rel in by_path else source)


def test_candidates_skip_dunders_accessors_tests_and_empty_bodies(package: Path) -> None:
    names = {f.qualname for f, _ in candidates(package)}
    assert names == {"greet", "copy_b", "Box.volume_of", "Box.one_liner", "Box.nested",
                     "Box.nested.corner"}
    # __init__ (dunder), label (property), get_size (return self.x), interface (docstring
    # only), test_volume and helper (test files) are not tasks, nor copy_a, whose query is
    # also in copy_b's docstring (copy_b's own query is longer, so it stays).


def test_decorated_method_starts_on_its_def_line(package: Path) -> None:
    source = (package / "pkg/shapes.py").read_bytes()
    volume = next(f for f in docstring_functions("pkg/shapes.py", source) if f.qualname == "Box.volume_of")
    lines = source.decode().split("\n")
    assert lines[volume.start_line - 1].strip().startswith("def volume_of(")
    assert lines[volume.start_line - 2].strip() == "@staticmethod"


def test_query_is_first_paragraph_with_roles_simplified() -> None:
    doc = "Return the :class:`~sqlalchemy.orm.Session` for\n``obj`` via :meth:`.Query.get`.\n\nMore."
    assert query_of(doc) == "Return the Session for ``obj`` via Query.get."
    assert query_of(":func:`helpers <flask.helpers>` and :param x: kept") == "helpers and :param x: kept"
    long = "First sentence is here. " + " ".join(["Word"] * 45)
    assert query_of(long) == "First sentence is here."
    assert bucket_of("one two") == "1-8 words" and bucket_of(" ".join(["w"] * 16)) == "16+ words"


def test_same_seed_same_tasks_and_balanced_splits(package: Path) -> None:
    first = sample_project("pkg", package, seed=7, per_project=4)
    assert first == sample_project("pkg", package, seed=7, per_project=4)
    assert len(first) == 4
    assert Counter(t.split for t in first) == {"tune": 2, "test": 2}
    assert verify_tasks(package, first) == []
    assert sample_project("pkg", package, seed=8, per_project=4) != first
    # Every candidate at once: 7 are rounded down to 6 so both splits weigh the same.
    assert len(sample_project("pkg", package, seed=7, per_project=100)) == 6


def test_stripped_tree_keeps_lines_parses_and_hides_docstrings(package: Path, tmp_path: Path) -> None:
    tasks = sample_project("pkg", package, seed=1, per_project=100)
    # The stripper also handles a body that is nothing but its docstring.
    interface = next(f for f in docstring_functions("pkg/shapes.py", (package / "pkg/shapes.py").read_bytes())
                     if f.qualname == "Box.interface")
    extra = DocTask("pkg", "pkg/shapes.py", "Box.interface", interface.start_line, interface.end_line,
                    query_of(interface.doc), "tune", "")
    docs = {t.qualname: f.doc for t in [*tasks, extra]
            for f in docstring_functions(t.path, (package / t.path).read_bytes()) if f.qualname == t.qualname}
    assert len(docs) == len(tasks) + 1 and all(docs.values())
    stripped = tmp_path / "stripped"
    _strip_tree(package, stripped, [*tasks, extra])

    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        before, after = path.read_bytes(), (stripped / rel).read_bytes()
        ast.parse(after)
        parsed_before, parsed_after = parse_source(rel, before), parse_source(rel, after)
        assert parsed_before is not None and parsed_after is not None and not parsed_after.has_errors
        assert [(d.qualname, d.start_line, d.end_line) for d in parsed_before.definitions] == \
            [(d.qualname, d.start_line, d.end_line) for d in parsed_after.definitions]
        assert before.count(b"\n") == after.count(b"\n")

    shapes = (stripped / "pkg/shapes.py").read_text()
    assert "def one_liner(self): pass; return 1" in shapes
    assert "pass" in shapes.split("def interface(self):")[1].split("def one_liner")[0]

    index = RepoIndex(stripped, cache_dir=tmp_path / "index")
    try:
        index.update()
        functions = {(f.path, f.start_line): f for f in index.functions()}
        for task in [*tasks, extra]:
            fragment = functions[(task.path, task.start_line)]
            assert fragment.qualname == task.qualname
            text = index.text(fragment)
            assert docs[task.qualname] not in text
            assert text.lstrip().startswith("def ")
        # Functions that were not sampled keep their docstrings.
        label = next(f for f in index.functions() if f.qualname == "Box.label")
        assert "The label printed" in index.text(label)
    finally:
        index.close()


def test_changed_source_is_reported(package: Path) -> None:
    tasks = sample_project("pkg", package, seed=3, per_project=2)
    file = package / tasks[0].path
    file.write_text(file.read_text().replace("return", "return  "))
    assert verify_tasks(package, tasks)


def test_stored_tasks_cover_every_project_in_both_splits() -> None:
    tasks = load_tasks(DATA_FILE)
    per_project = Counter(t.project for t in tasks)
    assert set(per_project) == {p.name for p in PROJECTS}
    assert all(20 <= n <= 26 for n in per_project.values()), per_project
    for project in per_project:
        splits = Counter(t.split for t in tasks if t.project == project)
        assert set(splits) == set(SPLITS) and splits["tune"] == splits["test"]
    for t in tasks:
        assert 1 <= t.start_line <= t.end_line
        assert len(t.sha256) == 64 and len(t.query.split()) >= 6
        assert not t.path.startswith("/") and "\\" not in t.path
    assert len({(t.project, t.path, t.start_line) for t in tasks}) == len(tasks)


def test_source_hash_is_of_the_function_lines() -> None:
    source = b"a\ndef f():\n    return 1\nb\n"
    assert source_hash(source, 2, 3) == source_hash(b"def f():\n    return 1", 1, 2)
