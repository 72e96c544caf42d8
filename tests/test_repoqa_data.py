from __future__ import annotations

import time
from pathlib import Path

import pytest

from prism_bench.corpora import MARKER_SUFFIX, DownloadError
from prism_bench.repoqa_data import (
    DEFAULT_DATA_DIR,
    check_needles,
    haystack_files,
    load_needles,
    materialise,
    recall_metrics,
)

# Per benchmarks/README.md: 8 of the 10 repositories have a PyPI substitute, 10 needles each.
EXPECTED = {
    "ethereum/web3.py": ("web3", "7.0.0b1"),
    "locustio/locust": ("locust", "2.24.1"),
    "marshmallow-code/marshmallow": ("marshmallow", "3.21.1"),
    "openai/openai-python": ("openai", "1.13.3"),
    "psf/black": ("black", "24.3.0"),
    "pyg-team/pytorch_geometric": ("torch-geometric", "2.5.1"),
    "python-poetry/poetry": ("poetry", "1.8.2"),
    "reactive-python/reactpy": ("reactpy", "1.1.0"),
}


def test_project_copy_of_needles() -> None:
    specs = load_needles(DEFAULT_DATA_DIR)
    assert {s.repo: (s.package, s.version) for s in specs} == EXPECTED
    assert all(len(s.needles) == 10 for s in specs)
    assert sum(len(s.needles) for s in specs) == 80
    ids = [n.instance_id for s in specs for n in s.needles]
    assert len(set(ids)) == 80
    assert all(s.artifact.endswith("-py3-none-any.whl") for s in specs)


def test_needle_lines_are_one_based_inclusive() -> None:
    black = next(s for s in load_needles(DEFAULT_DATA_DIR) if s.repo == "psf/black")
    # The data stores RepoQA's 0-based exclusive span 585..639 for this needle.
    needle = next(n for n in black.needles if n.name == "_merge_string_group")
    assert (needle.path, needle.start_line, needle.end_line) == ("black/trans.py", 586, 639)
    # src/black -> black, kept as a plain prefix so blackd/ stays in the haystack.
    assert black.prefix == "black"
    assert black.expected_files == 28


def test_recall_metrics_hand_computed() -> None:
    ranks: list[int | None] = [1, 3, None, 12, 60, 2, None, 10]
    m = recall_metrics(ranks)
    assert m["recall@1"] == pytest.approx(1 / 8)
    assert m["recall@10"] == pytest.approx(4 / 8)  # ranks 1, 3, 2, 10
    assert m["recall@50"] == pytest.approx(5 / 8)  # plus 12
    assert m["mrr@10"] == pytest.approx((1 + 1 / 3 + 1 / 2 + 1 / 10) / 8)  # = 29/120
    assert recall_metrics([2], ks=(1, 2)) == {"recall@1": 0.0, "recall@2": 1.0, "mrr@10": 0.5}
    with pytest.raises(ValueError):
        recall_metrics([])
    with pytest.raises(ValueError):
        recall_metrics([0])


def test_check_needles_reports_mismatch(tmp_path: Path) -> None:
    spec = next(s for s in load_needles(DEFAULT_DATA_DIR) if s.package == "marshmallow")
    needle = spec.needles[0]
    target = tmp_path / needle.path
    target.parent.mkdir(parents=True)
    target.write_text("\n" * (needle.start_line - 1) + f"def {needle.name}_other(x):\n" + "    pass\n" * 200)
    problems = check_needles(tmp_path, [needle])
    assert len(problems) == 1 and needle.instance_id in problems[0]
    target.write_text("\n" * (needle.start_line - 1) + f"    async def {needle.name}(x):\n" + "    pass\n" * 200)
    assert check_needles(tmp_path, [needle]) == []


