"""Editor buffers overlaid on the index: unsaved text is indexed, dropping it restores the disk."""

import shutil
from pathlib import Path

import pytest

from prism_code.index import OVERLAY_MTIME_NS, RepoIndex

FIXTURE = Path(__file__).parent / "fixtures" / "pyrepo"
NEW_FUNCTION = "\n\ndef tripled(v):\n    return v * 3\n"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    return root


def snapshot(index: RepoIndex) -> dict:
    return {
        "fragments": sorted((f.key, f.start_line, f.end_line, f.nodes) for f in index.fragments.values()),
        "related": {k: [(o, round(w, 5)) for o, w in v] for k, v in sorted(index.related.items())},
        "lines": dict(index.lines),
    }


def test_overlay_is_indexed_instead_of_the_disk(repo, tmp_path):
    b = repo / "pkg" / "b.py"
    disk = b.read_text()
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    index.set_overlay("pkg/b.py", disk + NEW_FUNCTION)
    summary = index.update()
    assert summary.changed == 1
    assert "tripled" in {f.qualname for f in index.functions()}
    assert b.read_text() == disk
    assert index.store.file_states()["pkg/b.py"].mtime_ns == OVERLAY_MTIME_NS
    # The same as indexing a disk that holds the buffer's text.
    other = tmp_path / "other"
    shutil.copytree(repo, other)
    (other / "pkg" / "b.py").write_text(disk + NEW_FUNCTION)
    rebuilt = RepoIndex(other, cache_dir=tmp_path / "cache2")
    rebuilt.update()
    assert snapshot(index) == snapshot(rebuilt)
    rebuilt.close()

    assert index.update().changed == 0  # an unchanged overlay is not parsed again
    index.set_overlay("pkg/b.py", None)
    assert index.update().changed == 1
    assert "tripled" not in {f.qualname for f in index.functions()}
    assert index.store.file_states()["pkg/b.py"].mtime_ns == b.stat().st_mtime_ns
    index.close()
    fresh = RepoIndex(repo, cache_dir=tmp_path / "cache3")
    fresh.update()
    reopened = RepoIndex(repo, cache_dir=tmp_path / "cache")
    assert snapshot(reopened) == snapshot(fresh)
    fresh.close()
    reopened.close()


def test_overlay_equal_to_the_disk_costs_no_parse(repo, tmp_path):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    index.set_overlay("pkg/a.py", (repo / "pkg" / "a.py").read_text())
    summary = index.update()
    assert (summary.added, summary.changed, summary.removed) == (0, 0, 0)
    assert index.store.file_states()["pkg/a.py"].mtime_ns == OVERLAY_MTIME_NS
    index.set_overlay("pkg/a.py", None)
    assert index.update().changed == 0  # re-read, same hash: only the stat is refreshed
    assert index.store.file_states()["pkg/a.py"].mtime_ns != OVERLAY_MTIME_NS
    index.close()


def test_overlay_only_applies_to_files_the_scan_lists(repo, tmp_path):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    index.set_overlay("pkg/unsaved.py", "def ghost():\n    return 0\n")  # not on disk
    index.set_overlay("README.md", "# not source")
    summary = index.update()
    assert (summary.added, summary.changed) == (0, 0)
    assert "ghost" not in {f.qualname for f in index.functions()}
    index.close()


def test_oversized_overlay_falls_back_to_the_disk(repo, tmp_path):
    from prism_code.config import IndexConfig

    index = RepoIndex(repo, IndexConfig(max_file_bytes=200), cache_dir=tmp_path / "cache")
    index.update()
    index.set_overlay("pkg/b.py", "def big():\n    return 1\n" + "# padding\n" * 100)
    assert index.update().changed == 0
    assert "big" not in {f.qualname for f in index.functions()}
    index.close()
