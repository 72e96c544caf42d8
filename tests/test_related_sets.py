"""The index's related sets as kept in memory (related_sets.py): what a real index computes,
stores and reads back is the same set of pairs, and an update's copy never changes the sets
readers still hold."""

from __future__ import annotations

import shutil
from pathlib import Path

from prism_code.index import RepoIndex
from prism_code.related_sets import RelatedSets

FIXTURE = Path(__file__).parent / "fixtures" / "multilang"


def test_sets_read_back_from_the_store_equal_the_computed_ones(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    built = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        built.update()
        computed = {key: built.related[key] for key in built.related}
    finally:
        built.close()
    reopened = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        assert isinstance(reopened.related, RelatedSets)
        assert {key: reopened.related[key] for key in reopened.related} == computed
        assert any(computed.values())
        # The members view lists the same keys, in the same order, without the weights.
        assert {key: list(keys) for key, keys in reopened.related.members()} == \
            {key: [k for k, _ in pairs] for key, pairs in computed.items()}
    finally:
        reopened.close()


def test_a_copy_changes_alone() -> None:
    published = RelatedSets({"a.py::f": [("a.py::g", 0.5), ("b.py::h", 0.25)], "a.py::g": []})
    update = published.copy()
    update["a.py::f"] = [("b.py::h", 0.75)]
    del update["a.py::g"]
    assert published["a.py::f"] == [("a.py::g", 0.5), ("b.py::h", 0.25)]
    assert "a.py::g" in published and published.get("a.py::g") == []
    assert update == {"a.py::f": [("b.py::h", 0.75)]}
