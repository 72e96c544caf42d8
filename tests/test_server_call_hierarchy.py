"""Show Call Hierarchy and Go to Implementations through a real server, driven over stdio
by pytest-lsp with VS Code's capabilities, on a fixture with inheritance across files,
`super()`, typed receivers and constructor calls."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_server import hover, open_file, position_of, start_server, stop_server

FIXTURE = Path(__file__).parent / "fixtures" / "hierarchy"

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("calls") / "hierarchy"
    shutil.copytree(FIXTURE, root)
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(workspace: Path):
    lsp_client = await start_server(workspace, workspace.parent / "cache", notes={"enabled": False})
    yield lsp_client
    await stop_server(lsp_client)


async def prepare(client: LanguageClient, path: Path, line_text: str, word: str) -> types.CallHierarchyItem:
    items = await client.text_document_prepare_call_hierarchy_async(types.CallHierarchyPrepareParams(
        text_document=types.TextDocumentIdentifier(uri=open_file(client, path)),
        position=position_of(path, line_text, word)))
    assert items is not None and len(items) == 1
    return items[0]


def row(item: types.CallHierarchyItem) -> tuple[str, str, int]:
    """(name, file name, 1-based line of the definition) as the editor lists a row."""
    return item.name, item.uri.rsplit("/", 1)[-1], item.range.start.line + 1


async def test_outgoing_calls_follow_super_to_the_parent_class_in_another_file(
        client: LanguageClient, workspace: Path):
    square = workspace / "shapes" / "square.py"
    item = await prepare(client, square, "def describe", "describe")
    assert row(item) == ("describe", "square.py", 11)
    assert item.kind == types.SymbolKind.Method
    outgoing = await client.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(item=item))
    assert [row(call.to) for call in outgoing] == [("describe", "base.py", 10)]
    # The call site is the name `describe` in `super().describe()`, on line 12.
    (site,) = outgoing[0].from_ranges
    line = square.read_text().split("\n")[site.start.line]
    assert site.start.line + 1 == 12 and line[site.start.character:site.end.character] == "describe"


async def test_incoming_calls_list_only_real_callers(client: LanguageClient, workspace: Path):
    base = workspace / "shapes" / "base.py"
    describe = await prepare(client, base, "def describe", "describe")
    incoming = await client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(item=describe))
    # Square.describe calls it through super(); `shape.describe()` in report.py has no
    # type the graph can know, and the sibling Square.describe is not a caller of itself.
    assert [row(call.from_) for call in incoming] == [("describe", "square.py", 11)]
    clamp = await prepare(client, base, "def clamp", "clamp")
    callers = await client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(item=clamp))
    assert sorted(row(call.from_) for call in callers) == [("__init__", "circle.py", 7),
                                                          ("__init__", "square.py", 5)]


async def test_a_typed_parameter_resolves_its_method_calls(client: LanguageClient, workspace: Path):
    report = workspace / "report.py"
    total = await prepare(client, report, "def total", "total")
    outgoing = await client.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(item=total))
    assert [row(call.to) for call in outgoing] == [("area", "square.py", 8)]
    build = await prepare(client, report, "def report", "report")
    made = await client.call_hierarchy_outgoing_calls_async(types.CallHierarchyOutgoingCallsParams(item=build))
    assert sorted(row(call.to)[:2] for call in made) == [("Circle", "circle.py"), ("Square", "square.py")]


async def test_implementations_of_an_abstract_method(client: LanguageClient, workspace: Path):
    base = workspace / "shapes" / "base.py"
    uri = open_file(client, base)
    found = await client.text_document_implementation_async(types.ImplementationParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position_of(base, "def area", "area")))
    assert found is not None
    assert sorted((loc.uri.rsplit("/", 1)[-1], loc.range.start.line + 1) for loc in found) == [
        ("circle.py", 10), ("square.py", 8)]


async def test_hover_shows_real_callers_and_overrides(client: LanguageClient, workspace: Path):
    base = workspace / "shapes" / "base.py"
    result = await hover(client, open_file(client, base), position_of(base, "def describe", "describe"))
    assert result is not None
    text = result.contents.value
    assert "callers: 1" in text and "Square.describe" in text
    assert "overridden by" in text


async def test_no_hierarchy_off_a_definition(client: LanguageClient, workspace: Path):
    report = workspace / "report.py"
    items = await client.text_document_prepare_call_hierarchy_async(types.CallHierarchyPrepareParams(
        text_document=types.TextDocumentIdentifier(uri=open_file(client, report)),
        position=types.Position(line=0, character=0)))
    assert not items
