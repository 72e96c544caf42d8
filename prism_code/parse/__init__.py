"""Parsing layer: tree-sitter parse of one source file into definitions, calls, imports and blocks."""

from __future__ import annotations

from prism_code.parse.extract import extract
from prism_code.parse.languages import LANGUAGES, language_for_path, language_for_source, parser
from prism_code.parse.model import Binding, CallSite, Definition, Import, ParsedFile

# Bumped whenever the same source would now be extracted differently (a grammar choice, a
# new kind of definition): an index whose files were parsed by another version parses them
# all again on its next update, keeping its notes, instead of serving the old parses of
# unchanged files. 2: C++ `.h` headers, Java methods without a body. 3: bindings, class bases
# and stubs (call resolution), TypeScript abstract and interface methods.
PARSER_VERSION = 3

__all__ = [
    "LANGUAGES",
    "PARSER_VERSION",
    "Binding",
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
