"""Find's lexical index saved beside the index database (tasks/corpus_files.py): a second
process answers from it with the ranking a fresh build gives, and never from a stale copy."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_runner import copy_fixture, run

from prism_code.config import IndexConfig
from prism_code.index import RepoIndex
from prism_code.tasks.corpus_files import corpus_dir, save_corpus, saved_search
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_request import FindRequest

QUERIES = ["add an item to the cart", "compute the area of a shape", "parse the configuration file",
           "total price of the order with tax"]
SAVED = "answering from the saved lexical index"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return copy_fixture("multilang", tmp_path)


def find(repo: Path, cache: Path, query: str) -> tuple[list[dict], bool]:
    """The CLI's results, and whether it answered from the saved lexical index."""
    out = run("-v", "find", str(repo), query, "--json", cache=cache)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), SAVED in out.stderr


def test_second_process_answers_from_the_saved_index_with_the_same_ranking(repo, tmp_path):
    cache = tmp_path / "cache"
    run("index", str(repo), "--no-embeddings", cache=cache)
    lexical = next(cache.rglob("index.sqlite")).parent / "lexical"
    _, from_saved = find(repo, cache, QUERIES[0])
    assert from_saved  # `index` saved it: the first find does not build it either
    for query in QUERIES:
        shutil.rmtree(lexical, ignore_errors=True)
        built, from_saved = find(repo, cache, query)
        assert built and not from_saved  # built from the index, then saved
        again, from_saved = find(repo, cache, query)
        assert from_saved
        assert again == built  # names, lines, kinds, reasons and every score


def test_an_edit_is_never_answered_from_the_stale_copy(repo, tmp_path):
    cache = tmp_path / "cache"
    run("index", str(repo), "--no-embeddings", cache=cache)
    find(repo, cache, "add sales tax to an amount")
    _, from_saved = find(repo, cache, "add sales tax to an amount")
    assert from_saved

    (repo / "pkg" / "tax.py").write_text(
        "def apply_sales_tax(amount, rate):\n    \"\"\"Add sales tax to an amount.\"\"\"\n"
        "    return amount * (1 + rate)\n")
    results, from_saved = find(repo, cache, "add sales tax to an amount")
    assert not from_saved
    assert results[0]["qualname"] == "apply_sales_tax"
    # The find that updated the index saved the new state; the next one reads it.
    again, from_saved = find(repo, cache, "add sales tax to an amount")
    assert from_saved and again == results
    saved = list((next(cache.rglob("index.sqlite")).parent / "lexical").iterdir())
    assert len(saved) == 1  # the copy of the earlier state is gone

    (repo / "pkg" / "tax.py").unlink()
    results, from_saved = find(repo, cache, "add sales tax to an amount")
    assert not from_saved
    assert "apply_sales_tax" not in [r["qualname"] for r in results]


def test_saved_scores_equal_a_fresh_build_on_every_function(repo, tmp_path):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    try:
        index.update()
        fresh = FunctionSearch(index)
        assert save_corpus(index, fresh.corpus) == corpus_dir(index.store.path, index.store_token)
        with saved_search(repo, IndexConfig(), tmp_path / "cache", FindRequest(QUERIES[0]), None) as saved:
            assert saved is not None
            for query in QUERIES:
                expected, got = fresh.component_scores(query), saved.component_scores(query)
                assert set(got) == set(expected) == {"bm25", "bm25_name"}
                for name in expected:
                    np.testing.assert_array_equal(got[name], expected[name])
                assert saved.search(query) == fresh.search(query)
    finally:
        index.close()


def test_fragrel_and_model_strategies_take_the_ordinary_path(repo, tmp_path):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    try:
        index.update()
        save_corpus(index, FunctionSearch(index).corpus)
    finally:
        index.close()
    for request in (FindRequest(QUERIES[0], alpha=0.3), FindRequest(QUERIES[0], "prism"),
                    FindRequest(QUERIES[0], expansion="def apply_tax(amount): ...")):
        with saved_search(repo, IndexConfig(), tmp_path / "cache", request, None) as saved:
            assert saved is None


def test_a_damaged_copy_is_rebuilt_not_read(repo, tmp_path):
    cache = tmp_path / "cache"
    run("index", str(repo), "--no-embeddings", cache=cache)
    expected, _ = find(repo, cache, QUERIES[0])
    manifest = next(cache.rglob("manifest.json"))
    manifest.write_text("{not json")
    results, from_saved = find(repo, cache, QUERIES[0])
    assert not from_saved and results == expected
    results, from_saved = find(repo, cache, QUERIES[0])
    assert from_saved and results == expected


