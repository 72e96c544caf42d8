"""Parsing layer on the multi-language fixture repository (real tree-sitter grammars)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_code.parse import CallSite, Import, ParsedFile, language_for_path, parse_source

FIXTURES = Path(__file__).parent / "fixtures" / "multilang"


def parse_fixture(relative: str) -> ParsedFile:
    parsed = parse_source(relative, (FIXTURES / relative).read_bytes())
    assert parsed is not None
    return parsed


def outline(parsed: ParsedFile) -> list[tuple[str, str, int, int]]:
    return [(d.qualname, d.kind, d.start_line, d.end_line) for d in parsed.definitions]


def definition(parsed: ParsedFile, qualname: str):
    matches = [d for d in parsed.definitions if d.qualname == qualname]
    assert len(matches) == 1, [d.qualname for d in parsed.definitions]
    return matches[0]


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("stubs/x.pyi", "python"),
        ("web/app.js", "javascript"),
        ("web/app.mjs", "javascript"),
        ("web/app.cjs", "javascript"),
        ("web/App.jsx", "javascript"),
        ("web/app.ts", "typescript"),
        ("web/app.mts", "typescript"),
        ("web/app.cts", "typescript"),
        ("web/App.tsx", "tsx"),
        ("A.java", "java"),
        ("main.go", "go"),
        ("lib.rs", "rust"),
        ("x.c", "c"),
        ("x.h", "c"),
        ("x.cc", "cpp"),
        ("x.cpp", "cpp"),
        ("x.cxx", "cpp"),
        ("x.hpp", "cpp"),
        ("x.hh", "cpp"),
        ("x.hxx", "cpp"),
        ("README.md", None),
        ("Makefile", None),
    ],
)
def test_language_for_path(path: str, language: str | None) -> None:
    assert language_for_path(path) == language


def test_unknown_language_gives_none() -> None:
    assert parse_source("notes.txt", b"def f(): pass\n") is None


def test_explicit_language_overrides_extension() -> None:
    parsed = parse_source("script", b"def f():\n    pass\n", language="python")
    assert parsed is not None and outline(parsed) == [("f", "function", 1, 2)]


# Python -------------------------------------------------------------------------------------


def test_python_definitions() -> None:
    core = parse_fixture("pkg/core.py")
    assert core.language == "python"
    assert outline(core) == [
        ("Inventory", "class", 12, 38),
        ("Inventory.__init__", "method", 18, 20),
        ("Inventory.size", "method", 23, 24),  # starts at `def`, not at the decorator
        ("Inventory.add", "method", 26, 30),
        ("Inventory.load", "method", 32, 38),
        ("Inventory.load.parse", "function", 33, 34),
        ("build", "function", 42, 45),
    ]
    assert [d.parent for d in core.definitions] == [
        None,
        "Inventory",
        "Inventory",
        "Inventory",
        "Inventory",
        "Inventory.load",
        None,
    ]
    source = (FIXTURES / "pkg/core.py").read_bytes()
    build = definition(core, "build")
    assert source[build.start_byte : build.end_byte].startswith(b"def build(")
    assert source[build.start_byte : build.end_byte].endswith(b"return inventory")


def test_python_signatures() -> None:
    core = parse_fixture("pkg/core.py")
    assert definition(core, "Inventory").signature == "class Inventory"
    assert definition(core, "Inventory.size").signature == "def size(self) -> int"
    assert definition(core, "Inventory.add").signature == "def add(self, item, count=1)"
    assert definition(core, "Inventory.load").signature == "async def load(self, source)"
    assert definition(core, "build").signature == "def build(item: str, count: int = 1) -> Inventory"


def test_python_docs() -> None:
    core = parse_fixture("pkg/core.py")
    assert definition(core, "Inventory").doc == "Keeps item counts.\n\nCounts are scaled with helper()."
    assert definition(core, "build").doc == "Build an inventory holding one item."
    assert definition(core, "Inventory.add").doc == ""
    util = parse_fixture("pkg/util.py")
    assert definition(util, "helper").doc == "Scale a value and round it up."
    assert definition(util, "data_path").doc == (
        "Join a name onto the data directory.\nLoaders use it to find their CSV files."
    )


def test_python_calls() -> None:
    core = parse_fixture("pkg/core.py")
    assert CallSite("getLogger", "logging", 9, None) in core.calls
    assert CallSite("len", None, 24, "Inventory.size") in core.calls
    assert CallSite("helper", None, 27, "Inventory.add") in core.calls
    assert CallSite("get", "self.items", 28, "Inventory.add") in core.calls
    assert CallSite("split", "line.strip()", 34, "Inventory.load.parse") in core.calls
    assert CallSite("strip", "line", 34, "Inventory.load.parse") in core.calls
    assert CallSite("path_of", None, 36, "Inventory.load") in core.calls
    assert CallSite("add", "self", 38, "Inventory.load") in core.calls
    assert CallSite("helper", "util", 44, "build") in core.calls
    assert CallSite("print", None, 49, None) in core.calls
    assert len(core.calls) == 17
    assert [c.line for c in core.calls] == sorted(c.line for c in core.calls)


def test_python_imports() -> None:
    assert parse_fixture("pkg/core.py").imports == [
        Import("logging", 5),
        Import("util", 6, (("helper", None), ("data_path", "path_of")), level=1),
        Import("", 7, (("util", None),), level=1),
    ]
    assert parse_fixture("pkg/util.py").imports == [Import("math", 3), Import("os.path", 4, alias="osp")]
    assert parse_fixture("tools/report.py").imports == [
        Import("pkg.util", 3),
        Import("pkg", 4, (("core", None),)),
        Import("pkg.core", 5, (("build", None),)),
    ]
    star = parse_source("m.py", b"from ...a.b import *\nimport x.y as z, w\n")
    assert star is not None and star.imports == [
        Import("a.b", 1, (("*", None),), level=3),
        Import("x.y", 2, alias="z"),
        Import("w", 2),
    ]


def test_python_blocks_and_counts() -> None:
    core = parse_fixture("pkg/core.py")
    assert core.blocks == [(1, 9), (48, 49)]
    assert core.line_count == 49
    assert core.has_errors is False
    assert parse_fixture("pkg/util.py").blocks == [(1, 6)]
    assert parse_fixture("pkg/__init__.py").blocks == [(1, 5)]


def test_syntax_errors_keep_valid_definitions() -> None:
    broken = parse_fixture("pkg/broken.py")
    assert broken.has_errors is True
    qualnames = [d.qualname for d in broken.definitions]
    assert {"good", "Survivor", "Survivor.still_here"} <= set(qualnames)
    assert definition(broken, "good").end_line == 2
    assert definition(broken, "Survivor.still_here").kind == "method"
    assert CallSite("good", None, 12, "Survivor.still_here") in broken.calls


def test_invalid_utf8_does_not_crash() -> None:
    source = b'# caf\xe9\ndef f():\n    return "\xff\xfe"\n\n\n# \xff doc\ndef g(x):\n    return f(x)\n'
    parsed = parse_source("latin.py", source)
    assert parsed is not None
    assert outline(parsed) == [("f", "function", 2, 3), ("g", "function", 7, 8)]
    assert definition(parsed, "f").doc == "caf\ufffd"
    assert definition(parsed, "g").doc == "\ufffd doc"
    assert parsed.calls == [CallSite("f", None, 8, "g")]
    garbage = parse_source("x.js", b"\xff\xfe\x00 function (( {{ \x80\x81 require(")
    assert garbage is not None and garbage.has_errors


def test_empty_file() -> None:
    parsed = parse_source("empty.py", b"")
    assert parsed == ParsedFile(path="empty.py", language="python")


# JavaScript / TypeScript --------------------------------------------------------------------


def test_typescript_definitions_and_docs() -> None:
    app = parse_fixture("web/app.ts")
    assert app.language == "typescript"
    assert outline(app) == [
        ("Checkout", "class", 7, 21),
        ("Checkout.render", "method", 13, 15),
        ("Checkout.onClick", "method", 17, 20),
    ]
    assert definition(app, "Checkout").signature == "class Checkout"
    assert definition(app, "Checkout.render").signature == "render(): string"
    assert definition(app, "Checkout.render").doc == "Render the basket total."
    assert definition(app, "Checkout.onClick").signature == "onClick = (event: Event): void =>"
    lib = parse_fixture("web/lib.ts")
    assert outline(lib) == [
        ("Priced", "class", 3, 5),
        ("total", "function", 8, 10),
        ("formatPrice", "function", 12, 14),
    ]
    assert definition(lib, "total").signature == "function total(items: Priced[]): number"
    assert definition(lib, "total").doc == "Sum the prices of all items."
    assert definition(lib, "formatPrice").signature == "const formatPrice = (cents: number): string =>"
    assert definition(lib, "Priced").doc == ""  # the file comment is separated by a blank line


def test_typescript_abstract_and_interface_methods_are_bodiless_definitions() -> None:
    path = Path(__file__).parent / "fixtures" / "callrepo" / "web" / "shape.ts"
    shape = parse_source("web/shape.ts", path.read_bytes())
    assert outline(shape) == [
        ("Shape", "class", 1, 7),
        ("Shape.area", "method", 2, 2),
        ("Shape.describe", "method", 4, 6),
        ("Named", "class", 9, 11),
        ("Named.name", "method", 10, 10),
        ("fmt", "function", 13, 15),
    ]
    assert definition(shape, "Shape.area").signature == "abstract area(): number"
    assert [d.qualname for d in shape.definitions if d.stub] == ["Shape.area", "Named.name"]
    # A parameter's type literal holds no definitions; a type alias declares its methods.
    literal = parse_source("t.ts", b"function f(r: { read(): string }) { return r.read(); }\n"
                                   b"type Reader = { read(): string };\n")
    assert [(d.qualname, d.stub) for d in literal.definitions] == [("f", False), ("Reader", False),
                                                                   ("Reader.read", True)]


def test_typescript_calls_imports_blocks() -> None:
    app = parse_fixture("web/app.ts")
    assert app.calls == [
        CallSite("fmt", None, 14, "Checkout.render"),
        CallSite("total", None, 14, "Checkout.render"),
        CallSite("render", "this", 18, "Checkout.onClick"),
        CallSite("flash", "widgets", 19, "Checkout.onClick"),
        CallSite("express", None, 23, None),
        CallSite("get", "app", 24, None),
        CallSite("send", "res", 24, None),
        CallSite("render", "new Checkout()", 24, None),
        CallSite("Checkout", None, 24, None),
    ]
    assert app.imports == [
        Import("./lib", 1, (("total", None), ("formatPrice", "fmt"), ("Priced", None))),
        Import("./widget", 2, (("*", "widgets"),)),
        Import("express", 3, (("default", "express"),)),
        Import("./lib", 5, (("total", "sum"),)),
    ]
    assert app.blocks == [(1, 5), (23, 24)]


def test_javascript_file() -> None:
    widget = parse_fixture("web/widget.js")
    assert widget.language == "javascript"
    assert outline(widget) == [
        ("flash", "function", 6, 8),
        ("Badge", "class", 10, 14),
        ("Badge.connectedCallback", "method", 11, 13),
    ]
    assert definition(widget, "flash").doc == "Briefly show a message\nnext to the basket price."
    assert definition(widget, "Badge").signature == "class Badge extends HTMLElement"
    assert widget.imports == [
        Import("./lib", 1, (("formatPrice", None), ("total", "sumOf"))),
        Import("path", 2, alias="path"),
    ]
    assert CallSite("basename", "path", 12, "Badge.connectedCallback") in widget.calls
    assert CallSite("log", "console", 7, "flash") in widget.calls
    assert widget.blocks == [(1, 2), (16, 16)]


def test_javascript_function_values_and_fields() -> None:
    source = b"""class A {
  handle = (e) => { this.go(e); };
  #secret() { return 1; }
}
const twice = function (x) { return 2 * x; };
let B = class { m() {} };
"""
    parsed = parse_source("f.js", source)
    assert parsed is not None
    assert outline(parsed) == [
        ("A", "class", 1, 4),
        ("A.handle", "method", 2, 2),
        ("A.#secret", "method", 3, 3),
        ("twice", "function", 5, 5),
        ("B", "class", 6, 6),
        ("B.m", "method", 6, 6),
    ]
    assert definition(parsed, "twice").signature == "const twice = function (x)"
    assert parsed.calls == [CallSite("go", "this", 2, "A.handle")]


def test_tsx_default_export() -> None:
    source = b"""// Renders a button.
