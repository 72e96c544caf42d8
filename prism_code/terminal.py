"""Repository text made safe to print on a terminal.

File names, qualnames, docstrings and model output come from the repository, and a
repository can hold a file named `\\x1b]0;pwned\\x07.py` or `a\\nb.py`: printed raw, the first
drives the terminal (title, colours, cursor, even clipboard on some) and the second forges
an output line. Text output escapes them, the way `ls -b` does; `--json` output needs
nothing more, json.dumps escapes control characters already.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

# Characters a terminal acts on rather than shows: C0, DEL and C1 controls are Unicode
# category Cc; line/paragraph separators and the bidirectional overrides reorder or break
# what is shown ("Trojan Source").
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_INVISIBLE = {0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _SHORT:
        return _SHORT[ch]
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def _needs_escape(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F or code in _INVISIBLE or 0xD800 <= code <= 0xDFFF


def shown(name: str | os.PathLike[str]) -> str:
    """A path or qualname as one unambiguous line: controls and backslashes escaped (`ls -b`)."""
    text = os.fsdecode(name)
    if not any(ch == "\\" or _needs_escape(ch) for ch in text):
        return text
    return "".join("\\\\" if ch == "\\" else _escape(ch) if _needs_escape(ch) else ch for ch in text)


def shown_text(text: str) -> str:
    """Lines of free text (a completion, an error message): line breaks (CRLF shown as LF) and
    tabs kept, every other control escaped; backslashes stay as they are, code is full of them."""
    text = text.replace("\r\n", "\n")
    if not any(_needs_escape(ch) and ch not in "\n\t" for ch in text):
        return text
    return "".join(_escape(ch) if _needs_escape(ch) and ch not in "\n\t" else ch for ch in text)


class TerminalFormatter(logging.Formatter):
    """Log lines whose arguments (paths, names, exceptions) are escaped like `shown`."""

    def format(self, record: logging.LogRecord) -> str:
        if record.args:
            record = logging.makeLogRecord(record.__dict__)
            if isinstance(record.args, Mapping):
                record.args = {key: _shown_arg(value) for key, value in record.args.items()}
            elif record.args is not None:
                record.args = tuple(_shown_arg(value) for value in record.args)
        return shown_text(super().format(record))


def _shown_arg(value: Any) -> Any:
    if isinstance(value, (str, os.PathLike)):
        return shown(value)
    if isinstance(value, BaseException):
        return shown(str(value))
    return value
