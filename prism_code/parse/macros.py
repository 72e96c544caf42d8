"""What macros hide from a grammar, parsed again without them.

Rust: an item-level macro call (`cfg_rt! { pub struct JoinSet<T> {...} impl ... }`, tokio has 300)
is a token tree to tree-sitter, so the items inside it are invisible; `macro_items` parses its
braces in place as items. C and C++: a line holding only a macro's name
(`NLOHMANN_JSON_NAMESPACE_BEGIN`, which expands to `namespace nlohmann {`) reads as the start of
a declaration, and on nlohmann-json the rest of the file is one long error after it; an attribute
macro in a class head (`class ABSL_MUST_USE_RESULT Status final {`) turns the class into a
function whose body is the class's. `hiding_macro_names` finds such names; parse_source blanks
them before it parses, and `without_hiding_macros` parses again a tree of the source as it is.

Blanked or parsed in place, the file keeps its byte offsets and lines, so the nodes read the
original source.
"""

from __future__ import annotations

import bisect
import re

import tree_sitter
from tree_sitter import Node

from prism_code.parse.languages import grammar, parser


def macro_items(language: str, source: bytes, body: Node) -> Node | None:
    """The items inside the braces of a macro call, parsed where they stand; None when the braces
    hold something else (`impl_num! { i8 i16 }`, a parse with errors) or nothing."""
    if body.end_byte - body.start_byte < 2 or source[body.start_byte] != ord("{"):
        return None
    (start_row, start_column), (end_row, end_column) = body.start_point, body.end_point
    inside = tree_sitter.Range((start_row, start_column + 1), (end_row, end_column - 1),
                               body.start_byte + 1, body.end_byte - 1)
    root = tree_sitter.Parser(grammar(language), included_ranges=[inside]).parse(source).root_node
    if root.has_error or root.named_child_count == 0:
        return None
    return root


# Real files hold a few dozen such names (70 at most in nlohmann-json's json.hpp); a file with
# thousands is generated or hostile, and is parsed as it is.
MAX_MACRO_NAMES = 1_000

# One upper-case name alone on its line, maybe with a trailing `//` comment: with a colon, a macro
# standing for an access specifier (nlohmann-json's `JSON_PRIVATE_UNLESS_TESTED:`); with arguments
# and no semicolon, an attribute of the declaration below (`JSON_HEDLEY_NON_NULL(3)`).
# Matched from the newline before it (a literal start is found fast), so never on a file's first line.
_BARE_NAME = re.compile(rb"\n[ \t]*([A-Z_][A-Z0-9_]*[ \t]*(?::(?!:)|\([^;{}()\n]*\))?)[ \t]*(?://[^\n]*)?(?=\n|\Z)")
# Line ends after which a new declaration starts: the bare name is not part of the previous one.
_DECLARATION_ENDS = (b";", b"{", b"}", b"*/", b"public:", b"protected:", b"private:")
# A name followed by "(": the bare name above it is that function's return type or attribute.
_FUNCTION_START = re.compile(rb"^[ \t]*[A-Za-z_]\w*[ \t]*\(")


# `class|struct|union MACRO... Name [final] [:|{]`: upper-case names between the keyword and the
# class's own name are attribute or export macros (`class JSON_API Value`, `struct ABSL_LOCKABLE Mutex`).
_CLASS_HEAD_MACRO = re.compile(rb"(?:class|struct|union)[ \t]+((?:[A-Z][A-Z0-9_]*[A-Z0-9]\s+)+)[A-Za-z_]\w*"
                               rb"(?:\s+final)?\s*[:{]")


def hiding_macro_names(source: bytes) -> list[tuple[int, int]]:
    """Byte spans, in order, of the bare macro-name lines and class-head macros of a C or C++
    source. Only names between two declarations count, never a type on the line above a
    function's name or an argument on a line of its own; none past MAX_MACRO_NAMES."""
    spans = [head.span(1) for head in _CLASS_HEAD_MACRO.finditer(source)]
    for bare in _BARE_NAME.finditer(source):
        line_start, line_end = bare.start() + 1, bare.end()
        if _between_declarations(source, line_start, line_end, typed=not bare.group(1).endswith(b")")):
            spans.append(bare.span(1))
    if len(spans) > MAX_MACRO_NAMES:
        return []
    spans.sort()
    return spans


def blanked(source: bytes, spans: list[tuple[int, int]]) -> bytes:
    """`source` with the spans blanked: the same length and the same lines, so a tree of it reads
    the original source."""
    if not spans:
        return source
    masked = bytearray(source)
    for start, end in spans:
        masked[start:end] = re.sub(rb"[^\n]", b" ", source[start:end])
    return bytes(masked)


