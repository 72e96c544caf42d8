"""`prism-code calls PATH [SYMBOL] [--json]` on tests/fixtures/callrepo."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prism_code.cli import main as cli_main

FIXTURE = Path(__file__).parent / "fixtures" / "callrepo"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("calls")
    shutil.copytree(FIXTURE, base / "callrepo")
    return base / "callrepo", base / "cache"


def run(repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    root, cache = repo
    code = cli_main(["calls", str(root), *args, "--cache-dir", str(cache)])
    out, err = capsys.readouterr()
    return code, out, err


def end(path: str, qualname: str | None, start_line: int) -> dict[str, object]:
    return {"path": path, "qualname": qualname, "start_line": start_line}


def test_calls_of_a_qualname_as_json(repo, capsys):
    code, out, _ = run(repo, capsys, "Animal.describe", "--json")
    assert code == 0
    assert json.loads(out) == [
        {"caller": end("zoo/animals.py", "Dog.greet", 12), "callee": end("zoo/base.py", "Animal.describe", 14),
         "line": 13},
        {"caller": end("zoo/base.py", "Animal.describe", 14), "callee": end("zoo/base.py", "Animal.sound", 10),
         "line": 15},
        {"caller": end("zoo/keeper.py", "Keeper.feed", 15), "callee": end("zoo/base.py", "Animal.describe", 14),
         "line": 16},
    ]


def test_a_bare_name_matches_every_definition_so_named(repo, capsys):
    # Animal.sound, Dog.sound and Cat.sound: only the base's is called (overrides are no calls).
    code, out, _ = run(repo, capsys, "sound", "--json")
    assert code == 0
    assert [(e["caller"]["qualname"], e["callee"]["path"], e["callee"]["qualname"]) for e in json.loads(out)] == [
        ("Animal.describe", "zoo/base.py", "Animal.sound")]


def test_every_call_with_module_code_as_a_caller(repo, capsys):
    code, out, _ = run(repo, capsys, "--json")
    assert code == 0
    edges = json.loads(out)
    assert len(edges) == 28  # every edge of test_call_resolution.EXPECTED
    assert {"caller": end("zoo/keeper.py", None, 1), "callee": end("zoo/keeper.py", "Keeper", 11),
            "line": 31} in edges
    recursive = [e for e in edges if e["caller"] == e["callee"]]
    assert [e["caller"]["qualname"] for e in recursive] == ["Animal.count_down"]


def test_readable_list_and_an_unknown_symbol(repo, capsys):
    code, out, _ = run(repo, capsys, "morning")
    assert code == 0
    assert out.splitlines() == ["zoo/keeper.py:35  morning (zoo/keeper.py:34) -> Keeper.walk (zoo/keeper.py:18)"]
    code, out, err = run(repo, capsys, "no_such_thing")
    assert code == 2 and out == ""
    assert "no function, method or class named 'no_such_thing'" in err
