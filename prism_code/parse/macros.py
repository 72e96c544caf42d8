"""What macros hide from a grammar, parsed again without them.

Rust: an item-level macro call (`cfg_rt! { pub struct JoinSet<T> {...} impl ... }`, tokio has 300)
is a token tree to tree-sitter, so the items inside it are invisible; `macro_items` parses its
braces in place as items. C and C++: a line holding only a macro's name
(`NLOHMANN_JSON_NAMESPACE_BEGIN`, which expands to `namespace nlohmann {`) reads as the start of
a declaration, and on nlohmann-json the rest of the file is one long error after it; an attribute
macro in a class head (`class ABSL_MUST_USE_RESULT Status final {`) turns the class into a
function whose body is the class's. `without_hiding_macros` parses the file again with those
names blanked.

Both parses keep the file's byte offsets and lines, so their nodes read the original source.
"""

from __future__ import annotations

import re
from functools import cache

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


# One upper-case name alone on its line, maybe with a trailing `//` comment: with a colon, a macro
# standing for an access specifier (nlohmann-json's `JSON_PRIVATE_UNLESS_TESTED:`); with arguments
# and no semicolon, an attribute of the declaration below (`JSON_HEDLEY_NON_NULL(3)`).
_BARE_NAME = re.compile(rb"^[ \t]*([A-Z_][A-Z0-9_]*[ \t]*(?::(?!:)|\([^;{}()]*\))?)[ \t]*(?://.*)?$")
# Line ends after which a new declaration starts: the bare name is not part of the previous one.
_DECLARATION_ENDS = (b";", b"{", b"}", b"*/")
# A name followed by "(": the bare name above it is that function's return type or attribute.
_FUNCTION_START = re.compile(rb"^[ \t]*[A-Za-z_]\w*[ \t]*\(")


# `class|struct|union MACRO Name [final] [:|{]`: an upper-case name between the keyword and the
# class's own name is an attribute or export macro (`class JSON_API Value`, `struct ABSL_LOCKABLE Mutex`).
_CLASS_HEAD_MACRO = re.compile(rb"\b(?:class|struct|union)[ \t]+([A-Z][A-Z0-9_]*[A-Z0-9])\s+[A-Za-z_]\w*"
                               rb"(?:\s+final)?\s*[:{]")


def without_hiding_macros(language: str, source: bytes, tree: tree_sitter.Tree) -> tree_sitter.Tree:
    """The tree of `source` with bare macro-name lines and class-head macros blanked, when that
    parse has fewer errors; else `tree`. Only names between two declarations are blanked, never
    a type on the line above a function's name or an argument on a line of its own."""
    masked = bytearray(source)
    changed = False
    for head in _CLASS_HEAD_MACRO.finditer(source):
        masked[head.start(1): head.end(1)] = b" " * (head.end(1) - head.start(1))
        changed = True
    lines = source.split(b"\n")
    offset = 0
    for number, line in enumerate(lines):
        bare = _BARE_NAME.match(line)
        if bare is not None and _between_declarations(lines, number, typed=not bare.group(1).endswith(b")")):
            masked[offset + bare.start(1): offset + bare.end(1)] = b" " * (bare.end(1) - bare.start(1))
            changed = True
        offset += len(line) + 1
    if not changed:
        return tree
    candidate = parser(language).parse(bytes(masked))
    if not candidate.root_node.has_error or _error_bytes(language, candidate) < _error_bytes(language, tree):
        return candidate
    return tree


def _between_declarations(lines: list[bytes], number: int, typed: bool) -> bool:
    """Whether line `number` sits between two declarations; `typed`: whether it could be the
    return type of a function whose name starts the next line (a name with arguments cannot)."""
    above = next((line.strip() for line in reversed(lines[:number]) if line.strip()), b"")
    if not above.startswith(b"//") and b"//" in above:  # `}  // namespace absl`
        above = above[: above.index(b"//")].rstrip()
    if above and not (above.endswith(_DECLARATION_ENDS) or above.startswith((b"#", b"//"))):
        return False
    below = next((line for line in lines[number + 1:] if line.strip()), b"")
    first = below.lstrip()[:1]
    if first and not (first.isalpha() or first in b"_#/}~"):
        return False
    return not typed or _FUNCTION_START.match(below) is None


@cache
def _error_query(language: str) -> tree_sitter.Query:
    return tree_sitter.Query(grammar(language), "(ERROR) @error")


def _error_bytes(language: str, tree: tree_sitter.Tree) -> int:
    errors = tree_sitter.QueryCursor(_error_query(language)).captures(tree.root_node).get("error", [])
    return sum(node.end_byte - node.start_byte for node in errors)
