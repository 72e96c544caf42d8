"""Parsing a large batch of files on every core (worker_pool), in the order given."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath
from typing import Protocol, TypeVar

from prism_code.cancel import CancelCheck
from prism_code.parse import parse_source
from prism_code.parse.model import ParsedFile
from prism_code.worker_pool import ordered_map, usable_cores

# Source bytes below which one process parses: starting a worker costs about a second of
# imports (tree-sitter and its grammars), about what parsing 4 MB saves on a second core
# (sympy, 29 MB, parses in ~18 s in one process).
PARALLEL_MIN_BYTES = 4 << 20
# Files per message to a worker: fewer round trips, while cancelling still stops soon.
CHUNK_FILES = 16


def decode(data: bytes) -> str:
    # Invalid UTF-8 must not stop indexing: keep what decodes, mark the rest.
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n")


def parse_item(item: tuple[str, bytes]) -> ParsedFile | None:
    path, data = item
    return parse_source(path, decode(data).encode("utf-8"))


def parsed_files(items: Sequence[tuple[str, bytes]], cancelled: CancelCheck | None = None
                 ) -> Iterator[ParsedFile | None]:
    """Each (path, bytes)'s parse (None: a language not parsed), in order; stops early
    (without raising) when `cancelled`."""
    workers = usable_cores() if sum(len(data) for _, data in items) >= PARALLEL_MIN_BYTES else 1
    return ordered_map(parse_item, items, workers, cancelled, chunksize=CHUNK_FILES)


class _HasPath(Protocol):
    @property
    def path(self) -> str: ...


Item = TypeVar("Item", bound=_HasPath)


def open_first(items: Sequence[Item], opened: Sequence[str]) -> list[Item]:
    """`items` in the order a first index should parse them, so that what the person is
    looking at is searchable first: the files open in the editor, then the other files of
    their folders, then the rest, each group in the order given."""
    open_set = set(opened)
    folders = {PurePosixPath(p).parent for p in opened}

    def group(item: Item) -> int:
        if item.path in open_set:
            return 0
        return 1 if PurePosixPath(item.path).parent in folders else 2

    return sorted(items, key=group)  # stable
