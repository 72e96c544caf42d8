"""Parsing layer: tree-sitter parse of one source file into definitions, calls, imports and blocks."""

from __future__ import annotations

from prism_code.parse.languages import LANGUAGES, language_for_path, language_for_source, parser
from prism_code.parse.model import Binding, CallSite, Definition, Import, ParsedFile

# The extractors (parse.extract and what it reads) are imported by `parse_source`, not here:
# a find answered from the saved lexical index reads the model classes and PARSER_VERSION only,
# and the extractors cost a cold CLI process ~0.08 s to import.

# Bumped whenever the same source would now be extracted differently (a grammar choice, a
# new kind of definition): an index whose files were parsed by another version parses them
# all again on its next update, keeping its notes, instead of serving the old parses of
# unchanged files. 2: C++ `.h` headers, Java methods without a body. 3: Bash, C#, Elixir,
# Haskell, Kotlin, Lua, PHP, Ruby, Scala, Swift and Zig files (queries/*.scm), and every
# definition a reader points to (issue #25): JS/TS property, prototype and export assignments,
# object-literal members, default exports, namespaces, type aliases, interface and abstract
# methods; Go named types of every kind; Rust trait method signatures, macro_rules!, `mod x {}`
# containers and items inside macro calls; C/C++ structs, unions, enums, typedefs, function-like
# macros and the definitions macros hid; Java enum constant bodies and anonymous classes; Python lambdas;
# bindings, class bases and stubs (call resolution). 4: TypeScript's `this: X` parameter is a
# binding of `this`, and type arguments (`Cheerio<T>`) no longer hide an annotation's class.
PARSER_VERSION = 4

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
    from prism_code.parse.extract import extract
    from prism_code.parse.macros import blanked, hiding_macro_names
    from prism_code.parse.salvage import salvage
    from prism_code.parse.specs import language_spec
    from prism_code.parse.tagged_languages import TAGGED_RULES, source_to_parse

    language = language or language_for_source(path, source)
    if language not in LANGUAGES:
        return None
    if language_spec(language).hiding_macros:
        # C/C++ macros that derail the grammar (parse.macros) are blanked before the one parse.
        tree = parser(language).parse(blanked(source, hiding_macro_names(source)))
        return extract(path, language, source, tree, macros_hidden=True)
    source = source_to_parse(language, source)
    tree = parser(language).parse(source)
    parsed = extract(path, language, source, tree)
    rules = TAGGED_RULES.get(language)
    if rules is not None and rules.salvage and tree.root_node.has_error:
        parsed = salvage(path, language, source, tree, parsed)
    return parsed
