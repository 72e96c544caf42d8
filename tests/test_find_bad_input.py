"""Find survives bad input (#15): odd queries and odd repositories get a ranked list or a
clear message from `prism-code find` and from the server's prism.findFunction, never a
crash, a hang or a traceback; and both answer one query with one ranking.

Everything here is real: tree-sitter parses the files, the index is built in a temporary
cache, and the default path embeds with MiniLM. Subprocesses get PRISM_CODE_CACHE_DIR in
the temporary directory, so the user's cache is never touched.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_asyncio
from cli_runner import FIXTURES, run
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient
from test_server import command, start_server, stop_server

from prism_code.lsp.locations import uri_path

EMBEDDING_TIMEOUT_S = 180

# Queries that must rank: (id, description). Each is as a user might type or paste it.
PROSE_WORDS = ("compute the area of a shape given its width and height then add every item of the "
               "cart to a running total while skipping empty lines of the parsed file").split()
LONG_QUERY = " ".join(random.Random(15).choice(PROSE_WORDS) for _ in range(2000))
RANKED_QUERIES = [
    ("one-word", "area"),
    ("german", "die Fläche einer Form berechnen"),
    ("chinese", "计算形状的面积"),
    ("russian", "вычислить площадь фигуры"),
    ("punctuation", "?!...;;"),
    ("code", "for i in range(len(xs)): total += xs[i]"),
    ("two-thousand-words", LONG_QUERY),
    # What people type into a code search box that is not a sentence (issue #27).
    ("one-character", "a"),
    ("file-path", "pkg/core.py"),
    ("regular-expression", r"def\s+(area|total)_\w*\(.*\)$"),
    ("camel-case-only", "computeArea"),
    ("snake-case-only", "compute_area"),
    ("missing-symbol", "FrobnicateWidgetFactory"),
    ("missing-symbol-german", "die Klasse FrobnicateWidgetFactory"),
]
# Only through JSON: argv cannot hold a NUL, and a lone surrogate there is a byte that is not UTF-8.
JSON_ONLY_QUERIES = [
    ("nul-byte", "area of\x00 a shape"),
    ("lone-surrogate", "area \ud800 of a shape"),
    ("lone-low-surrogate", "\udcff compute the area"),
    ("only-a-lone-surrogate", "\ud800"),
]

VALID_NEXT_TO_GARBAGE = {
    "garbage/ok.py": 'def double_the_number(x):\n    """Double a number."""\n    return 2 * x\n',
    "garbage/ok.ts": "export function tripleTheValue(x: number): number {\n  return 3 * x;\n}\n",
    "garbage/src/ok.rs": "pub fn halve_the_value(x: i32) -> i32 {\n    x / 2\n}\n",
}


def garbage_files(root: Path) -> None:
    """Files with a parsed extension that no grammar can make sense of, next to valid ones:
    random bytes (NULs included), invalid UTF-8 without a NUL, and text that is not code."""
    rng = random.Random(15)
    for ext in ("py", "ts", "rs"):
        folder = root / "garbage" / ("src" if ext == "rs" else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"binary.{ext}").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
        (folder / f"latin.{ext}").write_bytes(bytes(rng.randrange(128, 256) for _ in range(4096)))
        (folder / f"nonsense.{ext}").write_text(
            "}}}{{{ fn def class impl (((( <<< >>> ;;; => :: \\\\ '''\n" * 50
            + "def fn function(((\n" * 500, encoding="utf-8")
    for path, text in VALID_NEXT_TO_GARBAGE.items():
        (root / path).write_text(text, encoding="utf-8")


def find_json(repo: Path, cache: Path, description: str | bytes, *more: str) -> list[dict]:
    """`prism-code find REPO DESCRIPTION --json`: checked to succeed cleanly, parsed."""
    out = run("find", str(repo), description, "--json", "--cache-dir", str(cache / "index"), *more,
              cache=cache / "default")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    results = json.loads(out.stdout)
    assert isinstance(results, list)
    return results


def assert_ranked(results: Sequence[dict], count: int) -> None:
    assert len(results) == count
    assert all(isinstance(r["qualname"], str) and r["qualname"] for r in results)
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """multilang with unparsable .py / .ts / .rs files next to valid ones."""
    root = tmp_path_factory.mktemp("bad-input") / "multilang"
    shutil.copytree(FIXTURES / "multilang", root)
    garbage_files(root)
    return root


@pytest.fixture(scope="module")
def indexed(tree: Path) -> tuple[Path, Path]:
    """(repository, cache) after `prism-code index` with embeddings: find's default path."""
    cache = tree.parent / "cli-cache"
    out = run("index", str(tree), "--json", "--cache-dir", str(cache / "index"), cache=cache / "default")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    # A code and a card text per unit; the three nonsense files (units of their own: they define
    # nothing) share one code text.
    assert summary["embedded"] == 2 * (summary["functions"] + summary["types"] + summary["file_units"]) - 2 > 0
    return tree, cache


