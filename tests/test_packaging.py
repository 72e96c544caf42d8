"""The wheel as a user gets it: `python -m build --wheel`, `pip install` into a fresh venv, `prism-code`.

Slow (marked `packaging`): the venv's dependencies come from PyPI, or from pip's cache
(llama-cpp-python builds from source once, ~6 minutes on 2 cores, and is cached as a wheel
after that; a cached run takes about a minute and a half). Nothing here needs the model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "multilang"

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(1800)]

# What a checkout holds that is not the library: left out of the copy that is built.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "node_modules", "out", "build", "dist", "test-artifacts",
                                     "*.egg-info", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache")


def _version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as f:
        version: str = tomllib.load(f)["project"]["version"]
    return version


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH pointing at a checkout, caches in tmp_path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PRISM_CODE_CACHE_DIR"] = str(tmp_path / "cache")
    return env


def _run(command: list[str | Path], tmp_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(part) for part in command], cwd=tmp_path, env=_clean_env(tmp_path),
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of this checkout (benchmarks and tests included), as `python -m build` does."""
    pytest.importorskip("build", reason="python -m build comes with the test extra")
    work = tmp_path_factory.mktemp("wheel")
    source = work / "checkout"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", work / "dist", source], work, timeout=600)
    wheels = list((work / "dist").glob("*.whl"))
    assert [w.name for w in wheels] == [f"prism_code-{_version()}-py3-none-any.whl"]
    return wheels[0]


def test_the_wheel_holds_the_library_and_its_data_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"prism_code", f"prism_code-{_version()}.dist-info"}  # no prism_bench, no tests
    queries = sorted(p.name for p in (ROOT / "prism_code" / "parse" / "queries").glob("*.scm"))
    assert queries and sorted(n.rsplit("/", 1)[1] for n in names if n.endswith(".scm")) == queries
    assert "prism_code/py.typed" in names and "prism_code/data/js_builtin_members.txt" in names
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "prism_code").rglob("*.py")}
    assert sources <= set(names)


def test_pip_install_into_a_fresh_venv_gives_a_working_cli(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], tmp_path, timeout=120)
    python, cli = venv / "bin" / "python", venv / "bin" / "prism-code"
    _run([python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet", wheel], tmp_path,
         timeout=1500)

    where = _run([python, "-c", "import prism_code; print(prism_code.__file__)"], tmp_path, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the installed copy, not this checkout

    usage = _run([cli, "--help"], tmp_path, timeout=60).stdout
    for command in ("setup", "index", "find", "complete", "serve"):
        assert command in usage

    repo = tmp_path / "multilang"
    shutil.copytree(FIXTURE, repo)
    found = _run([cli, "find", repo, "compute the area of a shape", "--top", "3", "--json"], tmp_path,
                 timeout=300)
    results = json.loads(found.stdout)
    assert (results[0]["qualname"], results[0]["path"]) == ("Shape.area", "cpp/shape.cpp")
    assert "lexical ranking only" in found.stderr  # no embeddings were computed: no model of any kind ran

    # The benchmarks stay in the checkout: an installed CLI says so instead of failing on an import.
    bench = subprocess.run([str(cli), "bench", "repoqa"], cwd=tmp_path, env=_clean_env(tmp_path),
                           capture_output=True, text=True, timeout=60, check=False)
    assert bench.returncode == 2 and "source checkout" in bench.stderr
