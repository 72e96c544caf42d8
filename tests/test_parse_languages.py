"""The languages read from query files (prism_code/parse/queries/*.scm) on fixtures of each one's shapes.

Every fixture is a small workspace under tests/fixtures/languages/<language>/; its main file holds
the definition shapes the language allows, and its imports point at the workspace's other files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_code.parse import ParsedFile, language_for_path, parse_source
from prism_code.parse.code_only import code_only
from prism_code.parse.languages import language_for_source
from prism_code.parse.resolve import ModuleResolver

FIXTURES = Path(__file__).parent / "fixtures" / "languages"


def parse_fixture(language: str, relative: str) -> ParsedFile:
    parsed = parse_source(relative, (FIXTURES / language / relative).read_bytes())
    assert parsed is not None
    assert parsed.language == language
    assert not parsed.has_errors
    return parsed


def outline(parsed: ParsedFile) -> list[tuple[str, str, int, int]]:
    return [(d.qualname, d.kind, d.start_line, d.end_line) for d in parsed.definitions]


def calls(parsed: ParsedFile) -> set[tuple[str, str | None, int, str | None]]:
    return {(c.name, c.receiver, c.line, c.caller) for c in parsed.calls}


def imports(parsed: ParsedFile) -> list[tuple[str, int, tuple[tuple[str, str | None], ...], str | None]]:
    return [(i.module, i.line, i.names, i.alias) for i in parsed.imports]


def signatures(parsed: ParsedFile) -> dict[str, str]:
    return {d.qualname: d.signature for d in parsed.definitions}


@pytest.mark.parametrize(("path", "language"), [
    ("bin/run.sh", "bash"), ("lib/x.bash", "bash"), ("test/x.bats", "bash"),
    ("A.cs", "csharp"), ("lib/a.ex", "elixir"), ("test/a_test.exs", "elixir"), ("src/A.hs", "haskell"),
    ("A.kt", "kotlin"), ("build.gradle.kts", "kotlin"), ("a.lua", "lua"), ("a.php", "php"),
    ("a.rb", "ruby"), ("Rakefile.rake", "ruby"), ("x.gemspec", "ruby"), ("A.scala", "scala"),
    ("build.sc", "scala"), ("A.swift", "swift"), ("a.zig", "zig"),
])
def test_extensions_name_the_new_languages(path: str, language: str) -> None:
    assert language_for_path(path) == language


def test_a_script_without_an_extension_is_bash_by_its_shebang() -> None:
    script = (FIXTURES / "bash" / "bin" / "shop").read_bytes()
    assert language_for_source("bin/shop", script) == "bash"
    assert language_for_source("bin/shop", b"#!/usr/bin/env python3\n") is None
    assert language_for_source("notes.txt", b"#!/bin/bash\n") is None  # an extension decides
    parsed = parse_source("bin/shop", script)
    assert parsed is not None and outline(parsed) == [("main", "function", 3, 5)]


def test_bash() -> None:
    parsed = parse_fixture("bash", "bin/shop.sh")
    assert outline(parsed) == [("f", "function", 6, 8), ("g", "function", 9, 11), ("h", "function", 12, 12)]
    assert parsed.definitions[0].doc == "Says hi."
    assert signatures(parsed) == {"f": "f()", "g": "function g", "h": "function h()"}
    assert {("echo", None, 7, "f"), ("f", None, 10, "g")} <= calls(parsed)
    assert imports(parsed) == [("./lib.sh", 2, (), None), ("./other.sh", 3, (), None)]


def test_csharp() -> None:
    parsed = parse_fixture("csharp", "Shop/Core/Cart.cs")
    assert outline(parsed) == [
        ("Cart", "class", 9, 35), ("Cart.Cart", "method", 13, 16), ("Cart.Finalize", "method", 18, 18),
        ("Cart.Total", "method", 20, 20), ("Cart.Count", "method", 22, 22), ("Cart.Save", "method", 24, 28),
        ("Cart.operator +", "method", 30, 30), ("Cart.Line", "class", 34, 34),
        ("IPriced", "class", 37, 40), ("IPriced.Discount", "method", 39, 39), ("Item", "class", 42, 42),
        ("Color", "class", 44, 44), ("Point", "class", 46, 46), ("Handler", "class", 48, 48),
        ("CartExtensions", "class", 53, 60), ("CartExtensions.Second", "method", 55, 59),
        ("CartExtensions.Second.Local", "function", 57, 57),
    ]
    assert signatures(parsed)["Cart.Save"] == "public void Save(IStore store)"
    assert signatures(parsed)["Cart.Total"] == "public int Total"  # the property, not its body
    assert parsed.definitions[0].doc == "<summary>A cart.</summary>"
    assert {("Put", "store", 26, "Cart.Save"), ("Check", "Format", 27, "Cart.Save"),
            ("Log", "Format.Check<Cart>(this)", 27, "Cart.Save"), ("Cart", None, 30, "Cart.operator +"),
            ("Local", None, 58, "CartExtensions.Second")} <= calls(parsed)
    assert imports(parsed) == [("System", 1, (), None), ("Shop.Util", 2, (), None), ("System.Math", 3, (), None),
                               ("Newtonsoft.Json", 4, (), "Json")]
    assert parsed.blocks == [(1, 4), (51, 51)]  # the namespace's members are top-level statements


def test_csharp_preprocessor_lines_do_not_break_a_declaration() -> None:
    source = (b"namespace N\n{\n#if INTERNAL\n    internal\n#else\n    public\n#endif\n"
              b"    partial struct Reader\n#pragma warning restore SA1205\n    {\n"
              b"        public byte ReadByte() { return Next(); }\n    }\n}\n")
    parsed = parse_source("Reader.cs", source)
    assert parsed is not None and not parsed.has_errors
    assert outline(parsed) == [("Reader", "class", 4, 12), ("Reader.ReadByte", "method", 11, 11)]
    assert [(c.name, c.caller) for c in parsed.calls] == [("Next", "Reader.ReadByte")]


def test_elixir() -> None:
    parsed = parse_fixture("elixir", "lib/shop/cart.ex")
    assert outline(parsed) == [
        ("Shop.Cart", "class", 1, 41), ("Shop.Cart.total", "method", 12, 14), ("Shop.Cart.count", "method", 16, 16),
        ("Shop.Cart.check", "method", 18, 22),  # `defp check(0)` and `defp check(n) when ...`: one function
        ("Shop.Cart.debug", "method", 24, 26), ("Shop.Cart.is_cart", "method", 28, 28),
        ("Shop.Cart.Priced", "class", 30, 32), ("Shop.Cart.Priced.price", "method", 31, 31),
        ("Shop.Cart.Priced.Item", "class", 34, 36), ("Shop.Cart.Priced.Item.price", "method", 35, 35),
        ("Shop.Cart.Line", "class", 38, 40),
    ]
    cart = parsed.definitions[0]
    assert (cart.name, cart.parent) == ("Cart", "Shop")
    assert signatures(parsed)["Shop.Cart.count"] == "def count(cart)"
    found = calls(parsed)
    assert {("reduce", "Enum", 13, "Shop.Cart.total"), ("check", "F", 20, "Shop.Cart.check"),
            ("helper", None, 21, "Shop.Cart.check"), ("debug", "Logger", 25, "Shop.Cart.debug")} <= found
    # Neither the definition keywords nor a definition's own head are calls.
    assert not {name for name, _, _, _ in found} & {"def", "defp", "defmodule", "alias", "total", "count", "doc"}
    assert imports(parsed) == [("Shop.Item", 3, (), None), ("Shop.Price", 3, (), None), ("Shop.Format", 4, (), "F"),
                               ("Ecto.Query", 5, (), None), ("GenServer", 6, (), None), ("Logger", 7, (), None)]


def test_haskell() -> None:
    parsed = parse_fixture("haskell", "src/Shop/Cart.hs")
    assert outline(parsed) == [
        ("f", "function", 8, 10),  # the signature and both equations
        ("g", "function", 12, 13), ("Pretty", "class", 15, 17), ("Pretty.pretty", "method", 16, 17),
        ("Pretty Int", "class", 19, 20), ("Pretty Int.pretty", "method", 20, 20),
        ("T", "class", 22, 22), ("N", "class", 23, 23), ("S", "class", 24, 24), ("main", "function", 26, 29),
    ]
    f = parsed.definitions[0]
    assert (f.signature, f.doc) == ("f :: Int -> Int", "doc")
    assert {("f", None, 10, "f"), ("lookup", "M", 12, "g"), ("show", None, 20, "Pretty Int.pretty"),
            ("print", None, 28, "main"), ("g", None, 29, "main")} <= calls(parsed)
    assert imports(parsed) == [("Data.Map", 3, (), "M"), ("Data.List", 4, (("sort", None),), None),
                               ("Shop.Format", 5, (("render", None),), None)]
    assert parsed.blocks == [(1, 5)]


def test_kotlin() -> None:
    parsed = parse_fixture("kotlin", "src/com/example/shop/Cart.kt")
    assert outline(parsed) == [
        ("Cart", "class", 8, 27), ("Cart.init", "method", 9, 11), ("Cart.constructor", "method", 13, 13),
        ("Cart.total", "method", 15, 15), ("Cart.save", "method", 17, 20), ("Cart.Companion", "class", 22, 24),
        ("Cart.Companion.empty", "method", 23, 23), ("Cart.Line", "class", 26, 26), ("Priced", "class", 29, 32),
        ("Priced.discount", "method", 31, 31), ("Color", "class", 34, 34), ("Registry", "class", 36, 38),
        ("Registry.register", "method", 37, 37), ("Item", "class", 40, 40),
        ("String.shout", "method", 42, 42), ("List.second", "method", 44, 44),  # extension functions
        ("handler", "function", 46, 46), ("HttpTimeout", "function", 48, 50),
    ]
    assert signatures(parsed)["List.second"] == "fun <T> List<T>.second(): T"
    assert signatures(parsed)["Cart"] == "class Cart(val items: List<Item>) : Base()"
    assert parsed.definitions[0].doc == "A cart."
    assert {("Base", None, 8, "Cart"), ("isNotEmpty", "items", 10, "Cart.init"), ("put", "store", 18, "Cart.save"),
            ("let", "Format.check(this)", 19, "Cart.save"), ("Cart", None, 23, "Cart.Companion.empty"),
            ("timeout", "request", 49, "HttpTimeout")} <= calls(parsed)
    assert imports(parsed) == [("com.example.util.Format", 3, (), None), ("com.example.model.*", 4, (), None),
                               ("kotlinx.coroutines.launch", 5, (), "go")]


def test_kotlin_definitions_after_what_the_grammar_cannot_read_are_read_again() -> None:
    # tree-sitter-kotlin turns the rest of the file into one ERROR node after an annotated
    # constructor on its own line (kotlinx-coroutines' Channel.kt); salvage.py reads it again.
    source = (b"class Before {\n    fun a() = 1\n}\n\npublic value class Result<out T>\n"
              b"@PublishedApi internal constructor(val holder: Any?) {\n"
              b"    public val isSuccess: Boolean get() = holder !is Failed\n\n"
              b"    public fun getOrNull(): T? = null\n\n"
              b"    override fun toString(): String = \"Result\"\n}\n\n"
              b"public fun <T> Result<T>.getOrElse(onFailure: () -> T): T = onFailure()\n\n"
              b"public fun after(): Int = 2\n")
    parsed = parse_source("Result.kt", source)
    assert parsed is not None and parsed.has_errors
    assert outline(parsed) == [
        ("Before", "class", 1, 3), ("Before.a", "method", 2, 2), ("Result", "class", 5, 5),
        ("getOrNull", "function", 9, 9), ("toString", "function", 11, 11),  # their class header was lost
        ("Result.getOrElse", "method", 14, 14), ("after", "function", 16, 16),
    ]
    assert ("onFailure", None, 14, "Result.getOrElse") in calls(parsed)


def test_lua() -> None:
    parsed = parse_fixture("lua", "shop/cart.lua")
    assert outline(parsed) == [
        ("helper", "function", 7, 9), ("M.setup", "method", 11, 13), ("M.picker.find", "method", 15, 17),
        ("M.close", "method", 19, 21), ("actions", "class", 23, 26), ("actions.select", "method", 24, 24),
        ("actions.move", "method", 25, 25), ("global_fn", "function", 28, 28),
    ]
    setup = parsed.definitions[1]
    assert (setup.name, setup.parent, setup.signature) == ("setup", "M", "function M.setup(opts)")
    assert parsed.definitions[0].doc == "Top-level helper."
    assert {("trim", "utils", 8, "helper"), ("refresh", "self", 16, "M.picker.find"),
            ("helper", None, 20, "M.close")} <= calls(parsed)
    assert imports(parsed) == [("shop.utils", 1, (), None), ("shop", 2, (), None)]
    assert parsed.blocks == [(1, 4), (30, 30)]  # `local actions = {...}` is not a block: it is a definition


def test_lua_functions_built_by_a_call_and_plain_data_tables() -> None:
    source = (b"local layouts = {}\n"
              b"layouts.horizontal = make_layout('horizontal', {}, function(self)\n  return self\nend)\n"
              b"local config = { width = 10, nested = { x = 1 } }\n")
    parsed = parse_source("layouts.lua", source)
    assert parsed is not None
    assert outline(parsed) == [("layouts.horizontal", "method", 2, 4)]  # a table of data is no unit


def test_php() -> None:
    parsed = parse_fixture("php", "src/Shop/Cart.php")
    assert outline(parsed) == [
        ("Cart", "class", 14, 35), ("Cart.__construct", "method", 18, 18), ("Cart.total", "method", 20, 23),
        ("Cart.empty", "method", 25, 28), ("Cart.save", "method", 30, 34), ("Priced", "class", 37, 40),
        ("Priced.discount", "method", 39, 39), ("Countable", "class", 42, 45), ("Countable.count", "method", 44, 44),
        ("Color", "class", 47, 51), ("Color.label", "method", 50, 50), ("top_level", "function", 53, 56),
        ("handler", "function", 58, 58),
    ]
    assert parsed.definitions[0].doc == "A cart."
    assert signatures(parsed)["handler"] == "$handler = function ($x)"
    assert {("put", "$store", 32, "Cart.save"), ("check", "Format", 33, "Cart.save"),
            ("log", "Format::check($this)", 33, "Cart.save"), ("helper", None, 55, "top_level")} <= calls(parsed)
    assert imports(parsed) == [("App\\Util\\Format", 5, (), None), ("App\\Model\\Item", 6, (), None),
                               ("App\\Model\\Price", 6, (), "Cost"), ("App\\Util\\helper", 7, (), None),
                               ("./bootstrap.php", 9, (), None)]


def test_ruby() -> None:
    parsed = parse_fixture("ruby", "lib/shop/cart.rb")
    assert outline(parsed) == [
        ("top_level", "function", 5, 7), ("Shop", "class", 9, 36), ("Shop.Cart", "class", 11, 35),
        ("Shop.Cart.initialize", "method", 14, 16), ("Shop.Cart.total", "method", 18, 20),
        ("Shop.Cart.empty", "method", 22, 24),  # def self.empty
        ("Shop.Cart.build", "method", 27, 29),  # inside `class << self`
        ("Shop.Cart.valid?", "method", 32, 34), ("Shop.Order", "class", 38, 42),  # class Shop::Order
        ("Shop.Order.place!", "method", 39, 41),
    ]
    assert signatures(parsed)["Shop"] == "module Shop"  # the comment after it is Cart's doc
    assert parsed.definitions[2].doc == "A cart."
    assert {("sum", "items", 19, "Shop.Cart.total"), ("new", "Cart", 28, "Shop.Cart.build"),
            ("check", "Format", 33, "Shop.Cart.valid?"), ("empty", "Shop::Cart", 40, "Shop.Order.place!"),
            ("total", "Shop::Cart.empty", 40, "Shop.Order.place!")} <= calls(parsed)
    assert imports(parsed) == [("json", 1, (), None), ("./helpers/format", 2, (), None)]


def test_scala() -> None:
    parsed = parse_fixture("scala", "src/com/example/shop/Cart.scala")
    assert outline(parsed) == [
        ("Cart", "class", 8, 17), ("Cart.total", "method", 9, 9), ("Cart.save", "method", 11, 14),
        ("Cart.this", "method", 16, 16), ("Cart", "class", 19, 22),  # the companion object
        ("Cart.empty", "method", 20, 20), ("Cart.handler", "method", 21, 21), ("Priced", "class", 24, 26),
        ("Priced.discount", "method", 25, 25), ("Item", "class", 28, 28), ("Color", "class", 30, 30),
        ("Shade", "class", 31, 31), ("RichCart", "class", 33, 35), ("RichCart.second", "method", 34, 34),
        ("Cart.shout", "method", 38, 38),  # `extension (c: Cart)`
        ("topLevel", "function", 42, 42),
    ]
    assert signatures(parsed)["Cart.save"] == "def save(store: Store): Unit"
    assert {("map", "items", 9, "Cart.total"), ("check", "Format", 13, "Cart.save"),
            ("Cart", None, 20, "Cart.empty"), ("identity", None, 42, "topLevel")} <= calls(parsed)
    assert imports(parsed) == [("com.example.util.Format", 3, (), None), ("cats.syntax.all.*", 4, (), None),
                               ("org.http4s", 5, (("Request", None), ("Response", "Resp")), None)]


def test_swift() -> None:
    parsed = parse_fixture("swift", "Sources/Shop/Cart.swift")
    assert outline(parsed) == [
        ("Cart", "class", 5, 26), ("Cart.init", "method", 8, 11), ("Cart.deinit", "method", 13, 13),
        ("Cart.total", "method", 15, 17), ("Cart.empty", "method", 19, 19), ("Cart.count", "method", 21, 23),
        ("Cart.subscript", "method", 25, 25), ("Item", "class", 28, 31), ("Item.bump", "method", 30, 30),
        ("Color", "class", 33, 36), ("Color.name", "method", 35, 35), ("Priced", "class", 38, 41),
        ("Priced.discount", "method", 40, 40),
        ("Cart", "class", 43, 45), ("Cart.discount", "method", 44, 44),  # extension Cart: Priced
        ("Counter", "class", 47, 49), ("Counter.tick", "method", 48, 48),
        ("topLevel", "function", 51, 51), ("handler", "function", 53, 53),
    ]
    assert [d.signature for d in parsed.definitions if d.qualname == "Cart"] == [
        "public final class Cart: Base, Codable", "extension Cart: Priced"]
    assert signatures(parsed)["Cart.subscript"] == "subscript(index: Int) -> Item"
    found = calls(parsed)
    assert {("init", "super", 10, "Cart.init"), ("reduce", "items", 16, "Cart.total"),
            ("Cart", None, 19, "Cart.empty"), ("check", "Format", 44, "Cart.discount")} <= found
    assert ("items", None, 25, "Cart.subscript") not in found  # `items[index]` is no call
    assert imports(parsed) == [("Foundation", 1, (), None), ("Alamofire.Session", 2, (), None)]


def test_zig() -> None:
    parsed = parse_fixture("zig", "src/cart.zig")
    assert outline(parsed) == [
        ("Cart", "class", 6, 20), ("Cart.init", "method", 11, 13), ("Cart.total", "method", 15, 19),
        ("Color", "class", 22, 22), ("Value", "class", 24, 29), ("Value.isInt", "method", 26, 28),
        ("helper", "function", 33, 35), ("cart total", "function", 37, 39),  # test "cart total"
        ("Generic", "function", 41, 46), ("Generic.get", "function", 44, 44),
    ]
    assert parsed.definitions[0].doc == "A cart."
    assert signatures(parsed)["Cart.total"] == "pub fn total(self: *const Self) u32"
    assert {("check", "util", 18, "Cart.total"), ("max", "std.math", 34, "helper"),
            ("helper", None, 38, "cart total")} <= calls(parsed)
    assert imports(parsed) == [("std", 1, (), None), ("util.zig", 2, (), None)]
    assert parsed.blocks == [(1, 3), (31, 31)]  # `const Err = error{...}` is no unit


# Import resolution --------------------------------------------------------------------------


def resolutions(language: str) -> dict[tuple[str, str], list[str]]:
    """(importing file, module) -> resolved files, for every import of the language's fixture workspace."""
    root = FIXTURES / language
    files = sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())
    resolver = ModuleResolver(files)
    found: dict[tuple[str, str], list[str]] = {}
    for path in files:
        parsed = parse_source(path, (root / path).read_bytes())
        assert parsed is not None
        for imp in parsed.imports:
            found[(path, imp.module)] = resolver.resolve(imp, path, parsed.language)
    return found


