"""Bad command-line input is refused with a usage error, and repository text cannot drive the terminal."""

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_runner import FIXTURES, run

from prism_bench import cli as bench_cli
from prism_code import cli

ESC_NAME = "evil\x1b[31m\nname.py"  # an escape sequence and a newline in a file name
ESC_SHOWN = "evil\\x1b[31m\\nname.py"


def usage_error(capsys, *argv: str) -> str:
    """Run the CLI in-process; it must stop at argument parsing with status 2. Returns stderr."""
    with pytest.raises(SystemExit) as stopped:
        cli.main(list(argv))
    err = capsys.readouterr().err
    assert stopped.value.code == 2, err
    assert "Traceback" not in err
    return err


@pytest.fixture()
def calcrepo(tmp_path: Path) -> Path:
    root = tmp_path / "calcrepo"
    shutil.copytree(FIXTURES / "calcrepo", root)
    return root


@pytest.mark.parametrize("top", ["-3", "0", "1001", "three"])
def test_find_top_outside_1_to_1000_is_refused(capsys, calcrepo, tmp_path, top):
    err = usage_error(capsys, "find", str(calcrepo), "connect to a host", "--top", top,
                      "--cache-dir", str(tmp_path / "cache"))
    assert "argument --top" in err and "from 1 to 1000" in err


@pytest.mark.parametrize("command", ["find", "complete"])
@pytest.mark.parametrize("alpha", ["nan", "inf", "-inf", "-5", "10.5"])
def test_alpha_must_be_a_finite_number_from_0_to_10(capsys, calcrepo, tmp_path, command, alpha):
    position = ["connect to a host"] if command == "find" else ["calc/net.py", "6", "22"]
    err = usage_error(capsys, command, str(calcrepo), *position, f"--alpha={alpha}",
                      "--model", "no-such-model", "--cache-dir", str(tmp_path / "cache"))
    assert "argument --alpha" in err and "finite number from 0 to 10" in err


@pytest.mark.parametrize("argv", [
    ["index", ""],
    ["find", "", "connect to a host"],
    ["related", "", "calc/net.py", "1"],
    ["complete", "", "calc/net.py", "1", "1"],
    ["notes", ""],
])
def test_an_empty_path_is_not_the_current_directory(capsys, monkeypatch, tmp_path, argv):
    (tmp_path / "cwd").mkdir()
    shutil.copytree(FIXTURES / "calcrepo", tmp_path / "cwd", dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path / "cwd")
    err = usage_error(capsys, *argv, "--cache-dir", str(tmp_path / "cache"))
    assert "argument path" in err and "empty path" in err
    assert not (tmp_path / "cache").exists()  # nothing was indexed


@pytest.mark.parametrize("argv, option", [
    (["--cache-dir", ""], "--cache-dir"),
    (["related", "{repo}", "", "1"], "file"),
    (["complete", "{repo}", "", "1", "1"], "file"),
])
def test_other_empty_paths_are_refused(capsys, calcrepo, argv, option):
    if argv[0] == "--cache-dir":
        argv = ["index", str(calcrepo), *argv]
    err = usage_error(capsys, *[a.format(repo=calcrepo) for a in argv])
    assert f"argument {option}" in err and "empty path" in err


@pytest.mark.parametrize("argv, option, expected", [
    (["find", "{repo}", "x", "--threads", "0"], "--threads", "from 1 to 256"),
    (["find", "{repo}", "x", "--threads", "257"], "--threads", "from 1 to 256"),
    (["find", "{repo}", "x", "--strategy", "wim", "--candidates", "-2"], "--candidates", "from 1 to 1000"),
    (["complete", "{repo}", "calc/net.py", "6", "22", "--threads", "-1"], "--threads", "from 1 to 256"),
    (["complete", "{repo}", "calc/net.py", "0", "1"], "line", ">= 1"),
    (["complete", "{repo}", "calc/net.py", "1", "-4"], "col", ">= 1"),
    (["complete", "{repo}", "calc/net.py", "6", "22", "--remote", ""], "--remote", "empty value"),
    (["related", "{repo}", "calc/net.py", "-1"], "line", ">= 1"),
    (["notes", "{repo}", "--run", "--limit", "-1"], "--limit", ">= 1"),
    (["notes", "{repo}", "--run", "--threads", "0"], "--threads", "from 1 to 256"),
])
def test_numeric_options_out_of_range_are_refused(capsys, calcrepo, tmp_path, argv, option, expected):
    err = usage_error(capsys, *[a.format(repo=calcrepo) for a in argv], "--cache-dir", str(tmp_path / "cache"))
    assert f"argument {option}" in err and expected in err


@pytest.mark.parametrize("argv, option", [
    (["repoqa", "--threads", "0"], "--threads"),
    (["repoqa", "--strategy", "prism", "--limit", "-1"], "--limit"),
    (["repoqa", "--strategy", "prism", "--ablation", "-1"], "--ablation"),
    (["repoqa", "--strategy", "long-context", "--token-budget", "0"], "--token-budget"),
    (["repoqa", "--cache-dir", ""], "--cache-dir"),
    (["repoeval", "--per-project", "-1"], "--per-project"),
    (["repoeval", "--threads", "0"], "--threads"),
    (["repoeval", "--write", ""], "--write"),
    (["notes", "--limit", "0"], "--limit"),
    (["index", "--edits", "-1"], "--edits"),
    (["index", ""], "path"),
    (["server", "--notes-file", ""], "--notes-file"),
])
def test_benchmark_options_out_of_range_are_refused(capsys, monkeypatch, argv, option):
    monkeypatch.setattr(bench_cli, "run", lambda args: pytest.fail(f"the benchmark ran with {argv}"))
    err = usage_error(capsys, "bench", *argv)
    assert f"argument {option}" in err


