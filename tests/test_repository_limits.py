"""Bad input at repository scale: the limits a user can change, each a logged skip."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from prism_code.cli import _index_config, build_parser
from prism_code.config import IndexConfig
from prism_code.index import RepoIndex
from prism_code.workspace import diff_scan, scan


def _module(n: int, functions: int = 1) -> str:
    return "".join(f"def f{n}_{k}(value):\n    return value + {k}\n\n\n" for k in range(functions))


def _repo(root: Path, files: int, functions: int = 1) -> Path:
    root.mkdir()
    for n in range(files):
        (root / f"m{n:03d}.py").write_text(_module(n, functions))
    return root


def _index(root: Path, cache: Path, **limits: int) -> tuple[RepoIndex, list[tuple[str, str]]]:
    index = RepoIndex(root, IndexConfig(trusted=False, **limits), cache_dir=cache)
    summary = index.update()
    return index, summary.skipped_reasons


def test_a_file_over_the_size_limit_is_skipped_with_its_reason(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", 2)
    (repo / "generated.py").write_text(_module(99, functions=200))  # ~10 KB
    index, skipped = _index(repo, tmp_path / "cache", max_file_bytes=4096)
    assert sorted(index.lines) == ["m000.py", "m001.py"]
    assert [(p, r.split(" (")[0]) for p, r in skipped] == [("generated.py", "too large")]
    index.close()
    raised, skipped = _index(repo, tmp_path / "cache", max_file_bytes=1 << 20)
    assert "generated.py" in raised.lines and not skipped
    raised.close()


def test_files_past_the_file_limit_are_skipped_in_path_order_and_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = _repo(tmp_path / "repo", 30)
    with caplog.at_level(logging.INFO, logger="prism_code"):
        index, skipped = _index(repo, tmp_path / "cache", max_files=10)
    assert sorted(index.lines) == [f"m{n:03d}.py" for n in range(10)]
    assert len(skipped) == 20 and skipped[0] == ("m010.py", "over the repository's limit of 10 files")
    assert any("over the repository's limit of 10 files: 20" in r.getMessage() for r in caplog.records)
    index.close()


def test_files_past_the_line_limit_are_skipped_and_a_raised_limit_indexes_them(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = _repo(tmp_path / "repo", 6, functions=25)  # 101 lines each
    with caplog.at_level(logging.INFO, logger="prism_code"):
        index, skipped = _index(repo, tmp_path / "cache", max_lines=350)
    assert sorted(index.lines) == ["m000.py", "m001.py", "m002.py"]
    assert sum(len(v) for v in index.lines.values()) <= 350
    assert [p for p, _ in skipped] == ["m003.py", "m004.py", "m005.py"]
    assert all(r == "over the repository's limit of 350 lines" for _, r in skipped)
    assert any("3 files not indexed" in r.getMessage() for r in caplog.records)
    index.close()
    raised, skipped = _index(repo, tmp_path / "cache", max_lines=10_000)
    assert len(raised.lines) == 6 and not skipped
    assert len(raised.functions()) == 6 * 25
    raised.close()


def test_a_file_that_grows_after_the_scan_is_read_once_up_to_the_scanned_size(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", 1)
    log_file = repo / "growing.py"
    log_file.write_text("def first():\n    return 1\n")
    listed = scan(repo, trusted=False).files
    scanned_size = next(f.size for f in listed if f.path == "growing.py")
    with log_file.open("a") as grow:  # a writer keeps appending between the scan and the read
        grow.write("x = 1\n" * 50_000)
    diff = diff_scan({}, listed, repo)
    grown = next(item for item in diff.added if item.path == "growing.py")
    assert len(grown.data) == scanned_size
    assert grown.data == b"def first():\n    return 1\n"
    # The next scan sees the new size and mtime, so the grown file is read again then.
    rescanned = scan(repo, trusted=False).files
    again = diff_scan({p.path: i.state for p, i in ((g.file, g) for g in diff.added)}, rescanned, repo)
    assert [item.path for item in again.changed] == ["growing.py"]


def test_the_command_line_passes_each_limit_to_the_index() -> None:
    args = build_parser().parse_args(["index", "/tmp", "--max-file-bytes", "2048", "--max-files", "7",
                                      "--max-lines", "900"])
    config = _index_config(args)
    assert (config.max_file_bytes, config.max_files, config.max_lines) == (2048, 7, 900)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["index", "/tmp", "--max-files", "0"])


def test_the_editor_settings_carry_each_limit_and_refuse_a_bad_one() -> None:
    from prism_code.lsp.settings import parse_settings

    settings = parse_settings({"index": {"maxFileBytes": 2048, "maxFiles": 7, "maxLines": 900}})
    assert (settings.max_file_bytes, settings.max_files, settings.max_lines) == (2048, 7, 900)
    assert not settings.warnings
    refused = parse_settings({"index": {"maxFiles": 0}})
    assert refused.max_files == IndexConfig().max_files
    assert any("prism.index.maxFiles" in w for w in refused.warnings)
