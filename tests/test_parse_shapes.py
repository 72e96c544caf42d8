"""Definitions a reader points to, in the shapes real code writes them (issue #25).

Each fixture under tests/fixtures/shapes/ is a small file in the style of a real project
(express's property assignments, zod's wrapped constructors, tokio's `cfg_rt! {...}` blocks,
nlohmann-json's and abseil's macros); the tests read qualnames, kinds and 1-based line spans.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_code.parse import Definition, ParsedFile, parse_source
from prism_code.parse.extract import MAX_MACRO_BODIES, extract
from prism_code.parse.languages import parser
from prism_code.parse.macros import MAX_MACRO_NAMES

SHAPES = Path(__file__).parent / "fixtures" / "shapes"


def parse_shape(relative: str) -> ParsedFile:
    parsed = parse_source(relative, (SHAPES / relative).read_bytes())
    assert parsed is not None
    return parsed


def outline(parsed: ParsedFile) -> list[tuple[str, str, int, int]]:
    return [(d.qualname, d.kind, d.start_line, d.end_line) for d in parsed.definitions]


def definition(parsed: ParsedFile, qualname: str) -> Definition:
    matches = [d for d in parsed.definitions if d.qualname == qualname]
    assert len(matches) == 1, [d.qualname for d in parsed.definitions]
    return matches[0]


# JavaScript ---------------------------------------------------------------------------------


def test_javascript_property_prototype_and_export_assignments() -> None:
    response = parse_shape("javascript/response.js")
    assert outline(response) == [
        ("res.status", "method", 15, 18),
        ("res.json", "method", 21, 24),
        ("View", "function", 26, 31),
        ("View.lookup", "function", 28, 30),  # `this.lookup = ...` inside the constructor
        ("View.render", "method", 33, 35),  # `View.prototype.render = ...`
        ("compileETag", "function", 37, 39),  # `exports.compileETag = ...`
        ("normalizeType", "function", 41, 41),  # `module.exports.normalizeType = ...`
        ("secure", "function", 43, 45),  # `defineGetter(res, 'secure', function secure() {...})`
    ]
    status = definition(response, "res.status")
    assert status.parent == "res"
    assert status.signature == "res.status = function status(code)"
    # A JSDoc block documents the assignment under it even across express's blank line.
    assert status.doc == "Set the status code of the response.\n\n@public"
    assert definition(response, "res.json").doc == "Send a JSON body."
    assert definition(response, "View.render").parent == "View"
    assert definition(response, "secure").signature == "defineGetter(res, 'secure', function secure()"
    # The file's statements outside any definition, the getter's call no longer among them.
    assert response.blocks == [(1, 7)]


def test_javascript_function_assigned_to_module_exports() -> None:
    express = parse_shape("javascript/express.js")
    assert outline(express) == [
        ("createApplication", "function", 8, 13),  # named after the function, as it has a name
        ("createApplication.app", "function", 9, 11),
    ]
    create = definition(express, "createApplication")
    assert create.signature == "module.exports = function createApplication()"
    assert create.doc == "Create an express application.\n\n@return {Function}"


def test_javascript_object_literal_members_and_default_export() -> None:
    router = parse_shape("javascript/router.mjs")
    assert outline(router) == [
        ("handlers", "class", 3, 18),  # an object holding functions is a container of them
        ("handlers.get", "method", 5, 7),
        ("handlers.post", "method", 8, 10),
        ("handlers.delete", "method", 11, 11),
        ("handlers.admin", "class", 12, 16),
        ("handlers.admin.reset", "method", 13, 15),
        ("parse", "function", 21, 23),  # `module.exports = {...}`: the module's own functions
        ("format", "function", 24, 24),
        ("Layer", "function", 27, 29),  # a module-level function wrapped in a call
        ("Route", "class", 31, 38),
        ("Route.dispatch", "method", 32, 32),  # a class field holding an arrow function
        ("Route.of", "method", 34, 37),  # `const check = wrap(...)` inside it is a computation
        ("default", "function", 40, 42),
    ]
    assert definition(router, "handlers.get").doc == "Answer a GET."
    assert definition(router, "handlers.post").signature == "post: async function (req)"
    assert definition(router, "Layer").signature == "const Layer = wrap('Layer', (path, fn) =>"
    assert definition(router, "default").signature == "export default function (app)"


# TypeScript ---------------------------------------------------------------------------------


def test_typescript_interfaces_types_namespaces_and_wrapped_constructors() -> None:
    schemas = parse_shape("typescript/schemas.ts")
    assert outline(schemas) == [
        ("Schema", "class", 4, 8),
        ("Schema.parse", "method", 6, 6),  # an interface's method: its signature and doc
        ("Issue", "class", 10, 13),  # a type alias declares a type as an interface does
        ("Issue.message", "method", 12, 12),
        ("Check", "class", 15, 21),
        ("Check.run", "method", 16, 16),  # abstract
        ("Check.describe", "method", 18, 20),
        ("$ZodString", "function", 23, 25),
        ("$ZodString.inst.parse", "method", 24, 24),
        ("formats", "class", 27, 32),  # `{...} as const`
        ("formats.email", "method", 28, 28),
        ("formats.url", "method", 29, 31),
        ("Util.Text", "class", 34, 38),
        ("Util.Text.trim", "function", 35, 37),  # a namespace's function is no method
        ("Registry", "class", 41, 43),  # `declare module "./core"` adds to another module
        ("Registry.add", "method", 42, 42),
        ("safeParse", "function", 47, 49),  # the implementation, not the overload above it
        ("default", "class", 51, 53),
        ("default.run", "method", 52, 52),
    ]
    assert definition(schemas, "Schema.parse").doc == "Parse an unknown value or throw."
    assert definition(schemas, "Schema.parse").signature == "parse(data: unknown): T"
    assert definition(schemas, "Util.Text").parent == "Util"
    assert definition(schemas, "$ZodString").signature == (
        'const $ZodString = core.$constructor("$ZodString", (inst, def) =>')


def test_tsx_anonymous_default_export() -> None:
    badge = parse_shape("typescript/Badge.tsx")
    assert outline(badge) == [("default", "function", 1, 1)]
    assert definition(badge, "default").signature == "export default ({ label }: { label: string }) =>"


# Python -------------------------------------------------------------------------------------


def test_python_lambdas_nested_decorated_async_and_conditional() -> None:
    shapes = parse_shape("python/shapes.py")
    assert outline(shapes) == [
        ("by_score", "function", 4, 4),
        ("Cache", "class", 7, 19),
        ("Cache.key", "method", 10, 10),
        ("Cache.get", "method", 13, 16),  # from `def`, the decorator is not part of it
        ("Cache.get.load", "function", 14, 15),
        ("Cache.refresh", "method", 18, 19),
        ("fallback", "function", 23, 24),
    ]
    assert definition(shapes, "by_score").signature == "by_score = lambda item"
    assert definition(shapes, "by_score").doc == "Rank items by their score."


# Go -----------------------------------------------------------------------------------------


def test_go_generic_receivers_and_named_types_of_every_kind() -> None:
    set_go = parse_shape("go/set.go")
    assert outline(set_go) == [
        ("Set", "class", 4, 6),
        ("Set.Add", "method", 9, 11),  # `func (s *Set[T]) Add`
        ("HandlerFunc", "class", 14, 14),
        ("ID", "class", 16, 16),
        ("Names", "class", 19, 19),
        ("Lookup", "class", 20, 22),
        ("Names.Len", "method", 25, 25),
    ]
    assert definition(set_go, "Set.Add").parent == "Set"
    handler = definition(set_go, "HandlerFunc")
    assert handler.signature == "type HandlerFunc func(name string) error"
    assert handler.doc == "HandlerFunc handles one request."
    assert definition(set_go, "ID").signature == "type ID = string"


# Rust ---------------------------------------------------------------------------------------


def test_rust_traits_impls_macros_and_modules() -> None:
    shapes = parse_shape("rust/shapes.rs")
    assert outline(shapes) == [
        ("Push", "class", 2, 10),
        ("Push.push_one", "method", 4, 4),  # required: no body
        ("Push.push_two", "method", 6, 9),  # default
        ("Vec", "class", 12, 16),  # `impl<T> Push<T> for Vec<T>`
        ("Vec.push_one", "method", 13, 15),
        ("point", "function", 19, 23),  # macro_rules!
        ("zero", "function", 25, 27),  # const fn
        ("spawn", "function", 31, 33),  # inside `cfg_rt! {...}`
        ("Listener", "class", 36, 36),  # inside `cfg_net! {...}` inside it
        ("tests", "class", 42, 44),
        ("tests.adds", "function", 43, 43),
    ]
    assert definition(shapes, "Push.push_one").doc == "Adds an item."
    assert definition(shapes, "point").signature == "macro_rules! point"
    assert definition(shapes, "point").doc == "Makes a point."
    assert definition(shapes, "spawn").doc == "Spawns a task."
    assert ("run", "spawn") in {(call.name, call.caller) for call in shapes.calls}
    # `impl_numbers! { u8 u16 }` holds no items: it stays a top-level statement.
    assert shapes.blocks == [(40, 40)]


# Java ---------------------------------------------------------------------------------------


def test_java_constructors_enum_bodies_records_defaults_local_and_anonymous_classes() -> None:
    shapes = parse_shape("java/Shapes.java")
    assert outline(shapes) == [
        ("Shapes", "class", 3, 35),
        ("Shapes.Shapes", "method", 4, 4),
        ("Shapes.Op", "class", 6, 13),
        ("Shapes.Op.PLUS", "class", 7, 9),
        ("Shapes.Op.PLUS.apply", "method", 8, 8),
        ("Shapes.Op.apply", "method", 12, 12),
        ("Shapes.Point", "class", 15, 19),
        ("Shapes.Point.Point", "method", 16, 18),
        ("Shapes.Greeter", "class", 21, 24),
        ("Shapes.Greeter.greet", "method", 23, 23),
        ("Shapes.task", "method", 26, 34),
        ("Shapes.task.Local", "class", 27, 29),
        ("Shapes.task.Local.work", "method", 28, 28),
        ("Shapes.task.Runnable", "class", 30, 33),
        ("Shapes.task.Runnable.run", "method", 31, 32),
    ]
    assert definition(shapes, "Shapes.Greeter.greet").doc == "Says hello."
    assert definition(shapes, "Shapes.task.Runnable").signature == "new Runnable()"


# C ------------------------------------------------------------------------------------------


def test_c_types_macros_and_functions_behind_macros() -> None:
    server = parse_shape("c/server.c")
    assert outline(server) == [
        ("client", "class", 4, 6),  # typedef struct client {...} client;
        ("buffer", "class", 8, 10),  # typedef struct {...} buffer, *buffer_ptr;
        ("list", "class", 12, 14),
        ("value", "class", 16, 19),
        ("state", "class", 21, 21),
        ("MAX", "function", 24, 24),
        ("freeClient", "function", 26, 28),  # REDIS_STATIC void freeClient(...)
        ("isIdle", "function", 30, 32),
        ("oldStyle", "function", 34, 39),  # K&R parameters
        ("curl_init", "function", 41, 43),  # CURL_EXTERN
        ("my_alloc", "function", 45, 48),  # static LIBSSH2_ALLOC_FUNC(my_alloc)
    ]
    assert definition(server, "client").doc == "A client connection."
    assert definition(server, "MAX").signature == "#define MAX(a, b)"
    assert definition(server, "MAX").doc == "Bigger of two values."
    assert definition(server, "freeClient").signature == "REDIS_STATIC void freeClient(client *c)"
    assert ("malloc", "my_alloc") in {(call.name, call.caller) for call in server.calls}


# C++ ----------------------------------------------------------------------------------------


def test_cpp_classes_behind_macros_operators_templates_unions_enums() -> None:
    header = parse_shape("cpp/json.hpp")
    assert outline(header) == [
        # After a line holding only NLOHMANN_JSON_NAMESPACE_BEGIN, and with a macro for `private:`.
        ("basic_json", "class", 7, 19),
        ("basic_json.array", "method", 14, 14),  # the attribute macro above it is no part of it
        ("basic_json.operator int", "method", 16, 16),
        ("basic_json.min", "method", 18, 18),  # `int(min)()`, parenthesized against a macro
        ("Status", "class", 26, 29),  # class ABSL_MUST_USE_RESULT Status final
        ("Status.ok", "method", 31, 31),
        ("Stack.push", "method", 34, 34),  # template <class T> void Stack<T>::push
        ("Bits", "class", 36, 39),
        ("Code", "class", 41, 41),
    ]
    # Namespaces are looked through: "Status", not "absl.Status".
    assert definition(header, "Status.ok").parent == "Status"
    assert definition(header, "basic_json").doc == "A JSON value."
    assert definition(header, "Status").signature == "class ABSL_MUST_USE_RESULT Status final"


def test_a_tree_of_the_source_as_it_is_finds_what_the_index_finds() -> None:
    # Hovers parse an editor's buffer as it is and extract from that tree; the macros that
    # derailed it are blanked in a second, incremental parse.
    for relative in ("cpp/json.hpp", "c/server.c"):
        source = (SHAPES / relative).read_bytes()
        language = "cpp" if relative.endswith(".hpp") else "c"
        from_buffer = extract(relative, language, source, parser(language).parse(source))
        assert outline(from_buffer) == outline(parse_shape(relative))


# Bounds on what macros may cost ---------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_file_of_thousands_of_macro_names_is_parsed_as_it_is() -> None:
    names = MAX_MACRO_NAMES + 200
    source = ("namespace a {\n" + "".join(f"MACRO_{i}\nint f{i}() {{ return {i}; }}\n" for i in range(names))
              + "int broken( {\n}\n")
    parsed = parse_source("generated.cpp", source.encode())
    assert parsed is not None and parsed.has_errors
    assert [d.name for d in parsed.definitions] == [f"f{i}" for i in range(names)]


@pytest.mark.timeout(60)
def test_macro_bodies_parsed_as_items_are_bounded() -> None:
    many = "".join(f"cfg_{i}! {{ fn f{i}() {{}} }}\n" for i in range(MAX_MACRO_BODIES + 500))
    parsed = parse_source("many.rs", many.encode())
    assert parsed is not None and len(parsed.definitions) == MAX_MACRO_BODIES
    deep = "".join(f"cfg_{i}! {{\n" for i in range(3000)) + "fn f() {}\n" + "}\n" * 3000
    parsed = parse_source("deep.rs", deep.encode())
    assert parsed is not None and parsed.definitions == []  # deeper than MAX_MACRO_DEPTH