def test_complete_refuses_a_file_outside_the_repository_before_loading_the_model(calcrepo, tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text("API_KEY = 'do not send me anywhere'\n")
    (calcrepo / "calc" / "link.py").symlink_to(secret)
    cache = tmp_path / "cache"
    for file in ["../secret.py", str(secret), "calc/link.py", "calc/../../secret.py"]:
        # A model that does not exist and a server that does not answer: the file is refused first.
        for backend in (["--model", "no-such-model"], ["--remote", "http://127.0.0.1:9"]):
            out = run("complete", str(calcrepo), file, "1", "1", *backend, cache=cache)
            assert out.returncode == 2, out.stderr
            assert "outside the workspace" in out.stderr, (file, out.stderr)
            assert "no-such-model" not in out.stderr and "127.0.0.1" not in out.stderr
            assert "Traceback" not in out.stderr
    # The same file reached through the repository is still allowed (and then needs the model).
    out = run("complete", str(calcrepo), str(calcrepo / "calc" / "net.py"), "6", "22", "--model", "no-such-model",
              cache=cache)
    assert out.returncode == 2 and "unknown model 'no-such-model'" in out.stderr


@pytest.mark.timeout(60)
def test_complete_on_a_fifo_is_refused_not_waited_on(calcrepo, tmp_path):
    os.mkfifo(calcrepo / "calc" / "pipe.py")  # nothing ever writes to it: a read would block
    out = run("complete", str(calcrepo), "calc/pipe.py", "1", "1", "--model", "no-such-model",
              cache=tmp_path / "cache")
    assert out.returncode == 2, out.stderr
    assert "no such readable file in the workspace: calc/pipe.py" in out.stderr
    assert "Traceback" not in out.stderr


def test_complete_checks_line_and_column_before_loading_the_model(calcrepo, tmp_path):
    cache = tmp_path / "cache"
    lines = (calcrepo / "calc" / "net.py").read_text().split("\n")
    last_line = len(lines)  # the empty line after the final newline, where a cursor can be
    width = len(lines[5])  # line 6: "    grace = settings."
    cases = {
        (str(last_line + 1), "1"): f"line {last_line + 1} is outside calc/net.py, which has lines 1 to {last_line}",
        ("6", str(width + 2)): f"column {width + 2} is outside line 6 of calc/net.py, "
                               f"which has columns 1 to {width + 1}",
        (str(last_line), "2"): f"column 2 is outside line {last_line} of calc/net.py, which has columns 1 to 1",
    }
    for (line, col), message in cases.items():
        out = run("complete", str(calcrepo), "calc/net.py", line, col, "--model", "no-such-model", cache=cache)
        assert out.returncode == 2 and message in out.stderr, out.stderr
        assert "no-such-model" not in out.stderr  # refused before the model was looked at
    # The first and last positions a cursor can take are accepted (the model is the next thing to fail).
    for line, col in [("6", str(width + 1)), (str(last_line), "1"), ("1", "1")]:
        out = run("complete", str(calcrepo), "calc/net.py", line, col, "--model", "no-such-model", cache=cache)
        assert out.returncode == 2 and "unknown model 'no-such-model'" in out.stderr, out.stderr


def test_control_characters_in_file_names_are_escaped_in_text_output(tmp_path):
    repo = tmp_path / "repo"  # not a git work tree: files come from a directory walk
    repo.mkdir()
    (repo / ESC_NAME).write_text('def paint_terminal_red():\n    """Paint the terminal red."""\n    return 1\n')
    big = "big\x1b]0;title\x07\r.py"  # too large to index: reported by `index -v`
    (repo / big).write_text("x = 1\n" * 200_000)
    cache = tmp_path / "cache"

    out = run("-v", "index", str(repo), "--no-embeddings", cache=cache)
    assert out.returncode == 0, out.stderr
    assert "big\\x1b]0;title\\x07\\r.py" in out.stderr
    assert "\x1b" not in out.stderr + out.stdout and "\x07" not in out.stderr

    out = run("find", str(repo), "paint the terminal red", cache=cache)
    assert out.returncode == 0, out.stderr
    assert f"paint_terminal_red  {ESC_SHOWN}:1-3" in out.stdout
    assert "\x1b" not in out.stdout and "\nname.py" not in out.stdout

    out = run("related", str(repo), ESC_NAME, "1", cache=cache)
    assert out.returncode == 0, out.stderr
    assert f"{ESC_SHOWN}#paint_terminal_red (function" in out.stdout and "\x1b" not in out.stdout

    out = run("notes", str(repo), cache=cache)
    assert out.returncode == 0, out.stderr
    assert f"paint_terminal_red  {ESC_SHOWN}:1-3" in out.stdout and "\x1b" not in out.stdout

    # --json keeps the real name; json escapes it already.
    out = run("find", str(repo), "paint the terminal red", "--json", cache=cache)
    assert json.loads(out.stdout)[0]["path"] == ESC_NAME and "\x1b" not in out.stdout