export default function Button({ label }: { label: string }) {
  return <button onClick={() => alert(label)}>{label}</button>;
}
"""
    parsed = parse_source("Button.tsx", source)
    assert parsed is not None and parsed.language == "tsx"
    assert outline(parsed) == [("Button", "function", 2, 4)]
    assert definition(parsed, "Button").doc == "Renders a button."
    assert parsed.calls == [CallSite("alert", None, 3, "Button")]


# Java ---------------------------------------------------------------------------------------


def test_java() -> None:
    shop = parse_fixture("java/com/acme/Shop.java")
    assert outline(shop) == [
        ("Shop", "class", 10, 26),
        ("Shop.main", "method", 13, 16),
        ("Shop.checkout", "method", 19, 25),
    ]
    assert definition(shop, "Shop").doc == "Entry point of the shop."
    assert definition(shop, "Shop").signature == "public class Shop"
    assert definition(shop, "Shop.checkout").doc == "Adds every item and prints the total."
    assert definition(shop, "Shop.main").signature == "public static void main(String[] args)"
    assert shop.imports == [Import("com.acme.Cart", 3), Import("java.util.List", 4), Import("java.util.*", 5)]
    assert CallSite("Cart", None, 11, "Shop") in shop.calls  # `new Cart()` in a field initializer
    assert CallSite("println", "System.out", 23, "Shop.checkout") in shop.calls
    assert CallSite("of", "List", 15, "Shop.main") in shop.calls
    assert shop.blocks == [(1, 5)]
    cart = parse_fixture("java/com/acme/Cart.java")
    assert outline(cart) == [
        ("Cart", "class", 6, 30),
        ("Cart.Cart", "method", 9, 9),
        ("Cart.add", "method", 11, 13),
        ("Cart.size", "method", 15, 15),
        ("Cart.total", "method", 17, 19),
        ("Cart.Pricing", "class", 21, 23),
        ("Cart.Status", "class", 25, 29),
        ("Cart.Status.done", "method", 28, 28),
    ]
    assert CallSite("ArrayList", None, 7, "Cart") in cart.calls


# Go -----------------------------------------------------------------------------------------


def test_go() -> None:
    store = parse_fixture("go/store/store.go")
    assert outline(store) == [
        ("Store", "class", 10, 13),
        ("Getter", "class", 16, 18),
        ("New", "function", 21, 23),
        ("Store.Add", "method", 26, 30),
        ("Store.Get", "method", 32, 35),
        ("Store.String", "method", 37, 39),
    ]
    assert definition(store, "Store").signature == "type Store struct"
    assert definition(store, "Store").doc == "Store is a concurrency-safe item counter."
    add = definition(store, "Store.Add")
    assert add.signature == "func (s *Store) Add(key string, n int)"
    assert add.parent == "Store"
    assert add.doc == "Add increments the count of key."
    assert CallSite("Lock", "s.mu", 27, "Store.Add") in store.calls
    assert CallSite("Sprintf", "fmt", 38, "Store.String") in store.calls
    assert store.imports == [Import("fmt", 5), Import("sync", 6)]
    assert store.blocks == [(2, 7)]
    main = parse_fixture("go/cmd/main.go")
    assert main.imports == [Import("fmt", 4), Import("example.com/shop/store", 6, alias="st")]
    assert main.calls == [
        CallSite("New", "st", 10, "main"),
        CallSite("Add", "s", 11, "main"),
        CallSite("Println", "fmt", 12, "main"),
        CallSite("String", "s", 12, "main"),
    ]


# Rust ---------------------------------------------------------------------------------------


def test_rust() -> None:
    geo = parse_fixture("rust/src/geo/mod.rs")
    assert outline(geo) == [
        ("Point", "class", 7, 10),
        ("Shape", "class", 12, 18),
        ("Shape.area", "method", 13, 13),  # a required method: its signature and doc
        ("Shape.name", "method", 15, 17),
        ("Point", "class", 20, 29),
        ("Point.new", "method", 21, 23),
        ("Point.distance", "method", 26, 28),
    ]
    point_struct = geo.definitions[0]
    assert point_struct.signature == "pub struct Point"
    assert point_struct.doc == "A point in the plane."  # above the #[derive] attribute
    assert geo.definitions[4].signature == "impl Point"
    assert definition(geo, "Point.distance").doc == "Euclidean distance to another point."
    assert definition(geo, "Point.new").signature == "pub fn new(x: f64, y: f64) -> Self"
    assert CallSite("from", "String", 16, "Shape.name") in geo.calls
    assert geo.imports == [Import("self::circle", 1), Import("self::circle::Circle", 3)]

    lib = parse_fixture("rust/src/lib.rs")
    assert outline(lib) == [
        ("total_area", "function", 9, 11),
        ("origin", "function", 13, 17),
        ("Point", "class", 19, 23),
        ("Point.fmt", "method", 20, 22),
    ]
    assert definition(lib, "total_area").doc == "Total area of all shapes."
    assert definition(lib, "Point").signature == "impl fmt::Display for Point"
    assert lib.imports == [
        Import("self::geo", 3),
        Import("crate::geo", 5, (("Point", None), ("Shape", None))),
        Import("std::fmt", 6),
    ]
    assert CallSite("new", "Point", 14, "origin") in lib.calls
    assert CallSite("area", "s", 10, "total_area") in lib.calls
    assert not any(c.name in ("println", "write") for c in lib.calls)  # macros are not calls
    assert lib.blocks == [(3, 6)]


def test_rust_use_trees() -> None:
    parsed = parse_source("m.rs", b"use a::{b::{c, d as e}, f::*, self};\nuse x as y;\n")
    assert parsed is not None
    assert parsed.imports == [
        Import("a::b", 1, (("c", None), ("d", "e"))),
        Import("a::f", 1, (("*", None),)),
        Import("a", 1, (("self", None),)),
        Import("x", 2, alias="y"),
    ]


# C / C++ ------------------------------------------------------------------------------------


def test_c() -> None:
    math_c = parse_fixture("c/math.c")
    assert outline(math_c) == [
        ("mean", "function", 7, 13),
        ("clamp", "function", 15, 17),
        ("report", "function", 19, 21),
    ]
    assert definition(math_c, "mean").signature == "double mean(const double *xs, size_t n)"
    assert definition(math_c, "mean").doc == "Arithmetic mean of n values."
    assert definition(math_c, "clamp").doc == ""
    assert math_c.calls == [
        CallSite("printf", None, 20, "report"),
        CallSite("clamp", None, 20, "report"),
        CallSite("mean", None, 20, "report"),
    ]
    assert math_c.imports == [Import("math.h", 2)]  # <stdio.h> is dropped
    assert math_c.blocks == [(1, 2)]
    header = parse_fixture("c/math.h")
    assert header.definitions == []
    assert header.imports == []
    assert header.blocks == [(2, 9)]  # statements inside the include guard


def test_java_methods_without_body() -> None:
    # Interface, abstract and native methods are declarations RepoQA asks for (gson, karate, conscrypt).
    source = b"""interface Modifier {
    /** Whether the uri is logged. */
    boolean enableForUri(String uri); // TODO
}
abstract class Crypto {
    static native void asn1_read_free(long ref);
    abstract int size();
    Crypto() {}
}
"""
    parsed = parse_source("Modifier.java", source)
    assert parsed is not None
    assert outline(parsed) == [
        ("Modifier", "class", 1, 4),
        ("Modifier.enableForUri", "method", 3, 3),
        ("Crypto", "class", 5, 9),
        ("Crypto.asn1_read_free", "method", 6, 6),
        ("Crypto.size", "method", 7, 7),
        ("Crypto.Crypto", "method", 8, 8),
    ]
    assert definition(parsed, "Modifier.enableForUri").doc == "Whether the uri is logged."


def test_cpp() -> None:
    shape = parse_fixture("cpp/shape.cpp")
    assert outline(shape) == [("Shape.area", "method", 7, 9), ("main", "function", 13, 17)]
    area = definition(shape, "Shape.area")
    assert area.name == "area"
    assert area.parent == "Shape"
    assert area.signature == "double Shape::area() const"
    assert area.doc == "Area of the shape; the base class has none."
    assert CallSite("area", "r", 15, "main") in shape.calls
    assert shape.imports == [Import("shape.hpp", 1)]
    header = parse_fixture("cpp/shape.hpp")
    assert outline(header) == [
        ("Shape", "class", 7, 16),
        ("Shape.Shape", "method", 9, 9),
        ("Shape.~Shape", "method", 10, 10),
        ("Shape.name", "method", 12, 12),
        ("Rect", "class", 18, 21),
        ("Rect.Rect", "method", 20, 20),
    ]
    assert definition(header, "Shape").doc == "Base class of all shapes."
    assert definition(header, "Rect").signature == "struct Rect : Shape"
    assert CallSite("move", "std", 9, "Shape.Shape") in header.calls


def test_cpp_qualified_and_template_names() -> None:
    source = b"""template <typename T>
