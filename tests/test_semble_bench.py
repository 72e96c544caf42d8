"""semble's benchmark: the loader, semble's matching and NDCG@10 rule, the bench and coverage,
on tests/fixtures/semble_mini (two small repositories as folders, one in a language the
parser lacks, with annotations and published figures of our own)."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tarfile
from pathlib import Path

import pytest

from prism_bench import semble_bench, semble_coverage, semble_report
from prism_bench.semble_data import (
    ArchiveMismatchError,
    SembleRepo,
    Target,
    load_repos,
    materialise,
    select,
    split_repos,
)
from prism_bench.semble_scoring import category_means, group_means, ndcg_at_10, path_matches, target_rank

FIXTURE = Path(__file__).parent / "fixtures" / "semble_mini"
RANK2 = 1 / math.log2(3)  # the gain of a target found at rank 2


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    """A copy of the fixture data: the folders are indexed outside the checkout's git tree."""
    dest = tmp_path / "data"
    shutil.copytree(FIXTURE, dest)
    return dest


def test_loader_reads_targets_spans_and_published_figures(data_dir: Path) -> None:
    repos = {r.name: r for r in load_repos(data_dir)}
    assert list(repos) == ["cobmini", "jsmini", "pymini"]  # by name
    py = repos["pymini"]
    assert py.language == "python" and py.benchmark_root == "src/pymini"
    third = py.queries[2]
    assert third.category == "semantic"
    assert third.targets == (Target("src/pymini/shapes.py", 34, 35, False), Target("src/pymini/colours.py", None,
                                                                                   None, True))
    assert py.published.ndcg10 == 0.8 and py.published.ablations["unranked-bm25"] == 0.6
    assert py.published.by_category["architecture"] == 0.5
    # Paths from the repository root and (as pandoc's) from the indexed folder both resolve.
    assert py.relative_target(third.targets[0]) == "shapes.py"
    assert py.relative_target(py.queries[3].targets[0]) == "config.py"


def test_path_rule_is_semble_s_with_the_reverse_suffix() -> None:
    assert path_matches("lib/response.js", "lib/response.js")
    assert path_matches("repo/lib/response.js", "lib/response.js")
    assert path_matches("response.js", "lib/response.js")  # result relative to the indexed lib/
    assert path_matches("app.py", "src/flask/sansio/app.py")  # generous, as semble scores itself
    assert path_matches("index.js", "lib/router/index.js")
    assert not path_matches("xresponse.js", "lib/response.js")  # a suffix must start at a "/"
    assert not path_matches("lib/request.js", "lib/response.js")


def test_spans_must_overlap_edges_included() -> None:
    span = Target("shapes.py", 34, 35)
    assert target_rank([("shapes.py", 30, 34)], span) == 1  # ends on the first line
    assert target_rank([("shapes.py", 35, 40)], span) == 1  # starts on the last line
    assert target_rank([("shapes.py", 30, 33), ("shapes.py", 36, 40), ("shapes.py", 1, 99)], span) == 3
    assert target_rank([("other.py", 34, 35)], span) is None
    # A file target matches any lines of the file.
    assert target_rank([("a.py", 1, 2), ("shapes.py", 90, 99)], Target("src/shapes.py")) == 2


def test_ndcg_hand_computed() -> None:
    a, b, c = ("a.py", 1, 10), ("b.py", 1, 10), ("c.py", 1, 10)
    assert ndcg_at_10([a, b, c], [Target("b.py")]) == pytest.approx(RANK2)
    # Two targets: ranks 1 and 3 over an ideal of ranks 1 and 2.
    assert ndcg_at_10([a, b, c], [Target("a.py"), Target("c.py")]) == pytest.approx((1 + 0.5) / (1 + RANK2))
    # Two targets matched first by the same result: its position counts once.
    assert ndcg_at_10([a, b], [Target("a.py"), Target("a.py", 2, 3)]) == pytest.approx(1 / (1 + RANK2))
    # A target no result reaches still counts in the ideal; none reached scores 0.
    assert ndcg_at_10([a], [Target("a.py"), Target("z.py")]) == pytest.approx(1 / (1 + RANK2))
    assert ndcg_at_10([a], [Target("z.py")]) == 0.0
    assert ndcg_at_10([a], []) == 0.0
    # Only the first ten results count, and the ideal stops at ten targets.
    eleven = [(f"f{i}.py", 1, 1) for i in range(11)]
    assert ndcg_at_10(eleven, [Target("f10.py")]) == 0.0
    twelve_targets = [Target(f"f{i}.py") for i in range(12)]
    assert ndcg_at_10(eleven, twelve_targets) == pytest.approx(1.0)


