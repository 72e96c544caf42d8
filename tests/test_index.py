"""The persistent index: incremental updates equal a rebuild, kills leave it consistent."""

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from prism_code.index import RepoIndex
from prism_code.workspace import WorkspaceError

FIXTURE = Path(__file__).parent / "fixtures" / "pyrepo"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    return root


def snapshot(index: RepoIndex) -> dict:
    """Everything retrieval depends on, in a comparable form."""
    return {
        "fragments": sorted((f.key, f.start_line, f.end_line, f.nodes) for f in index.fragments.values()),
        "related": {k: [(o, round(w, 5)) for o, w in v] for k, v in sorted(index.related.items())},
        "edges": sorted((u, v, round(w, 5)) if u < v else (v, u, round(w, 5))
                        for u, v, w in ((e.u, e.v, e.weight) for e in index.graph.edges())),
        "lines": dict(index.lines),
    }


def fresh_snapshot(root: Path, cache: Path) -> dict:
    index = RepoIndex(root, cache_dir=cache)
    index.update()
    snap = snapshot(index)
    index.close()
    return snap


def bump_mtime(path: Path) -> None:
    # Some filesystems keep a coarse mtime; make sure the change is visible to the stat check.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_full_index_finds_definitions_and_persists(repo, tmp_path):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    summary = index.update()
    assert summary.files == 3 and summary.added == 3
    assert summary.functions == 5
    assert {f.qualname for f in index.functions()} == {
        "caller", "Greeter.greet", "Greeter.format", "helper", "unrelated"}
    index.close()
    reopened = RepoIndex(repo, cache_dir=tmp_path / "cache")
    assert reopened.update().added == 0
    assert snapshot(reopened) == fresh_snapshot(repo, tmp_path / "other")
    reopened.close()


@pytest.mark.parametrize("change", ["edit", "delete", "rename", "add"])
def test_incremental_update_equals_rebuild(repo, tmp_path, change):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    b = repo / "pkg" / "b.py"
    if change == "edit":
        b.write_text(b.read_text().replace("def helper(v):", "def twice(v):"))
        bump_mtime(b)
    elif change == "delete":
        b.unlink()
    elif change == "rename":
        b.rename(repo / "pkg" / "c.py")
        (repo / "pkg" / "a.py").write_text((repo / "pkg" / "a.py").read_text().replace("pkg.b", "pkg.c"))
        bump_mtime(repo / "pkg" / "a.py")
    else:
        (repo / "pkg" / "d.py").write_text("from pkg.a import caller\n\n\ndef use():\n    return caller(2)\n")
    summary = index.update()
    assert summary.added + summary.changed + summary.removed >= 1
    assert snapshot(index) == fresh_snapshot(repo, tmp_path / f"fresh-{change}")
    keys = set(index.fragments)
    if change == "edit":
        assert "pkg/b.py#twice" in keys and "pkg/b.py#helper" not in keys
    elif change == "delete":
        assert not any(k.startswith("pkg/b.py") for k in keys)
    elif change == "rename":
        assert "pkg/c.py#helper" in keys
        assert ("pkg/c.py#helper", 0.8) in index.related["pkg/a.py#caller"]
    else:
        assert ("pkg/a.py#caller", 0.8) in index.related["pkg/d.py#use"]
    index.close()


def test_bad_inputs_are_skipped_not_fatal(repo, tmp_path):
    (repo / "blob.py").write_bytes(b"\x00\x01binary\x00" * 100)
    (repo / "latin.py").write_bytes(b"def caf\xe9():\n    return 'd\xe9j\xe0'\n\n\ndef ok():\n    return 1\n")
    (repo / "broken.py").write_text("def fine(a):\n    return a\n\ndef broken(:\n    pass\n")
    (repo / "huge.py").write_text("x = 1\n" * 300_000)
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    summary = index.update()
    reasons = dict(summary.skipped_reasons)
    assert reasons["blob.py"] == "binary"
    assert reasons["huge.py"].startswith("too large")
    names = {f.qualname for f in index.functions()}
    assert {"ok", "fine"} <= names  # invalid UTF-8 and syntax errors still yield what parses
    assert summary.parse_errors >= 1
    index.close()


def test_empty_repo_and_non_directory(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    index = RepoIndex(empty, cache_dir=tmp_path / "cache")
    assert index.update().files == 0
    index.close()
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(WorkspaceError, match="not a directory"):
        RepoIndex(tmp_path / "file.txt", cache_dir=tmp_path / "cache")
    with pytest.raises(WorkspaceError, match="does not exist"):
        RepoIndex(tmp_path / "missing", cache_dir=tmp_path / "cache")


def test_kill_during_indexing_leaves_a_consistent_index(tmp_path):
    """SIGKILL the indexer at several moments; every reopen must be a valid index."""
    root = tmp_path / "big"
    for package in range(12):
        pkg = root / f"pkg{package}"
        pkg.mkdir(parents=True)
        for module in range(12):
            body = "\n\n".join(
                f"def fn_{module}_{i}(x):\n    return fn_{module}_{(i + 1) % 30}(x) + {i}" for i in range(30))
            (pkg / f"mod{module}.py").write_text(f"from pkg{(package + 1) % 12}.mod{module} import fn_{module}_0\n\n{body}\n")
    cache = tmp_path / "cache"
    script = textwrap.dedent(f"""
        from prism_code.index import RepoIndex
        index = RepoIndex({str(root)!r}, cache_dir=__import__('pathlib').Path({str(cache)!r}))
        print("opened", flush=True)
        index.update()
        print("done", flush=True)
    """)
    for delay in (0.0, 0.2, 0.5, 1.0):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"opened\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        db = next(cache.rglob("index.sqlite"))
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            files = {p for (p,) in conn.execute("SELECT path FROM files")}
            fragment_files = {p for (p,) in conn.execute("SELECT DISTINCT path FROM fragments")}
            assert fragment_files <= files  # never fragments of a file the index does not hold
        # Touch a file so the next run has something to do on top of a partial state.
        target = root / "pkg0" / "mod0.py"
        target.write_text(target.read_text() + f"\n\ndef late_{int(delay * 10)}():\n    return 0\n")
    index = RepoIndex(root, cache_dir=cache)
    index.update()
    assert snapshot(index) == fresh_snapshot(root, tmp_path / "fresh")
    index.close()
