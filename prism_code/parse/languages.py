"""File extension -> language name, and lazily loaded tree-sitter grammars and parsers."""

from __future__ import annotations

import importlib
import posixpath
import re
import threading
from functools import cache

import tree_sitter

EXTENSION_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    # Languages whose rules are a query file (prism_code/parse/queries/<language>.scm).
    ".sh": "bash",
    ".bash": "bash",
    ".bats": "bash",
    ".cs": "csharp",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".lua": "lua",
    ".php": "php",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".scala": "scala",
    ".sc": "scala",
    ".swift": "swift",
    ".zig": "zig",
}

# language -> (grammar module, function returning the grammar pointer)
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "java": ("tree_sitter_java", "language"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "elixir": ("tree_sitter_elixir", "language"),
    "haskell": ("tree_sitter_haskell", "language"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "lua": ("tree_sitter_lua", "language"),
    # `language_php` reads a whole .php file, HTML around `<?php` included (`language_php_only` does not).
    "php": ("tree_sitter_php", "language_php"),
    "ruby": ("tree_sitter_ruby", "language"),
    "scala": ("tree_sitter_scala", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "zig": ("tree_sitter_zig", "language"),
}

LANGUAGES: frozenset[str] = frozenset(_GRAMMARS)


def language_for_path(path: str) -> str | None:
    """The language of a file judged by its extension, None when unsupported."""
    return EXTENSION_LANGUAGES.get(posixpath.splitext(path)[1].lower())


# Constructs C has no word for: a ``.h`` file holding one of them is a C++ header.
_CPP_HEADER = re.compile(rb"^[ \t]*(?:namespace\s+\w|template\s*<|class\s+\w+[^;]*$|(?:public|private|protected)\s*:|"
                         rb"using\s+(?:namespace\s+)?\w)|\w::\w", re.MULTILINE)


# `#!/bin/bash`, `#!/usr/bin/env bash`, `#!/bin/sh -e`: a script without an extension.
_SHELL_SHEBANG = re.compile(rb"#![ \t]*(?:/usr)?(?:/local)?/bin/(?:env[ \t]+)?(?:ba)?sh\b")


def language_for_source(path: str, source: bytes) -> str | None:
    """As ``language_for_path``, but a ``.h`` header written in C++ is ``cpp``, not ``c``, and a
    file without an extension that starts with a shell shebang is ``bash``."""
    language = language_for_path(path)
    if language == "c" and path.lower().endswith(".h") and _CPP_HEADER.search(source):
        return "cpp"
    if language is None and not posixpath.splitext(path)[1] and _SHELL_SHEBANG.match(source):
        return "bash"
    return language


@cache
def grammar(language: str) -> tree_sitter.Language:
    """The tree-sitter grammar; imported on first use so unused grammars cost nothing."""
    module_name, function_name = _GRAMMARS[language]
    module = importlib.import_module(module_name)
    return tree_sitter.Language(getattr(module, function_name)())


# A tree_sitter.Parser must not be shared between threads.
_thread_parsers = threading.local()


def parser(language: str) -> tree_sitter.Parser:
    """This thread's parser for `language`."""
    parsers: dict[str, tree_sitter.Parser] | None = getattr(_thread_parsers, "by_language", None)
    if parsers is None:
        parsers = _thread_parsers.by_language = {}
    found = parsers.get(language)
    if found is None:
        found = parsers[language] = tree_sitter.Parser(grammar(language))
    return found
