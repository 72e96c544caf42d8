"""The store's two large JSON columns (a file's parse, a fragment's related set) are kept
zlib-compressed: on sympy they were 152 of the database's 319 MB as text and compress about
5x, for ~1 s more per first index. Rows written as plain text by earlier versions still read."""

from __future__ import annotations

import zlib

# zlib's fastest level: a related set's JSON (repeated paths) compresses ~5x at level 1 as
# at 6, at a third of the time.
PACK_LEVEL = 1


def packed(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), PACK_LEVEL)


def unpacked(value: str | bytes) -> str | bytes:
    """JSON text for json.loads, from a packed value or a plain-text one."""
    return zlib.decompress(value) if isinstance(value, bytes) else value