# ---- the command line ----------------------------------------------------------------------


@pytest.mark.parametrize("description", [q for _, q in RANKED_QUERIES], ids=[i for i, _ in RANKED_QUERIES])
def test_cli_ranks_any_query(indexed: tuple[Path, Path], description: str):
    repo, cache = indexed
    started = time.monotonic()
    results = find_json(repo, cache, description, "--top", "5")
    print(f"cli find, {len(description.split())} word(s): {time.monotonic() - started:.2f} s")
    assert_ranked(results, 5)


def test_cli_text_output_of_an_odd_query_is_a_list(indexed: tuple[Path, Path]):
    repo, cache = indexed
    out = run("find", str(repo), "?!...;;", "--top", "3", "--cache-dir", str(cache / "index"), cache=cache / "default")
    assert out.returncode == 0, out.stderr
    assert [line.split(".", 1)[0].strip() for line in out.stdout.splitlines()[::2]] == ["1", "2", "3"]


def test_cli_query_with_bytes_that_are_not_utf8(indexed: tuple[Path, Path]):
    """Python reads them as lone surrogates, which the tokenizer cannot take."""
    repo, cache = indexed
    results = find_json(repo, cache, b"compute the \xff\xfe area of a shape", "--top", "3")
    assert_ranked(results, 3)
    assert "area" in results[0]["qualname"]


@pytest.mark.parametrize("description", ["", "   ", "\t\n"])
def test_cli_empty_query_is_a_one_line_usage_error(indexed: tuple[Path, Path], description: str):
    repo, cache = indexed
    out = run("find", str(repo), description, "--json", "--cache-dir", str(cache / "index"), cache=cache / "default")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.strip().splitlines() == ["prism-code: error: the description is empty"]


def test_cli_finds_valid_functions_next_to_unparsable_files(indexed: tuple[Path, Path]):
    repo, cache = indexed
    for description, qualname in [("double a number", "double_the_number"),
                                  ("triple the value", "tripleTheValue"),
                                  ("halve the value", "halve_the_value")]:
        assert find_json(repo, cache, description, "--top", "3")[0]["qualname"] == qualname


@pytest.mark.parametrize("layout", ["readme-and-data", "empty-directory"])
def test_cli_repository_without_functions(tmp_path: Path, layout: str):
    repo = tmp_path / "repo"
    repo.mkdir()
    if layout == "readme-and-data":
        (repo / "README.md").write_text("# Notes\n\nNothing to run here.\n")
        (repo / "data.csv").write_text("a,b\n1,2\n")
    assert find_json(repo, tmp_path, "compute the area") == []
    out = run("find", str(repo), "compute the area", "--cache-dir", str(tmp_path / "index"), cache=tmp_path / "default")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert "no functions" in out.stderr and "Traceback" not in out.stderr


def test_library_search_without_embeddings_takes_any_query(tree: Path, tmp_path: Path):
    """The lexical path alone (no embedder), as find answers before embeddings exist."""
    from prism_code.index import RepoIndex
    from prism_code.tasks.find_request import FindRequest
    from prism_code.tasks.find_strategies import run_find

    index = RepoIndex(tree, cache_dir=tmp_path / "index")
    try:
        index.update()
        from prism_code.tasks.find_function import FunctionSearch

        search = FunctionSearch(index)
        for _, description in RANKED_QUERIES + JSON_ONLY_QUERIES:
            assert_ranked([r.to_json() for r in run_find(FindRequest(description, top=4), search).results], 4)
        with pytest.raises(ValueError, match="the description is empty"):
            run_find(FindRequest(" \x00 "), search)
    finally:
        index.close()


# ---- the language server -------------------------------------------------------------------


async def wait_until_embedded(client: LanguageClient) -> dict:
    """The server's status once every folder is idle with all its embeddings computed
    (a folder starts "opening", so idle means its first update is over)."""
    deadline = time.monotonic() + EMBEDDING_TIMEOUT_S
    while time.monotonic() < deadline:
        status = await command(client, "prism.status")
        embeddings = status["embeddings"]
        if status["state"] == "idle" and embeddings["done"] == embeddings["total"]:
            return status
        await asyncio.sleep(0.2)
    raise TimeoutError(f"embeddings did not finish in {EMBEDDING_TIMEOUT_S} s")


