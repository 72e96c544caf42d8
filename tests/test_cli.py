"""The `prism-code` command line, end to end, as a user runs it."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import FIXTURES, copy_fixture, run


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return copy_fixture("multilang", tmp_path)


def test_index_then_find_with_embeddings(repo, tmp_path):
    before = sorted(p for p in repo.rglob("*"))
    out = run("index", str(repo), "--json", cache=tmp_path / "cache")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["files"] >= 15 and summary["functions"] >= 30
    # source and card per function and per type (class, struct, ...)
    assert summary["embedded"] == 2 * (summary["functions"] + summary["types"] + summary["file_units"])
    assert sorted(p for p in repo.rglob("*")) == before  # the index lives outside the repository
    assert list((tmp_path / "cache").rglob("index.sqlite"))

    out = run("find", str(repo), "compute the area of a shape", "--top", "3", "--json",
              cache=tmp_path / "cache")
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert len(results) == 3
    assert set(results[0]) == {"name", "qualname", "path", "start_line", "end_line", "score", "reason",
                               "kind", "scores"}
    assert (results[0]["qualname"], results[0]["path"], results[0]["start_line"]) == \
        ("Shape.area", "cpp/shape.cpp", 7)
    assert results[0]["score"] >= results[1]["score"] >= results[2]["score"]
    assert "area" in results[0]["reason"]

    again = run("index", str(repo), "--json", cache=tmp_path / "cache")
    assert json.loads(again.stdout)["embedded"] == 0  # cached per content hash


def test_find_answers_lexically_before_embeddings(repo, tmp_path):
    run("index", str(repo), "--no-embeddings", cache=tmp_path / "cache")
    out = run("find", str(repo), "add an item to the cart", "--json", cache=tmp_path / "cache")
    assert out.returncode == 0
    assert "lexical ranking only" in out.stderr
    names = [r["qualname"] for r in json.loads(out.stdout)[:3]]
    assert "Cart.add" in names


def test_find_follows_edits_without_reindex(repo, tmp_path):
    run("index", str(repo), "--no-embeddings", cache=tmp_path / "cache")
    (repo / "pkg" / "tax.py").write_text(
        "def apply_sales_tax(amount, rate):\n    \"\"\"Add sales tax to an amount.\"\"\"\n"
        "    return amount * (1 + rate)\n")
    out = run("find", str(repo), "add sales tax to an amount", "--json", cache=tmp_path / "cache")
    assert json.loads(out.stdout)[0]["qualname"] == "apply_sales_tax"


def test_related_shows_fragrel_strengths(tmp_path):
    repo = tmp_path / "pyrepo"
    shutil.copytree(FIXTURES / "pyrepo", repo)
    out = run("related", str(repo), "pkg/a.py", "5", "--json", cache=tmp_path / "cache")
    assert out.returncode == 0, out.stderr
    report = {entry["fragment"]: entry for entry in json.loads(out.stdout)}
    caller = report["pkg/a.py#caller"]
    strengths = {r["fragment"]: r["strength"] for r in caller["related"]}
    assert strengths["pkg/b.py#helper"] == pytest.approx(0.8)
    assert strengths["pkg/b.py#unrelated"] == pytest.approx(0.2)
    assert "pkg/a.py@1" in report  # the window around line 5 is reported too


def test_clear_errors(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    out = run("index", str(tmp_path / "file.txt"), cache=tmp_path / "cache")
    assert out.returncode == 2
    assert "not a directory" in out.stderr and "Traceback" not in out.stderr
    out = run("find", str(tmp_path / "nowhere"), "x", cache=tmp_path / "cache")
    assert out.returncode == 2 and "does not exist" in out.stderr
    (tmp_path / "repo").mkdir()
    out = run("find", str(tmp_path / "repo"), "   ", cache=tmp_path / "cache")
    assert out.returncode == 2 and "empty" in out.stderr
    out = run("related", str(tmp_path / "repo"), "a.py", "3", cache=tmp_path / "cache")
    assert out.returncode == 2 and "no indexed fragment" in out.stderr


def test_a_benchmark_without_its_chart_library_says_so_before_running(tmp_path):
    blocked = ("import sys; sys.modules['matplotlib'] = None\n"  # as if the `bench` extra were not installed
               "from prism_code.cli import main; sys.exit(main(sys.argv[1:]))")
    doc = tmp_path / "benchmarks.md"
    out = subprocess.run([sys.executable, "-c", blocked, "bench", "repoeval", "--write", str(doc)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "matplotlib" in out.stderr and ".[bench]" in out.stderr
    assert not doc.exists()


ORDER_TOTAL = ("Work out what an order costs in all: take the unit prices and how many of each item "
               "were bought, multiply each pair and sum the products.")


def stream_lines(out: subprocess.CompletedProcess) -> list[dict]:
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_find_stream_of_retrieval_is_one_final_line(repo, tmp_path):
    run("index", str(repo), "--no-embeddings", cache=tmp_path / "cache")
    plain = run("find", str(repo), "add an item to the cart", "--top", "4", "--json", cache=tmp_path / "cache")
    lines = stream_lines(run("find", str(repo), "add an item to the cart", "--top", "4", "--stream",
                             cache=tmp_path / "cache"))
    assert len(lines) == 1 and lines[0]["done"] is True
    assert lines[0]["results"] == json.loads(plain.stdout)
    assert lines[0]["evidence"] == ["retrieval"] * 4


@pytest.mark.model
def test_find_stream_prints_each_ranking_and_ends_with_the_plain_answer(tmp_path):
    args = ("find", str(FIXTURES / "calcrepo"), ORDER_TOTAL, "--strategy", "prism", "--top", "3",
            "--candidates", "3")
    lines = stream_lines(run(*args, "--stream", cache=tmp_path / "cache"))
    plain = run(*args, "--json", cache=tmp_path / "cache")
    assert plain.returncode == 0, plain.stderr
    # Retrieval's list first, then retrieval's again with the model's guess at the sentence's code,
    # one line per candidate the model scores, the final one last.
    assert [(line["scored"], line["done"]) for line in lines] == [(0, False), (0, False), (1, False), (2, False),
                                                                  (3, False), (3, True)]
    assert [line["progress"] for line in lines[:3]] == ["scored 0 of 3", "scored 0 of 3", "scored 1 of 3"]
    assert lines[1]["evidence"] == ["retrieval"] * 3 and lines[-1]["evidence"] == ["model"] * 3
    assert lines[-1]["results"] == json.loads(plain.stdout)
    # Without the guess, the sentence as typed: no second retrieval list.
    unguessed = stream_lines(run(*args, "--no-expand", "--stream", cache=tmp_path / "cache"))
    assert [(line["scored"], line["done"]) for line in unguessed] == [(0, False), (1, False), (2, False),
                                                                      (3, False), (3, True)]
    assert unguessed[0]["results"] == lines[0]["results"]
