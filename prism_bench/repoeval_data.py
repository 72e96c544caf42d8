"""A RepoEval-style line and API completion set, rebuilt from PyPI releases.

RepoEval (RepoCoder, Zhang et al. 2023) blanks one line of a real repository and asks for
it back, given the file around it and whatever the system retrieves from the rest of the
repository. Its data cannot be downloaded here, so this module rebuilds the benchmark from
PyPI releases of the same projects, as they stood in January 2023 when RepoEval archived
them, and applies RepoCoder's selection rules:

* line level: random code lines with at least 5 tokens; not blank, not comments, not
  inside docstrings or other multi-line strings, not imports, not bracket-only lines,
  and (as RepoCoder's ``random_benchmark.py`` does) not right after a blank line;
* API level: lines holding a call of a function or class defined in another file of the
  same repository, found through the code graph's call edges.

Tasks are one line each (RepoEval's API tasks span the whole call when it wraps). Scoring
follows RepoCoder's ``compute_score.py``: both sides compared line by line after stripping.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Literal

import tree_sitter
from rapidfuzz.distance import Levenshtein

from prism_bench.corpora import PURE_WHEEL, WheelTarget, fetch_and_extract
from prism_code.config import cache_root
from prism_code.fragments import function_key
from prism_code.graph import CALL_WEIGHT, CodeGraph, innermost_nodes, module_node
from prism_code.parse.extract import extract
from prism_code.parse.languages import grammar, parser
from prism_code.parse.model import ParsedFile
from prism_code.workspace import VENDORED_DIRS

TaskKind = Literal["line", "api"]  # a whole line, or a line whose answer calls a project API
LINE: Final = "line"
API: Final = "api"
# Where the cursor sits on the blanked line: in its indentation (nothing typed yet),
# mid-line after typed text, or right after a `.` (an attribute or method to name).
CursorKind = Literal["indent", "mid", "dot"]
CURSOR_KINDS: Final[tuple[CursorKind, ...]] = ("indent", "mid", "dot")

# Bump when a selection rule changes, so cached task files built by older rules are not reused.
# 4: API lines are those whose calls the graph resolves (issue #26), no longer name matches.
RULES_VERSION = 4
MIN_LINE_TOKENS = 5  # RepoCoder: line-level holes have at least 5 tokens
DEFAULT_MAX_PER_FILE = 3
_EXTRA_VENDORED = frozenset({"_vendor", "vendored", "thirdparty", "externals"})


@dataclass(frozen=True)
class ProjectSpec:
    """One RepoEval repository and the PyPI release that stands in for its January 2023 snapshot."""

    repo: str  # RepoEval's GitHub repository
    package: str  # PyPI name
    version: str
    released: str  # upload date of the release on PyPI
    artifact: str  # exact wheel file name pip must return
    roots: tuple[str, ...]  # top-level directories of the wheel that are the project's source
    why: str
    target: WheelTarget = PURE_WHEEL

    @property
    def dirname(self) -> str:
        return f"{self.package}-{self.version}"


# RepoEval archived its repositories in January 2023 (RepoCoder Table 1). Each release below
# is the last one uploaded on or before 2023-01-31 that pip can download as a wheel.
PROJECTS: tuple[ProjectSpec, ...] = (
    ProjectSpec(
        "huggingface/evaluate", "evaluate", "0.4.0", "2022-12-13", "evaluate-0.4.0-py3-none-any.whl",
        ("evaluate",),
        "last release before 2023-01-31 (0.4.1 is from October 2023); the wheel lacks the repo's "
        "metrics/ scripts, which are not part of the package",
    ),
    ProjectSpec(
        "huggingface/diffusers", "diffusers", "0.12.1", "2023-01-27", "diffusers-0.12.1-py3-none-any.whl",
        ("diffusers",), "last release before 2023-01-31 (0.13.0 is from 2023-02-17)",
    ),
    ProjectSpec(
        "nerfstudio-project/nerfstudio", "nerfstudio", "0.1.15", "2023-01-16", "nerfstudio-0.1.15-py3-none-any.whl",
        ("nerfstudio", "scripts"),
        "0.1.16 (2023-01-27) is closer but current pip rejects its metadata (`protobuf<=3.20.3.*`); "
        "scripts/ is the repository's top-level CLI package, shipped in the wheel",
    ),
    ProjectSpec(
        "pytorch/rl", "torchrl", "0.0.4a0", "2023-01-23", "torchrl-0.0.4a0-cp310-cp310-manylinux1_x86_64.whl",
        ("torchrl",),
        "last release before 2023-01-31; torchrl has no sdist and no pure wheel, so the .py sources "
        "come from the cp310 manylinux wheel (the compiled extension is not extracted)",
        WheelTarget(platform="manylinux1_x86_64", implementation="cp", abi="cp310", python_version="3.10"),
    ),
    ProjectSpec(
        "google/vizier", "google-vizier", "0.1.0", "2023-01-30", "google_vizier-0.1.0-py3-none-any.whl",
        ("vizier",), "last release before 2023-01-31 (0.1.1 is from 2023-02-01); *_test.py files ship in the package",
    ),
    ProjectSpec(
        "awslabs/fortuna", "aws-fortuna", "0.1.9", "2023-01-31", "aws_fortuna-0.1.9-py3-none-any.whl",
        ("fortuna",),
        "uploaded 2023-01-31 (0.1.10 is from 2023-02-07); Requires-Python <3.11, hence python_version 3.10",
        WheelTarget(python_version="3.10"),
    ),
)


def default_cache_dir() -> Path:
    return cache_root() / "bench" / "repoeval"


def _keeps(spec: ProjectSpec):
    vendored = VENDORED_DIRS | _EXTRA_VENDORED

    def keep(name: str) -> bool:
        parts = PurePosixPath(name).parts
        return (name.endswith(".py") and len(parts) > 1 and parts[0] in spec.roots
                and not any(part in vendored for part in parts[:-1]))
    return keep


def project_root(spec: ProjectSpec, cache_dir: Path | None = None) -> Path:
    return (default_cache_dir() if cache_dir is None else cache_dir) / spec.dirname


def materialise_project(spec: ProjectSpec, cache_dir: Path | None = None) -> Path:
    """The project's source files, unpacked once into the cache; returns the project root."""
    return fetch_and_extract(
        spec.package, spec.version, project_root(spec, cache_dir),
        artifact=spec.artifact, keep=_keeps(spec), target=spec.target,
    )