async def find(client: LanguageClient, description: str, top: int = 5) -> list[dict]:
    return await command(client, "prism.findFunction", {"description": description, "top": top})


pytestmark_lsp = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(tree: Path) -> AsyncIterator[LanguageClient]:
    """A server on the same tree, embeddings computed: the editor's find."""
    client = await start_server(tree, tree.parent / "server-cache", wait=False,
                                find={"strategy": "retrieval"}, notes={"enabled": False})
    await wait_until_embedded(client)
    yield client
    await stop_server(client)


@pytestmark_lsp
@pytest.mark.parametrize("description", [q for _, q in RANKED_QUERIES + JSON_ONLY_QUERIES],
                         ids=[i for i, _ in RANKED_QUERIES + JSON_ONLY_QUERIES])
async def test_server_ranks_any_query(server: LanguageClient, description: str):
    started = time.monotonic()
    found = await find(server, description)
    print(f"prism.findFunction, {len(description.split())} word(s): {time.monotonic() - started:.2f} s")
    assert len(found) == 5
    assert all(f["uri"].startswith("file://") for f in found)


@pytestmark_lsp
@pytest.mark.parametrize("description", ["", "  \t", "\x00", " \x00\x7f\n"])
async def test_server_empty_query_is_invalid_params(server: LanguageClient, description: str):
    with pytest.raises(JsonRpcInvalidParams) as error:
        await find(server, description)
    assert "description" in str(error.value) and "Traceback" not in str(error.value)
    assert len(await find(server, "area")) == 5  # still serving


@pytestmark_lsp
async def test_server_finds_valid_functions_next_to_unparsable_files(server: LanguageClient):
    assert (await find(server, "double a number"))[0]["qualname"] == "double_the_number"
    assert (await find(server, "triple the value"))[0]["qualname"] == "tripleTheValue"
    assert (await find(server, "halve the value"))[0]["qualname"] == "halve_the_value"


@pytestmark_lsp
@pytest.mark.parametrize("description", ["compute the area of a shape", "?!...;;",
                                         "for i in range(len(xs)): total += xs[i]", "计算形状的面积"])
async def test_cli_and_server_give_the_same_ranking(server: LanguageClient, indexed: tuple[Path, Path],
                                                   description: str):
    """Issue #15 part 5: the editor and the command line see one ranking (each with its own
    index and embeddings of the same tree)."""
    repo, cache = indexed
    cli = [(r["qualname"], r["path"]) for r in find_json(repo, cache, description, "--top", "10")]
    editor = [(f["qualname"], Path(str(uri_path(f["uri"]))).relative_to(repo).as_posix())
              for f in await find(server, description, top=10)]
    assert editor == cli


@pytestmark_lsp
@pytest.mark.parametrize("layout", ["readme-and-data", "empty-directory"])
async def test_server_repository_without_functions(tmp_path: Path, layout: str):
    repo = tmp_path / "repo"
    repo.mkdir()
    if layout == "readme-and-data":
        (repo / "README.md").write_text("# Notes\n\nNothing to run here.\n")
        (repo / "data.csv").write_text("a,b\n1,2\n")
    client = await start_server(repo, tmp_path / "cache", wait=False, notes={"enabled": False})
    try:
        await wait_until_embedded(client)
        assert await find(client, "compute the area") == []
        with pytest.raises(JsonRpcException) as error:
            await find(client, "")
        assert "Traceback" not in str(error.value)
    finally:
        await stop_server(client)


@pytestmark_lsp
async def test_server_answers_odd_queries_while_its_index_is_still_being_built(tree: Path, tmp_path: Path):
    """Issue #27: each odd query, sent right after `initialize`, gets a list (empty until the
    first files are in) or a clear error, and the server goes on to finish its index."""
    client = await start_server(tree, tmp_path / "cache", wait=False, find={"strategy": "retrieval"},
                                notes={"enabled": False})
    try:
        for _, description in RANKED_QUERIES:
            found = await find(client, description)
            assert isinstance(found, list) and len(found) <= 5
        status = await wait_until_embedded(client)
        assert status["functions"] > 0
        assert len(await find(client, "pkg/core.py")) == 5
    finally:
        await stop_server(client)
