"""The call hierarchy and implementations over LSP: handlers, and items from the library's
CallTarget and CallGroup (prism_code.tasks.call_hierarchy).

An item's `data` carries its graph node id, which `callHierarchy/incomingCalls` and
`outgoingCalls` hand back; ranges are computed against the file as indexed, the text
the graph's lines refer to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import Workspace
from pygls.workspace.position_codec import PositionCodec

from prism_code.index import RepoIndex
from prism_code.lsp.locations import cursor, lines_range, lsp_lines, path_uri, span_range
from prism_code.tasks import call_hierarchy
from prism_code.tasks.call_hierarchy import CallGroup, CallTarget
from prism_code.tasks.hover import ParsedBuffers

if TYPE_CHECKING:
    from prism_code.lsp.workspace_state import WorkspaceState

T = TypeVar("T")


class PrismServer(Protocol):
    """What these handlers use of the server (prism_code.lsp.app.PrismServer), which imports
    this module: a protocol keeps the two from importing each other."""

    @property
    def workspace(self) -> Workspace: ...

    def locate(self, uri: str) -> tuple[WorkspaceState, str] | None: ...

    def open_buffer(self, uri: str) -> str | None: ...

    async def run(self, fn: Callable[..., T], *args: Any) -> T: ...

# A file's lines as indexed (workspace-relative path -> lines; [] when unknown).
Lines = Callable[[str], Sequence[str]]

_SYMBOL_KINDS = {
    "function": types.SymbolKind.Function,
    "method": types.SymbolKind.Method,
    "class": types.SymbolKind.Class,
    "module": types.SymbolKind.Module,
}


def hierarchy_item(target: CallTarget, root: Path, lines: Lines,
                   codec: PositionCodec) -> types.CallHierarchyItem:
    file_lines = lines(target.path)
    return types.CallHierarchyItem(
        name=target.name,
        kind=_SYMBOL_KINDS.get(target.kind, types.SymbolKind.Function),
        uri=path_uri(root / target.path),
        range=_whole(target, file_lines, codec),
        selection_range=_name_range(file_lines, target.start_line, target.name, codec),
        detail=f"{target.qualname}  {target.path}:{target.start_line}" if target.kind != "module" else target.path,
        data={"node": target.node},
    )


def incoming_calls(groups: list[CallGroup], root: Path, lines: Lines,
                   codec: PositionCodec) -> list[types.CallHierarchyIncomingCall]:
    return [types.CallHierarchyIncomingCall(from_=hierarchy_item(group.target, root, lines, codec),
                                            from_ranges=_site_ranges(group, lines, codec))
            for group in groups]


def outgoing_calls(groups: list[CallGroup], root: Path, lines: Lines,
                   codec: PositionCodec) -> list[types.CallHierarchyOutgoingCall]:
    return [types.CallHierarchyOutgoingCall(to=hierarchy_item(group.target, root, lines, codec),
                                            from_ranges=_site_ranges(group, lines, codec))
            for group in groups]


def locations(targets: list[CallTarget], root: Path, lines: Lines,
              codec: PositionCodec) -> list[types.Location]:
    return [types.Location(uri=path_uri(root / target.path),
                           range=_name_range(lines(target.path), target.start_line, target.name, codec))
            for target in targets]


def item_node(item: types.CallHierarchyItem) -> str | None:
    """The graph node an item names, as this server wrote it into `data`."""
    data = item.data
    node = data.get("node") if isinstance(data, dict) else None
    return node if isinstance(node, str) else None


def _whole(target: CallTarget, file_lines: Sequence[str], codec: PositionCodec) -> types.Range:
    end = min(target.end_line, max(len(file_lines), 1))
    last = file_lines[end - 1] if 0 < end <= len(file_lines) else ""
    return lines_range(codec, target.start_line, max(end, target.start_line), last)


def _name_range(file_lines: Sequence[str], line: int, name: str, codec: PositionCodec) -> types.Range:
    """The first occurrence of `name` on 1-based `line`; the whole line when it is not there."""
    text = file_lines[line - 1] if 0 < line <= len(file_lines) else ""
    start = _word_at(text, name)
    if start < 0:
        return span_range(codec, file_lines, line, 0, len(text)) if text else \
            types.Range(start=types.Position(line=line - 1, character=0),
                        end=types.Position(line=line - 1, character=0))
    return span_range(codec, file_lines, line, start, start + len(name))


def _site_ranges(group: CallGroup, lines: Lines, codec: PositionCodec) -> list[types.Range]:
    file_lines = lines(group.path)
    return [_name_range(file_lines, line, group.name, codec) for line in group.lines]


def _word_at(text: str, name: str) -> int:
    """Where `name` occurs in `text` as a whole identifier; -1 if nowhere."""
    start = text.find(name) if name else -1
    while start >= 0:
        before = text[start - 1] if start else " "
        after = text[start + len(name)] if start + len(name) < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return start
        start = text.find(name, start + 1)
    return -1


# ---- handlers ------------------------------------------------------------------------------


def register(server: LanguageServer) -> None:
    """Add the call hierarchy and implementation features to the server."""
    def codec(ls: PrismServer) -> PositionCodec:
        return ls.workspace.position_codec

    @server.feature(types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY)
    async def prepare(ls: PrismServer, params: types.CallHierarchyPrepareParams
                      ) -> list[types.CallHierarchyItem] | None:
        found = await _at_cursor(ls, params.text_document.uri, params.position, call_hierarchy.prepare)
        if found is None:
            return None
        state, target = found
        if target is None:
            return None
        return [hierarchy_item(target, state.root, state.indexed_lines, codec(ls))]

    @server.feature(types.CALL_HIERARCHY_INCOMING_CALLS)
    async def incoming(ls: PrismServer, params: types.CallHierarchyIncomingCallsParams
                       ) -> list[types.CallHierarchyIncomingCall] | None:
        found = await _from_item(ls, params.item, call_hierarchy.incoming)
        if found is None:
            return None
        state, groups = found
        return incoming_calls(groups, state.root, state.indexed_lines, codec(ls))

    @server.feature(types.CALL_HIERARCHY_OUTGOING_CALLS)
    async def outgoing(ls: PrismServer, params: types.CallHierarchyOutgoingCallsParams
                       ) -> list[types.CallHierarchyOutgoingCall] | None:
        found = await _from_item(ls, params.item, call_hierarchy.outgoing)
        if found is None:
            return None
        state, groups = found
        return outgoing_calls(groups, state.root, state.indexed_lines, codec(ls))

    @server.feature(types.TEXT_DOCUMENT_IMPLEMENTATION)
    async def implementation(ls: PrismServer, params: types.ImplementationParams) -> list[types.Location] | None:
        found = await _at_cursor(ls, params.text_document.uri, params.position, call_hierarchy.implementations)
        if found is None:
            return None
        state, targets = found
        return locations(targets, state.root, state.indexed_lines, codec(ls))


async def _at_cursor(ls: PrismServer, uri: str, position: types.Position,
                     query: Callable[[RepoIndex, str, int, int, str | None, ParsedBuffers], T]
                     ) -> tuple[WorkspaceState, T] | None:
    """`query(index, path, line, col, buffer, parsed)` at an LSP position, on the request
    pool; None outside every workspace or before its index opens. The buffer is the editor's,
    if open; `parsed` is the workspace's cache of parsed buffers, which hovers share."""
    located = ls.locate(uri)
    if located is None:
        return None
    state, path = located
    text = ls.open_buffer(uri)
    lines = lsp_lines(text) if text is not None else state.indexed_lines(path)
    line, col = cursor(ls.workspace.position_codec, lines, position)

    def run(cancelled: Callable[[], bool]) -> T | None:
        index = state.caught_up()
        return None if index is None else query(index, path, line, col, text, state.parsed_buffers)

    answer = await ls.run(run)
    return None if answer is None else (state, answer)


async def _from_item(ls: PrismServer, item: types.CallHierarchyItem,
                     query: Callable[[RepoIndex, str], T]) -> tuple[WorkspaceState, T] | None:
    """`query(index, node)` for the graph node a call hierarchy item names."""
    located, node = ls.locate(item.uri), item_node(item)
    if located is None or node is None:
        return None
    state = located[0]

    def run(cancelled: Callable[[], bool]) -> T | None:
        index = state.caught_up()
        return None if index is None else query(index, node)

    answer = await ls.run(run)
    return None if answer is None else (state, answer)