def test_means_per_language_and_category() -> None:
    values = {"r1": 0.2, "r2": 0.4, "r3": 0.9}
    assert group_means(values, {"r1": "go", "r2": "go", "r3": "c"}) == pytest.approx({"c": 0.9, "go": 0.3})
    # r2 has no symbol queries: the symbol mean is over r1 alone.
    per_repo = {"r1": {"symbol": 1.0, "semantic": 0.5}, "r2": {"semantic": 0.1}}
    assert category_means(per_repo) == pytest.approx({"semantic": 0.3, "symbol": 1.0})


def test_splits_alternate_within_each_language(data_dir: Path) -> None:
    repos = load_repos(data_dir)
    py = next(r for r in repos if r.name == "pymini")
    go_repos = [SembleRepo(f"go{i}", "go", None, py.archive, None, py.published, ()) for i in (3, 1, 2)]
    every = repos + go_repos
    assert [r.name for r in split_repos(every, "tune")] == ["cobmini", "go1", "go3", "jsmini", "pymini"]
    assert [r.name for r in split_repos(every, "test")] == ["go2"]
    assert len(split_repos(every, "all")) == len(every)
    assert [r.name for r in select(every, ["go2", "go3"], "go", "all")] == ["go2", "go3"]
    with pytest.raises(ValueError, match="unknown repositories"):
        select(every, ["nope"])
    with pytest.raises(ValueError, match="no repository"):
        select(every, ["go2"], split="tune")


def test_archive_is_unpacked_once_after_its_sha256_is_checked(data_dir: Path, tmp_path: Path) -> None:
    archive = data_dir / "repos" / "jsmini.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(data_dir / "repos" / "jsmini", arcname="jsmini")
    listing = json.loads((data_dir / "repos.json").read_text())
    listing[1].update(archive="repos/jsmini.tar.gz", archive_sha256=hashlib.sha256(archive.read_bytes()).hexdigest())
    (data_dir / "repos.json").write_text(json.dumps(listing))
    js = next(r for r in load_repos(data_dir) if r.name == "jsmini")
    root = materialise(js, tmp_path / "cache")
    assert root.name == "jsmini" and (root / "router.js").read_text().startswith("'use strict'")
    (root / "router.js").write_text("// edited after unpacking\n")
    assert materialise(js, tmp_path / "cache") == root  # once: not unpacked again
    assert (root / "router.js").read_text() == "// edited after unpacking\n"
    wrong = SembleRepo(js.name, js.language, js.benchmark_root, js.archive, "0" * 64, js.published, js.queries)
    with pytest.raises(ArchiveMismatchError):
        materialise(wrong, tmp_path / "other-cache")


