"""The projects of `prism-code bench callgraph`: pinned PyPI wheels and RepoQA TypeScript haystacks.

Python projects are mid-sized, class-heavy libraries that no other benchmark uses (RepoQA,
docstrings, RepoEval and the index corpus have theirs; rich, click, jinja2, httpx, werkzeug
and attrs are kept for another one). tomlkit, wtforms and marshmallow are held out: nothing
in call resolution is tuned on them, they only check a result (`--projects heldout`).
TypeScript projects are two RepoQA haystacks (benchmarks README, section 4), the
TypeScript-only, class-heavy ones of a size the language service reads in seconds; two
more haystacks of other styles are held out: umami (TypeScript, functions and React hooks
rather than classes) and axios (plain JavaScript, where no receiver has a declared type).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from prism_bench.corpora import fetch_and_extract
from prism_bench.docstrings_data import is_test_path
from prism_bench.repoqa_data import MULTI_DATA_DIR, extract_haystack
from prism_code.config import cache_root
from prism_code.parse.languages import language_for_path
from prism_code.workspace import scan

PROJECT_SETS = ("main", "heldout")


@dataclass(frozen=True)
class CallgraphProject:
    name: str
    language: str  # "python" or "typescript" (TypeScript haystacks may hold .js files too)
    version: str  # the PyPI release, or the first 12 hex digits of the haystack's commit
    source: str  # a PyPI package name, or the RepoQA haystack's file stem ("owner__repo")
    prefix: str = ""  # Python: the package folder inside the wheel, with a trailing "/"


PYTHON_PROJECTS: tuple[CallgraphProject, ...] = (
    CallgraphProject("packaging", "python", "24.1", "packaging", "packaging/"),
    CallgraphProject("cattrs", "python", "24.1.2", "cattrs", "cattrs/"),
    CallgraphProject("pyparsing", "python", "3.1.4", "pyparsing", "pyparsing/"),
    CallgraphProject("markdown-it-py", "python", "3.0.0", "markdown-it-py", "markdown_it/"),
    CallgraphProject("structlog", "python", "24.4.0", "structlog", "structlog/"),
    CallgraphProject("mistune", "python", "3.0.2", "mistune", "mistune/"),
)

HELDOUT_PROJECTS: tuple[CallgraphProject, ...] = (
    CallgraphProject("tomlkit", "python", "0.13.2", "tomlkit", "tomlkit/"),
    CallgraphProject("wtforms", "python", "3.2.1", "wtforms", "wtforms/"),
    CallgraphProject("marshmallow", "python", "3.21.1", "marshmallow", "marshmallow/"),
)

TYPESCRIPT_PROJECTS: tuple[CallgraphProject, ...] = (
    CallgraphProject("firebase-admin-node", "typescript", "", "firebase__firebase-admin-node"),
    CallgraphProject("cheerio", "typescript", "", "cheeriojs__cheerio"),
)

TYPESCRIPT_HELDOUT_PROJECTS: tuple[CallgraphProject, ...] = (
    CallgraphProject("umami", "typescript", "", "umami-software__umami"),
    CallgraphProject("axios", "typescript", "", "axios__axios"),
)


def default_cache_dir() -> Path:
    return cache_root() / "bench" / "callgraph"


def projects(which: str, language: str) -> list[CallgraphProject]:
    """The projects of a set ("main" or "heldout") in a language ("python", "typescript", "all")."""
    if which not in PROJECT_SETS:
        raise ValueError(f"unknown project set {which!r}; choose from {PROJECT_SETS}")
    chosen: list[CallgraphProject] = []
    if language in ("python", "all"):
        chosen += PYTHON_PROJECTS if which == "main" else HELDOUT_PROJECTS
    if language in ("typescript", "all"):
        chosen += TYPESCRIPT_PROJECTS if which == "main" else TYPESCRIPT_HELDOUT_PROJECTS
    if not chosen:
        raise ValueError(f"the {which} set has no {language} projects")
    return chosen


def _keep_package(prefix: str):
    def keep(name: str) -> bool:
        return name.startswith(prefix) and name.endswith(".py") and not is_test_path(name)
    return keep


def materialise(project: CallgraphProject, cache_dir: Path | None = None,
                multi_dir: Path = MULTI_DATA_DIR) -> tuple[Path, str]:
    """(root, version) of the project's files, unpacked once into the cache."""
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    if project.language == "python":
        dest = cache_dir / "src" / f"{project.name}-{project.version}"
        return fetch_and_extract(project.source, project.version, dest, keep=_keep_package(project.prefix)), \
            project.version
    data = json.loads((multi_dir / project.language / f"{project.source}.json").read_text(encoding="utf-8"))
    version = data["commit"][:12]
    archive = multi_dir / project.language / f"{project.source}.tar.gz"
    return extract_haystack(archive, cache_dir / "src" / f"{project.source}-{version}"), version


def project_files(root: Path, language: str) -> list[str]:
    """The files prism's scan indexes in the project's language: the set both sides read."""
    wanted = {"python"} if language == "python" else {"typescript", "tsx", "javascript"}
    return sorted(f.path for f in scan(root, trusted=False).files if language_for_path(f.path) in wanted)