@pytest.mark.parametrize(("language", "expected"), [
    ("bash", {("bin/shop.sh", "./lib.sh"): ["bin/lib.sh"], ("bin/shop.sh", "./other.sh"): ["bin/other.sh"]}),
    ("csharp", {("Shop/Core/Cart.cs", "System"): [], ("Shop/Core/Cart.cs", "Shop.Util"): ["Shop/Util/Format.cs"],
                ("Shop/Core/Cart.cs", "System.Math"): [], ("Shop/Core/Cart.cs", "Newtonsoft.Json"): []}),
    ("elixir", {("lib/shop/cart.ex", "Shop.Item"): ["lib/shop/item.ex"], ("lib/shop/cart.ex", "Shop.Price"): [],
                ("lib/shop/cart.ex", "Shop.Format"): ["lib/shop/format.ex"], ("lib/shop/cart.ex", "Ecto.Query"): [],
                ("lib/shop/cart.ex", "GenServer"): [], ("lib/shop/cart.ex", "Logger"): []}),
    ("haskell", {("src/Shop/Cart.hs", "Data.Map"): [], ("src/Shop/Cart.hs", "Data.List"): [],
                 ("src/Shop/Cart.hs", "Shop.Format"): ["src/Shop/Format.hs"]}),
    ("kotlin", {("src/com/example/shop/Cart.kt", "com.example.util.Format"): ["src/com/example/util/Format.kt"],
                ("src/com/example/shop/Cart.kt", "com.example.model.*"): ["src/com/example/model/Item.kt"],
                ("src/com/example/shop/Cart.kt", "kotlinx.coroutines.launch"): []}),
    ("lua", {("shop/cart.lua", "shop.utils"): ["shop/utils.lua"], ("shop/cart.lua", "shop"): ["shop/init.lua"],
             ("shop/init.lua", "shop.cart"): ["shop/cart.lua"]}),
    ("php", {("src/Shop/Cart.php", "App\\Util\\Format"): ["src/Util/Format.php"],  # PSR-4: App\ is src/
             ("src/Shop/Cart.php", "App\\Model\\Item"): [], ("src/Shop/Cart.php", "App\\Model\\Price"): [],
             ("src/Shop/Cart.php", "App\\Util\\helper"): [],
             ("src/Shop/Cart.php", "./bootstrap.php"): ["src/Shop/bootstrap.php"]}),
    ("ruby", {("lib/shop.rb", "shop/cart"): ["lib/shop/cart.rb"], ("lib/shop.rb", "json"): [],
              ("lib/shop/cart.rb", "json"): [],
              ("lib/shop/cart.rb", "./helpers/format"): ["lib/shop/helpers/format.rb"]}),
    ("scala", {("src/com/example/shop/Cart.scala", "com.example.util.Format"): ["src/com/example/util/Format.scala"],
               ("src/com/example/shop/Cart.scala", "cats.syntax.all.*"): [],
               ("src/com/example/shop/Cart.scala", "org.http4s"): []}),
    ("swift", {("Sources/Shop/Cart.swift", "Foundation"): [], ("Sources/Shop/Cart.swift", "Alamofire.Session"): []}),
    ("zig", {("src/cart.zig", "std"): [], ("src/cart.zig", "util.zig"): ["src/util.zig"]}),
])
def test_fixture_imports_resolve(language: str, expected: dict[tuple[str, str], list[str]]) -> None:
    assert resolutions(language) == expected


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("swift", "/// doc\nfunc f() -> Int {\n  /* x */ return 1 // y\n}\n", "func f() -> Int {\n   return 1\n}"),
    ("haskell", "-- | doc\nf :: Int\nf = 1 -- c\n", "f :: Int\nf = 1"),
    ("kotlin", "/** doc */\nfun f() = 1 // c\n", "fun f() = 1"),
    ("ruby", "# doc\ndef f\n  1 # x\nend\n", "def f\n  1\nend"),
    ("lua", "-- doc\nlocal function f() return 1 end -- y\n", "local function f() return 1 end"),
])
def test_code_without_comments(language: str, text: str, expected: str) -> None:
    assert code_only(text, language) == expected
