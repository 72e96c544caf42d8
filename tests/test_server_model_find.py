"""Model-backed find in the server: progress, and retrieval's ranking at once refined live (issue #16)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient
from test_server import command, find, served, start_server, stop_server, units_workspace

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.model
async def test_find_with_the_prism_strategy_streams_its_steps_as_progress(tmp_path: Path):
    root = units_workspace(tmp_path)
    lsp_client = await start_server(root, tmp_path / "cache", notes={"enabled": False})
    try:
        found = await command(lsp_client, "prism.findFunction",
                              {"description": "add up a list of numbers and divide by how many there are",
                               "top": 2, "strategy": "prism"})
        assert {item["qualname"] for item in found} == {"average", "celsius_to_fahrenheit"}
        assert all(item["reason"] for item in found)
        tokens = [t for t in lsp_client.progress_reports if str(t).startswith("prism-find/")]
        assert len(tokens) == 1
        values = lsp_client.progress_reports[tokens[0]]
        assert values[0].title == "PRISM: prism"
        assert any(isinstance(v, types.WorkDoneProgressReport) for v in values)
        assert isinstance(values[-1], types.WorkDoneProgressEnd)
        with pytest.raises(Exception, match="unknown strategy"):
            await command(lsp_client, "prism.findFunction", {"description": "x", "strategy": "guess"})
    finally:
        await stop_server(lsp_client)


# ---- anytime find: retrieval's ranking at once, refined by the model (issue #16) -------------

SHOP = '''def total_price(prices, quantities):
    """Multiply each unit price by its quantity and add the products up."""
    return sum(p * q for p, q in zip(prices, quantities))


def apply_discount(amount, percent):
    """Take a percentage off an amount."""
    return amount * (1 - percent / 100)


def count_items(quantities):
    return sum(quantities)


def cheapest(prices):
    return min(prices)
'''
ORDER_TOTAL = ("Work out what an order costs in all: take the unit prices and how many of each item "
               "were bought, multiply each pair and sum the products.")


def shop_workspace(parent: Path) -> Path:
    root = parent / "shop"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "orders.py").write_text(SHOP)
    return root


def follow_updates(lsp_client: LanguageClient) -> list[tuple[float, dict]]:
    """prism/findUpdate notifications as they arrive, with their arrival time."""
    updates: list[tuple[float, dict]] = []

    @lsp_client.feature("prism/findUpdate")
    def on_update(params) -> None:
        updates.append((time.monotonic(), plain(params)))
    return updates


def plain(value):
    """pygls' params of a method it has no type for (named tuples) as JSON's dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def embedded(lsp_client: LanguageClient) -> None:
    deadline = time.monotonic() + 60
    while (done := (await command(lsp_client, "prism.status"))["embeddings"])["done"] != done["total"] \
            and time.monotonic() < deadline:
        await asyncio.sleep(0.2)


def cli_find(root: Path, cache: Path, description: str, top: int) -> list[dict]:
    import json
    import subprocess

    env = {**os.environ, "PRISM_CODE_CACHE_DIR": str(cache)}
    cli = [sys.executable, "-m", "prism_code.cli"]
    subprocess.run([*cli, "index", str(root)], check=True, capture_output=True, env=env, timeout=300)
    out = subprocess.run([*cli, "find", str(root), description, "--strategy", "prism", "--top", str(top),
                          "--json"], check=True, capture_output=True, text=True, env=env, timeout=600)
    return json.loads(out.stdout)


@pytest.mark.model
async def test_model_find_shows_retrieval_at_once_refines_it_and_stops_when_cancelled(tmp_path: Path):
    root = shop_workspace(tmp_path)
    async with served(root, tmp_path / "cache", notes={"enabled": False}) as lsp_client:
        updates = follow_updates(lsp_client)
        await embedded(lsp_client)
        retrieval = await find(lsp_client, ORDER_TOTAL, top=3)
        asked = time.monotonic()
        found = await command(lsp_client, "prism.findFunction", {"description": ORDER_TOTAL, "top": 3,
                                                                 "strategy": "prism", "updateToken": "first"})
        answered = time.monotonic()
        params = [p for _, p in updates]
        assert {p["token"] for p in params} == {"first"}
        # Retrieval's list arrives first, long before the answer, then one per candidate scored.
        first_at, first = updates[0]
        assert first["done"] is False and first["progress"] == "scored 0 of 4"
        assert first["evidence"] == ["retrieval"] * 3
        assert [r["qualname"] for r in first["results"]] == [r["qualname"] for r in retrieval]
        assert first_at - asked < 0.3 * (answered - asked)
        # A sentence is searched again with the model's guess at its code: a second retrieval list.
        guessed = params[1]
        assert guessed["scored"] == 0 and guessed["evidence"] == ["retrieval"] * 3
        assert [p["scored"] for p in params[2:6]] == [1, 2, 3, 4]
        assert params[2]["evidence"].count("model") == 1
        # Then it is read against the candidates' signatures.
        assert "signature PMI" in next(r["reason"] for r, e in zip(params[2]["results"],
                                                                   params[2]["evidence"]) if e == "model")
        # The last update is the response, and the response is what the CLI answers.
        assert params[-1]["done"] is True and params[-1]["results"] == found
        assert [p["done"] for p in params[:-1]] == [False] * (len(params) - 1)
        cli = cli_find(root, tmp_path / "cli-cache", ORDER_TOTAL, 3)
        assert [r["qualname"] for r in found] == [r["qualname"] for r in cli[:3]]

        # Closing the pick cancels the request: the model job ends at once, the server serves on.
        params = types.ExecuteCommandParams(command="prism.findFunction", arguments=[{
            "description": "take a percentage off an amount of money", "top": 3, "strategy": "prism",
            "updateToken": "second"}])
        ends_before = sum(isinstance(v, types.WorkDoneProgressEnd) for t, values in
                          lsp_client.progress_reports.items() if str(t).startswith("prism-find/") for v in values)
        request = asyncio.ensure_future(lsp_client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="find-to-cancel"))
        while not any(p.get("token") == "second" and p["scored"] >= 1 for _, p in updates):
            await asyncio.sleep(0.02)
        lsp_client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="find-to-cancel"))
        cancelled_at = time.monotonic()
        with pytest.raises(JsonRpcRequestCancelled):
            await request
        while sum(isinstance(v, types.WorkDoneProgressEnd) for t, values in lsp_client.progress_reports.items()
                  if str(t).startswith("prism-find/") for v in values) == ends_before:
            assert time.monotonic() - cancelled_at < 5, "the model job did not stop"
            await asyncio.sleep(0.01)
        stopped = time.monotonic() - cancelled_at
        assert not any(p.get("token") == "second" and p["done"] for _, p in updates)
        assert (await find(lsp_client, "take a percentage off an amount", top=1))[0]["qualname"] == \
            "apply_discount"
        print(f"first update after {first_at - asked:.2f} s, the answer after {answered - asked:.2f} s; "
              f"cancel to model idle: {stopped:.2f} s")
        # Stopping takes one prompt piece (runtime.CANCEL_PIECE_TOKENS), not the rest of the job.
        assert stopped < 0.25 * (answered - asked)