# ---- tasks --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompletionTask:
    task_id: str  # "<project>/<kind>/<n>"
    project: str  # PyPI package name
    version: str
    path: str  # POSIX path relative to the project root
    line: int  # 1-based line to blank
    kind: TaskKind
    ground_truth: str  # the line exactly as in the file, without its line ending
    indent: str  # the ground truth's leading whitespace, for completers that are given it
    api: str | None = None  # api tasks: "path#qualname" of the called in-repo definition
    cursor: int | None = None  # column (0-based) where the cursor sits; None: after the indentation
    cursor_kind: CursorKind = "indent"

    @property
    def typed(self) -> str:
        """The line's text before the cursor: what the user has typed."""
        return self.ground_truth[: len(self.indent) if self.cursor is None else self.cursor]

    @property
    def split(self) -> str:
        """"tune" or "test": tasks alternate within each project and kind."""
        return "tune" if int(self.task_id.rsplit("/", 1)[1]) % 2 == 0 else "test"

    def context(self, root: Path) -> tuple[str, str]:
        """(text before the blanked line, text after it), both with their line endings."""
        lines = (root / self.path).read_bytes().decode("utf-8").split("\n")
        if lines[self.line - 1].rstrip("\r") != self.ground_truth:
            raise ValueError(f"{self.task_id}: {self.path}:{self.line} no longer holds the ground truth")
        return "".join(line + "\n" for line in lines[: self.line - 1]), "\n".join(lines[self.line:])


# Identifiers and numbers, Python's multi-character operators, then any other single character.
_TOKEN = re.compile(r"[^\W\d]\w*|\d[\w.]*|\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%&|^@<>=!]=|\S")
_WORD = re.compile(r"\w")


def code_tokens(line: str) -> list[str]:
    return _TOKEN.findall(line)


_NOT_CODE_QUERY = """
(string) @string
(concatenated_string) @string
(expression_statement . [(string) (concatenated_string)] .) @bare_string
(import_statement) @import
(import_from_statement) @import
(future_import_statement) @import
"""


