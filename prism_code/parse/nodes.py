"""Small helpers over tree-sitter nodes and the source bytes they index."""

from __future__ import annotations

from tree_sitter import Node


def text(source: bytes, start: int, end: int) -> str:
    """Decode a byte slice; invalid UTF-8 becomes U+FFFD instead of raising."""
    return source[start:end].decode("utf-8", "replace")


def node_text(source: bytes, node: Node) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def collapse(value: str) -> str:
    """Collapse every whitespace run to one space."""
    return " ".join(value.split())


def first_line(node: Node) -> int:
    return node.start_point[0] + 1


def last_line(node: Node) -> int:
    """1-based last line; a node ending at column 0 (a trailing newline) ends on the line before."""
    row, column = node.end_point
    if column == 0 and row > node.start_point[0]:
        return row
    return row + 1


def unquote(value: str) -> str:
    """Strip one layer of matching quotes: '"x"', "'x'", "`x`"."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1]
    return value


def first_named_child(node: Node) -> Node | None:
    """The first named child, None for a leaf (`Node.named_child` raises instead)."""
    return node.named_child(0) if node.named_child_count else None
