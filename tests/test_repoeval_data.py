"""RepoEval-style task selection on a small real fixture repository, scoring, and one PyPI fetch."""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_bench import repoeval_data as rd
from prism_bench.corpora import DownloadError
from prism_bench.repoeval_data import (
    API,
    LINE,
    PROJECTS,
    CompletionTask,
    build_benchmark,
    build_tasks,
    code_tokens,
    edit_similarity,
    exact_match,
    load_tasks,
    materialise_project,
    save_tasks,
)

UTIL = '''\
"""Utilities for the fixture package."""

import math


def scale(values, factor):
    """Multiply every value by factor.
    Returns a new list of scaled values.
    """
    result = [value * factor for value in values]
    return result


class Normaliser:
    def __init__(self, total):
        self.total = total

    def apply(self, values):
        # divide every value by the stored total
        shares = [v / self.total for v in values]
        return [round(math.fabs(s), 3) for s in shares]


def stack(rows, axis=0):
    return list(zip(*rows)) if axis else rows


def update(history, extra):
    history["extra"] = extra
    return history


class Ledger:
    def record(self, entry):
        self.entries = [entry]
'''

MODEL = '''\
"""A model built on the utilities."""
from pkg.util import (
    Normaliser,
    scale,
)
from . import util

TEMPLATE = """
first line of a template with plenty of words in it
second line of the template = still a string
"""


def train(values, factor=2):
    scaled = scale(values, factor)
    norm = Normaliser(sum(scaled))
    weights = norm.apply(scaled)
    total = util.scale(weights, 1.0)
    return total, len(total) + factor


def evaluate(values):
    result = train(values)
    return {
        "total": result[0],
    }


def report(values, history):
    import numpy as np
    stacked = np.stack([values, values], axis=1)
    history.update({"stacked": stacked})
    history.record(stacked)
    return stacked
'''

# Hand-checked eligible lines, as (path, 1-based line): code, >= 5 tokens, previous line not
# blank. Excluded although long enough and after a non-blank line: the docstring (util 7-8),
# the comment (util 19), the import (model 2) and the template string's lines (model 9-10).
EXPECTED_LINE_CANDIDATES = {
    ("pkg/util.py", 10),  # result = [value * factor for value in values]
    ("pkg/util.py", 15),  # def __init__(self, total):
    ("pkg/util.py", 16),  # self.total = total
    ("pkg/util.py", 20),  # shares = [v / self.total for v in values]
    ("pkg/util.py", 21),  # return [round(math.fabs(s), 3) for s in shares]
    ("pkg/model.py", 15),  # scaled = scale(values, factor)
    ("pkg/model.py", 16),
    ("pkg/model.py", 17),
    ("pkg/model.py", 18),
    ("pkg/model.py", 19),
    ("pkg/model.py", 23),  # result = train(values)
    ("pkg/model.py", 25),  # "total": result[0],
    ("pkg/util.py", 25),  # return list(zip(*rows)) if axis else rows
    ("pkg/util.py", 29),  # history["extra"] = extra
    ("pkg/model.py", 31),  # stacked = np.stack([values, values], axis=1)
    ("pkg/model.py", 32),  # history.update({"stacked": stacked})
    ("pkg/model.py", 33),  # history.record(stacked)
    ("pkg/util.py", 34),  # def record(self, entry):
    ("pkg/util.py", 35),  # self.entries = [entry]
}

# Lines whose call resolves to a definition in the other file (model.py -> util.py). The graph
# also links `np.stack(...)`, `history.update(...)` and `history.record(...)` (model 31-33) to
# util.py by the unique names `stack`, `update` and `record`: the first is numpy's, the second
# a dict method, the third a method of a class model.py never imports. None may become a task.
EXPECTED_API = {
    15: "pkg/util.py#scale",
    16: "pkg/util.py#Normaliser",
    17: "pkg/util.py#Normaliser.apply",
    18: "pkg/util.py#scale",
}


def write_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/util.py": UTIL, "pkg/model.py": MODEL})


def all_tasks(root: Path, **kwargs) -> list[CompletionTask]:
    return build_tasks(root, n_line=1000, n_api=1000, max_per_file=1000, **kwargs)


