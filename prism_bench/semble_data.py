"""semble's code-search benchmark: its repositories, queries, published figures and archives.

The data (`/work/shared/benchmarks/semble`, README there) holds 42 repositories, each packed
as the folder semble indexed (`repos/NAME.tar.gz` -> `NAME/`), semble's annotated queries
(`annotations/NAME.json`) and semble's own NDCG@10 (`published.json`). Nothing of it is
copied into the project: archives are unpacked into the bench cache, once per sha256.

A test data set may give a folder instead of an archive (`"archive": "repos/NAME"`, the
folder to index itself); it is used in place.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from prism_bench.corpora import MARKER_SUFFIX
from prism_bench.repoqa_data import extract_haystack
from prism_code.config import cache_root

# Only meaningful in a source checkout next to the shared benchmark data.
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "semble"

Split = Literal["tune", "test", "all"]
SPLITS: tuple[Split, ...] = ("tune", "test", "all")


def default_cache_dir() -> Path:
    return cache_root() / "bench" / "semble"


@dataclass(frozen=True)
class Target:
    """An annotated answer: a file (path relative to the repository root, or to the indexed
    folder in pandoc and zls), optionally a 1-based inclusive line span inside it."""

    path: str
    start_line: int | None = None
    end_line: int | None = None
    secondary: bool = False

    @property
    def has_span(self) -> bool:
        return self.start_line is not None and self.end_line is not None

    def label(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}" if self.has_span else self.path


@dataclass(frozen=True)
class Query:
    text: str
    category: str  # architecture, semantic or symbol
    targets: tuple[Target, ...]  # relevant first, then secondary


@dataclass(frozen=True)
class Published:
    """semble's own figures for one repository (published.json)."""

    ndcg10: float
    by_category: dict[str, float] = field(default_factory=dict)
    ablations: dict[str, float] = field(default_factory=dict)  # mode -> NDCG@10


@dataclass(frozen=True)
class SembleRepo:
    name: str
    language: str
    benchmark_root: str | None  # the folder semble indexed, relative to the repository root
    archive: Path  # a .tar.gz unpacking to NAME/, or (test data) the folder to index itself
    sha256: str | None
    published: Published
    queries: tuple[Query, ...]

    def relative_target(self, target: Target) -> str:
        """The target's path relative to the indexed folder (annotations mostly name files
        from the repository root; pandoc and zls name them from the indexed folder)."""
        prefix = f"{self.benchmark_root}/" if self.benchmark_root else ""
        return target.path[len(prefix):] if prefix and target.path.startswith(prefix) else target.path


def _target(entry: str | dict[str, Any], secondary: bool) -> Target:
    if isinstance(entry, str):
        return Target(entry, secondary=secondary)
    start, end = entry.get("start_line"), entry.get("end_line")
    if start is None or end is None:  # semble's rule: a span with a missing end is no span
        return Target(entry["path"], secondary=secondary)
    return Target(entry["path"], int(start), int(end), secondary)


def _queries(path: Path) -> tuple[Query, ...]:
    queries = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        targets = [_target(t, False) for t in item.get("relevant", [])]
        targets += [_target(t, True) for t in item.get("secondary", [])]
        queries.append(Query(item["query"], item["category"], tuple(targets)))
    return tuple(queries)


def _published(entry: dict[str, Any]) -> Published:
    return Published(float(entry["ndcg10"]), dict(entry.get("by_category", {})),
                     dict(entry.get("ablations_ndcg10", {})))


def load_repos(data_dir: Path = DEFAULT_DATA_DIR) -> list[SembleRepo]:
    """Every repository of the data set with its queries and semble's figures, by name."""
    listing = json.loads((data_dir / "repos.json").read_text(encoding="utf-8"))
    published = json.loads((data_dir / "published.json").read_text(encoding="utf-8"))["repos"]
    repos = [
        SembleRepo(
            name=entry["name"], language=entry["language"], benchmark_root=entry.get("benchmark_root"),
            archive=data_dir / entry["archive"], sha256=entry.get("archive_sha256"),
            published=_published(published[entry["name"]]),
            queries=_queries(data_dir / "annotations" / f"{entry['name']}.json"))
        for entry in listing
    ]
    return sorted(repos, key=lambda r: r.name)


def split_repos(repos: list[SembleRepo], split: Split) -> list[SembleRepo]:
    """Tune and test halves: within each language the repositories in name order alternate,
    the first going to tune, so each half holds every language with two or more."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {SPLITS}")
    if split == "all":
        return sorted(repos, key=lambda r: r.name)
    chosen = []
    for language in sorted({r.language for r in repos}):
        ours = sorted((r for r in repos if r.language == language), key=lambda r: r.name)
        chosen += ours[0 if split == "tune" else 1::2]
    return sorted(chosen, key=lambda r: r.name)


def split_of(repos: list[SembleRepo], repo: SembleRepo) -> Split:
    return "tune" if repo in split_repos(repos, "tune") else "test"


def select(repos: list[SembleRepo], names: list[str] | None = None, language: str | None = None,
           split: Split = "all") -> list[SembleRepo]:
    """The repositories a bench was asked for: a split, then a language, then names."""
    chosen = split_repos(repos, split)
    if language:
        known = {r.language for r in repos}
        if language not in known:
            raise ValueError(f"unknown language {language!r}; choose from {sorted(known)}")
        chosen = [r for r in chosen if r.language == language]
    if names:
        unknown = set(names) - {r.name for r in repos}
        if unknown:
            raise ValueError(f"unknown repositories {sorted(unknown)}")
        chosen = [r for r in chosen if r.name in names]
    if not chosen:
        raise ValueError("no repository is in that selection")
    return chosen


class ArchiveMismatchError(RuntimeError):
    """The archive's sha256 is not the one repos.json records."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def materialise(repo: SembleRepo, cache_dir: Path | None = None) -> Path:
    """The folder to index: a test folder as it is, else the archive unpacked once into
    `cache_dir/repos/NAME-<sha256 prefix>/NAME` after its sha256 is checked."""
    if repo.archive.is_dir():
        return repo.archive
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    if not repo.sha256:
        raise ArchiveMismatchError(f"{repo.name}: repos.json gives no archive_sha256")
    dest = cache_dir / "repos" / f"{repo.name}-{repo.sha256[:12]}"
    root = dest / repo.name
    if not root.is_dir() or not dest.with_name(dest.name + MARKER_SUFFIX).is_file():
        actual = _sha256(repo.archive)
        if actual != repo.sha256:
            raise ArchiveMismatchError(f"{repo.archive}: sha256 {actual}, repos.json says {repo.sha256}")
        extract_haystack(repo.archive, dest)
    if not root.is_dir():
        raise FileNotFoundError(f"{repo.archive} did not unpack to a folder {repo.name}/")
    return root
