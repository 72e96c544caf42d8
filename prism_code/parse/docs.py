"""Documentation of a definition: a Python docstring or the comment block right above it."""

from __future__ import annotations

import inspect

from tree_sitter import Node

from prism_code.parse.nodes import text


def python_docstring(body: Node | None, source: bytes) -> str:
    """The first statement of `body` when it is a plain string literal, cleaned like `help()` does."""
    if body is None:
        return ""
    for statement in body.named_children:
        if statement.type == "comment":
            continue
        if statement.type != "expression_statement" or statement.named_child_count != 1:
            return ""
        string = statement.named_child(0)
        if string is None or string.type != "string" or string.child_count < 2:
            return ""
        opening, closing = string.child(0), string.child(string.child_count - 1)
        if opening is None or closing is None:
            return ""
        return inspect.cleandoc(text(source, opening.end_byte, closing.start_byte)).strip()
    return ""


def comment_above(lines: list[bytes], row: int, hash_comments: bool, skipped_prefixes: tuple[bytes, ...],
                  line_marker: bytes | None = None) -> str:
    """The contiguous comment block ending on the line above 0-based `row`, markers stripped.

    `hash_comments` selects `#` comments (Python) instead of `//` and `/* */`; `line_marker`, when
    given, selects line comments starting with it (`--` in Lua and Haskell; `//` keeps `/* */`).
    Lines starting with one of `skipped_prefixes` (Rust attributes) may sit between the comment
    and the definition.
    """
    if line_marker is not None and line_marker != b"//":
        return _line_comments_above(lines, row, line_marker)
    collected: list[str] = []  # bottom-up
    index = row - 1
    if not hash_comments and _doc_block_above_blank_line(lines, index):
        index -= 1
    while index >= 0:
        line = lines[index].strip()
        if not collected and skipped_prefixes and line.startswith(skipped_prefixes):
            index -= 1
        elif hash_comments:
            if not line.startswith(b"#"):
                break
            collected.append(_strip_marker(line, b"#"))
            index -= 1
        elif line.startswith(b"//"):
            collected.append(_strip_marker(line, b"/"))
            index -= 1
        elif line.endswith(b"*/"):
            top = _block_comment_top(lines, index)
            if top is None:
                break
            collected.extend(reversed(_block_comment_lines(lines[top : index + 1])))
            index = top - 1
        else:
            break
    return "\n".join(reversed(collected)).strip()


def _line_comments_above(lines: list[bytes], row: int, marker: bytes) -> str:
    """`# text` / `-- text` lines right above `row`; a Haddock `-- |` and LDoc `---` lose their mark."""
    collected: list[str] = []  # bottom-up
    index = row - 1
    while index >= 0 and lines[index].lstrip().startswith(marker):
        body = lines[index].strip().lstrip(marker[:1])
        if body.startswith((b" |", b" ^", b"|", b"^")):
            body = body.lstrip()[1:]
        collected.append(body.decode("utf-8", "replace").strip())
        index -= 1
    return "\n".join(reversed(collected)).strip()


def _doc_block_above_blank_line(lines: list[bytes], index: int) -> bool:
    """Whether line `index` is blank under a `/** ... */` block that does not open the file: a
    JSDoc or Javadoc block documents what follows even across one blank line (express writes
    them so), where a plain comment or a file's licence header would not."""
    if index < 1 or lines[index].strip():
        return False
    above = lines[index - 1].strip()
    if not above.endswith(b"*/"):
        return False
    top = _block_comment_top(lines, index - 1)
    return top is not None and top > 0 and lines[top].strip().startswith(b"/**")


def _strip_marker(line: bytes, marker: bytes) -> str:
    """'/// text' or '# text' -> 'text' (also '//!' doc comments)."""
    body = line.lstrip(marker)
    if marker == b"/" and body.startswith(b"!"):
        body = body[1:]
    return body.decode("utf-8", "replace").strip()


def _block_comment_top(lines: list[bytes], bottom: int) -> int | None:
    """Index of the line opening the `/* */` comment that closes on `bottom`, if it starts its line."""
    for index in range(bottom, -1, -1):
        line = lines[index].strip()
        position = line.find(b"/*")
        if position >= 0:
            return index if position == 0 else None
    return None


def _block_comment_lines(block: list[bytes]) -> list[str]:
    cleaned: list[str] = []
    last = len(block) - 1
    for number, raw in enumerate(block):
        line = raw.strip()
        if number == 0:
            line = line[2:].lstrip(b"*!")
        if number == last:
            line = line[:-2].rstrip(b"*")
        if number != 0 and line.startswith(b"*"):
            line = line[1:]
        cleaned.append(line.decode("utf-8", "replace").strip())
    return cleaned
