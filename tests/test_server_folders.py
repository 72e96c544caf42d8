"""Two workspace folders that hold a file at the same relative path, served by one real
server over stdio (pytest-lsp, VS Code's capabilities): each folder keeps its own parsed
buffers, so hovering in one never reparses or forgets the other's."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_server import INDEXING_TIMEOUT_S, command, hover, open_file, position_of, start_server, stop_server

FIXTURE = Path(__file__).parent / "fixtures" / "twin_folders"

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def start_two_folders(roots: list[Path], cache: Path) -> LanguageClient:
    lsp_client = await start_server(roots[0], cache, wait=False, folders=roots, notes={"enabled": False})
    deadline = time.monotonic() + INDEXING_TIMEOUT_S
    while time.monotonic() < deadline:
        status = await command(lsp_client, "prism.status")
        if len(status["workspaces"]) == 2 and all(
                w["state"] == "idle" and w["files"] == 1 for w in status["workspaces"]):
            return lsp_client
        await asyncio.sleep(0.2)
    raise TimeoutError(f"the two folders were not indexed in {INDEXING_TIMEOUT_S} s")


def folder_buffers(status: dict, root: Path) -> dict[str, int]:
    return next(w["hoverBuffers"] for w in status["workspaces"] if w["root"] == str(root))


async def test_folders_with_the_same_relative_path_keep_their_own_parses(tmp_path: Path):
    shutil.copytree(FIXTURE, tmp_path / "twins")
    left, right = (tmp_path / "twins" / name for name in ("left", "right"))
    left_file, right_file = left / "pkg" / "shapes.py", right / "pkg" / "shapes.py"
    client = await start_two_folders([left.resolve(), right.resolve()], tmp_path / "cache")
    try:
        left_uri, right_uri = open_file(client, left_file), open_file(client, right_file)
        on_area = position_of(left_file, "rectangle of area", "area(")
        on_volume = position_of(right_file, "ball of volume", "volume(")
        for _ in range(2):
            assert "def area(width: float, height: float)" in (
                await hover(client, left_uri, on_area)).contents.value
            assert "def volume(radius: float)" in (
                await hover(client, right_uri, on_volume)).contents.value
        # Closing the right folder's file forgets its parse, not the left one's.
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=right_uri)))
        assert "def area" in (await hover(client, left_uri, on_area)).contents.value

        status = await command(client, "prism.status")
        left_parses = folder_buffers(status, left.resolve())
        right_parses = folder_buffers(status, right.resolve())
        # Each text parsed once; never reparsed from the other folder's tree.
        assert (left_parses["parsed"], left_parses["reparsed"], left_parses["reused"]) == (1, 0, 2)
        assert (right_parses["parsed"], right_parses["reparsed"], right_parses["reused"]) == (1, 0, 1)
        assert (left_parses["kept"], right_parses["kept"]) == (1, 0)
        assert status["hoverBuffers"]["parsed"] == 2 and status["hoverBuffers"]["reparsed"] == 0
        # A file the editor no longer has open hovers as indexed.
        assert "def volume(radius: float)" in (
            await hover(client, right_uri, on_volume)).contents.value
    finally:
        await stop_server(client)
