"""Completion through the language server: a real server process and the real local model,
driven over stdio by pytest-lsp presenting the capabilities VS Code sends."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled
from pygls.uris import to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from prism_code.lsp.completion_debounce import Debounce
from prism_code.lsp.model_host import ModelHost

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "calcrepo"
NAME = "HANDSHAKE_GRACE_PERIOD_MS"  # spelled only in calc/settings.py
SETTINGS = "calc/settings.py:1-3"  # its one window
INDEXING_TIMEOUT_S = 180

in_module_loop = pytest.mark.asyncio(loop_scope="module")


async def start(root: Path, **options) -> LanguageClient:
    """A server on a copy of the fixture, indexed; every cache in the test's directory."""
    shutil.copytree(FIXTURE, root)
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "prism_code.lsp"],
        server_env={**os.environ, "PYTHONPATH": str(REPO),
                    "PRISM_CODE_CACHE_DIR": str(root.parent / "default-cache")})
    client = await config.start()
    client.initialize_result = await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options={"cacheDir": str(root.parent / "cache"), **options}))
    deadline = time.monotonic() + INDEXING_TIMEOUT_S
    while not any(isinstance(v, types.WorkDoneProgressEnd)
                  for values in client.progress_reports.values() for v in values):
        assert time.monotonic() < deadline, "indexing did not finish"
        await asyncio.sleep(0.1)
    return client


async def stop(client: LanguageClient) -> None:
    await client.shutdown_session()
    await client.stop()


def open_net(client: LanguageClient, root: Path) -> tuple[str, types.Position]:
    """Open calc/net.py; the position is the end of its last line, `    grace = settings.`."""
    path = root / "calc" / "net.py"
    text = path.read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1,
                                             text=text)))
    lines = text.rstrip("\n").split("\n")
    return path.as_uri(), types.Position(line=len(lines) - 1, character=len(lines[-1]))


async def complete(client: LanguageClient, uri: str, position: types.Position):
    return await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position))


async def inline(client: LanguageClient, uri: str, position: types.Position):
    return await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position,
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Automatic)))


def type_text(client: LanguageClient, uri: str, at: types.Position, text: str,
              version: int, replacing: int = 0) -> types.Position:
    """Type `text` at `at`, over the `replacing` characters before it; the cursor after it."""
    start = types.Position(line=at.line, character=at.character - replacing)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=start, end=at), text=text)]))
    return types.Position(line=at.line, character=start.character + len(text))


async def status(client: LanguageClient) -> dict:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="prism.status", arguments=[]))


async def context_of(client: LanguageClient, uri: str | None) -> dict:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="prism.completionContext", arguments=[{"uri": uri}] if uri else []))


# ---- with the model ----------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("completion") / "calcrepo"
    client = await start(root)
    uri, end = open_net(client, root)
    yield client, uri, end
    await stop(client)
    # cacheDir holds the index and the KV states; the default cache ($PRISM_CODE_CACHE_DIR)
    # holds the models only, which every workspace shares.
    assert {p.name for p in (root.parent / "default-cache").glob("*")} <= {"models"}


@pytest.mark.model
@in_module_loop
async def test_completion_names_what_another_file_defines(served):
    client, uri, end = served
    result = await complete(client, uri, end)
    assert result.is_incomplete and len(result.items) == 1
    item = result.items[0]
    assert NAME in item.label and NAME in item.text_edit.new_text
    assert item.detail.startswith("prism · ") and "calc/settings.py" in item.detail
    assert item.text_edit.range == types.Range(start=end, end=end)
    assert item.insert_text_format == types.InsertTextFormat.PlainText
    assert item.sort_text < "0" and NAME.startswith(item.filter_text.split("\n")[0])
    assert SETTINGS in item.data["context"]  # what a client shows as the suggestion's sources

    ghost = await inline(client, uri, end)
    assert len(ghost.items) == 1 and NAME in ghost.items[0].insert_text
    assert "\n" not in ghost.items[0].insert_text  # the cursor opens no block: one line
    assert ghost.items[0].range == types.Range(start=end, end=end)


@pytest.mark.model
@in_module_loop
async def test_the_fragments_a_suggestion_used_are_shown(served):
    """After the suggestion above: the status and prism.completionContext name settings.py,
    and the location given opens on the definition the suggestion spelled."""
    client, uri, _ = served
    counters = (await status(client))["completion"]
    assert SETTINGS in counters["context"] and counters["contextUri"] == uri

    shown = await context_of(client, uri)
    assert shown["uri"] == uri and shown["context"] == counters["context"]
    fragment = next(f for f in shown["fragments"] if f["label"] == SETTINGS)
    assert fragment["path"] == "calc/settings.py"
    assert fragment["uri"].endswith("/calcrepo/calc/settings.py")
    lines = Path(to_fs_path(fragment["uri"])).read_text().split("\n")
    first, last = fragment["range"]["start"], fragment["range"]["end"]
    assert (first["line"], first["character"]) == (0, 0)
    assert lines[last["line"]][:last["character"]] == f"{NAME} = 250"
    assert await context_of(client, None) == shown  # no document: the last suggestion served


@pytest.mark.model
@in_module_loop
async def test_typing_completes_from_the_unsaved_buffer(served):
    client, uri, end = served
    typed = type_text(client, uri, end, "HAND", version=2)
    item = (await complete(client, uri, typed)).items[0]
    # The word being typed is replaced by the item, so the list keeps it while typing.
    assert item.text_edit.range.start == end and item.text_edit.new_text.startswith("HAND")
    assert NAME in item.text_edit.new_text and item.filter_text.startswith("HAND")
    ghost = (await inline(client, uri, typed)).items[0]
    assert ("HAND" + ghost.insert_text).startswith(NAME)