def not_code_rows(tree: tree_sitter.Tree) -> set[int]:
    """0-based rows that hold no code of their own: docstrings, string interiors, imports."""
    query = tree_sitter.Query(grammar("python"), _NOT_CODE_QUERY)
    captures = tree_sitter.QueryCursor(query).captures(tree.root_node)
    rows: set[int] = set()
    for node in captures.get("string", ()):
        # A line that starts inside a multi-line string is prose or data, not code to complete;
        # the string's first line (`x = """...`) is still a code line.
        rows.update(range(node.start_point[0] + 1, node.end_point[0] + 1))
    for name in ("bare_string", "import"):
        for node in captures.get(name, ()):
            rows.update(range(node.start_point[0], node.end_point[0] + 1))
    return rows


@dataclass(frozen=True)
class _Candidate:
    path: str
    line: int
    text: str
    api: str | None = None


@dataclass
class _SourceFile:
    path: str
    lines: list[str]  # split on "\n" like tree-sitter rows, "\r" removed
    parsed: ParsedFile
    not_code: set[int]  # 0-based rows


def _load_files(root: Path) -> list[_SourceFile]:
    files = []
    for file in sorted(root.rglob("*.py")):
        rel = file.relative_to(root).as_posix()
        source = file.read_bytes()
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError:
            continue
        tree = parser("python").parse(source)
        # A file tree-sitter cannot parse cleanly gives unreliable string and import spans.
        if tree.root_node.has_error:
            continue
        parsed = extract(rel, "python", source, tree)
        lines = [line.rstrip("\r") for line in text.split("\n")]
        files.append(_SourceFile(rel, lines, parsed, not_code_rows(tree)))
    return files


def _is_code_line(sf: _SourceFile, row: int) -> bool:
    stripped = sf.lines[row].strip()
    return bool(stripped) and not stripped.startswith("#") and row not in sf.not_code


def _line_candidates(sf: _SourceFile) -> list[_Candidate]:
    found = []
    for row in range(1, len(sf.lines)):
        if not _is_code_line(sf, row) or not sf.lines[row - 1].strip():
            continue
        tokens = code_tokens(sf.lines[row])
        # Lines of brackets and commas alone say nothing about the code around them.
        if len(tokens) < MIN_LINE_TOKENS or not any(_WORD.match(t) for t in tokens):
            continue
        found.append(_Candidate(sf.path, row + 1, sf.lines[row]))
    return found


def _visible_files(graph: CodeGraph, path: str) -> set[str]:
    """Files whose definitions `path` can reach through its imports.

    As RepoEval's API locator does, a package ``__init__.py`` passes on what it imports,
    so ``from ..models import UNet2DModel`` makes ``models/unet_2d.py`` visible.
    """
    def targets(file: str) -> list[str]:
        return [t for imp in graph.parsed[file].imports for t in graph.resolver.resolve(imp, file, "python")]

    visible = set(targets(path))
    pending = [t for t in visible if t.endswith("__init__.py")]
    while pending:
        for target in targets(pending.pop()):
            if target not in visible:
                visible.add(target)
                if target.endswith("__init__.py"):
                    pending.append(target)
    visible.discard(path)
    return visible


# Names the graph cannot attribute to the repository by name alone: a repository that
# defines `append` or `len` once would otherwise claim every `xs.append(...)` and `len(...)`.
_BUILTIN_NAMES = frozenset(dir(builtins))
_BUILTIN_METHODS = frozenset(
    name for kind in (list, dict, set, frozenset, str, bytes, tuple, int, float) for name in dir(kind)
    if not name.startswith("_")
)


def _import_bindings(graph: CodeGraph, pf: ParsedFile) -> dict[str, bool]:
    """Local name bound by an import -> whether that import reaches a file of the repository."""
    bindings: dict[str, bool] = {}
    for imp in pf.imports:
        in_repo = bool(graph.resolver.resolve(imp, pf.path, "python"))
        if imp.names:
            for name, alias in imp.names:
                if name != "*":
                    bindings[alias or name] = in_repo
        else:
            bindings[imp.alias or imp.module.split(".")[0]] = in_repo
    return bindings


def _attributable(name: str, receiver: str | None, target: dict, bindings: dict[str, bool]) -> bool:
    """Whether a call the graph resolved to ``target`` (its node data) is an in-repo API invocation.

    The graph's call edges are its resolved calls (prism_code.call_resolution), so
    `torch.is_tensor()` or a `logger.info()` no longer match some project definition by
    name; the rule is kept as RepoEval's API locator states it: a method called on an object
    of unknown type counts only when the file imports its class.
    """
    if receiver is None:
        return bindings[name] if name in bindings else name not in _BUILTIN_NAMES
    if receiver in ("self", "cls", "super()"):
        return True
    head = receiver.split(".")[0]
    if head in bindings:
        return bindings[head]
    return (target["kind"] == "method" and name not in _BUILTIN_METHODS
            and bindings.get(target["qualname"].split(".")[0], False))