def test_tokenizer_counts_identifiers_numbers_and_operators():
    assert code_tokens("x += foo(a, 1.5) ** 2") == ["x", "+=", "foo", "(", "a", ",", "1.5", ")", "**", "2"]
    assert len(code_tokens("return result")) == 2


def test_line_tasks_follow_repocoder_rules(repo: Path):
    tasks = [t for t in all_tasks(repo) if t.kind == LINE]
    assert {(t.path, t.line) for t in tasks} == EXPECTED_LINE_CANDIDATES
    for t in tasks:
        text = t.ground_truth.strip()
        assert not text.startswith(("#", "import", "from", '"""'))
        assert len(code_tokens(text)) >= 5
        assert "template" not in text


def test_ground_truth_is_the_exact_line_and_context_rebuilds_the_file(repo: Path):
    for t in all_tasks(repo):
        source = (repo / t.path).read_text()
        assert source.split("\n")[t.line - 1] == t.ground_truth
        assert t.ground_truth.startswith(t.indent) and not t.ground_truth[len(t.indent):][:1].isspace()
        prefix, suffix = t.context(repo)
        assert prefix + t.ground_truth + "\n" + suffix == source


def test_api_tasks_call_a_definition_in_another_file(repo: Path):
    tasks = [t for t in all_tasks(repo) if t.kind == API]
    assert {t.line: t.api for t in tasks} == EXPECTED_API
    assert all(t.path == "pkg/model.py" for t in tasks)
    # `train(values)` calls a function of the same file: not an API-level task.
    assert 23 not in {t.line for t in tasks}


def test_calls_named_like_a_project_function_are_not_api_calls(repo: Path):
    from prism_code.graph import CodeGraph, def_node
    from prism_code.parse import parse_source

    graph = CodeGraph()
    graph.update(parse_source(p, (repo / p).read_bytes()) for p in ("pkg/util.py", "pkg/model.py"))
    report = def_node("pkg/model.py", "report")
    # np.stack, and update/record on a parameter of unknown type, call nothing in util.py: the
    # graph's resolved calls say so (at most a weaker name-match link relates them).
    assert not {c.callee for c in graph.calls_from(report)} & {
        def_node("pkg/util.py", "stack"), def_node("pkg/util.py", "update"), def_node("pkg/util.py", "Ledger.record")}
    assert not {31, 32, 33} & {t.line for t in all_tasks(repo) if t.kind == API}


def test_sampling_is_deterministic_spread_and_unique(tmp_path: Path):
    body = "\n".join(f"    value_{i} = compute(value_{i - 1}, {i})" for i in range(1, 40))
    files = {f"pkg/m{k}.py": f"def compute_{k}(value_0):\n{body}\n    return value_39\n" for k in range(6)}
    root = write_repo(tmp_path / "big", files)
    first = build_tasks(root, n_line=10, n_api=0, seed=3, max_per_file=2)
    assert first == build_tasks(root, n_line=10, n_api=0, seed=3, max_per_file=2)
    assert first != build_tasks(root, n_line=10, n_api=0, seed=4, max_per_file=2)
    assert len(first) == 10
    per_file = {}
    for t in first:
        per_file[t.path] = per_file.get(t.path, 0) + 1
    assert max(per_file.values()) == 2
    # every file repeats the same lines, and RepoCoder never asks for the same line text twice
    assert len({t.ground_truth.strip() for t in first}) == 10
    assert [t.task_id for t in first] == [f"big/line/{i}" for i in range(10)]


def test_save_load_round_trip(repo: Path, tmp_path: Path):
    tasks = all_tasks(repo, project="fixture", version="1.0")
    path = tmp_path / "out" / "tasks.jsonl"
    save_tasks(tasks, path)
    assert load_tasks(path) == tasks