def without_hiding_macros(language: str, source: bytes, tree: tree_sitter.Tree) -> tree_sitter.Tree:
    """For a tree of the source as it is (an editor's buffer): the tree with the macro names
    blanked, when that parse has fewer errors; else `tree`. (parse_source blanks them before
    its one parse: on redis, curl, abseil-cpp and nlohmann-json that lost no real definition.)"""
    spans = hiding_macro_names(source)
    errors = _errors(tree) if spans else []
    if not _any_error_near(errors, spans):
        return tree  # the names derailed nothing: a reparse would only cost time
    # The blanked names keep their length, so the old tree, told where they were, is reparsed
    # incrementally: tree-sitter reuses what the names did not derail.
    edited = tree.copy()
    row, counted = 0, 0  # rows before byte `counted`; the spans come in order
    for start, end in spans:
        row += source.count(b"\n", counted, start)
        end_row = row + source.count(b"\n", start, end)
        start_point = (row, start - (source.rfind(b"\n", 0, start) + 1))
        end_point = (end_row, end - (source.rfind(b"\n", 0, end) + 1))
        edited.edit(start, end, end, start_point, end_point, end_point)
        counted = start
    candidate = parser(language).parse(blanked(source, spans), edited)
    if not candidate.root_node.has_error or _error_bytes(_errors(candidate)) < _error_bytes(errors):
        return candidate
    return tree


# How far after a macro name the error it causes may start: about the rest of its line and the
# next. A file whose errors all lie elsewhere (a macro inside a function) is not parsed again.
_ERROR_REACH = 160


def _any_error_near(errors: list[Node], spans: list[tuple[int, int]]) -> bool:
    """Whether an error overlaps a span or starts within _ERROR_REACH after it (spans in order,
    apart from one another, so the first span reaching an error is the one to check)."""
    reaches = [end + _ERROR_REACH for _, end in spans]
    for error in errors:
        index = bisect.bisect_left(reaches, error.start_byte)
        if index < len(spans) and spans[index][0] <= error.end_byte:
            return True
    return False


def _between_declarations(source: bytes, line_start: int, line_end: int, typed: bool) -> bool:
    """Whether the line from `line_start` to `line_end` sits between two declarations; `typed`:
    whether it could be the return type of a function whose name starts the next line (a name
    with arguments cannot)."""
    above = _line_above(source, line_start).strip()
    if above.endswith(b"\\"):  # the line continues a #define
        return False
    if not above.startswith(b"//") and b"//" in above:  # `}  // namespace absl`
        above = above[: above.index(b"//")].rstrip()
    if above and not (above.endswith(_DECLARATION_ENDS) or above.startswith((b"#", b"//"))):
        return False
    below = _line_below(source, line_end)
    first = below.lstrip()[:1]
    if first and not (first.isalpha() or first in b"_#/}~"):
        return False
    return not typed or _FUNCTION_START.match(below) is None


def _line_above(source: bytes, line_start: int) -> bytes:
    """The nearest line above the one starting at `line_start` that is not blank; b"" at the top."""
    end = line_start - 1  # the newline ending the line above
    while end > 0:
        start = source.rfind(b"\n", 0, end) + 1
        if source[start:end].strip():
            return source[start:end]
        end = start - 1
    return b""


def _line_below(source: bytes, line_end: int) -> bytes:
    """The nearest line below the one ending at `line_end` that is not blank; b"" at the end."""
    start = line_end + 1
    while start < len(source):
        end = source.find(b"\n", start)
        end = len(source) if end < 0 else end
        if source[start:end].strip():
            return source[start:end]
        start = end + 1
    return b""


def _errors(tree: tree_sitter.Tree) -> list[Node]:
    """The ERROR nodes, nested ones too, and the MISSING ones, found by descending only where an
    error is. Nested errors count: two parses may both fail from an include guard to the end of
    the file, and the one that read the classes inside has fewer errors within."""
    found = []
    pending = [tree.root_node]
    while pending:
        node = pending.pop()
        if node.type == "ERROR" or node.is_missing:
            found.append(node)
        pending.extend(child for child in node.children if child.has_error)
    return found


def _error_bytes(errors: list[Node]) -> int:
    # A MISSING node is empty: it counts one byte, so a parse without it is the better one.
    return sum(max(1, error.end_byte - error.start_byte) for error in errors)
