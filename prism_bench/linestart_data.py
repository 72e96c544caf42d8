"""Line starts on unseen code: the task set of `prism-code bench linestart` (issue #28).

Six pinned PyPI projects that no other benchmark of the project uses (not the docstrings
set's, RepoQA's, the RepoEval set's, the call-graph benchmark's or semble's, and not rich,
click, jinja2, httpx, werkzeug or attrs, which hold the issue's own 60 held-out lines).
Per project 40 tasks: 20 with the cursor at the start of a line (at its indentation,
nothing typed), 10 mid-line after typed text, 10 right after a `.`. A task's line is
blanked from the cursor to its end and asked for back.

A line qualifies when it holds code of its own: not blank, not a comment, not inside a
docstring or another multi-line string, not an import or a decorator, and at least
MIN_LINE_CHARS characters without its indentation. Lines are drawn uniformly (seeded) with
at most MAX_PER_FILE per file and no line text twice in a project, after-a-dot tasks first
(fewest lines allow them), then mid-line, then line starts. The first three projects are
the tuning half, the other three the test half.

The tasks are stored in prism_bench/data/linestarts.json; `build_set` writes it again and
gives the same file from the same releases.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from prism_bench.corpora import fetch_and_extract
from prism_bench.repoeval_data import CursorKind, cursor_columns, not_code_rows
from prism_code.config import cache_root
from prism_code.parse.languages import parser
from prism_code.workspace import VENDORED_DIRS

DATA_FILE = Path(__file__).parent / "data" / "linestarts.json"
RULES_VERSION = 1  # bump when a selection rule changes
SEED = 0
MIN_LINE_CHARS = 12
MAX_PER_FILE = 4
# Tasks per project and cursor kind: half at a line start, a quarter each mid-line and after a dot.
PER_PROJECT: Final[dict[CursorKind, int]] = {"indent": 20, "mid": 10, "dot": 10}
# The order kinds are drawn in: the rarest lines first, so the common kind does not use them up.
_DRAW_ORDER: Final[tuple[CursorKind, ...]] = ("dot", "mid", "indent")
_VENDORED = VENDORED_DIRS | {"_vendored", "_vendor", "vendored"}


@dataclass(frozen=True)
class LinestartProject:
    package: str  # PyPI name
    version: str
    artifact: str  # the exact wheel pip must return
    root: str  # the package's folder in the wheel
    split: str  # "tune" or "test"

    @property
    def dirname(self) -> str:
        return f"{self.package}-{self.version}"


# Releases from 2025-2026, after Qwen2.5-Coder's training data was collected (2024).
PROJECTS: tuple[LinestartProject, ...] = (
    LinestartProject("urllib3", "2.8.0", "urllib3-2.8.0-py3-none-any.whl", "urllib3", "tune"),
    LinestartProject("isort", "9.0.2", "isort-9.0.2-py3-none-any.whl", "isort", "tune"),
    LinestartProject("toolz", "1.2.0", "toolz-1.2.0-py3-none-any.whl", "toolz", "tune"),
    LinestartProject("boltons", "26.2.0", "boltons-26.2.0-py3-none-any.whl", "boltons", "test"),
    LinestartProject("python-dateutil", "4.0.0", "python_dateutil-4.0.0-py3-none-any.whl", "dateutil", "test"),
    LinestartProject("pyflakes", "4.1.0", "pyflakes-4.1.0-py2.py3-none-any.whl", "pyflakes", "test"),
)


@dataclass(frozen=True)
class LinestartTask:
    task_id: str  # "<project>/<kind>/<n>"
    project: str
    path: str  # POSIX path under the project root
    line: int  # 1-based
    col: int  # 1-based column of the cursor (1 + the characters before it)
    kind: CursorKind
    expected: str  # the whole line as in the file, without its line ending

    @property
    def typed(self) -> str:
        """What the user has typed on the line: its text before the cursor."""
        return self.expected[:self.col - 1]

    def blanked(self, root: Path) -> str:
        """The file with this task's line cut at the cursor."""
        lines = (root / self.path).read_bytes().decode("utf-8").split("\n")
        if lines[self.line - 1].rstrip("\r") != self.expected:
            raise ValueError(f"{self.task_id}: {self.path}:{self.line} no longer holds the expected line")
        lines[self.line - 1] = self.typed
        return "\n".join(lines)


