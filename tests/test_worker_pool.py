"""Large-index stages on several processes: parsing and the relation pass give exactly what
one process gives, a cancel stops them, and a pool that cannot start is finished here."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_index import snapshot

from prism_code import parse_pool, relation_pool, worker_pool
from prism_code.cancel import Cancelled
from prism_code.index import RepoIndex
from prism_code.worker_pool import ordered_map

FIXTURE = Path(__file__).parent / "fixtures" / "multilang"


def _index_snapshot(root: Path, cache: Path) -> dict:
    index = RepoIndex(root, cache_dir=cache)
    index.update()
    try:
        return snapshot(index)
    finally:
        index.close()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    return root


def _on_two_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stage that can use workers does, on two, with many small relation groups."""
    monkeypatch.setattr(worker_pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(parse_pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(relation_pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(parse_pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(relation_pool, "PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(relation_pool, "GROUP_ROWS", 8)


def test_an_index_built_on_two_workers_equals_one_built_in_one_process(repo, tmp_path, monkeypatch):
    alone = _index_snapshot(repo, tmp_path / "alone")
    _on_two_workers(monkeypatch)
    shared = _index_snapshot(repo, tmp_path / "shared")
    assert len(shared["fragments"]) > 20 and shared["related"]
    assert shared == alone


def test_cancelling_a_parallel_parse_leaves_the_index_unchanged(repo, tmp_path, monkeypatch):
    _on_two_workers(monkeypatch)
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    seen: list[str] = []

    def cancel_after_the_first_files(stage: str, done: int, total: int) -> None:
        seen.append(stage)

    with pytest.raises(Cancelled):
        index.update(progress=cancel_after_the_first_files, cancelled=lambda: "parse" in seen and len(seen) > 3)
    assert index.functions() == []
    index.close()
    assert _index_snapshot(repo, tmp_path / "cache") == _index_snapshot(repo, tmp_path / "fresh")


def _fails_in_a_worker(parent: int) -> None:
    if os.getpid() != parent:
        raise RuntimeError("this worker cannot start")


def _square(n: int) -> int:
    return n * n


def test_a_pool_whose_workers_cannot_start_is_finished_in_this_process():
    items = list(range(12))
    results = list(ordered_map(_square, items, 2, initializer=_fails_in_a_worker, initargs=(os.getpid(),)))
    assert results == [n * n for n in items]


def test_relation_groups_keep_each_file_whole(repo, tmp_path, monkeypatch):
    monkeypatch.setattr(relation_pool, "GROUP_ROWS", 8)
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    functions = sorted(index.functions(), key=lambda f: f.key)
    groups = relation_pool.file_groups([functions], [list(range(len(functions)))])
    index.close()
    assert len(groups) > 1
    paths = [{functions[i].path for _, rows in group for i in rows} for group in groups]
    assert all(a.isdisjoint(b) for n, a in enumerate(paths) for b in paths[n + 1:])
    assert sorted(i for group in groups for _, rows in group for i in rows) == list(range(len(functions)))
