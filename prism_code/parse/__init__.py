"""Parsing layer: tree-sitter parse of one source file into definitions, calls, imports and blocks."""

from __future__ import annotations

from prism_code.parse.extract import extract
from prism_code.parse.languages import LANGUAGES, language_for_path, language_for_source, parser
from prism_code.parse.model import CallSite, Definition, Import, ParsedFile

__all__ = [
    "LANGUAGES",
    "CallSite",
    "Definition",
    "Import",
    "ParsedFile",
    "language_for_path",
    "parse_source",
]


def parse_source(path: str, source: bytes, language: str | None = None) -> ParsedFile | None:
    """Parse `source` (raw bytes, any encoding errors tolerated) of the workspace file `path`.

    The language defaults to the one implied by the extension; None when it is unsupported.
    """
    language = language or language_for_source(path, source)
    if language not in LANGUAGES:
        return None
    tree = parser(language).parse(source)
    return extract(path, language, source, tree)
