"""LSP positions and URIs to and from the library's lines, columns and paths.

LSP positions are 0-based and count columns in the client's position encoding (UTF-16
unless negotiated otherwise); the library counts 1-based lines and Python characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path, uri_scheme
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition


def uri_path(uri: str) -> Path | None:
    """The local file a URI names; None for other schemes (untitled:, git:, ...)."""
    if uri_scheme(uri) not in ("file", ""):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None


def path_uri(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()


def lsp_lines(text: str) -> list[str]:
    """Lines as LSP and the library count them: split at "\n" only. (str.splitlines also
    splits at form feeds and Unicode line separators, shifting every line after one.)"""
    return text.split("\n")


def cursor(codec: PositionCodec, lines: Sequence[str], position: types.Position) -> tuple[int, int]:
    """(1-based line, 0-based character column) of an LSP position."""
    server = codec.position_from_client_units(list(lines), position)
    return server.line + 1, server.character


def span_range(codec: PositionCodec, lines: Sequence[str], line: int, start: int,
               end: int) -> types.Range:
    """The LSP range of characters [start, end) on 1-based `line`."""
    return types.Range(
        start=codec.position_to_client_units(list(lines), ServerTextPosition(line - 1, start)),
        end=codec.position_to_client_units(list(lines), ServerTextPosition(line - 1, end)))


def lines_range(codec: PositionCodec, start_line: int, end_line: int,
                last_line: str) -> types.Range:
    """Whole lines start_line..end_line (1-based, inclusive), ending at the last one's end."""
    return types.Range(start=types.Position(line=start_line - 1, character=0),
                       end=types.Position(line=end_line - 1,
                                          character=codec.client_num_units(last_line)))
