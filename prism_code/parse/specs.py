"""Per-language tables: which nodes are definitions, calls and imports, and how to read them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import tree_sitter

from prism_code.parse import definitions as defs
from prism_code.parse import imports as imps
from prism_code.parse.languages import grammar


@dataclass(frozen=True)
class LanguageSpec:
    definitions: dict[str, defs.HeadReader]  # node type -> reader
    imports: dict[str, imps.ImportReader]  # node type -> reader
    # Query patterns; captures are @definition, @callee (the call's function part) and @import.
    patterns: str
    # Nodes wrapping a definition (decorators, `export`, `template<>`): its comment sits above them.
    doc_wrappers: frozenset[str] = frozenset()
    # Top-level nodes whose `body` children count as top-level statements (namespaces, inline mods).
    body_containers: frozenset[str] = frozenset()
    # Top-level nodes whose own children count as top-level statements (preprocessor conditionals).
    inline_containers: frozenset[str] = frozenset()
    # Top-level nodes that neither start nor interrupt a block (comments, Rust attributes).
    comments: frozenset[str] = frozenset({"comment"})
    hash_comments: bool = False
    python_docstrings: bool = False
    # Lines allowed between a doc comment and its definition (Rust attributes).
    doc_skipped_prefixes: tuple[bytes, ...] = ()


def _alternatives(node_types: list[str], capture: str) -> str:
    return "[" + " ".join(f"({node_type})" for node_type in node_types) + f"] @{capture}"


_JS_FUNCTION_TYPES = "(arrow_function) (function_expression) (generator_function)"

_JS_PATTERNS = f"""
(variable_declarator name: (identifier) value: [{_JS_FUNCTION_TYPES} (class)]) @definition
(call_expression function: (_) @callee)
(new_expression constructor: (_) @callee)
(import_statement) @import
(export_statement source: (_)) @import
(variable_declarator
  value: (call_expression function: (identifier) @_require arguments: (arguments . [(string) (template_string)]))
  (#eq? @_require "require")) @import
"""

_JS_DEFINITIONS: dict[str, defs.HeadReader] = {
    "function_declaration": defs.named("function"),
    "generator_function_declaration": defs.named("function"),
    "class_declaration": defs.named("class"),
    "method_definition": defs.named("function"),
    "variable_declarator": defs.js_variable,
}
_JS_IMPORTS: dict[str, imps.ImportReader] = {
    "import_statement": imps.js_import,
    "export_statement": imps.js_reexport,
    "variable_declarator": imps.js_require,
}
_JS_WRAPPERS = frozenset({"export_statement"})


def _javascript() -> LanguageSpec:
    definitions = {**_JS_DEFINITIONS, "field_definition": defs.js_field("property")}
    node_types = [t for t in definitions if t not in ("variable_declarator", "field_definition")]
    patterns = (
        _alternatives(node_types, "definition")
        + f"\n(field_definition property: (_) value: [{_JS_FUNCTION_TYPES}]) @definition"
        + _JS_PATTERNS
    )
    return LanguageSpec(definitions, _JS_IMPORTS, patterns, doc_wrappers=_JS_WRAPPERS)


def _typescript() -> LanguageSpec:
    definitions = {
        **_JS_DEFINITIONS,
        "abstract_class_declaration": defs.named("class"),
        "interface_declaration": defs.named("class"),
        "enum_declaration": defs.named("class"),
        "public_field_definition": defs.js_field("name"),
        # Bodiless methods: an abstract class's, and an interface's (only there: a type
        # literal's and an overload's signatures are no definitions).
        "abstract_method_signature": defs.named("function"),
        "method_signature": defs.named("function"),
    }
    node_types = [t for t in definitions
                  if t not in ("variable_declarator", "public_field_definition", "method_signature")]
    patterns = (
        _alternatives(node_types, "definition")
        + f"\n(public_field_definition name: (_) value: [{_JS_FUNCTION_TYPES}]) @definition"
        + "\n(interface_body (method_signature) @definition)"
        + _JS_PATTERNS
    )
    return LanguageSpec(definitions, _JS_IMPORTS, patterns, doc_wrappers=_JS_WRAPPERS)


def _python() -> LanguageSpec:
    return LanguageSpec(
        definitions={"function_definition": defs.python_function, "class_definition": defs.python_class},
        imports={"import_statement": imps.python_import, "import_from_statement": imps.python_from_import},
        patterns="""
        [(function_definition) (class_definition)] @definition
        (call function: (_) @callee)
        [(import_statement) (import_from_statement)] @import
        """,
        doc_wrappers=frozenset({"decorated_definition"}),
        hash_comments=True,
        python_docstrings=True,
    )


def _java() -> LanguageSpec:
    definitions: dict[str, defs.HeadReader] = {
        "class_declaration": defs.named("class"),
        "interface_declaration": defs.named("class"),
        "enum_declaration": defs.named("class"),
        "record_declaration": defs.named("class"),
        "annotation_type_declaration": defs.named("class"),
        "method_declaration": defs.named("function"),
        "constructor_declaration": defs.named("function"),
        "compact_constructor_declaration": defs.named("function"),
    }
    return LanguageSpec(
        definitions=definitions,
        imports={"import_declaration": imps.java_import},
        patterns=_alternatives(list(definitions), "definition")
        + """
        (method_invocation) @callee
        (object_creation_expression type: (_) @callee)
        (import_declaration) @import
        """,
        comments=frozenset({"line_comment", "block_comment"}),
    )


def _go() -> LanguageSpec:
    return LanguageSpec(
        definitions={
            "function_declaration": defs.named("function"),
            "method_declaration": defs.go_method,
            "type_spec": defs.go_type,
        },
        imports={"import_spec": imps.go_import},
        patterns="""
        [(function_declaration) (method_declaration)] @definition
        (type_spec type: [(struct_type) (interface_type)]) @definition
        (call_expression function: (_) @callee)
        (import_spec) @import
        """,
    )


def _rust() -> LanguageSpec:
    definitions: dict[str, defs.HeadReader] = {
        "function_item": defs.named("function"),
        "struct_item": defs.named("class"),
        "enum_item": defs.named("class"),
        "union_item": defs.named("class"),
        "trait_item": defs.named("class"),
        "impl_item": defs.rust_impl,
    }
    return LanguageSpec(
        definitions=definitions,
        imports={"use_declaration": imps.rust_use, "mod_item": imps.rust_mod},
        patterns=_alternatives(list(definitions), "definition")
        + """
        (call_expression function: (_) @callee)
        (use_declaration) @import
        (mod_item !body) @import
        """,
        body_containers=frozenset({"mod_item"}),
        comments=frozenset({"line_comment", "block_comment", "attribute_item", "inner_attribute_item"}),
        doc_skipped_prefixes=(b"#[",),
    )


_PREPROCESSOR_CONDITIONALS = frozenset(
    {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"}
)
_C_CALLS_AND_INCLUDES = """
(call_expression function: (_) @callee)
(preproc_include path: (string_literal)) @import
"""


def _c() -> LanguageSpec:
    return LanguageSpec(
        definitions={"function_definition": defs.c_function},
        imports={"preproc_include": imps.c_include},
        patterns="(function_definition) @definition" + _C_CALLS_AND_INCLUDES,
        body_containers=frozenset({"linkage_specification"}),
        inline_containers=_PREPROCESSOR_CONDITIONALS,
    )


def _cpp() -> LanguageSpec:
    return LanguageSpec(
        definitions={
            "function_definition": defs.c_function,
            "class_specifier": defs.cpp_class,
            "struct_specifier": defs.cpp_class,
        },
        imports={"preproc_include": imps.c_include},
        patterns="""
        (function_definition) @definition
        [(class_specifier name: (_) body: (_)) (struct_specifier name: (_) body: (_))] @definition
        """
        + _C_CALLS_AND_INCLUDES,
        doc_wrappers=frozenset({"template_declaration"}),
        body_containers=frozenset({"linkage_specification", "namespace_definition"}),
        inline_containers=_PREPROCESSOR_CONDITIONALS,
    )


_BUILDERS = {
    "python": _python,
    "javascript": _javascript,
    "typescript": _typescript,
    "tsx": _typescript,
    "java": _java,
    "go": _go,
    "rust": _rust,
    "c": _c,
    "cpp": _cpp,
}


@cache
def language_spec(language: str) -> LanguageSpec:
    return _BUILDERS[language]()


@cache
def language_query(language: str) -> tree_sitter.Query:
    return tree_sitter.Query(grammar(language), language_spec(language).patterns)
