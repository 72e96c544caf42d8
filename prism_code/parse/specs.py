"""Per-language tables: which nodes are definitions, calls and imports, and how to read them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, partial

import tree_sitter

from prism_code.parse import definitions as defs
from prism_code.parse import imports as imps
from prism_code.parse.languages import grammar
from prism_code.parse.tagged import query_text
from prism_code.parse.tagged_languages import TAGGED_RULES, TaggedRules


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
    # A language whose rules are a query file (tagged.py); `definitions` and `imports` stay empty.
    tagged: TaggedRules | None = None
    # C and C++: a line holding only a macro's name (`NLOHMANN_JSON_NAMESPACE_BEGIN`) or a macro
    # in a class head (`class ABSL_MUST_USE_RESULT Status`) may derail the parse of what follows;
    # extract then tries the parse without them (parse.macros).
    hiding_macros: bool = False


def _alternatives(node_types: list[str], capture: str) -> str:
    return "[" + " ".join(f"({node_type})" for node_type in node_types) + f"] @{capture}"


_JS_FUNCTION_TYPES = "(arrow_function) (function_expression) (generator_function)"
# An object literal holding functions is a class-like container of them (`module.exports = {...}`).
_JS_OBJECT_OF_FUNCTIONS = f"(object [(pair value: [{_JS_FUNCTION_TYPES}]) (method_definition)])"
_TS_OBJECT_OF_FUNCTIONS = (f"[{_JS_OBJECT_OF_FUNCTIONS} (as_expression {_JS_OBJECT_OF_FUNCTIONS})"
                           f" (satisfies_expression {_JS_OBJECT_OF_FUNCTIONS})]")


def _js_patterns(objects: str) -> str:
    """Definitions held by a name (variables, assignments, object keys, `export default`), calls
    and imports; `objects` is the object-literal pattern of the grammar."""
    values = f"[{_JS_FUNCTION_TYPES} (class) {objects}]"
    return f"""
(variable_declarator name: (identifier) value: {values}) @definition
(variable_declarator name: (identifier)
  value: (call_expression arguments: (arguments [{_JS_FUNCTION_TYPES}]))) @definition