def test_materialise_marshmallow(tmp_path: Path) -> None:
    spec = next(s for s in load_needles(DEFAULT_DATA_DIR) if s.package == "marshmallow")
    try:
        root = materialise(spec, tmp_path)
    except DownloadError as exc:
        if exc.network:
            pytest.skip(f"PyPI unreachable, cannot download {spec.artifact}: {exc}")
        raise
    assert root == tmp_path / "marshmallow-3.21.1"
    assert (tmp_path / f"marshmallow-3.21.1{MARKER_SUFFIX}").is_file()
    files = haystack_files(root)
    assert len(files) == 13
    assert all(f.relative_to(root).parts[0] == "marshmallow" for f in files)
    assert [p for p in root.rglob("*") if p.is_file() and p.suffix != ".py"] == []
    assert check_needles(root, spec.needles) == []
    # Idempotent: the marker short-circuits, no second pip run.
    start = time.monotonic()
    assert materialise(spec, tmp_path) == root
    assert time.monotonic() - start < 0.5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["marshmallow-3.21.1", f"marshmallow-3.21.1{MARKER_SUFFIX}"]


def _tarball(path: Path, members: dict[str, bytes], link: tuple[str, str] | None = None) -> Path:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo(link[0])
            info.type = tarfile.SYMTYPE
            info.linkname = link[1]
            tar.addfile(info)
    return path


def test_multi_haystack_extracted_once_with_one_based_needles(tmp_path: Path) -> None:
    import json

    from prism_bench.repoqa_data import load_multi_haystacks

    data = tmp_path / "data" / "java"
    data.mkdir(parents=True)
    _tarball(data / "o__r.tar.gz", {"src/A.java": b"class A {\n  void f() {}\n}\n"})
    needle = {"instance_id": "x-0", "name": "f", "path": "src/A.java", "start_line": 1, "end_line": 2,
              "lines_1based_inclusive": [2, 2], "description": "d"}
    (data / "o__r.json").write_text(json.dumps({"repo": "o/r", "commit": "abc", "needles": [needle]}))
    [haystack] = load_multi_haystacks("java", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    assert haystack.language == "java"
    assert (haystack.root / "src" / "A.java").is_file()
    assert (haystack.needles[0].start_line, haystack.needles[0].end_line) == (2, 2)
    assert haystack.root.with_name(haystack.root.name + MARKER_SUFFIX).is_file()


def test_multi_haystack_refuses_paths_leaving_the_tree(tmp_path: Path) -> None:
    import tarfile

    from prism_bench.repoqa_data import extract_haystack

    archive = _tarball(tmp_path / "bad.tar.gz", {"../evil.c": b"x"})
    with pytest.raises(tarfile.FilterError):
        extract_haystack(archive, tmp_path / "cache" / "bad")
    assert not (tmp_path / "cache" / "evil.c").exists()
    assert not (tmp_path / "cache" / "bad").exists()
    # An absolute member loses its leading slash and stays inside.
    root = extract_haystack(_tarball(tmp_path / "abs.tar.gz", {"/abs/evil.c": b"x"}), tmp_path / "cache" / "abs")
    assert (root / "abs" / "evil.c").is_file()


def test_multi_haystack_refuses_links_leaving_the_tree(tmp_path: Path) -> None:
    import tarfile

    from prism_bench.repoqa_data import extract_haystack

    archive = _tarball(tmp_path / "bad.tar.gz", {"a.c": b"x"}, link=("l", "../../etc/passwd"))
    with pytest.raises(tarfile.FilterError):
        extract_haystack(archive, tmp_path / "cache" / "bad")


def test_target_row_by_start_line_then_overlap() -> None:
    from prism_bench.repoqa_data import Needle
    from prism_bench.repoqa_retrieval import target_row
    from prism_code.fragments import FUNCTION, Fragment

    fragments = [Fragment("a.cpp", FUNCTION, 1, 20, "outer"), Fragment("a.cpp", FUNCTION, 5, 9, "inner"),
                 Fragment("b.cpp", FUNCTION, 6, 8, "other")]
    needle = Needle("o/r", "Inner::run", "d", "a.cpp", 6, 8, "x")
    assert target_row(fragments, needle, overlap=True) == 1  # most overlap, tightest
    assert target_row(fragments, needle, overlap=False) is None
    assert target_row(fragments, Needle("o/r", "f", "d", "a.cpp", 5, 9, "x"), overlap=False) == 1
    assert target_row(fragments, Needle("o/r", "f", "d", "c.cpp", 5, 9, "x"), overlap=True) is None
