"""The language server end to end: a real server process, driven over stdio by pytest-lsp
presenting the capabilities VS Code really sends."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "multilang"
INDEXING_TIMEOUT_S = 180

pytestmark = pytest.mark.asyncio(loop_scope="module")

@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("server") / "multilang"
    shutil.copytree(FIXTURE, root)
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(workspace: Path):
    # Notes off: the hovers below show the deterministic notes, never a model's.
    lsp_client = await start_server(workspace, workspace.parent / "cache", completion={"enabled": True},
                                    find={"strategy": "retrieval"}, threads="lots", notes={"enabled": False})
    yield lsp_client
    await stop_server(lsp_client)
    # cacheDir holds the index and the KV states; the default cache ($PRISM_CODE_CACHE_DIR)
    # holds the models only, which every workspace shares.
    assert {p.name for p in (workspace.parent / "default-cache").glob("*")} <= {"models"}


async def start_server(root: Path, cache: Path, *, wait: bool = True, folders: list[Path] | None = None,
                       **options) -> LanguageClient:
    """A server on the workspace folders (`folders`, else `root` alone), indexed unless `wait`
    is False; `options` are its initialization options."""
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "prism_code.lsp"],
        # The default cache too is a temporary one: a test must never touch the user's.
        server_env={**os.environ, "PYTHONPATH": str(REPO),
                    "PRISM_CODE_CACHE_DIR": str(root.parent / "default-cache")})
    lsp_client = await config.start()
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=r.as_uri(), name=r.name) for r in folders or [root]],
        initialization_options={"cacheDir": str(cache), "completion": {"enabled": False},
                                **options}))
    if wait:
        await wait_for_indexing(lsp_client)
    return lsp_client


async def stop_server(lsp_client: LanguageClient) -> None:
    await lsp_client.shutdown_session()
    await lsp_client.stop()


@contextlib.asynccontextmanager
async def served(root: Path, cache: Path, **options) -> AsyncIterator[LanguageClient]:
    """A started, indexed server on `root`, shut down when the block ends."""
    lsp_client = await start_server(root, cache, **options)
    try:
        yield lsp_client
    finally:
        await stop_server(lsp_client)


async def wait_for_indexing(client: LanguageClient) -> None:
    deadline = time.monotonic() + INDEXING_TIMEOUT_S
    while time.monotonic() < deadline:
        ended = [t for t, values in client.progress_reports.items()
                 if any(isinstance(v, types.WorkDoneProgressEnd) for v in values)]
        if ended:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"indexing did not finish in {INDEXING_TIMEOUT_S} s")


async def command(client: LanguageClient, name: str, *arguments):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments)))


async def find(client: LanguageClient, description: str, top: int = 5) -> list[dict]:
    return await command(client, "prism.findFunction", {"description": description, "top": top})


def open_file(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=path.read_text())))
    return uri


def position_of(path: Path, line_text: str, word: str) -> types.Position:
    lines = path.read_text().split("\n")
    row = next(i for i, line in enumerate(lines) if line_text in line)
    return types.Position(line=row, character=lines[row].index(word) + 1)


async def hover(client: LanguageClient, uri: str, position: types.Position) -> types.Hover | None:
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position))


async def test_indexing_reports_progress(client: LanguageClient):
    tokens = [t for t in client.progress_reports if str(t).startswith("prism-index/")]
    assert tokens
    values = client.progress_reports[tokens[0]]
    assert isinstance(values[0], types.WorkDoneProgressBegin)
    assert values[0].title.startswith("Indexing multilang")
    reports = [v for v in values if isinstance(v, types.WorkDoneProgressReport)]
    assert reports and all(r.percentage is not None for r in reports)
    percentages = [r.percentage for r in reports]
    assert percentages == sorted(percentages) and percentages[-1] == 100
    assert any(r.message.startswith("embeddings") for r in reports)
    assert isinstance(values[-1], types.WorkDoneProgressEnd)
    assert "functions" in values[-1].message


async def test_status_reports_counts(client: LanguageClient, workspace: Path):
    status = await command(client, "prism.status")
    assert status["state"] == "idle"
    assert status["files"] == 20 and status["functions"] == 48
    assert status["embeddings"]["total"] > 0
    assert status["embeddings"]["done"] == status["embeddings"]["total"]
    assert status["notes"] == {"state": "off", "done": 0, "total": 48}
    assert status["cacheDir"] == str(workspace.parent / "cache")
    assert status["workspaces"][0]["index"].startswith(str(workspace.parent / "cache"))
    assert status["modelPath"] is None
    # The bad setting was reported and replaced by its default.
    assert status["settings"]["threads"] == 2
    assert any("prism.threads" in m.message for m in client.log_messages)


async def test_status_says_which_model_completes_and_why(client: LanguageClient):
    chosen = (await command(client, "prism.status"))["completionModel"]
    assert chosen["setting"] == "auto" and chosen["reason"].startswith("auto: ")
    if chosen["predicted"] is None:  # the 1.5B not installed, or not measured yet
        assert chosen["model"] == "qwen2.5-coder-0.5b"
    else:
        fits = all(chosen["predicted"][key] <= limit for key, limit in chosen["limits"].items())
        assert chosen["model"] == ("qwen2.5-coder-1.5b" if fits else "qwen2.5-coder-0.5b")


async def test_find_function_returns_uri_and_range(client: LanguageClient, workspace: Path):
    results = await find(client, "scale a value and round it up", top=3)
    best = results[0]
    assert best["qualname"] == "helper" and best["name"] == "helper"
    assert best["uri"] == (workspace / "pkg" / "util.py").as_uri()
    lines = (workspace / "pkg" / "util.py").read_text().split("\n")
    assert best["range"] == {"start": {"line": 8, "character": 0},
                             "end": {"line": 10, "character": len(lines[10])}}
    assert lines[8].startswith("def helper")
    assert "dense_code" in best["scores"]  # embeddings are in use once indexing ended
    assert len(results) == 3 and results[0]["score"] >= results[1]["score"] >= results[2]["score"]


async def test_hover_at_a_call_site(client: LanguageClient, workspace: Path):
    core = workspace / "pkg" / "core.py"
    uri = open_file(client, core)
    result = await hover(client, uri, position_of(core, "scaled = helper(count)", "helper"))
    assert result is not None
    text = result.contents.value
    assert result.contents.kind == types.MarkupKind.Markdown
    assert "def helper(value, scale=DEFAULT_SCALE)" in text
    assert "Scale a value and round it up." in text
    assert "defined in `pkg/util.py:9`" in text
    assert "callers: 3" in text and "Inventory.add" in text and "callees: 0" in text
    assert result.range.start.line == result.range.end.line
    assert result.range.end.character - result.range.start.character == len("helper")


async def test_hover_at_a_definition(client: LanguageClient, workspace: Path):
    core = workspace / "pkg" / "core.py"
    uri = open_file(client, core)
    result = await hover(client, uri, position_of(core, "def build(", "build"))
    text = result.contents.value
    assert "def build(item: str, count: int = 1) -> Inventory" in text
    assert "Build an inventory holding one item." in text
    assert "callers: 2" in text and "main (tools/report.py:8)" in text
    assert "callees: 3" in text and "`helper (pkg/util.py:9)`" in text and "`Inventory.add (pkg/core.py:26)`" in text
    # Not on a name, a language without a grammar, a file outside the workspace: no hover.
    assert await hover(client, uri, types.Position(line=1, character=0)) is None
    toml = workspace / "rust" / "Cargo.toml"
    assert await hover(client, open_file(client, toml), types.Position(line=0, character=1)) is None
    outside = workspace.parent / "outside.py"
    outside.write_text("def lonely():\n    return lonely()\n")
    assert await hover(client, open_file(client, outside), types.Position(line=0, character=5)) is None


async def test_hover_shows_the_deterministic_note_of_a_function_the_model_has_not_noted(
        client: LanguageClient, workspace: Path):
    util = workspace / "pkg" / "util.py"
    result = await hover(client, open_file(client, util), position_of(util, "def helper", "helper"))
    text = result.contents.value
    assert "the model has not noted this version yet" in text
    assert "**purpose**: Scale a value and round it up." in text
    assert "**input**: value, scale=DEFAULT_SCALE" in text
    assert "callers: 3" in text and "defined in `pkg/util.py:9`" in text


async def test_hover_on_an_import_shows_the_module_summary(client: LanguageClient,
                                                           workspace: Path):
    core = workspace / "pkg" / "core.py"
    uri = open_file(client, core)
    result = await hover(client, uri, position_of(core, "from .util import", "util"))
    text = result.contents.value
    assert text.startswith("module `pkg/util.py`") and "no model summary yet" in text
    assert "Small helpers shared by the inventory code." in text
    assert "- `helper`: Scale a value and round it up." in text
    first = await hover(client, uri, types.Position(line=0, character=2))
    assert first.contents.value.startswith("module `pkg/core.py`")
    assert "**depends on**: `pkg/util.py`" in first.contents.value


async def test_hover_positions_are_utf16_and_lines_split_at_newlines(client: LanguageClient,
                                                                    workspace: Path):
    # A form feed (a line break to str.splitlines, not to LSP) above, an emoji (two UTF-16
    # units) before the name on its line: the hover must still land on `helper`.
    core = workspace / "pkg" / "core.py"
    text = "# \x0c page\n" + core.read_text().replace(
        "scaled = helper(count)", 'scaled = "\U0001F600" and helper(count)')
    uri = core.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text)))
    lines = text.split("\n")
    row = next(i for i, line in enumerate(lines) if "and helper(count)" in line)
    column = lines[row].index("helper") + 1  # +1: the emoji is two UTF-16 units
    result = await hover(client, uri, types.Position(line=row, character=column + 2))
    assert "def helper(value, scale=DEFAULT_SCALE)" in result.contents.value
    assert (result.range.start.line, result.range.start.character) == (row, column)
    assert result.range.end.character == column + len("helper")
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_unsaved_edit_is_found_and_hovered(client: LanguageClient, workspace: Path):
    util = workspace / "pkg" / "util.py"
    on_disk = util.read_text()
    uri = open_file(client, util)
    end = len(on_disk.split("\n")) - 1
    added = ('\n\ndef frobnicate_widgets(widgets):\n'
             '    """Polish every widget until it shines like a mirror."""\n'
             '    return [helper(w) for w in widgets]\n')
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=end, character=0),
                              end=types.Position(line=end, character=0)),
            text=added)]))
    results = await poll_find(client, "polish every widget until it shines like a mirror",
                              lambda r: r and r[0]["name"] == "frobnicate_widgets")
    assert results[0]["uri"] == uri
    assert util.read_text() == on_disk  # only the buffer changed
    new_line = on_disk.count("\n") + 2
    result = await hover(client, uri, types.Position(line=new_line, character=6))
    assert "def frobnicate_widgets(widgets)" in result.contents.value
    assert "callees: 1" in result.contents.value  # the graph already links the new call

    # Closing without saving drops the edit: the disk is right again.
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    await poll_find(client, "polish every widget until it shines like a mirror",
                    lambda r: all(hit["name"] != "frobnicate_widgets" for hit in r))


async def test_hovers_parse_an_unchanged_buffer_once_and_see_every_edit(client: LanguageClient,
                                                                        workspace: Path):
    # An unsaved buffer hovered again and again is parsed once (parsing and extracting a
    # 5 MB one took ~2.8 s per hover); an edit is reparsed from the old tree, and the hover
    # shows the edited text.
    path = workspace / "pkg" / "hovered.py"
    text = "".join(f"def step_{i}(x):\n    return x + {i}\n\n" for i in range(300))
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text)))
    on_step_7 = types.Position(line=21, character=6)

    async def buffers() -> dict:
        return (await command(client, "prism.status"))["hoverBuffers"]

    before = await buffers()
    for _ in range(3):
        assert "def step_7(x)" in (await hover(client, uri, on_step_7)).contents.value
    hovered = await buffers()
    assert hovered["parsed"] + hovered["reparsed"] == before["parsed"] + before["reparsed"] + 1
    assert hovered["reused"] == before["reused"] + 2
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=21, character=4),
                              end=types.Position(line=21, character=10)),
            text="seventh_step")]))
    result = await hover(client, uri, on_step_7)
    assert "def seventh_step(x)" in result.contents.value
    assert (result.range.start.character, result.range.end.character) == (4, 16)
    edited = await buffers()
    assert (edited["parsed"], edited["reparsed"]) == (hovered["parsed"], hovered["reparsed"] + 1)

    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    deadline = time.monotonic() + 60
    while (await command(client, "prism.status"))["files"] != 20:  # the buffer left the index
        assert time.monotonic() < deadline, "the closed buffer stayed in the index"
        await asyncio.sleep(0.2)


async def poll_find(client: LanguageClient, description: str, done, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while True:
        results = await find(client, description)
        if done(results) or time.monotonic() > deadline:
            assert done(results), results
            return results
        await asyncio.sleep(0.2)


@pytest.mark.parametrize("arguments, message", [
    ([], "one object argument"),
    ([{}], '"description" must be a non-empty string'),
    ([{"description": "   "}], '"description" must be a non-empty string'),
    (["parse a file"], "of type str"),
    ([{"description": "x", "top": 0}], '"top" must be an integer'),
    ([{"description": "x", "top": "3"}], '"top" must be an integer'),
    ([{"description": "x", "strategy": "guess"}], "available: retrieval, prism, wim, long-context"),
    ([{"description": "x", "limit": 3}], "unknown field(s): limit"),
    ([{"description": "x", "updateToken": [1]}], '"updateToken" must be a string or an integer'),
])
async def test_malformed_find_requests_get_clear_errors(client: LanguageClient, arguments, message):
    with pytest.raises(JsonRpcInvalidParams) as error:
        await command(client, "prism.findFunction", *arguments)
    assert message in str(error.value)
    assert (await command(client, "prism.status"))["files"] == 20


async def test_unknown_command_is_an_error_and_the_server_keeps_serving(client: LanguageClient):
    with pytest.raises(JsonRpcException) as error:
        await command(client, "prism.noSuchCommand")
    assert "prism.noSuchCommand" in str(error.value)
    with pytest.raises(JsonRpcInvalidParams, match="takes no arguments"):
        await command(client, "prism.status", {"verbose": True})
    assert (await find(client, "arithmetic mean of values", top=1))[0]["name"] == "mean"


async def test_cancelled_search_is_answered_and_never_runs(client: LanguageClient,
                                                          workspace: Path):
    # Hovers over a 2 MB unsaved buffer keep both request threads busy for a while, so the
    # search waits in the queue when its cancel arrives: it must be answered as cancelled.
    big = workspace / "pkg" / "generated.py"
    text = "".join(f"def f{i}(x):\n    return g{i}(x)\n" for i in range(60000))
    uri = big.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text)))
    hovers = [hover(client, uri, types.Position(line=0, character=5)) for _ in range(2)]
    hovering = asyncio.gather(*hovers)
    await asyncio.sleep(0.2)
    params = types.ExecuteCommandParams(command="prism.findFunction",
                                        arguments=[{"description": "total area of all shapes"}])
    search = asyncio.ensure_future(client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="search-to-cancel"))
    await asyncio.sleep(0.1)  # the request is on its way before the cancel
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="search-to-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await search
    assert all("def f0(x)" in h.contents.value for h in await hovering)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert (await find(client, "total area of all shapes", top=1))[0]["name"] == "total_area"


async def test_files_changed_outside_the_editor(client: LanguageClient, workspace: Path):
    report = workspace / "tools" / "report.py"
    original = report.read_text()
    report.write_text(original + '\n\ndef audit_ledger():\n    """Reconcile the ledger with the '
                      'warehouse count."""\n    return main()\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=report.as_uri(), type=types.FileChangeType.Changed)]))
    await poll_find(client, "reconcile the ledger with the warehouse count",
                    lambda r: r and r[0]["name"] == "audit_ledger")
    report.write_text(original)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=report.as_uri(), type=types.FileChangeType.Changed)]))
    await poll_find(client, "reconcile the ledger with the warehouse count",
                    lambda r: all(hit["name"] != "audit_ledger" for hit in r))