T Stack<T>::pop() { return items_.back(); }
namespace a { void C::D::run() { x->go(); ns::make<int>(1); } }
"""
    parsed = parse_source("t.cpp", source)
    assert parsed is not None
    assert outline(parsed) == [("Stack.pop", "method", 2, 2), ("D.run", "method", 3, 3)]
    assert parsed.calls == [
        CallSite("back", "items_", 2, "Stack.pop"),
        CallSite("go", "x", 3, "D.run"),
        CallSite("make", "ns", 3, "D.run"),
    ]


def test_cpp_header_with_h_suffix() -> None:
    # A C++ header named .h (RepoQA's uvw, drogon, mlx): parsed with C's grammar its class body
    # is an error and the constructor and methods, template ones included, go missing.
    source = b"""#pragma once
namespace uvw {
template<typename T>
class write_req final: public request<write_req<T>> {
public:
    write_req(loop::token token, unsigned int len)
        : request<write_req<T>>{token},
          buf{len} {}

    void publish(T event) {
        handler(event);
    }
};
}
"""
    parsed = parse_source("src/uvw/stream.h", source)
    assert parsed is not None
    assert outline(parsed) == [
        ("write_req", "class", 4, 13),
        ("write_req.write_req", "method", 6, 8),
        ("write_req.publish", "method", 10, 12),
    ]
    plain_c = parse_source("lib/list.h", b"struct node { int v; };\nint length(struct node *n) { return 0; }\n")
    assert plain_c is not None
    assert language_for_path("lib/list.h") == "c"
    assert [d.qualname for d in plain_c.definitions] == ["node", "length"]


def test_long_receiver_is_dropped() -> None:
    receiver = "a" * 81
    parsed = parse_source("r.py", f"{receiver}.go()\nb.go()\n".encode())
    assert parsed is not None
    assert parsed.calls == [CallSite("go", None, 1, None), CallSite("go", "b", 2, None)]