def _api_candidates(sf: _SourceFile, graph: CodeGraph) -> list[_Candidate]:
    """Lines with a call the code graph resolves to a definition in another visible file."""
    path = sf.path
    links = next(owner for owner in CodeGraph.owners_of([path], tree_changed=False) if owner != path)
    nodes = graph.g.nodes
    # The graph keeps call links per enclosing definition or block, not per call site:
    # recover the site by matching the called name on the lines that node covers.
    linked: dict[str, list[str]] = defaultdict(list)
    for _owner, u, v, weight in graph.edges_of([links]):
        if weight != CALL_WEIGHT:
            continue
        source, target = (u, v) if nodes[u].get("path") == path else (v, u)
        if nodes[target].get("path") != path and "name" in nodes[target]:
            linked[source].append(target)
    if not linked:
        return []
    visible = _visible_files(graph, path)
    bindings = _import_bindings(graph, sf.parsed)
    owner_of_line = innermost_nodes(sf.parsed)
    found: dict[int, _Candidate] = {}
    for call in sf.parsed.calls:
        row = call.line - 1
        if call.line in found or not _is_code_line(sf, row):
            continue
        owner = owner_of_line[call.line] if call.line < len(owner_of_line) else None
        hits = sorted(t for t in linked.get(owner or module_node(path), ())
                      if nodes[t]["name"] == call.name and nodes[t]["path"] in visible
                      and _attributable(call.name, call.receiver, nodes[t], bindings))
        if hits:
            api = function_key(nodes[hits[0]]["path"], nodes[hits[0]]["qualname"])
            found[call.line] = _Candidate(path, call.line, sf.lines[row], api)
    return [found[line] for line in sorted(found)]


_ATTRIBUTE_DOT = re.compile(r"(?<=[\w)\]])\.(?=[^\W\d])")


def cursor_columns(line: str, kind: CursorKind) -> list[int]:
    """The 0-based columns of `line` where a cursor of `kind` may sit.

    "indent" is the end of the indentation; "mid" leaves at least one character typed and
    one to complete, and never sits right after a `.` (that is "dot") or a space; "dot"
    sits right after an attribute access's dot.
    """
    start = len(line) - len(line.lstrip())
    if kind == "indent":
        return [start]
    if kind == "dot":
        return [m.end() for m in _ATTRIBUTE_DOT.finditer(line, start)]
    end = len(line.rstrip())
    return [c for c in range(start + 1, end) if line[c - 1] != "." and not line[c - 1].isspace()]


def place_cursor(line: str, rng: random.Random, kinds: tuple[CursorKind, ...]) -> tuple[int, CursorKind]:
    """A cursor column on `line` of one of `kinds`, chosen with `rng` among those the line allows."""
    columns = {k: cursor_columns(line, k) for k in kinds}
    kind = rng.choice([k for k in kinds if columns[k]])
    if kind == "indent":
        return columns[kind][0], kind
    return rng.choice(columns[kind]), kind


def _sample(candidates: list[_Candidate], n: int, rng: random.Random, max_per_file: int) -> list[_Candidate]:
    """Uniform over candidate lines, as RepoCoder, with a per-file cap and no repeated line text."""
    pool = sorted(candidates, key=lambda c: (c.path, c.line))
    rng.shuffle(pool)
    per_file: Counter[str] = Counter()
    seen: set[str] = set()
    chosen: list[_Candidate] = []
    for cand in pool:
        if len(chosen) >= n:
            break
        key = cand.text.strip()
        if per_file[cand.path] >= max_per_file or key in seen:
            continue
        per_file[cand.path] += 1
        seen.add(key)
        chosen.append(cand)
    return sorted(chosen, key=lambda c: (c.path, c.line))