def test_bench_scores_find_s_ranking_with_semble_s_rule(data_dir: Path, tmp_path: Path) -> None:
    repos = load_repos(data_dir)
    runs = {r.repo: r for r in semble_bench.run(repos, repos, tmp_path / "cache", embeddings=False)}
    py, js, cob = runs["pymini"], runs["jsmini"], runs["cobmini"]
    assert py.parsed and js.parsed and not cob.parsed
    assert py.queries[0].top[0] == "config.py:12-16 parse_config"
    # Rectangle.__init__ (width and height three times) comes before the spanned surface method;
    # surface, a second function of the same file, keeps second place since it matches far better
    # than the other files' best (a file's weaker repeats give way, find_ranking.FILE_REPEAT_PENALTY).
    top = py.queries[2].top
    assert top[0] == "shapes.py:30-32 Rectangle.__init__"
    surface_rank = top.index("shapes.py:34-35 Rectangle.surface") + 1
    assert surface_rank == 2
    assert py.queries[3].top[0] == "config.py:19-21 write_config"
    # colours.py has no function: the file is a result of its own, first for the palette
    # question and within reach as the span question's secondary file.
    assert py.queries[1].top[0] == "colours.py:1-5 colours.py"
    colours_rank = py.queries[2].top.index("colours.py:1-5 colours.py") + 1
    assert colours_rank <= 10
    span_second = (1 / math.log2(surface_rank + 1) + 1 / math.log2(colours_rank + 1)) / (1 + RANK2)
    assert [q.ndcg10 for q in py.queries[:4]] == pytest.approx([1.0, 1.0, span_second, 1.0])
    # The last query's spans are class lines outside every method: the classes, results of
    # their own, answer it.
    last = py.queries[4]
    assert last.ndcg10 > 0.5 and {"shapes.py:6-23 Shape", "shapes.py:26-35 Rectangle"} & set(last.top[:3])
    assert all(q.reachable for q in py.queries)
    assert py.queries[2].targets == [{"target": "src/pymini/shapes.py:34-35", "secondary": False, "rank": surface_rank},
                                     {"target": "src/pymini/colours.py", "secondary": True, "rank": colours_rank}]
    assert [q.top[0].split()[-1] for q in js.queries[:2]] == ["matchRoute", "serializeCookie"]
    # index.js only re-exports: no definition, but the file itself answers the architecture question.
    assert js.queries[2].top[0] == "index.js:1-6 index.js"
    assert [q.ndcg10 for q in js.queries] == pytest.approx([1.0, 1.0, 1.0])
    # cobmini's stray build.js is parsed and searched, its COBOL answer is not.
    assert [q.ndcg10 for q in cob.queries] == [0.0] and cob.unreachable == 1 and cob.functions == 1
    assert py.ndcg10 == pytest.approx((3 + span_second + last.ndcg10) / 5)
    assert py.by_category == pytest.approx({"architecture": (1 + last.ndcg10) / 2, "semantic": (1 + span_second) / 2,
                                            "symbol": 1.0})
    assert len(py.latency_ms) == 5 and py.p50_ms is not None
    # One result per file: Rectangle.__init__ stands for shapes.py, so the spanned method is lost
    # and only the secondary file counts, third of the three files.
    colours_third = (1 / math.log2(4)) / (1 + RANK2)
    assert [q.ndcg10_per_file for q in py.queries[:4]] == pytest.approx([1.0, 1.0, colours_third, 1.0])
    assert py.queries[4].ndcg10_per_file > 0
    assert [q.ndcg10_per_file for q in js.queries] == pytest.approx([1.0, 1.0, 1.0])

    by_name = {r.name: r for r in repos}
    text = semble_report.semble_markdown(list(runs.values()), by_name, "prism-code bench semble", False)
    mean = (py.ndcg10 + 1.0 + 0.0) / 3
    assert f"prism {mean:.3f}, semble {(0.8 + 0.9 + 0.4) / 3:.3f}" in text
    assert "| cobol (not parsed) | 1 | 1 | 1 | 0.000 | 0.000 | 0.400 | 0.300 | 0.200 |" in text
    assert "| javascript | 1 | 3 | 0 | 1.000 | 1.000 | 0.900 | 0.850 | 0.500 |" in text
    # symbol: both parsed repositories found theirs; semble's symbol mean over the same two.
    assert "| symbol | 2 | 1.000 | 1.000 |" in text
    assert "Queries nothing indexed can answer" in text and ": 1 of 9." in text  # cobmini's COBOL answer

    saved = json.loads(semble_bench.write_json(list(runs.values()), tmp_path / "r.json").read_text())
    assert saved["pymini"]["queries"][0]["top"][0] == "config.py:12-16 parse_config"
    semble_bench.write_json([cob], tmp_path / "r.json")  # a later run of one repository keeps the others
    assert set(json.loads((tmp_path / "r.json").read_text())) == {"cobmini", "jsmini", "pymini"}