(assignment_expression left: [(identifier) (member_expression)] right: {values}) @definition
(pair key: [(property_identifier) (string) (number)] value: {values}) @definition
(export_statement value: [{_JS_FUNCTION_TYPES} (class)]) @definition
(arguments (function_expression name: (_)) @definition)
(call_expression function: (_) @callee)
(new_expression constructor: (_) @callee)
(import_statement) @import
(export_statement source: (_)) @import
(variable_declarator
  value: (call_expression function: (identifier) @_require arguments: (arguments . [(string) (template_string)]))
  (#eq? @_require "require")) @import
"""


# Definitions the query finds by node type alone.
_JS_NAMED: dict[str, defs.HeadReader] = {
    "function_declaration": defs.named("function"),
    "generator_function_declaration": defs.named("function"),
    "class_declaration": defs.named("class"),
    "method_definition": defs.named("function"),
}
# Readers of the nodes _js_patterns captures.
_JS_HELD: dict[str, defs.HeadReader] = {
    "variable_declarator": defs.js_variable,
    "assignment_expression": defs.js_assignment,
    "pair": defs.js_pair,
    "export_statement": defs.js_default_export,
    "function_expression": defs.js_named_argument,
}
_JS_IMPORTS: dict[str, imps.ImportReader] = {
    "import_statement": imps.js_import,
    "export_statement": imps.js_reexport,
    "variable_declarator": imps.js_require,
}
_JS_WRAPPERS = frozenset({"export_statement"})


def _javascript() -> LanguageSpec:
    definitions = {**_JS_NAMED, **_JS_HELD, "field_definition": defs.js_field("property")}
    patterns = (
        _alternatives(list(_JS_NAMED), "definition")
        + f"\n(field_definition property: (_) value: [{_JS_FUNCTION_TYPES}]) @definition"
        + _js_patterns(_JS_OBJECT_OF_FUNCTIONS)
    )
    return LanguageSpec(definitions, _JS_IMPORTS, patterns, doc_wrappers=_JS_WRAPPERS)


def _typescript() -> LanguageSpec:
    named = {
        **_JS_NAMED,
        "abstract_class_declaration": defs.named("class"),
        "interface_declaration": defs.named("class"),
        "enum_declaration": defs.named("class"),
        # `type Props = {...}` declares a type as an interface does.
        "type_alias_declaration": defs.named("class"),
        # Declared methods without a body: an abstract class's, an interface's and a type alias's
        # (only there: a parameter's type literal and an overload's signatures are no
        # definitions). Callers read them as they read Java's interface methods.
        "abstract_method_signature": defs.named("function"),
    }
    definitions = {
        **named,
        "method_signature": defs.named("function"),
        **_JS_HELD,
        "public_field_definition": defs.js_field("name"),
        "internal_module": defs.ts_namespace,
        "module": defs.ts_namespace,
    }
    patterns = (
        _alternatives(list(named), "definition")
        + f"\n(public_field_definition name: (_) value: [{_JS_FUNCTION_TYPES}]) @definition"
        + "\n[(internal_module name: [(identifier) (nested_identifier)]) (module name: (identifier))] @definition"
        + _js_patterns(_TS_OBJECT_OF_FUNCTIONS)
        + "\n(interface_body (method_signature) @definition)"
        + "\n(type_alias_declaration value: (object_type (method_signature) @definition))"
    )
    return LanguageSpec(definitions, _JS_IMPORTS, patterns, doc_wrappers=_JS_WRAPPERS)


def _python() -> LanguageSpec:
    return LanguageSpec(
        definitions={
            "function_definition": defs.python_function,
            "class_definition": defs.python_class,
            "assignment": defs.python_lambda,
        },
        imports={"import_statement": imps.python_import, "import_from_statement": imps.python_from_import},
        patterns="""
        [(function_definition) (class_definition)] @definition
        (assignment left: (identifier) right: (lambda)) @definition
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
        # An enum constant with a body and an anonymous class are classes of their own methods.
        definitions={**definitions, "enum_constant": defs.named("class", needs_body=True),
                     "object_creation_expression": defs.java_anonymous_class},
        imports={"import_declaration": imps.java_import},
        patterns=_alternatives(list(definitions), "definition")
        + """
        (enum_constant body: (_)) @definition
        (object_creation_expression (class_body)) @definition
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
            # Every named type: structs, interfaces, `type HandlerFunc func(*Context)`, aliases.
            "type_spec": defs.go_type,
            "type_alias": defs.go_type,
        },
        imports={"import_spec": imps.go_import},
        patterns="""
        [(function_declaration) (method_declaration) (type_spec) (type_alias)] @definition
        (call_expression function: (_) @callee)
        (import_spec) @import
        """,
    )


def _rust() -> LanguageSpec:
    definitions: dict[str, defs.HeadReader] = {
        "function_item": defs.named("function"),
        # A trait's required method (`fn serialize_bool(self, v: bool) -> ...;`) and its doc.
        "function_signature_item": defs.named("function"),
        "macro_definition": defs.rust_macro,
        "struct_item": defs.named("class"),
        "enum_item": defs.named("class"),
        "union_item": defs.named("class"),
        "trait_item": defs.named("class"),
        "impl_item": defs.rust_impl,
    }
    return LanguageSpec(
        definitions={**definitions, "mod_item": defs.rust_module},
        imports={"use_declaration": imps.rust_use, "mod_item": imps.rust_mod},
        # @items: the body of an item-level macro call (`cfg_rt! { pub fn spawn() {...} }`),
        # which tree-sitter leaves as tokens; extract parses it as items of its own.
        patterns=_alternatives(list(definitions), "definition")
        + """
        (mod_item body: (_)) @definition
        (source_file (macro_invocation (token_tree) @items))
        (declaration_list (macro_invocation (token_tree) @items))
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


# Types with a body, a typedef of one (named after the typedef) and function-like macros.
_C_TYPES_AND_MACROS = """
(function_definition) @definition
(preproc_function_def) @definition
[(struct_specifier name: (_) body: (_)) (union_specifier name: (_) body: (_))
 (enum_specifier name: (_) body: (_))] @definition
(type_definition type: [(struct_specifier body: (_)) (union_specifier body: (_)) (enum_specifier body: (_))])
  @definition
"""
_C_DEFINITIONS: dict[str, defs.HeadReader] = {
    "function_definition": defs.c_function,
    "preproc_function_def": defs.c_macro_function,
    "struct_specifier": defs.cpp_class,
    "union_specifier": defs.cpp_class,
    "enum_specifier": defs.cpp_class,
    "type_definition": defs.c_typedef,
}


def _c() -> LanguageSpec:
    return LanguageSpec(
        definitions=_C_DEFINITIONS,
        imports={"preproc_include": imps.c_include},
        patterns=_C_TYPES_AND_MACROS + _C_CALLS_AND_INCLUDES,
        body_containers=frozenset({"linkage_specification"}),
        inline_containers=_PREPROCESSOR_CONDITIONALS,
        hiding_macros=True,
    )


def _cpp() -> LanguageSpec:
    return LanguageSpec(
        definitions={**_C_DEFINITIONS, "class_specifier": defs.cpp_class},
        imports={"preproc_include": imps.c_include},
        patterns=_C_TYPES_AND_MACROS
        + "(class_specifier name: (_) body: (_)) @definition"
        + _C_CALLS_AND_INCLUDES,
        doc_wrappers=frozenset({"template_declaration"}),
        # Namespaces are looked through, not containers: C++ puts nearly all code in one, often
        # the whole file, so "absl.Mutex.Lock" would only lengthen every name (as Java packages would).
        body_containers=frozenset({"linkage_specification", "namespace_definition"}),
        inline_containers=_PREPROCESSOR_CONDITIONALS,
        hiding_macros=True,
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


def _tagged(language: str) -> LanguageSpec:
    rules = TAGGED_RULES[language]
    return LanguageSpec({}, {}, query_text(language), doc_wrappers=rules.doc_wrappers,
                        body_containers=rules.body_containers, inline_containers=rules.inline_containers,
                        comments=rules.comments, tagged=rules)


_BUILDERS.update({language: partial(_tagged, language) for language in TAGGED_RULES})


@cache
def language_spec(language: str) -> LanguageSpec:
    return _BUILDERS[language]()


@cache
def language_query(language: str) -> tree_sitter.Query:
    return tree_sitter.Query(grammar(language), language_spec(language).patterns)