def build_tasks(
    project_root: Path,
    n_line: int = 100,
    n_api: int = 100,
    seed: int = 0,
    *,
    project: str | None = None,
    version: str = "",
    max_per_file: int = DEFAULT_MAX_PER_FILE,
    cursor_kinds: tuple[CursorKind, ...] = ("indent",),
) -> list[CompletionTask]:
    """Up to ``n_line`` line-level and ``n_api`` API-level tasks from the ``.py`` files under the root.

    Each task's cursor is placed (seeded) at one of ``cursor_kinds`` its line allows.
    Fewer come back when the repository has fewer eligible lines than asked for under the
    per-file cap. The same root, counts and seed always give the same tasks.
    """
    project = project or project_root.name
    files = _load_files(project_root)
    graph = CodeGraph()
    graph.update(sf.parsed for sf in files)
    line_pool = [c for sf in files for c in _line_candidates(sf)]
    api_pool = [c for sf in files for c in _api_candidates(sf, graph)]
    tasks = []
    pools: tuple[tuple[TaskKind, list[_Candidate], int], ...] = ((LINE, line_pool, n_line), (API, api_pool, n_api))
    for kind, pool, n in pools:
        # A string seed hashes the same way on every run and platform (random.seed, version 2).
        rng = random.Random(f"{seed}/{project}/{kind}")
        cursors = random.Random(f"{seed}/{project}/{kind}/cursor")
        for index, cand in enumerate(_sample(pool, n, rng, max_per_file)):
            indent = cand.text[: len(cand.text) - len(cand.text.lstrip())]
            cursor: int | None = None
            cursor_kind: CursorKind = "indent"
            if cursor_kinds != ("indent",):
                cursor, cursor_kind = place_cursor(cand.text, cursors, cursor_kinds)
            tasks.append(CompletionTask(
                task_id=f"{project}/{kind}/{index}", project=project, version=version, path=cand.path,
                line=cand.line, kind=kind, ground_truth=cand.text, indent=indent, api=cand.api,
                cursor=cursor, cursor_kind=cursor_kind,
            ))
    return tasks


def save_tasks(tasks: Iterable[CompletionTask], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for task in tasks:
            out.write(json.dumps(asdict(task), ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def load_tasks(path: Path) -> list[CompletionTask]:
    with open(path, encoding="utf-8") as src:
        return [CompletionTask(**json.loads(line)) for line in src if line.strip()]


def benchmark_key(per_project_line: int, per_project_api: int, seed: int,
                  projects: Iterable[ProjectSpec] = PROJECTS,
                  cursor_kinds: tuple[CursorKind, ...] = ("indent",)) -> str:
    data: dict[str, object] = {
        "rules": RULES_VERSION,
        "projects": [(p.package, p.version, p.artifact) for p in projects],
        "line": per_project_line, "api": per_project_api, "seed": seed,
        "max_per_file": DEFAULT_MAX_PER_FILE,
    }
    if cursor_kinds != ("indent",):  # keys of task files built before cursors moved stay valid
        data["cursors"] = list(cursor_kinds)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]


def build_benchmark(
    cache_dir: Path | None = None,
    per_project_line: int = 20,
    per_project_api: int = 20,
    seed: int = 0,
    projects: Iterable[ProjectSpec] = PROJECTS,
    cursor_kinds: tuple[CursorKind, ...] = ("indent",),
) -> Path:
    """Materialise every project and write their tasks to one JSONL file; reused when present."""
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    projects = tuple(projects)
    key = benchmark_key(per_project_line, per_project_api, seed, projects, cursor_kinds)
    out = cache_dir / f"tasks-{key}.jsonl"
    if out.is_file():
        return out
    tasks: list[CompletionTask] = []
    for spec in projects:
        root = materialise_project(spec, cache_dir)
        tasks += build_tasks(root, per_project_line, per_project_api, seed,
                             project=spec.package, version=spec.version, cursor_kinds=cursor_kinds)
    save_tasks(tasks, out)
    return out


# ---- scoring ------------------------------------------------------------------------------


def _scored_lines(pred: str, truth: str) -> tuple[str, str]:
    """RepoCoder's comparison: non-empty stripped lines, the prediction cut to the truth's count."""
    target = [line.strip() for line in truth.splitlines() if line.strip()]
    predicted = [line.strip() for line in pred.splitlines() if line.strip()][: len(target)]
    return "\n".join(predicted), "\n".join(target)


def exact_match(pred: str, truth: str) -> bool:
    predicted, target = _scored_lines(pred, truth)
    return predicted == target


def edit_similarity(pred: str, truth: str) -> float:
    """1 - Levenshtein distance / length of the longer string (RepoCoder's ES, in [0, 1])."""
    predicted, target = _scored_lines(pred, truth)
    return float(Levenshtein.normalized_similarity(predicted, target))
