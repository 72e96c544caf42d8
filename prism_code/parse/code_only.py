"""A function's code without its comments and docstrings, for a model that judges what code does.

A one-sentence description is cheap to predict after a body whose docstring already says it
in other words; the likelihood rerank would then score a function's prose, not its code. The
text is parsed with the file's grammar, so a `#` inside a string is not taken for a comment.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

from tree_sitter import Node

from prism_code.parse.languages import LANGUAGES, parser

_COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment", "doc_comment",
                            "multiline_comment", "haddock"})  # Swift, Haskell


def _is_python_docstring(node: Node) -> bool:
    """A statement that is only a string literal: a docstring or a string used as a comment."""
    return (node.type == "expression_statement" and node.named_child_count == 1
            and (child := node.named_child(0)) is not None and child.type in ("string", "concatenated_string"))


def _prose(node: Node, language: str) -> Iterator[Node]:
    if node.type in _COMMENT_TYPES or (language == "python" and _is_python_docstring(node)):
        yield node
        return
    for child in node.children:
        yield from _prose(child, language)


def code_only(text: str, language: str) -> str:
    """`text` with every comment and (Python) string statement removed, and with the lines the
    removal left empty dropped (blank lines too); as it was for a language the index does not parse."""
    if language not in LANGUAGES:
        return text
    # A method's text is indented; dedented, it parses as the top-level definition it reads as.
    source = textwrap.dedent(text).encode("utf-8", "surrogatepass")
    tree = parser(language).parse(source)
    spans = sorted((n.start_byte, n.end_byte) for n in _prose(tree.root_node, language))
    if not spans:
        return text
    kept, at = [], 0
    for start, end in spans:
        if start >= at:
            kept.append(source[at:start])
            at = end
    kept.append(source[at:])
    stripped = b"".join(kept).decode("utf-8", "replace")
    return "\n".join(line.rstrip() for line in stripped.splitlines() if line.strip())
