"""Definitions a grammar lost to one file-wide ERROR node, read again piece by piece.

Some grammars do not recover from a construct they cannot read: Kotlin's turns the rest of a
file into one ERROR node after an annotated constructor on its own line (kotlinx-coroutines'
Channel.kt loses 715 lines) or after a byte that is no character, and sometimes makes the whole
file one ERROR (Semaphore.kt). The ERROR's lines are then cut where a line starts in column 0
with something other than a closing bracket (where top-level declarations start) and each piece
is parsed alone, on the same bytes, as tree-sitter's included ranges allow (positions stay the
file's). A piece that fails again is restarted from the line after its own ERROR begins, a
bounded number of times. What the pieces read replaces what the ERROR held when it holds more
definitions. A member of a class whose header was lost comes back as a top-level definition:
its name and lines are right, its owner is not known.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace

import tree_sitter
from tree_sitter import Node

from prism_code.parse.extract import extract
from prism_code.parse.languages import grammar
from prism_code.parse.model import ParsedFile

log = logging.getLogger(__name__)

# An ERROR node on one or two lines loses little; longer ones are where definitions go missing.
MIN_SALVAGED_LINES = 2
# Restarts per piece: each parses the rest of the piece again, so the work stays a small multiple
# of one parse even when every restart fails.
MAX_RESTARTS = 8
# Pieces per file: past this many, the rest of the ERROR is one last piece.
MAX_PIECES = 2000

# A line where a top-level declaration may start: column 0, not a closing bracket or a comment's body.
_DECLARATION_START = re.compile(rb"^(?![\s}\])*/]|$)", re.MULTILINE)


def salvage(path: str, language: str, source: bytes, tree: tree_sitter.Tree, parsed: ParsedFile) -> ParsedFile:
    """`parsed` with what its largest file-wide ERROR swallowed read again, when that finds more."""
    error = _swallowing_error(tree.root_node)
    if error is None:
        return parsed
    start, end = error.start_byte, error.end_byte
    pieces = [_read_piece(path, language, source, piece_start, piece_end)
              for piece_start, piece_end in _pieces(source, start, end)]
    lines = (error.start_point[0] + 1, error.end_point[0] + 1)
    before = sum(1 for d in parsed.definitions if start <= d.start_byte < end)
    after = sum(len(piece.definitions) for piece in pieces)
    if after <= before:
        return parsed
    log.info("%s: the grammar lost lines %d-%d to a parse error; read again piece by piece: %d definitions, "
             "%d before", path, lines[0], lines[1], after, before)
    return _merged(parsed, pieces, start, end, lines)


def _pieces(source: bytes, start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) cut before every line a top-level declaration may start on."""
    cuts = [start]
    for match in _DECLARATION_START.finditer(source, start + 1, end):
        if len(cuts) >= MAX_PIECES:
            break
        cuts.append(match.start())
    cuts.append(end)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _read_piece(path: str, language: str, source: bytes, start: int, end: int) -> ParsedFile:
    """The definitions of source[start:end]; past a failure, of the lines after it."""
    found: list[ParsedFile] = []
    for _ in range(MAX_RESTARTS):
        tree = _parse_range(language, source, start, end)
        parsed = extract(path, language, source, tree)
        again = _swallowing_error(tree.root_node)
        if again is None:
            found.append(parsed)
            break
        found.append(_before(parsed, again.start_byte, again.start_point[0] + 1))
        start = _next_line(source, again.start_byte)
        if start >= end:
            break
    first = found[0]
    return replace(first, definitions=[d for piece in found for d in piece.definitions],
                   calls=[c for piece in found for c in piece.calls],
                   imports=[imp for piece in found for imp in piece.imports])


def _swallowing_error(root: Node) -> Node | None:
    """The root itself when it is an ERROR, else its longest ERROR child, if long enough."""
    candidates = [root] if root.type == "ERROR" else [child for child in root.children if child.type == "ERROR"]
    best = max(candidates, key=lambda node: node.end_point[0] - node.start_point[0], default=None)
    if best is None or best.end_point[0] - best.start_point[0] < MIN_SALVAGED_LINES:
        return None
    return best


def _next_line(source: bytes, offset: int) -> int:
    newline = source.find(b"\n", offset)
    return len(source) if newline < 0 else newline + 1


def _point(source: bytes, offset: int) -> tuple[int, int]:
    row = source.count(b"\n", 0, offset)
    return row, offset - (source.rfind(b"\n", 0, offset) + 1)


def _parse_range(language: str, source: bytes, start: int, end: int) -> tree_sitter.Tree:
    parser = tree_sitter.Parser(grammar(language))  # a fresh one: the thread's parser keeps its ranges
    parser.included_ranges = [tree_sitter.Range(_point(source, start), _point(source, end), start, end)]
    return parser.parse(source)


def _before(parsed: ParsedFile, offset: int, line: int) -> ParsedFile:
    """What a restart read before its own ERROR began (at byte `offset`, on 1-based `line`)."""
    return replace(parsed, definitions=[d for d in parsed.definitions if d.end_byte <= offset],
                   calls=[c for c in parsed.calls if c.line < line],
                   imports=[imp for imp in parsed.imports if imp.line < line])


def _merged(parsed: ParsedFile, pieces: list[ParsedFile], start: int, end: int,
            lines: tuple[int, int]) -> ParsedFile:
    """`parsed` outside bytes [start, end) (lines `lines`, 1-based inclusive), the pieces inside."""
    first, last = lines
    definitions = [d for d in parsed.definitions if not start <= d.start_byte < end]
    calls = [c for c in parsed.calls if not first <= c.line <= last]
    imports = [imp for imp in parsed.imports if not first <= imp.line <= last]
    for piece in pieces:
        definitions.extend(piece.definitions)
        calls.extend(piece.calls)
        imports.extend(piece.imports)
    definitions.sort(key=lambda d: (d.start_byte, -d.end_byte))
    calls.sort(key=lambda c: c.line)
    imports.sort(key=lambda imp: imp.line)
    return replace(parsed, definitions=definitions, calls=calls, imports=imports)