@pytest.mark.parametrize("part", ["rows.names.txt", "keys.card.txt", "lexical.vocab.txt"])
def test_saved_rows_that_do_not_fit_are_rebuilt_not_read(repo, tmp_path, part):
    """A row file cut short (a killed copy, a full disk) no longer agrees with the others."""
    cache = tmp_path / "cache"
    run("index", str(repo), "--no-embeddings", cache=cache)
    expected, _ = find(repo, cache, QUERIES[1])
    damaged = next(cache.rglob(part))
    damaged.write_text(damaged.read_text()[: damaged.stat().st_size // 2])
    results, from_saved = find(repo, cache, QUERIES[1])
    assert not from_saved and results == expected
    results, from_saved = find(repo, cache, QUERIES[1])
    assert from_saved and results == expected


def test_a_touched_or_resized_file_makes_the_copy_not_current(repo, tmp_path):
    """Freshness is proven by each file's stored size and mtime: a file whose stat moved is
    read before the copy is trusted again, even when its text did not change."""
    cache = tmp_path / "cache"
    run("index", str(repo), "--no-embeddings", cache=cache)
    _, from_saved = find(repo, cache, QUERIES[0])
    assert from_saved
    source = next(p for p in sorted(repo.rglob("*.py")))
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # same text, later mtime
    _, from_saved = find(repo, cache, QUERIES[0])
    assert not from_saved
    _, from_saved = find(repo, cache, QUERIES[0])
    assert from_saved  # the ordinary path recorded the new stat
    source.write_text(source.read_text() + "\n")  # one byte longer
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # the mtime it had
    _, from_saved = find(repo, cache, QUERIES[0])
    assert not from_saved


def test_a_copy_saved_by_another_corpus_version_is_rebuilt_not_read(repo, tmp_path):
    """A copy saved before find's units changed (types became find units) lacks rows a
    fresh build has: it must never be read for the same index state."""
    cache = tmp_path / "cache"
    run("index", str(repo), "--no-embeddings", cache=cache)
    expected, from_saved = find(repo, cache, QUERIES[0])
    assert from_saved
    manifest_file = next(cache.rglob("manifest.json"))
    manifest = json.loads(manifest_file.read_text())
    manifest["corpus_version"] -= 1
    manifest_file.write_text(json.dumps(manifest))
    results, from_saved = find(repo, cache, QUERIES[0])
    assert not from_saved and results == expected
    results, from_saved = find(repo, cache, QUERIES[0])
    assert from_saved and results == expected


def test_vectors_are_saved_once_complete_and_memory_mapped_with_the_same_ranking(repo, tmp_path):
    cache = tmp_path / "cache"
    run("index", str(repo), cache=cache)  # embeddings too
    lexical = next(cache.rglob("index.sqlite")).parent / "lexical"
    query = QUERIES[1]
    first, from_saved = find(repo, cache, query)
    assert from_saved and "dense_code" in first[0]["scores"]
    saved = sorted(p.name.split(".")[1] for p in lexical.rglob("vectors.*.npy"))
    assert saved == ["card", "code"]  # the first find read them from the store and saved them

    mapped, from_saved = find(repo, cache, query)
    assert from_saved and mapped == first  # every score, dense ones included
    shutil.rmtree(lexical)
    built, from_saved = find(repo, cache, query)  # the ordinary path: index loaded, vectors from SQLite
    assert not from_saved and built == mapped


def test_saved_vectors_that_do_not_fit_are_read_from_the_store_instead(repo, tmp_path):
    cache = tmp_path / "cache"
    run("index", str(repo), cache=cache)
    expected, _ = find(repo, cache, QUERIES[2])
    code = next(cache.rglob("vectors.code.*.npy"))
    np.save(code, np.zeros((3, 4), dtype=np.float32))  # another shape: a copy of something else
    results, from_saved = find(repo, cache, QUERIES[2])
    assert from_saved and results == expected
    assert np.load(next(cache.rglob("vectors.code.*.npy"))).shape[0] == json.loads(
        next(cache.rglob("manifest.json")).read_text())["n_rows"]  # saved anew


def test_a_find_from_the_copy_loads_no_index_graph_or_scipy(repo, tmp_path):
    """What makes a cold CLI find slow on a large repository is start-up: a find answered
    from the copy must not import what only building an index needs."""
    cache = tmp_path / "cache"
    run("index", str(repo), "--no-embeddings", cache=cache)
    script = ("import runpy, sys\n"
              f"sys.argv = ['prism-code', '-v', 'find', {str(repo)!r}, {QUERIES[0]!r}, '--json']\n"
              "try:\n    runpy.run_module('prism_code.cli', run_name='__main__')\n"
              "except SystemExit:\n    pass\n"
              "heavy = ['scipy.sparse', 'prism_code.graph', 'prism_code.index', 'prism_code.parse.extract']\n"
              "print('LOADED', [m for m in heavy if m in sys.modules], file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PRISM_CODE_CACHE_DIR": str(cache)})
    assert out.returncode == 0, out.stderr
    assert SAVED in out.stderr and json.loads(out.stdout)
    assert "LOADED []" in out.stderr
