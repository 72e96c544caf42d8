"""RepoQA Search-Needle-Function (Python subset) needles and their PyPI haystacks.

The needle data (benchmarks/repoqa/*.json, Apache-2.0 RepoQA data) pins git commits of
GitHub repositories, which project machines cannot reach. For 8 of the 10 repositories a
pure-Python wheel on PyPI holds every needle byte for byte; ``pypi_location`` gives each
needle's place inside that wheel. Those 80 needles are what this module exposes.
"""

from __future__ import annotations

import json
import re
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from prism_bench.corpora import MARKER_SUFFIX, fetch_and_extract
from prism_code.config import cache_root

# Only meaningful in a source checkout: benchmark data is not shipped inside the package.
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "repoqa"


def default_cache_dir() -> Path:
    return cache_root() / "bench" / "repoqa"


@dataclass(frozen=True)
class Needle:
    repo: str
    name: str
    description: str
    path: str  # POSIX path relative to the materialised haystack root
    start_line: int  # 1-based, inclusive; the `def`/`async def` line (decorators excluded)
    end_line: int  # 1-based, inclusive
    instance_id: str


def is_needle(path: str, start_line: int, needle: Needle) -> bool:
    """Whether a result at `path` starting on `start_line` (1-based) is the needle's function:
    the same file and the same first line. Every bench judges a result by this one rule, so
    their scores compare. Not "contains the needle's line": a class whose span holds the
    needle method would count. For languages whose needle lines differ from the index's
    (repoqa-multi's qualified names), align the needle first (`repoqa_strategies.located`)."""
    return path == needle.path and start_line == needle.start_line


class _Located(Protocol):
    path: str
    start_line: int


def needle_rank(results: Sequence[_Located], needle: Needle) -> int | None:
    """The 1-based place of the needle's function among `results` (`is_needle`), or None."""
    return next((rank for rank, r in enumerate(results, 1) if is_needle(r.path, r.start_line, needle)), None)


@dataclass(frozen=True)
class HaystackSpec:
    """What to download for one repository; ``materialise`` turns it into files."""

    repo: str
    package: str
    version: str
    artifact: str  # exact wheel file name pip must return
    prefix: str  # RepoQA's entrypoint_path mapped into the wheel; a plain string prefix
    expected_files: int  # .py files under prefix, per the data's pinned-vs-wheel diff
    needles: list[Needle]


@dataclass(frozen=True)
class Haystack:
    repo: str
    package: str
    version: str
    root: Path
    needles: list[Needle]
    language: str = "python"


class NeedleMismatchError(RuntimeError):
    def __init__(self, spec: HaystackSpec, problems: list[str]) -> None:
        super().__init__(f"{spec.package}=={spec.version}: " + "; ".join(problems))
        self.problems = problems


def _wheel_prefix(entrypoint: str, pinned_prefix: str, wheel_prefix: str) -> str:
    # RepoQA selects files with a plain startswith(entrypoint_path), so keep the prefix
    # plain where the mapping allows it: for black, "src/black" -> "black" also selects
    # blackd/, exactly as the pinned haystack does.
    if entrypoint.startswith(pinned_prefix):
        return wheel_prefix + entrypoint[len(pinned_prefix):]
    if entrypoint + "/" == pinned_prefix:
        return wheel_prefix
    raise ValueError(f"entrypoint {entrypoint!r} is not under pinned prefix {pinned_prefix!r}")


def _load_spec(data: dict) -> HaystackSpec | None:
    pypi = data.get("materialize", {}).get("pypi")
    if not pypi or not pypi.get("usable_as_substitute"):
        return None
    repo = data["repo"]
    needles = [
        Needle(
            repo=repo,
            name=n["name"],
            description=n["description"],
            path=n["pypi_location"]["path"],
            # The data is 0-based with an exclusive end (tree-sitter rows).
            start_line=n["pypi_location"]["start_line"] + 1,
            end_line=n["pypi_location"]["end_line"],
            instance_id=n["instance_id"],
        )
        for n in data["needles"]
        if n.get("pypi_location")
    ]
    if not needles:
        return None
    path_map = pypi["path_map"]
    return HaystackSpec(
        repo=repo,
        package=pypi["package"],
        version=pypi["version"],
        artifact=pypi["artifact"],
        prefix=_wheel_prefix(data["entrypoint_path"], path_map["pinned_prefix"], path_map["wheel_prefix"]),
        expected_files=pypi["files_in_pinned_haystack"] - pypi["files_missing_in_wheel"] + pypi["files_extra_in_wheel"],
        needles=needles,
    )


def load_needles(data_dir: Path = DEFAULT_DATA_DIR) -> list[HaystackSpec]:
    """One spec per repository that has a usable PyPI substitute, sorted by repo name."""
    specs = []
    for path in sorted(data_dir.glob("*__*.json")):
        spec = _load_spec(json.loads(path.read_text(encoding="utf-8")))
        if spec is not None:
            specs.append(spec)
    return specs


def _def_pattern(name: str) -> re.Pattern[str]:
    # "(" or "[" (PEP 695 type parameters) must follow so `def foo` does not match `def foobar`.
    return re.compile(rf"(async\s+)?def\s+{re.escape(name)}\s*[(\[]")


