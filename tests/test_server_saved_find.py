"""The language server answers find from the saved lexical index while a folder's index loads
(lsp/saved_find.py): a real server over stdio, started on a folder indexed before, answers a
find sent right after `initialize` with the ranking `prism-code find` gives, then switches
to its own index once loaded. Results say which answered (`fromSavedIndex`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from test_server import find, start_server, stop_server, wait_for_indexing

from prism_code.index import RepoIndex
from prism_code.tasks.find_function import FunctionSearch

FIXTURE = Path(__file__).parent / "fixtures" / "multilang"
QUERY = "add an item to the cart"

pytestmark = pytest.mark.asyncio(loop_scope="function")


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "multilang"
    shutil.copytree(FIXTURE, root)
    return root


def cli(*args: str, cache: Path) -> str:
    env = {**os.environ, "PRISM_CODE_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-m", "prism_code.cli", *args], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def as_cli(root: Path, hit: dict) -> dict:
    """A server result in the CLI's --json shape (the range's lines are 0-based)."""
    path = Path(unquote(urlsplit(hit["uri"]).path)).relative_to(root).as_posix()
    return {"name": hit["name"], "qualname": hit["qualname"], "path": path,
            "start_line": hit["range"]["start"]["line"] + 1, "end_line": hit["range"]["end"]["line"] + 1,
            "score": hit["score"], "reason": hit["reason"], "kind": hit["kind"], "scores": hit["scores"]}


async def test_a_restarted_server_answers_from_the_saved_index_until_loaded(workspace, tmp_path):
    cache = tmp_path / "cache"
    cli("index", str(workspace), "--no-embeddings", cache=cache)  # saves the lexical index
    expected = json.loads(cli("find", str(workspace), QUERY, "--json", "--top", "5", cache=cache))
    assert expected

    client = await start_server(workspace, cache, wait=False, find={"strategy": "retrieval"},
                                notes={"enabled": False})
    try:
        early = await find(client, QUERY)  # sent right after initialize
        assert early and all(hit["fromSavedIndex"] for hit in early)
        assert [as_cli(workspace, hit) for hit in early] == expected

        await wait_for_indexing(client)
        loaded = await find(client, QUERY)
        assert loaded and not any(hit["fromSavedIndex"] for hit in loaded)
        assert loaded[0]["qualname"] == early[0]["qualname"]
    finally:
        await stop_server(client)


async def test_the_server_saves_the_index_its_next_start_answers_from(workspace, tmp_path):
    cache = tmp_path / "cache"
    client = await start_server(workspace, cache, find={"strategy": "retrieval"}, notes={"enabled": False})
    await stop_server(client)
    assert list(cache.rglob("manifest.json"))  # written by the server, no CLI involved

    index = RepoIndex(workspace, cache_dir=cache)
    try:
        lexical = [f.qualname for f in FunctionSearch(index).search(QUERY, top=5)]
    finally:
        index.close()
    client = await start_server(workspace, cache, wait=False, find={"strategy": "retrieval"},
                                notes={"enabled": False})
    try:
        early = await find(client, QUERY)
        assert early and all(hit["fromSavedIndex"] for hit in early)
        assert [hit["qualname"] for hit in early] == lexical
    finally:
        await stop_server(client)


async def test_an_edit_before_the_restart_is_not_answered_from_the_saved_index(workspace, tmp_path):
    cache = tmp_path / "cache"
    cli("index", str(workspace), "--no-embeddings", cache=cache)
    (workspace / "pkg" / "tax.py").write_text(
        "def apply_sales_tax(amount, rate):\n    \"\"\"Add sales tax to an amount.\"\"\"\n"
        "    return amount * (1 + rate)\n")
    client = await start_server(workspace, cache, wait=False, find={"strategy": "retrieval"},
                                notes={"enabled": False})
    try:
        early = await find(client, "add sales tax to an amount")
        assert not any(hit["fromSavedIndex"] for hit in early)  # the copy is stale: never read
        await wait_for_indexing(client)
        loaded = await find(client, "add sales tax to an amount")
        assert loaded[0]["qualname"] == "apply_sales_tax"
    finally:
        await stop_server(client)