def test_coverage_of_span_and_file_targets(data_dir: Path, tmp_path: Path) -> None:
    repos = load_repos(data_dir)
    results = {r.repo: r for r in semble_coverage.run(repos, tmp_path / "cache")}
    py = results["pymini"]
    spans = {s.target: (s.overlap, s.strict) for s in py.spans}
    assert spans == {
        "src/pymini/shapes.py:34-35": (True, True),  # Rectangle.surface
        "config.py:19-21": (True, True),  # write_config, named from the indexed folder
        "src/pymini/shapes.py:6-6": (True, False),  # only class Shape (18 lines > 4 * 1 + 10) holds it
        "src/pymini/shapes.py:26-28": (True, True),  # class Rectangle, 10 lines <= 4 * 3 + 10
        "src/pymini/config.py:5-9": (False, False),  # the DEFAULTS dict, outside every definition
    }
    assert next(s.best for s in py.spans if s.target.endswith(":6-6")) == "Shape 6-23"
    assert (py.file_targets, py.file_targets_parsed, py.file_targets_with_function) == (3, 3, 1)
    js = results["jsmini"]
    assert [(s.overlap, s.strict) for s in js.spans] == [(True, True)]
    assert (js.file_targets, js.file_targets_parsed, js.file_targets_with_function) == (2, 2, 1)
    assert py.files_without_function == ["src/pymini/colours.py"] and js.files_without_function == ["lib/index.js"]
    cob = results["cobmini"]
    assert cob.parsed_files == 1 and not cob.targets_parsed and cob.unparsed_files == ["payroll.cob"]
    assert py.targets_parsed and js.targets_parsed
    assert py.overlap_share == pytest.approx(4 / 5) and py.strict_share == pytest.approx(3 / 5)

    text = semble_report.coverage_markdown(list(results.values()), "prism-code bench coverage")
    assert "| python | 5 | 0.800 (4/5) | 0.600 (3/5) | 3 | 1.000 (3/3) | 0.333 (1/3) |" in text
    assert "| cobol (not parsed) | 0 | — | — | 1 | 0.000 (0/1) | 0.000 (0/1) |" in text
    assert "pymini `src/pymini/config.py:5-9` (shape base class and rectangle attributes): no overlap" in text
    assert "* jsmini `lib/index.js`" in text  # parsed, but nothing find can return
    saved = json.loads(semble_coverage.write_json(list(results.values()), tmp_path / "c.json").read_text())
    assert saved["pymini"]["uncovered"] == ["src/pymini/config.py:5-9 (shape base class and rectangle attributes)"]


def test_a_folder_without_parsable_files_is_not_indexed(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "payroll.cob").write_text("       PROGRAM-ID. PAYROLL.\n")
    assert not semble_coverage.is_parsable(tmp_path)
    (tmp_path / "src" / "build.js").write_text("function build() {}\n")
    assert semble_coverage.is_parsable(tmp_path)


def test_one_per_file_keeps_each_file_s_first_result() -> None:
    ranking = [("a.py", 1, 5), ("a.py", 9, 12), ("b.py", 1, 2), ("a.py", 20, 30), ("c.py", 3, 4)]
    assert semble_bench.one_per_file(ranking) == [("a.py", 1, 5), ("b.py", 1, 2), ("c.py", 3, 4)]
    # b.py at rank 3 of find's list is at rank 2 once a.py's repeat is dropped.
    assert ndcg_at_10(semble_bench.one_per_file(ranking), [Target("b.py")]) == pytest.approx(RANK2)


def test_cli_runs_a_selection_into_its_own_section(data_dir: Path, tmp_path: Path, capsys) -> None:
    import argparse

    from prism_bench.cli import add_arguments
    from prism_bench.semble_cli import chart_name, run_semble

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["semble", "--repos", "jsmini,pymini", "--split", "tune", "--no-embeddings",
                              "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache")])
    body, section = run_semble(args, "prism-code bench semble ...")
    assert section == "semble-lexical-tune-2repos" and chart_name(args) == "semble-ndcg-lexical-tune"
    # Name order within each language: cobmini, jsmini and pymini are each their language's first.
    assert "| jsmini | javascript | tune | 3 |" in body and "| pymini | python | tune | 5 |" in body
    assert "cobmini" not in body
    assert (tmp_path / "cache" / "results" / "semble-lexical.json").is_file()
    args = parser.parse_args(["coverage", "--lang", "python", "--data-dir", str(data_dir),
                              "--cache-dir", str(tmp_path / "cache")])
    body, section = run_semble(args, "prism-code bench coverage --lang python")
    assert section == "semble-coverage-python" and "| pymini | 5 | 0.800 (4/5) |" in body
    assert "[coverage 1/1] pymini (python)" in capsys.readouterr().err