@pytest.mark.model
@in_module_loop
async def test_a_newer_request_supersedes_and_a_cancel_is_honoured(served):
    client, uri, end = served
    # "HAND" is typed; a letter the suggestion does not go on with waits for the model.
    at = type_text(client, uri, types.Position(line=end.line, character=end.character + 4),
                   "X", version=3)
    first = asyncio.ensure_future(complete(client, uri, at))
    await asyncio.sleep(0.05)
    at = type_text(client, uri, at, "S", version=4, replacing=1)  # X corrected to S
    second = await complete(client, uri, at)
    assert not (await first).items  # superseded before its debounce ended
    assert NAME in second.items[0].text_edit.new_text

    params = types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                    position=type_text(client, uri, at, "Q", version=5))
    pending = asyncio.ensure_future(client.protocol.send_request_async(
        types.TEXT_DOCUMENT_COMPLETION, params, msg_id="completion-to-cancel"))
    await asyncio.sleep(0.05)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="completion-to-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending

    # The server keeps completing after both, and counted both.
    at = type_text(client, uri, types.Position(line=at.line, character=at.character + 1), "H",
                   version=6, replacing=1)
    assert NAME in (await complete(client, uri, at)).items[0].text_edit.new_text
    # That answer came from the suggestion at once; the cancelled one ends its debounce later.
    for _ in range(50):
        if (await status(client))["completion"]["cancelled"] >= 2:
            break
        await asyncio.sleep(0.1)
    assert (await status(client))["completion"]["cancelled"] >= 2


@pytest.mark.model
@in_module_loop
async def test_status_reports_the_model_and_counters(served):
    report = await status(served[0])
    model = report["model"]
    assert model["loaded"] and model["name"] == "qwen2.5-coder-0.5b" and model["error"] is None
    assert model["path"].endswith(".gguf")
    counters = report["completion"]
    assert counters["requests"] >= 7 and counters["completed"] >= 4
    assert counters["p50Ms"] > 0 and counters["tokensReusedPercent"] > 50
    assert counters["typedThrough"] >= 1  # letters typed as the suggestion spelled them
    assert 150 <= counters["debounceMs"] <= 400


# ---- without it --------------------------------------------------------------------------


@in_module_loop
async def test_disabled_completion_returns_nothing(tmp_path: Path):
    client = await start(tmp_path / "calcrepo", completion={"enabled": False})
    try:
        capabilities = client.initialize_result.capabilities
        assert capabilities.completion_provider is not None
        assert capabilities.inline_completion_provider is not None
        uri, end = open_net(client, tmp_path / "calcrepo")
        assert not (await complete(client, uri, end)).items
        assert not (await inline(client, uri, end)).items
        assert not (await status(client))["model"]["loaded"]
        assert (await status(client))["completion"]["context"] == []
        assert await context_of(client, uri) == {"uri": None, "context": [], "fragments": []}
        with pytest.raises(JsonRpcInvalidParams):
            await context_of(client, 42)  # type: ignore[arg-type]
    finally:
        await stop(client)


@in_module_loop
async def test_a_bogus_model_path_is_reported_once_and_the_rest_still_works(tmp_path: Path):
    bogus = tmp_path / "no-such-model.gguf"
    client = await start(tmp_path / "calcrepo", modelPath=str(bogus))
    try:
        uri, end = open_net(client, tmp_path / "calcrepo")
        assert not (await complete(client, uri, end)).items
        assert not (await inline(client, uri, end)).items
        errors = [m for m in client.messages if m.type == types.MessageType.Error]
        assert len(errors) == 1 and str(bogus) in errors[0].message
        assert (await status(client))["model"]["error"] == errors[0].message
        found = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="prism.findFunction", arguments=[{"description": "connect to a host"}]))
        assert found[0]["name"] == "connect"
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=3, character=5)))
        assert "def connect(host)" in hover.contents.value
    finally:
        await stop(client)


def test_a_missing_model_names_the_install_command(monkeypatch: pytest.MonkeyPatch):
    from prism_code.llm import runtime
    from prism_code.llm.models import MODELS, ModelNotInstalled

    spec = MODELS["qwen2.5-coder-1.5b"]

    def not_installed(*args, **kwargs):
        raise ModelNotInstalled(spec, list(spec.parts[:2]))

    monkeypatch.setattr(runtime.LlamaSession, "open", not_installed)
    shown: list[str] = []
    host = ModelHost(shown.append)
    host.configure("qwen2.5-coder-1.5b", 2)
    assert host.session(busy_cores=0.0) is None
    assert host.session(busy_cores=0.0) is None  # reported once, not on every request
    assert len(shown) == 1 and "-m prism_code.cli setup --model qwen2.5-coder-1.5b" in shown[0]


def test_the_debounce_grows_with_slow_completions_within_bounds():
    debounce = Debounce()
    assert debounce.delay == pytest.approx(0.15)
    for _ in range(10):
        debounce.observe(2000)
    assert debounce.delay == pytest.approx(0.4)
    for _ in range(30):
        debounce.observe(500)
    assert debounce.delay == pytest.approx(0.25, abs=0.01)  # half the typical latency
    for _ in range(30):
        debounce.observe(80)
    assert debounce.delay == pytest.approx(0.15)
