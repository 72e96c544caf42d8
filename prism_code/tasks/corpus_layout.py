"""Find's lexical corpus as blocks: each file's rows of one kind, laid out in the corpus's order.

A corpus rebuilt after a one-file edit takes the previous corpus's joined term bags and columns
cut around the blocks that changed or moved, and joins them with those blocks' own: a few
concatenations of arrays rather than one per row or per file (issue #29; decisions.md, "After an
edit, find's corpus is rebuilt for the edited file and spliced").
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, chain
from typing import ClassVar, TypeVar

from prism_code.fragments import Fragment
from prism_code.parse.model import Definition
from prism_code.retrieval.lexical import BagRun, TermBag

T = TypeVar("T")


# One row of the corpus as a rebuild reuses it: (source, doc above, definition, card, tokens,
# bag, name bag).
Row = tuple[str, str, Definition | None, str, list[str], TermBag, TermBag]


@dataclass(frozen=True)
class Rows:
    """One file's corpus rows of one kind (its functions, its types or its file unit), which
    the corpus holds one after the other; `order` is what the corpus sorts them by, and the bags
    are joined once here, so the corpus's BM25 matrices are one concatenation per file."""

    fragments: list[Fragment]
    order: list[str]
    code: list[str]
    docs: list[str]
    definitions: list[Definition | None]
    cards: list[str]
    tokens: list[list[str]]
    bags: list[TermBag]
    name_bags: list[TermBag]
    paths: tuple[str, ...]
    qualnames: tuple[str, ...]

    # A block's bags are joined when it is spliced into a corpus that already has the others'
    # (after an edit): a first corpus joins every row's bags at once.
    @cached_property
    def lexical(self) -> BagRun:
        return BagRun.of(self.bags)

    @cached_property
    def names(self) -> BagRun:
        return BagRun.of(self.name_bags)

    @classmethod
    def of(cls, fragments: list[Fragment], order: list[str], rows: Sequence[Row]) -> Rows:
        if not rows:  # most files have no type or no file unit: one shared empty block
            return NO_ROWS
        bags, name_bags = [r[5] for r in rows], [r[6] for r in rows]
        return cls(fragments, order, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                   [r[3] for r in rows], [r[4] for r in rows], bags, name_bags,
                   tuple(f.path for f in fragments), tuple(f.qualname for f in fragments))

    def rows(self) -> list[Row]:
        return list(zip(self.code, self.docs, self.definitions, self.cards, self.tokens, self.bags, self.name_bags))

    def part(self, start: int, stop: int) -> Rows:
        return Rows.of(self.fragments[start:stop], self.order[start:stop], self.rows()[start:stop])


NO_ROWS = Rows([], [], [], [], [], [], [], [], [], (), ())


def corpus_order(files: Iterable[tuple[Rows, Rows, Rows]]) -> list[Rows]:
    """The corpus's rows as stretches of files' rows (each file's functions, types and file
    unit), in the order a corpus has always had: every function by key, then every type by key,
    then every file unit by path."""
    kinds = list(files)
    return [rows for kind in range(3) for rows in _in_order([k[kind] for k in kinds])]


def _in_order(blocks: list[Rows]) -> list[Rows]:
    """The rows of `blocks` (each sorted by its `order`) in `order` across blocks: each block
    whole, one after the other, unless two blocks' ranges interleave (a path that is another's
    followed by '#'), whose rows are then merged one by one."""
    present = sorted((b for b in blocks if b.order), key=lambda b: b.order[0])
    if all(a.order[-1] < b.order[0] for a, b in zip(present, present[1:])):
        return present
    runs: list[tuple[int, int, int]] = []  # (block, start, stop)
    for _, n, i in heapq.merge(*[[(key, n, i) for i, key in enumerate(b.order)] for n, b in enumerate(present)]):
        if runs and runs[-1][0] == n and runs[-1][2] == i:
            runs[-1] = (n, runs[-1][1], i + 1)
        else:
            runs.append((n, i, i + 1))
    return [present[n].part(start, stop) for n, start, stop in runs]


@dataclass(frozen=True)
class Layout:
    """The corpus's rows as its blocks (each file's rows of one kind) in order, the row each
    block starts at, and every row's term bags joined. The bags of a corpus rebuilt after an
    edit are the previous corpus's, cut around the blocks that changed or moved, joined with
    those blocks' own: a few concatenations of arrays, not one per file."""

    COLUMNS: ClassVar[tuple[str, ...]] = ("code", "docs", "definitions", "cards", "tokens", "unit_paths", "unit_names")

    blocks: list[Rows]
    starts: list[int]  # the row each block starts at; the number of rows last
    # The rows again, as stretches (start, stop) of the previous layout's rows and blocks of their own.
    pieces: list[tuple[int, int] | Rows]
    lexical: BagRun
    names: BagRun

    @classmethod
    def of(cls, blocks: list[Rows], previous: Layout | None) -> Layout:
        starts = [0, *accumulate(len(b.order) for b in blocks)]
        at = {id(b): k for k, b in enumerate(previous.blocks)} if previous is not None else {}
        # Consecutive blocks that were consecutive in the previous layout become one stretch of
        # its rows; any other block (a file that changed, one that moved) stands alone.
        pieces: list[tuple[int, int] | Rows] = []
        for block in blocks:
            k = at.get(id(block))  # the previous blocks are alive: an id there is theirs
            before = pieces[-1] if pieces else None
            if k is None:
                pieces.append(block)
            elif isinstance(before, tuple) and before[1] == k:
                pieces[-1] = (before[0], k + 1)
            else:
                pieces.append((k, k + 1))

        if previous is None:
            return cls(blocks, starts, pieces, BagRun.of(list(chain.from_iterable([b.bags for b in blocks]))),
                       BagRun.of(list(chain.from_iterable([b.name_bags for b in blocks]))))
        pieces = [p if isinstance(p, Rows) else (previous.starts[p[0]], previous.starts[p[1]]) for p in pieces]
        lexical: list[BagRun] = []
        names: list[BagRun] = []
        for piece in pieces:
            if isinstance(piece, Rows):
                lexical.append(piece.lexical)
                names.append(piece.names)
            else:
                lexical.append(previous.lexical.part(*piece))
                names.append(previous.names.part(*piece))
        return cls(blocks, starts, pieces, BagRun.joined(lexical), BagRun.joined(names))

    def spliced(self, column: Callable[[Rows], Sequence[T]], previous: Sequence[T] | None) -> list[T]:
        """One column of the corpus from the previous corpus's (`previous`, of the previous
        layout's rows) and the blocks of their own."""
        parts: list[Sequence[T]] = []
        for piece in self.pieces:
            if isinstance(piece, Rows):
                parts.append(column(piece))
            else:
                assert previous is not None
                parts.append(previous[piece[0]:piece[1]])
        return list(chain.from_iterable(parts))

    def joined(self, column: Callable[[Rows], Sequence[T]]) -> list[T]:
        """One column of the corpus: every block's, joined."""
        return list(chain.from_iterable([column(b) for b in self.blocks]))

    def row(self, i: int) -> tuple[Rows, int]:
        """Row i's block and its place there."""
        k = bisect_right(self.starts, i) - 1
        return self.blocks[k], i - self.starts[k]