def test_build_benchmark_writes_once_and_reuses(repo: Path, tmp_path: Path, monkeypatch):
    calls = []

    def fake_materialise(spec, cache_dir=None):
        calls.append(spec.package)
        return repo

    monkeypatch.setattr(rd, "materialise_project", fake_materialise)
    spec = PROJECTS[0]
    out = build_benchmark(tmp_path / "cache", 2, 2, seed=0, projects=[spec])
    tasks = load_tasks(out)
    assert len(tasks) == 4 and {t.project for t in tasks} == {spec.package}
    assert {t.version for t in tasks} == {spec.version}
    assert build_benchmark(tmp_path / "cache", 2, 2, seed=0, projects=[spec]) == out
    assert calls == [spec.package]
    assert build_benchmark(tmp_path / "cache", 2, 2, seed=1, projects=[spec]) != out


def test_exact_match_compares_stripped_first_lines():
    truth = "        x = foo(a, b)"
    assert exact_match("x = foo(a, b)", truth)
    assert exact_match("\n\n  x = foo(a, b)  \nreturn x\n", truth)
    assert not exact_match("x = foo(a,b)", truth)
    assert not exact_match("", truth)


def test_edit_similarity_is_normalised_levenshtein():
    assert edit_similarity("kitten", "  sitting") == pytest.approx(1 - 3 / 7)
    assert edit_similarity("x = foo(a, b)\nmore", "    x = foo(a, b)") == 1.0
    assert edit_similarity("", "abc") == 0.0
    # "x = f(a)" vs "x = f(b)": one substitution over 8 characters
    assert edit_similarity("x = f(a)", "x = f(b)") == pytest.approx(7 / 8)


def test_materialise_smallest_project_from_pypi(tmp_path: Path):
    spec = next(p for p in PROJECTS if p.package == "evaluate")
    try:
        root = materialise_project(spec, tmp_path)
    except DownloadError as exc:
        if exc.network:
            pytest.skip(f"PyPI unreachable: {exc}")
        raise
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    assert files and all(f.startswith("evaluate/") for f in files)
    assert "evaluate/module.py" in files
    tasks = build_tasks(root, n_line=5, n_api=5, seed=0, project=spec.package, version=spec.version)
    assert [t.kind for t in tasks].count(LINE) == 5 and [t.kind for t in tasks].count(API) == 5
    for t in tasks:
        assert (root / t.path).read_text().split("\n")[t.line - 1] == t.ground_truth
        if t.kind == API:
            assert t.api is not None and not t.api.startswith(t.path + "#")


def test_cursors_sit_where_their_kind_says_and_are_seeded(repo: Path):
    tasks = all_tasks(repo, cursor_kinds=rd.CURSOR_KINDS)
    assert tasks == all_tasks(repo, cursor_kinds=rd.CURSOR_KINDS)
    assert {t.cursor_kind for t in tasks} == set(rd.CURSOR_KINDS)
    for t in tasks:
        rest = t.ground_truth[len(t.typed):]
        assert t.ground_truth.startswith(t.typed) and rest.strip(), t
        if t.cursor_kind == "indent":
            assert t.typed == t.indent
        elif t.cursor_kind == "dot":
            assert t.typed.endswith(".") and (rest[0].isalpha() or rest[0] == "_")
        else:
            assert t.typed.strip() and not t.typed.endswith((".", " ")), t
    # the benchmark that never moved its cursors keeps them after the indentation
    assert all(t.cursor is None and t.typed == t.indent for t in all_tasks(repo))


def test_a_line_without_an_attribute_dot_never_gets_a_dot_cursor():
    import random

    rng = random.Random(0)
    kinds = {rd.place_cursor("    total = 1.5 + count", rng, rd.CURSOR_KINDS)[1] for _ in range(50)}
    assert kinds == {"indent", "mid"}
    column, kind = rd.place_cursor("    x = self.scale(v)", random.Random(1), ("dot",))
    assert (column, kind) == (len("    x = self."), "dot")


def test_tasks_alternate_between_the_tuning_and_the_test_half(repo: Path):
    tasks = all_tasks(repo, cursor_kinds=rd.CURSOR_KINDS)
    for kind in (LINE, API):
        splits = [t.split for t in tasks if t.kind == kind]
        assert splits[:4] == ["tune", "test", "tune", "test"][:len(splits[:4])]