async def test_workspace_folders_come_and_go(client: LanguageClient, workspace: Path):
    second = workspace.parent / "pyrepo"
    shutil.copytree(FIXTURE.parent / "pyrepo", second)
    folder = types.WorkspaceFolder(uri=second.as_uri(), name="pyrepo")
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[folder], removed=[])))
    hits = await poll_find(client, "greet", lambda r: any(h["qualname"] == "Greeter.greet"
                                                          for h in r))
    greet = next(h for h in hits if h["qualname"] == "Greeter.greet")
    assert greet["uri"] == (second / "pkg" / "a.py").as_uri()
    assert len((await command(client, "prism.status"))["workspaces"]) == 2
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[], removed=[folder])))
    await poll_find(client, "greet", lambda r: all(h["qualname"] != "Greeter.greet" for h in r))
    assert len((await command(client, "prism.status"))["workspaces"]) == 1


async def test_pause_resume_and_configuration_changes(client: LanguageClient):
    paused = await command(client, "prism.pauseIndexing")
    assert paused["state"] == "paused"
    resumed = await command(client, "prism.resumeIndexing")
    assert resumed["state"] != "paused"
    client.set_configuration({"fragrel": {"alpha": 0.25}, "exclude": ["c/"]}, section="prism")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    deadline = time.monotonic() + 60
    while True:
        status = await command(client, "prism.status")
        if (status["settings"]["fragrel.alpha"] == 0.25 and status["state"] == "idle"
                and status["files"] == 18) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert status["settings"]["exclude"] == ["c/"] and status["files"] == 18
    assert all(hit["name"] != "mean" for hit in await find(client, "arithmetic mean of n values"))


