"""`prism-code bench`: one subcommand per registered bench, every documented command line still
parses, and a run's sections reach the terminal and the results file."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from pathlib import Path

import pytest

from prism_bench import cli as bench_cli
from prism_bench.registry import BENCHES

ROOT = Path(__file__).resolve().parents[1]
COMMAND = re.compile(r"Command: `prism-code bench ([^`]*)`")


def bench_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prism-code bench")
    bench_cli.add_arguments(parser)
    return parser


def documented_commands() -> list[str]:
    return COMMAND.findall((ROOT / "docs" / "benchmarks.md").read_text())


def test_the_results_document_records_commands_of_most_benches() -> None:
    # Guards the parametrised test below from passing over nothing.
    named = {shlex.split(c)[0] for c in documented_commands()}
    assert len(documented_commands()) >= 30 and len(named) >= 12


@pytest.mark.parametrize("command", documented_commands())
def test_every_documented_command_line_parses(command: str) -> None:
    argv = shlex.split(command)
    args = bench_parser().parse_args(argv)
    assert args.bench == argv[0]
    if "--write" in argv:
        assert args.write == Path(argv[argv.index("--write") + 1])


def test_help_lists_every_bench_once_in_registry_order() -> None:
    names = [b.name for b in BENCHES]
    assert len(set(names)) == len(names)
    text = bench_parser().format_help()
    listed = re.search(r"\{([^}]*)\}", text)
    assert listed is not None and listed.group(1).split(",") == names
    for bench in BENCHES:
        assert bench.help.split(" ")[0] in text


def test_an_unknown_bench_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        bench_parser().parse_args(["no-such-bench"])
    assert exit_info.value.code == 2 and "invalid choice: 'no-such-bench'" in capsys.readouterr().err


def test_a_run_prints_its_section_and_writes_it_between_its_markers(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    shutil.copytree(ROOT / "tests" / "fixtures" / "semble_mini", data)
    results = tmp_path / "docs" / "benchmarks.md"
    results.parent.mkdir()
    results.write_text("# Benchmarks\n\n<!-- bench:semble-coverage-python -->\nstale\n"
                       "<!-- /bench:semble-coverage-python -->\n\n<!-- bench:other -->\nkept\n<!-- /bench:other -->\n")
    args = bench_parser().parse_args(["coverage", "--lang", "python", "--data-dir", str(data),
                                      "--cache-dir", str(tmp_path / "cache"), "--write", str(results)])
    assert bench_cli.run(args) == 0
    out = capsys.readouterr().out
    assert "| pymini | 5 | 0.800 (4/5) |" in out
    text = results.read_text()
    assert "stale" not in text and "kept" in text
    section = text.split("<!-- bench:semble-coverage-python -->")[1].split("<!-- /bench:semble-coverage-python -->")[0]
    assert "| pymini | 5 | 0.800 (4/5) |" in section


def test_only_a_run_that_draws_a_chart_needs_matplotlib() -> None:
    # A model strategy's semble sample writes tables only: --write must not ask for the bench extra.
    semble = next(b for b in BENCHES if b.name == "semble")
    assert semble.charts(bench_parser().parse_args(["semble", "--write", "x.md"]))
    assert not semble.charts(bench_parser().parse_args(["semble", "--strategy", "prism", "--write", "x.md"]))
    repoqa = next(b for b in BENCHES if b.name == "repoqa")
    assert repoqa.charts(bench_parser().parse_args(["repoqa", "--write", "x.md"]))