def default_cache_dir() -> Path:
    return cache_root() / "bench" / "linestart"


def project_root(project: LinestartProject, cache_dir: Path | None = None) -> Path:
    return (default_cache_dir() if cache_dir is None else cache_dir) / project.dirname


def materialise(project: LinestartProject, cache_dir: Path | None = None) -> Path:
    """The project's .py files, unpacked once from its pinned wheel; returns the root."""
    def keep(name: str) -> bool:
        parts = PurePosixPath(name).parts
        return (name.endswith(".py") and parts[0] == project.root
                and not any(part in _VENDORED for part in parts[:-1]))

    return fetch_and_extract(project.package, project.version, project_root(project, cache_dir),
                             artifact=project.artifact, keep=keep)


def python_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))


# ---- selection ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    path: str
    line: int  # 1-based
    text: str


def eligible_lines(path: str, source: bytes) -> list[_Line]:
    """The lines of a file a task may blank (see the module doc); none from a file that
    does not decode or parse cleanly, whose strings and imports cannot be told apart."""
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return []
    tree = parser("python").parse(source)
    if tree.root_node.has_error:
        return []
    skip = not_code_rows(tree)
    found = []
    for row, raw in enumerate(text.split("\n")):
        line = raw.rstrip("\r")
        code = line.strip()
        if row in skip or len(code) < MIN_LINE_CHARS or code.startswith(("#", "@")):
            continue
        found.append(_Line(path, row + 1, line))
    return found


def select_tasks(root: Path, project: str, seed: int = SEED,
                 per_kind: dict[CursorKind, int] | None = None,
                 max_per_file: int = MAX_PER_FILE) -> list[LinestartTask]:
    """The tasks of one project (fewer when it has too few eligible lines); seeded."""
    per_kind = PER_PROJECT if per_kind is None else per_kind
    pool = [c for path in python_files(root) for c in eligible_lines(path, (root / path).read_bytes())]
    per_file: Counter[str] = Counter()
    seen: set[str] = set()
    tasks: list[LinestartTask] = []
    for kind in _DRAW_ORDER:
        rng = random.Random(f"{seed}/{project}/{kind}")
        order = list(pool)
        rng.shuffle(order)
        chosen: list[tuple[_Line, int]] = []
        for cand in order:
            if len(chosen) >= per_kind.get(kind, 0):
                break
            columns = cursor_columns(cand.text, kind)
            if not columns or per_file[cand.path] >= max_per_file or cand.text.strip() in seen:
                continue
            per_file[cand.path] += 1
            seen.add(cand.text.strip())
            chosen.append((cand, rng.choice(columns)))
        chosen.sort(key=lambda pick: (pick[0].path, pick[0].line))
        tasks += [LinestartTask(f"{project}/{kind}/{n}", project, cand.path, cand.line, column + 1, kind, cand.text)
                  for n, (cand, column) in enumerate(chosen)]
    return tasks


def build_set(cache_dir: Path | None = None, out: Path = DATA_FILE, seed: int = SEED) -> Path:
    """Materialise every project, draw its tasks and write the set file."""
    tasks: list[LinestartTask] = []
    for project in PROJECTS:
        tasks += select_tasks(materialise(project, cache_dir), project.package, seed)
    data = {
        "benchmark": "linestarts", "rules": RULES_VERSION, "seed": seed,
        "cursor": "line and col are 1-based; the line is blanked from col on",
        "per_project": dict(PER_PROJECT), "max_per_file": MAX_PER_FILE, "min_line_chars": MIN_LINE_CHARS,
        "projects": [asdict(p) for p in PROJECTS],
        "tasks": [asdict(t) for t in tasks],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def load_set(path: Path = DATA_FILE) -> list[LinestartTask]:
    data = json.loads(path.read_text(encoding="utf-8"))
    stored = [(p["package"], p["version"], p["split"]) for p in data["projects"]]
    if stored != [(p.package, p.version, p.split) for p in PROJECTS]:
        raise ValueError(f"{path} was drawn from other releases: {stored}")
    return [LinestartTask(**t) for t in data["tasks"]]


def set_digest(path: Path = DATA_FILE) -> str:
    """What identifies the task set in the kept outcomes: its file's content."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def split_of(task: LinestartTask) -> str:
    return next(p.split for p in PROJECTS if p.package == task.project)
