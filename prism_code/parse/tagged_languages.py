"""The languages whose definitions, calls and imports are a query file (`queries/<language>.scm`,
read by `tagged.py`), and the few facts about each that a query cannot say."""

from __future__ import annotations

import re
from dataclasses import dataclass

# C# preprocessor lines split declarations the grammar cannot rejoin (`#if X internal #else public
# #endif struct R`, a `#pragma` between a struct's name and its body): blanked, 61 of 355 files of
# MessagePack-CSharp and Newtonsoft.Json parse with errors, 15 without (4,442 lines inside ERROR
# nodes, 2,789 without: the rest is unsafe pointer code).
_CSHARP_DIRECTIVES = re.compile(
    rb"^[ \t]*#[ \t]*(?:if|elif|else|endif|pragma|region|endregion|nullable|define|undef|line|warning|error)\b[^\n]*",
    re.MULTILINE)


@dataclass(frozen=True)
class TaggedRules:
    # What starts a line comment, for the doc comment above a definition; "//" admits `/* */` too.
    line_comment: bytes
    # Top-level nodes that neither start nor interrupt a block of top-level statements.
    comments: frozenset[str] = frozenset({"comment"})
    # Top-level nodes whose `body` (a `declaration_list`) holds top-level statements (C# namespaces).
    body_containers: frozenset[str] = frozenset()
    # Top-level nodes whose own children are the top-level statements (Haskell's `declarations`).
    inline_containers: frozenset[str] = frozenset()
    # Consecutive definitions of one name are one (clauses.py): Haskell equations, Elixir heads.
    merge_clauses: bool = False
    # Nodes around a definition that its doc comment sits above (Lua's `local` declaration).
    doc_wrappers: frozenset[str] = frozenset()
    # Lines replaced by spaces before parsing (offsets and line numbers stay those of the file).
    blanked_lines: re.Pattern[bytes] | None = None
    # The grammar may lose the rest of a file to one ERROR node: read it again (salvage.py).
    salvage: bool = False


TAGGED_RULES: dict[str, TaggedRules] = {
    "bash": TaggedRules(b"#"),
    "csharp": TaggedRules(b"//", body_containers=frozenset({"namespace_declaration"}),
                          blanked_lines=_CSHARP_DIRECTIVES),
    "elixir": TaggedRules(b"#", merge_clauses=True),
    "haskell": TaggedRules(b"--", comments=frozenset({"comment", "haddock", "pragma"}),
                           inline_containers=frozenset({"declarations", "imports"}), merge_clauses=True),
    "kotlin": TaggedRules(b"//", comments=frozenset({"line_comment", "block_comment"}), salvage=True),
    "lua": TaggedRules(b"--", doc_wrappers=frozenset({"variable_declaration"})),
    "php": TaggedRules(b"//", doc_wrappers=frozenset({"expression_statement"})),
    "ruby": TaggedRules(b"#"),
    "scala": TaggedRules(b"//", comments=frozenset({"comment", "block_comment"})),
    "swift": TaggedRules(b"//", comments=frozenset({"comment", "multiline_comment"})),
    "zig": TaggedRules(b"//"),
}


def source_to_parse(language: str, source: bytes) -> bytes:
    """`source` as the language's grammar should see it: its `blanked_lines` turned to spaces."""
    rules = TAGGED_RULES.get(language)
    if rules is None or rules.blanked_lines is None:
        return source
    return rules.blanked_lines.sub(lambda line: b" " * len(line.group(0)), source)