async def test_a_completion_model_named_in_the_settings_is_used_and_the_status_says_so(
        client: LanguageClient):
    # The settings of the test above stay, so nothing is indexed again.
    client.set_configuration({"fragrel": {"alpha": 0.25}, "exclude": ["c/"],
                              "completion": {"model": "qwen2.5-coder-0.5b"}}, section="prism")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    deadline = time.monotonic() + 30
    while (chosen := (await command(client, "prism.status"))["completionModel"])["setting"] == "auto" \
            and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert chosen["model"] == "qwen2.5-coder-0.5b"
    assert chosen["reason"] == "prism.completion.model is qwen2.5-coder-0.5b"


# ---- function notes written by the real model ------------------------------------------------

UNITS = '''def celsius_to_fahrenheit(celsius):
    """Convert a temperature from Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


def average(values):
    total = 0
    for value in values:
        total += value
    return total / len(values)
'''


async def notes_finished(client: LanguageClient, timeout: float = 180) -> dict:
    """The notes part of prism.status once the background pass is done (or at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        notes = (await command(client, "prism.status"))["notes"]
        if notes["state"] == "done" or time.monotonic() > deadline:
            return notes
        await asyncio.sleep(0.5)


async def test_status_and_hover_answer_while_a_workspace_is_first_indexed(tmp_path: Path):
    root = tmp_path / "many"
    (root / "pkg").mkdir(parents=True)
    for m in range(200):
        (root / "pkg" / f"mod{m}.py").write_text(f"from pkg.mod{(m + 1) % 200} import step_0\n\n\n" + "\n\n\n".join(
            f"def step_{i}(x):\n    \"\"\"Step {i} of module {m}.\"\"\"\n    return step_{(i + 1) % 12}(x) + {m}"
            for i in range(12)) + "\n")
    lsp_client = await start_server(root, tmp_path / "cache", notes={"enabled": False}, wait=False)
    try:
        target = root / "pkg" / "mod7.py"
        uri = open_file(lsp_client, target)
        states, hovers = [], []
        while not any(isinstance(v, types.WorkDoneProgressEnd)
                      for t, values in lsp_client.progress_reports.items()
                      if str(t).startswith("prism-index/") for v in values):
            status = await command(lsp_client, "prism.status")
            states.append((status["state"], status["files"]))
            if status["state"] == "indexing" and not hovers:
                # Asked mid-update: answered from the buffer and what is published so far.
                hovers.append(await hover(lsp_client, uri, position_of(target, "def step_3", "step_3")))
            await asyncio.sleep(0.02)
        assert any(state == "indexing" for state, _ in states)
        assert hovers and "step_3" in hovers[0].contents.value
        # The counts grow as the update publishes, never showing a half-applied index.
        files = [n for _, n in states]
        assert files == sorted(files) and set(files) <= {0, 200}
    finally:
        await stop_server(lsp_client)


def units_workspace(parent: Path) -> Path:
    root = parent / "units"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "units.py").write_text(UNITS)
    return root


@pytest.mark.model
async def test_hover_shows_the_models_note_from_a_real_notes_run(tmp_path: Path, model_session):
    from prism_code.index import RepoIndex
    from prism_code.memory.note_writer import run_notes
    from prism_code.memory.notes_store import NotesStore

    root, cache = units_workspace(tmp_path), tmp_path / "cache"
    index = RepoIndex(root, cache_dir=cache)
    index.update()
    run = run_notes(model_session, index)
    with NotesStore.for_index(index) as store:
        written = store.get("tools/units.py", "average").note
    index.close()
    assert run.noted == 2 and written.purpose

    lsp_client = await start_server(root, cache, notes={"enabled": False})
    try:
        units = root / "tools" / "units.py"
        result = await hover(lsp_client, open_file(lsp_client, units),
                             position_of(units, "def average", "average"))
        text = result.contents.value
        assert "written by the model for this version of the function" in text
        assert f"**purpose**: {written.purpose}" in text
        assert f"**procedure**: {written.procedure}" in text
        status = await command(lsp_client, "prism.status")
        assert status["notes"] == {"state": "off", "done": 2, "total": 2}
    finally:
        await stop_server(lsp_client)


@pytest.mark.model
async def test_the_server_writes_notes_in_the_background_and_reports_them(tmp_path: Path):
    root = units_workspace(tmp_path)
    async with served(root, tmp_path / "cache") as lsp_client:
        assert await notes_finished(lsp_client) == {"state": "done", "done": 2, "total": 2}
        tokens = [t for t in lsp_client.progress_reports if str(t).startswith("prism-notes/")]
        assert len(tokens) == 1
        values = lsp_client.progress_reports[tokens[0]]
        assert values[0].title == "Writing function notes (units)"
        assert values[-1].message == "2 of 2 functions noted"
        units = root / "tools" / "units.py"
        uri = open_file(lsp_client, units)
        result = await hover(lsp_client, uri, position_of(units, "def average", "average"))
        assert "written by the model for this version of the function" in result.contents.value
        # Every function of the file has its note, so the pass also wrote the module summary.
        module = (await hover(lsp_client, uri, types.Position(line=0, character=1))).contents.value
        assert module.startswith("module `tools/units.py`") and "Chain-of-Key summary" in module
        # The notes join find's function cards: source, card and note card per function.
        deadline = time.monotonic() + 60
        while (embedded := (await command(lsp_client, "prism.status"))["embeddings"]) != \
                {"done": 6, "total": 6} and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        assert embedded == {"done": 6, "total": 6}


@pytest.mark.model
async def test_pausing_holds_the_notes_pass_until_resumed(tmp_path: Path):
    async with served(units_workspace(tmp_path), tmp_path / "cache") as lsp_client:
        await command(lsp_client, "prism.pauseIndexing")
        held = (await command(lsp_client, "prism.status"))["notes"]["done"]
        await asyncio.sleep(12)  # past the model's load and the notes pass's quiet period
        status = await command(lsp_client, "prism.status")
        assert status["notes"]["state"] == "paused" and status["notes"]["done"] == held < 2
        await command(lsp_client, "prism.resumeIndexing")
        assert await notes_finished(lsp_client) == {"state": "done", "done": 2, "total": 2}
