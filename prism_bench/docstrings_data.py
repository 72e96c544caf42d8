"""Find-by-description built like CodeSearchNet: a function's own docstring is the query.

RepoQA's needle descriptions are long and written for the benchmark; users type short
ones. Here the first paragraph of a real docstring is the query and the haystack is the
project with that docstring removed, so the text cannot be found by copying. Six pinned
PyPI releases are the haystacks (PyPI is the only code host the project machines reach);
the sampled tasks are stored in ``prism_bench/data/docstrings.json`` with the sha256 of
each function's source, so a later run checks it searches for the same functions.

``python -m prism_bench.docstrings_data --resample`` samples the tasks again (seeded);
``load_haystacks`` is what the benchmark runs on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from tree_sitter import Node

from prism_bench.corpora import MARKER_SUFFIX, fetch_and_extract
from prism_bench.repoqa_data import Haystack, Needle
from prism_code.config import cache_root
from prism_code.parse import parse_source
from prism_code.parse.docs import python_docstring
from prism_code.parse.languages import parser
from prism_code.workspace import scan

DATA_FILE = Path(__file__).resolve().parent / "data" / "docstrings.json"
SEED = 20241122
PER_PROJECT = 24  # even, so the tune and test splits get the same share of every project
MIN_QUERY_WORDS = 6
MAX_QUERY_WORDS = 40  # a longer first paragraph is cut to its first sentence
SPLITS = ("tune", "test")
TEST_DIRS = frozenset({"tests", "test", "testing"})


@dataclass(frozen=True)
class Project:
    """One haystack: the files of ``prefix`` in the pure wheel of ``package==version``."""

    name: str
    package: str
    version: str
    prefix: str  # POSIX prefix inside the wheel, with a trailing "/"


PROJECTS: tuple[Project, ...] = (
    Project("requests", "requests", "2.32.3", "requests/"),
    Project("flask", "flask", "3.0.3", "flask/"),
    Project("pydantic", "pydantic", "2.9.2", "pydantic/"),
    Project("starlette", "starlette", "0.41.2", "starlette/"),
    Project("sqlalchemy-orm", "sqlalchemy", "2.0.36", "sqlalchemy/orm/"),
    Project("pygments", "pygments", "2.18.0", "pygments/"),
)


@dataclass(frozen=True)
class DocTask:
    project: str
    path: str  # POSIX, relative to the haystack root
    qualname: str
    start_line: int  # 1-based, inclusive: the `def` line (decorators excluded), as Definition has it
    end_line: int
    query: str
    split: str  # "tune" or "test"
    sha256: str  # of the original source lines start_line..end_line joined by "\n"

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class DocFunction:
    """A function or method with a docstring, as the stripper and the sampler see it."""

    path: str
    qualname: str
    start_line: int
    end_line: int
    doc: str  # cleaned as `help()` does
    doc_start: int  # byte range of the docstring's expression statement
    doc_end: int
    only_statement: bool  # nothing but the docstring (and comments) in the body
    bodiless: bool  # the rest is `pass`, `...` or `raise NotImplementedError`
    trivial: bool  # one `return x` / `return self.x`, or a one-statement property accessor
    overload: bool


class TaskMismatchError(RuntimeError):
    """The stored tasks do not match the downloaded sources."""


def default_cache_dir() -> Path:
    return cache_root() / "bench" / "docstrings"


# ---- parsing ------------------------------------------------------------------------------


def _function_nodes(root: Node) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            yield node
        stack.extend(node.named_children)


def _decorators(node: Node, source: bytes) -> list[str]:
    parent = node.parent
    if parent is None or parent.type != "decorated_definition":
        return []
    return [source[d.start_byte:d.end_byte].decode("utf-8", "replace").lstrip("@").strip()
            for d in parent.named_children if d.type == "decorator"]


def _is_accessor_decorator(decorator: str) -> bool:
    last = decorator.split("(", 1)[0].rsplit(".", 1)[-1]
    return "property" in last or last in ("getter", "setter", "deleter")


def _is_plain_return(statement: Node) -> bool:
    """`return x` or `return self.x`: a body that tells nothing its name does not."""
    if statement.type != "return_statement" or statement.named_child_count != 1:
        return False
    value = statement.named_child(0)
    if value is None:
        return False
    if value.type == "identifier":
        return True
    target = value.child_by_field_name("object")
    return value.type == "attribute" and target is not None and target.type == "identifier"


def _is_placeholder(statement: Node, source: bytes) -> bool:
    if statement.type == "pass_statement":
        return True
    if statement.type == "expression_statement" and statement.named_child_count == 1:
        child = statement.named_child(0)
        return child is not None and child.type == "ellipsis"
    if statement.type == "raise_statement":
        return b"NotImplementedError" in source[statement.start_byte:statement.end_byte]
    return False


def docstring_functions(path: str, source: bytes) -> list[DocFunction]:
    """Every function/method of a Python file whose body starts with a docstring.

    Definitions (qualname, lines) come from prism_code's own parse, so the tasks name
    functions exactly as the index does; the tree is read again only for the statements.
    """
    parsed = parse_source(path, source, "python")
    if parsed is None:
        return []
    definitions = {d.start_byte: d for d in parsed.definitions if d.kind in ("function", "method")}
    found = []
    for node in _function_nodes(parser("python").parse(source).root_node):
        definition = definitions.get(node.start_byte)
        body = node.child_by_field_name("body")
        if definition is None or body is None:
            continue
        doc = python_docstring(body, source)
        if not doc:
            continue
        statements = [c for c in body.named_children if c.type != "comment"]
        rest = statements[1:]
        decorators = _decorators(node, source)
        trivial = len(rest) == 1 and (_is_plain_return(rest[0]) or any(map(_is_accessor_decorator, decorators)))
        found.append(DocFunction(
            path=path, qualname=definition.qualname, start_line=definition.start_line,
            end_line=definition.end_line, doc=doc, doc_start=statements[0].start_byte,
            doc_end=statements[0].end_byte, only_statement=not rest,
            bodiless=all(_is_placeholder(s, source) for s in rest), trivial=trivial,
            overload=any(d.rsplit(".", 1)[-1] == "overload" for d in decorators)))
    return sorted(found, key=lambda f: f.start_line)


# ---- queries ------------------------------------------------------------------------------

# :class:`Foo`, :meth:`~.Session.query`, :ref:`text <target>`, :py:func:`f`
_ROLE = re.compile(r":(?:[A-Za-z][\w.+-]*:)+`([^`]+)`")
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z(`\"'*:])")


def _role_text(match: re.Match[str]) -> str:
    body = match.group(1).strip()
    titled = re.fullmatch(r"(.+?)\s*<[^>]*>", body)
    if titled:
        return titled.group(1)
    if body.startswith("~"):
        return body[1:].rsplit(".", 1)[-1]
    return body.lstrip(".")


def query_of(doc: str) -> str:
    """The docstring's first paragraph, one line, roles as plain names, at most ~40 words.

    What a user might paste: double-backquoted code and `:param` stay as written; only
    Sphinx cross-reference roles lose their markup, which no one types.
    """
    paragraph: list[str] = []
    for line in doc.splitlines():
        if not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    query = " ".join(_ROLE.sub(_role_text, " ".join(paragraph)).split())
    if len(query.split()) > MAX_QUERY_WORDS:
        end = _SENTENCE_END.search(query)
        if end is not None:
            query = query[:end.end()]
    return query


# ---- files and candidates -----------------------------------------------------------------


def is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return (any(p in TEST_DIRS for p in parts[:-1]) or name.startswith("test_") or name.endswith("_test.py")
            or name == "conftest.py")


def source_files(root: Path) -> list[str]:
    """The .py files the index would read (prism_code's own scan), tests left out."""
    return [f.path for f in scan(root, trusted=False).files if f.path.endswith(".py") and not is_test_path(f.path)]


def source_hash(source: bytes, start_line: int, end_line: int) -> str:
    lines = source.split(b"\n")[start_line - 1:end_line]
    return hashlib.sha256(b"\n".join(lines)).hexdigest()


def _skip_reason(f: DocFunction, query: str, shared: bool) -> str | None:
    name = f.qualname.rsplit(".", 1)[-1]
    if name.startswith("__") and name.endswith("__"):
        return "dunder"
    if name.startswith("test"):
        return "test"
    if f.overload:
        return "overload"
    if f.bodiless:
        # Stripped of its docstring only the signature is left: nothing to find but the name.
        return "no body"
    if f.trivial:
        return "accessor"
    if len(query.split()) < MIN_QUERY_WORDS:
        return "short"
    if shared:
        # The same text stays in the haystack on another function (copied docstrings,
        # pydantic.v1): the task would have two right answers.
        return "shared docstring"
    return None


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _shared(functions: Sequence[DocFunction], queries: Sequence[str]) -> list[bool]:
    """Whether each query is also written in another function's docstring (as a whole phrase)."""
    docs = [_normal(_ROLE.sub(_role_text, f.doc)) for f in functions]  # as the queries read roles
    found = []
    for i, query in enumerate(queries):
        needle = _normal(query).rstrip(" .")
        phrase = re.compile(re.escape(needle) + r"(?![\w'])")
        found.append(any(j != i and needle in doc and phrase.search(doc) for j, doc in enumerate(docs)))
    return found


def candidates(root: Path) -> list[tuple[DocFunction, str]]:
    """(function, query) for every function worth a task, sorted by path and line."""
    functions = [f for path in source_files(root) for f in docstring_functions(path, (root / path).read_bytes())]
    queries = [query_of(f.doc) for f in functions]
    shared = _shared(functions, queries)
    chosen = [(f, q) for f, q, s in zip(functions, queries, shared, strict=True) if _skip_reason(f, q, s) is None]
    return sorted(chosen, key=lambda fq: (fq[0].path, fq[0].start_line))


def sample_project(project: str, root: Path, seed: int = SEED, per_project: int = PER_PROJECT) -> list[DocTask]:
    """``per_project`` tasks drawn with ``random.Random(seed)``; tune and test alternate in draw order.

    A project with fewer candidates (starlette documents little) gives all of them, rounded
    down to an even number so that it weighs the same in both splits.
    """
    pool = candidates(root)
    random.Random(seed).shuffle(pool)
    tasks = []
    for i, (f, query) in enumerate(pool[:min(per_project, len(pool) // 2 * 2)]):
        source = (root / f.path).read_bytes()
        tasks.append(DocTask(project=project, path=f.path, qualname=f.qualname, start_line=f.start_line,
                             end_line=f.end_line, query=query, split=SPLITS[i % 2],
                             sha256=source_hash(source, f.start_line, f.end_line)))
    return tasks


# ---- stripping ----------------------------------------------------------------------------


def strip_docstrings(path: str, source: bytes, start_lines: set[int]) -> bytes:
    """``source`` without the docstrings of the functions starting on ``start_lines``.

    Every line keeps its number: the docstring becomes as many blank lines, or ``pass``
    and blank lines where the body would otherwise be empty (or the line goes on).
    """
    targets = [f for f in docstring_functions(path, source) if f.start_line in start_lines]
    missing = start_lines - {f.start_line for f in targets}
    if missing:
        raise TaskMismatchError(f"{path}: no docstring on functions at lines {sorted(missing)}")
    out = source
    for f in sorted(targets, key=lambda t: t.doc_start, reverse=True):
        line_start = out.rfind(b"\n", 0, f.doc_start) + 1
        line_end = out.find(b"\n", f.doc_end)
        after = out[f.doc_end:len(out) if line_end < 0 else line_end].strip()
        alone = not out[line_start:f.doc_start].strip() and (not after or after.startswith(b"#"))
        newlines = b"\n" * out[f.doc_start:f.doc_end].count(b"\n")
        replacement = newlines if alone and not f.only_statement else b"pass" + newlines
        out = out[:f.doc_start] + replacement + out[f.doc_end:]
    _check_stripped(path, source, out, start_lines)
    return out


def _check_stripped(path: str, before: bytes, after: bytes, start_lines: set[int]) -> None:
    old, new = parse_source(path, before, "python"), parse_source(path, after, "python")
    assert old is not None and new is not None
    if new.has_errors and not old.has_errors:
        raise TaskMismatchError(f"{path}: no longer parses without its docstrings")
    spans = [(d.qualname, d.start_line, d.end_line) for d in old.definitions]
    if spans != [(d.qualname, d.start_line, d.end_line) for d in new.definitions]:
        raise TaskMismatchError(f"{path}: definitions moved when docstrings were removed")
    left = [f.start_line for f in docstring_functions(path, after) if f.start_line in start_lines]
    if left:
        raise TaskMismatchError(f"{path}: functions at lines {left} still have a docstring")


# ---- stored tasks -------------------------------------------------------------------------


def _project(name: str) -> Project:
    return next(p for p in PROJECTS if p.name == name)


def _keep(prefix: str) -> Callable[[str], bool]:
    def keep(name: str) -> bool:
        return name.startswith(prefix) and name.endswith(".py") and not is_test_path(name)
    return keep


def materialise_source(project: Project, cache_dir: Path | None = None) -> Path:
    """The project's own .py files from its pure wheel, unpacked once into the cache."""
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    dest = cache_dir / "src" / f"{project.name}-{project.version}"
    return fetch_and_extract(project.package, project.version, dest, keep=_keep(project.prefix))


def verify_tasks(root: Path, tasks: Sequence[DocTask]) -> list[str]:
    """Problems with ``tasks`` against the original tree; empty when every function is as sampled."""
    problems = []
    for task in tasks:
        file = root / task.path
        if not file.is_file():
            problems.append(f"{task.project}:{task.path} missing")
            continue
        source = file.read_bytes()
        if source_hash(source, task.start_line, task.end_line) != task.sha256:
            problems.append(f"{task.project}:{task.path}:{task.start_line} {task.qualname}: source differs")
            continue
        found = [f for f in docstring_functions(task.path, source) if f.start_line == task.start_line]
        if not found or found[0].qualname != task.qualname or query_of(found[0].doc) != task.query:
            problems.append(f"{task.project}:{task.path}:{task.start_line} {task.qualname}: not the sampled function")
    return problems


def materialise_stripped(project: Project, source_root: Path, tasks: Sequence[DocTask],
                         cache_dir: Path | None = None) -> Path:
    """A copy of ``source_root`` with the tasks' docstrings removed; built once per task set."""
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    key = hashlib.sha256(json.dumps(sorted((t.path, t.start_line) for t in tasks)).encode()).hexdigest()[:12]
    dest = cache_dir / "stripped" / f"{project.name}-{project.version}-{key}"
    marker = dest.with_name(dest.name + MARKER_SUFFIX)
    if marker.is_file() and dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    by_path: dict[str, set[int]] = {}
    for t in tasks:
        by_path.setdefault(t.path, set()).add(t.start_line)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.tmp-") as tmp:
        staging = Path(tmp) / "tree"
        shutil.copytree(source_root, staging)
        for path, lines in sorted(by_path.items()):
            file = staging / path
            file.write_bytes(strip_docstrings(path, file.read_bytes(), lines))
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
        tmp_marker = marker.with_name(marker.name + ".tmp")
        tmp_marker.write_text(json.dumps({"project": project.name, "tasks": len(tasks)}) + "\n")
        os.replace(tmp_marker, marker)
    return dest


def load_tasks(path: Path = DATA_FILE) -> list[DocTask]:
    data = json.loads(path.read_text(encoding="utf-8"))
    stored = {p["name"]: (p["package"], p["version"], p["prefix"]) for p in data["projects"]}
    expected = {p.name: (p.package, p.version, p.prefix) for p in PROJECTS}
    if stored != expected:
        raise TaskMismatchError(f"{path} was sampled from other releases: {stored}")
    return [DocTask(**t) for t in data["tasks"]]


def resample(seed: int = SEED, per_project: int = PER_PROJECT, cache_dir: Path | None = None,
             out: Path = DATA_FILE) -> list[DocTask]:
    """Sample every project's tasks again and store them at ``out``."""
    tasks: list[DocTask] = []
    counts = {}
    for project in PROJECTS:
        root = materialise_source(project, cache_dir)
        counts[project.name] = len(candidates(root))
        tasks += sample_project(project.name, root, seed, per_project)
    data = {
        "benchmark": "docstrings: find a function by the first paragraph of its removed docstring",
        "seed": seed,
        "per_project": per_project,
        "query_words": [MIN_QUERY_WORDS, MAX_QUERY_WORDS],
        "projects": [{**asdict(p), "candidates": counts[p.name]} for p in PROJECTS],
        "tasks": [asdict(t) for t in tasks],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return tasks


def load_haystacks(split: str = "all", cache_dir: Path | None = None, data_file: Path = DATA_FILE) -> list[Haystack]:
    """One haystack per project, docstrings of all its tasks removed, needles of ``split`` only.

    The stripped tree is the same for every split, so one index serves tune and test.
    """
    if split not in (*SPLITS, "all"):
        raise ValueError(f"unknown split {split!r}; choose from tune, test, all")
    tasks = load_tasks(data_file)
    haystacks = []
    for project in PROJECTS:
        mine = [t for t in tasks if t.project == project.name]
        source_root = materialise_source(project, cache_dir)
        problems = verify_tasks(source_root, mine)
        if problems:
            raise TaskMismatchError("; ".join(problems))
        root = materialise_stripped(project, source_root, mine, cache_dir)
        needles = [Needle(repo=project.name, name=t.name, description=t.query, path=t.path,
                          start_line=t.start_line, end_line=t.end_line, instance_id=instance_id(t, i))
                   for i, t in enumerate(mine) if split in ("all", t.split)]
        haystacks.append(Haystack(repo=project.name, package=project.package, version=project.version,
                                  root=root, needles=needles))
    return haystacks


def instance_id(task: DocTask, position: int) -> str:
    """Stable across splits: the task's place among its project's stored tasks."""
    return f"docstrings-{task.project}-{position}"


def task_splits(data_file: Path = DATA_FILE) -> dict[str, str]:
    """instance id -> "tune" or "test", for the stored tasks."""
    tasks = load_tasks(data_file)
    return {instance_id(t, i): t.split for project in PROJECTS
            for i, t in enumerate(t for t in tasks if t.project == project.name)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m prism_bench.docstrings_data", description=__doc__)
    ap.add_argument("--resample", action="store_true", help=f"sample the tasks again into {DATA_FILE.name}")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--per-project", type=int, default=PER_PROJECT)
    ap.add_argument("--cache-dir", type=Path)
    args = ap.parse_args(argv)
    if args.resample:
        resample(args.seed, args.per_project, args.cache_dir)
    haystacks = load_haystacks("all", args.cache_dir)
    for h in haystacks:
        print(f"{h.repo}: {len(h.needles)} tasks, haystack {h.root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
