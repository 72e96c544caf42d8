"""The language server with `prism.remote.url`: every model job goes to the remote engine, the
local model is never loaded, and a failing engine is a status, not a hang (issue #16 item 4).

The engine here is a stub that fails the way a broken server does (HTTP 500, then nothing
listening at all): a stand-in for a broken server, not for a working one.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lsprotocol import types
from remote_servers import free_port
from test_server_completion import inline, open_net, start, status, stop

pytestmark = [pytest.mark.model, pytest.mark.asyncio(loop_scope="module")]

DESCRIPTION = "connect to a host, retrying a few times"


async def find(client, strategy: str) -> list[dict]:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="prism.findFunction", arguments=[{"description": DESCRIPTION, "top": 3, "strategy": strategy}]))


def remote_errors(client) -> list[str]:
    return [m.message for m in client.messages if "remote engine failed" in m.message]


async def test_a_failing_remote_engine_is_a_status_and_find_shows_retrieval(tmp_path: Path, serve):
    fake = serve(lambda body: (500, b'{"error": {"message": "CUDA out of memory"}}', 0.0))
    client = await start(tmp_path / "calcrepo", remote={"url": fake.url}, notes={"enabled": False})
    try:
        retrieval = await find(client, "retrieval")
        found = await find(client, "prism")
        assert [f["qualname"] for f in found] == [f["qualname"] for f in retrieval]
        assert fake.requests, "the model find went to the remote engine"
        model = (await status(client))["model"]
        assert model["remote"]["state"] == "failing" and model["remote"]["kind"] == "server-error"
        assert model["remote"]["job"] == "find" and "CUDA out of memory" in model["remote"]["error"]
        assert model["path"] is None  # the local model was never loaded
        assert (await status(client))["completionModel"]["model"] == "remote"
        assert len(remote_errors(client)) == 1

        # A keystroke gets nothing, at once; the user is not told the same thing twice.
        uri, end = open_net(client, tmp_path / "calcrepo")
        started = time.monotonic()
        assert not (await inline(client, uri, end)).items
        assert time.monotonic() - started < 5
        model = (await status(client))["model"]
        assert model["remote"]["failures"] >= 2 and model["remote"]["job"] == "completion"
        assert len(remote_errors(client)) == 1

        # Pointed at a port nobody listens on: another kind of failure, told once, and still serving.
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"prism": {"remote": {"url": f"http://127.0.0.1:{free_port()}"}}}))
        # Another place: an identical request would share the answer just given.
        assert not (await inline(client, uri, types.Position(line=end.line, character=end.character - 1))).items
        model = (await status(client))["model"]
        assert model["remote"]["kind"] == "unreachable"
        assert len(remote_errors(client)) == 2 and "connection refused" in remote_errors(client)[-1]
        assert [f["qualname"] for f in await find(client, "prism")] == [f["qualname"] for f in retrieval]
    finally:
        await stop(client)