def check_needles(root: Path, needles: list[Needle]) -> list[str]:
    """Problems found with the needles' locations under ``root``; empty when all are in place."""
    problems = []
    for needle in needles:
        file = root / needle.path
        if not file.is_file():
            problems.append(f"{needle.instance_id}: {needle.path} missing")
            continue
        # Same line split as RepoQA (str.split on \n after CRLF normalisation).
        lines = file.read_text(encoding="utf-8").replace("\r\n", "\n").split("\n")
        if not 1 <= needle.start_line <= needle.end_line <= len(lines):
            problems.append(f"{needle.instance_id}: lines {needle.start_line}-{needle.end_line} "
                            f"outside {needle.path} ({len(lines)} lines)")
            continue
        first = lines[needle.start_line - 1].strip()
        if not _def_pattern(needle.name).match(first):
            problems.append(f"{needle.instance_id}: {needle.path}:{needle.start_line} is {first[:80]!r}, "
                            f"not def {needle.name}")
    return problems


def haystack_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.py"))


def materialise(spec: HaystackSpec, cache_dir: Path | None = None) -> Path:
    """Unpack the haystack's ``.py`` files into ``cache_dir/<package>-<version>``; returns it.

    Raises ``NeedleMismatchError`` (and caches nothing) when a needle is not where the
    data says or the file count differs from the one the data was checked against.
    """
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir

    def keep(name: str) -> bool:
        return name.startswith(spec.prefix) and name.endswith(".py")

    def verify(root: Path) -> None:
        problems = check_needles(root, spec.needles)
        n_files = len(haystack_files(root))
        if n_files != spec.expected_files:
            problems.append(f"{n_files} .py files under {spec.prefix!r}, expected {spec.expected_files}")
        if problems:
            raise NeedleMismatchError(spec, problems)

    return fetch_and_extract(
        spec.package, spec.version, cache_dir / f"{spec.package}-{spec.version}",
        artifact=spec.artifact, keep=keep, verify=verify,
    )


def load_haystacks(data_dir: Path = DEFAULT_DATA_DIR, cache_dir: Path | None = None) -> list[Haystack]:
    """Materialise (if needed) every PyPI-backed haystack and return it with its needles."""
    return [
        Haystack(repo=s.repo, package=s.package, version=s.version, root=materialise(s, cache_dir), needles=s.needles)
        for s in load_needles(data_dir)
    ]


def recall_metrics(ranks: list[int | None], ks: tuple[int, ...] = (1, 10, 50)) -> dict[str, float]:
    """recall@k for each k and MRR@10 over 1-based ranks (None = needle not retrieved)."""
    if not ranks:
        raise ValueError("no ranks")
    if any(r is not None and r < 1 for r in ranks):
        raise ValueError("ranks are 1-based")
    n = len(ranks)
    metrics = {f"recall@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in ks}
    metrics["mrr@10"] = sum(1.0 / r for r in ranks if r is not None and r <= 10) / n
    return metrics


# RepoQA in C++, Java, TypeScript and Rust: haystack tarballs beside their needles (see the
# benchmarks README, section 4). Only meaningful in a source checkout next to the shared data.
MULTI_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "repoqa-multi"
MULTI_LANGUAGES = ("cpp", "java", "typescript", "rust")


def _multi_needles(data: dict) -> list[Needle]:
    # The data is 0-based with an exclusive end; `lines_1based_inclusive` says the same 1-based.
    return [
        Needle(repo=data["repo"], name=n["name"], description=n["description"], path=n["path"],
               start_line=n["lines_1based_inclusive"][0], end_line=n["lines_1based_inclusive"][1],
               instance_id=n["instance_id"])
        for n in data["needles"]
    ]


def extract_haystack(archive: Path, dest: Path) -> Path:
    """Unpack ``archive`` at ``dest`` once (crash-safe: staged, renamed, then marked); returns ``dest``.

    tarfile's ``data`` filter refuses absolute paths, ``..`` and links leaving the tree.
    """
    marker = dest.with_name(dest.name + MARKER_SUFFIX)
    if marker.is_file() and dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.tmp-") as tmp:
        staging = Path(tmp) / "tree"
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(staging, filter="data")
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    marker.write_text(json.dumps({"archive": archive.name}) + "\n")
    return dest


def load_multi_haystacks(language: str, data_dir: Path = MULTI_DATA_DIR,
                         cache_dir: Path | None = None) -> list[Haystack]:
    """Every haystack of ``language`` (one of MULTI_LANGUAGES), extracted into the cache."""
    if language not in MULTI_LANGUAGES:
        raise ValueError(f"unknown language {language!r}; choose from {MULTI_LANGUAGES}")
    cache_dir = (default_cache_dir() if cache_dir is None else cache_dir) / "multi" / language
    haystacks = []
    for path in sorted((data_dir / language).glob("*__*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        archive = path.with_suffix(".tar.gz")
        root = extract_haystack(archive, cache_dir / f"{path.stem}-{data['commit'][:12]}")
        haystacks.append(Haystack(repo=data["repo"], package=path.stem, version=data["commit"][:12],
                                  root=root, needles=_multi_needles(data), language=language))
    if not haystacks:
        raise FileNotFoundError(f"no {language} needles under {data_dir / language}")
    return haystacks
