"""Import resolution against the fixture repository and a few synthetic layouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_code.parse import Import, parse_source
from prism_code.parse.resolve import ModuleResolver

FIXTURES = Path(__file__).parent / "fixtures" / "multilang"
FIXTURE_FILES = frozenset(path.relative_to(FIXTURES).as_posix() for path in FIXTURES.rglob("*") if path.is_file())


@pytest.fixture(scope="module")
def fixture_resolutions() -> dict[tuple[str, str], list[str]]:
    """(importing file, module as written) -> resolved files, for every import in the fixtures."""
    resolver = ModuleResolver(FIXTURE_FILES)
    resolved: dict[tuple[str, str], list[str]] = {}
    for path in sorted(FIXTURE_FILES):
        parsed = parse_source(path, (FIXTURES / path).read_bytes())
        if parsed is None:
            continue
        for imp in parsed.imports:
            key = (path, "." * imp.level + imp.module)
            resolved[key] = resolved.get(key, []) + resolver.resolve(imp, path, parsed.language)
    return resolved


def test_fixture_imports_resolve(fixture_resolutions: dict[tuple[str, str], list[str]]) -> None:
    assert fixture_resolutions == {
        ("c/math.c", "math.h"): ["c/math.h"],
        ("cpp/shape.cpp", "shape.hpp"): ["cpp/shape.hpp"],
        ("go/cmd/main.go", "fmt"): [],
        ("go/cmd/main.go", "example.com/shop/store"): ["go/store/store.go"],  # not store_test.go
        ("go/store/store.go", "fmt"): [],
        ("go/store/store.go", "sync"): [],
        ("go/store/store_test.go", "testing"): [],
        ("java/com/acme/Cart.java", "java.util.ArrayList"): [],
        ("java/com/acme/Cart.java", "java.util.List"): [],
        ("java/com/acme/Shop.java", "com.acme.Cart"): ["java/com/acme/Cart.java"],
        ("java/com/acme/Shop.java", "java.util.List"): [],
        ("java/com/acme/Shop.java", "java.util.*"): [],
        ("pkg/__init__.py", ".core"): ["pkg/core.py"],
        ("pkg/core.py", "logging"): [],
        ("pkg/core.py", ".util"): ["pkg/util.py"],
        ("pkg/core.py", "."): ["pkg/util.py"],  # `from . import util` reaches the submodule
        ("pkg/util.py", "math"): [],
        ("pkg/util.py", "os.path"): [],
        ("rust/src/geo/circle.rs", "super"): ["rust/src/geo/mod.rs"],
        ("rust/src/geo/mod.rs", "self::circle"): ["rust/src/geo/circle.rs"],
        ("rust/src/geo/mod.rs", "self::circle::Circle"): ["rust/src/geo/circle.rs"],
        ("rust/src/lib.rs", "self::geo"): ["rust/src/geo/mod.rs"],
        ("rust/src/lib.rs", "crate::geo"): ["rust/src/geo/mod.rs"],
        ("rust/src/lib.rs", "std::fmt"): [],
        ("tools/report.py", "pkg.util"): ["pkg/util.py"],
        ("tools/report.py", "pkg"): ["pkg/core.py"],  # `from pkg import core`
        ("tools/report.py", "pkg.core"): ["pkg/core.py"],
        ("web/app.ts", "./lib"): ["web/lib.ts", "web/lib.ts"],  # import + re-export
        ("web/app.ts", "./widget"): ["web/widget.js"],
        ("web/app.ts", "express"): [],
        ("web/widget.js", "./lib"): ["web/lib.ts"],
        ("web/widget.js", "path"): [],
    }


# Python -------------------------------------------------------------------------------------

PYTHON_FILES = {
    "src/app/__init__.py",
    "src/app/models.py",
    "src/app/api/__init__.py",
    "src/app/api/routes.py",
    "src/app/api/schemas.pyi",
    "tests/conftest.py",
    "tests/helpers.py",
    "scripts/tool.py",
    "setup.py",
}


@pytest.fixture(scope="module")
def python_resolver() -> ModuleResolver:
    return ModuleResolver(PYTHON_FILES)


@pytest.mark.parametrize(
    ("imp", "from_path", "expected"),
    [
        (Import("app.models", 1), "tests/conftest.py", ["src/app/models.py"]),  # src/ layout
        (Import("app", 1), "tests/conftest.py", ["src/app/__init__.py"]),
        (Import("app.api", 1, (("routes", None),)), "scripts/tool.py", ["src/app/api/routes.py"]),
        (
            Import("app.api", 1, (("routes", None), ("router", None))),
            "scripts/tool.py",
            ["src/app/api/__init__.py", "src/app/api/routes.py"],
        ),
        (Import("app.api.schemas", 1), "tests/conftest.py", ["src/app/api/schemas.pyi"]),  # a stub alone
        (Import("helpers", 1), "tests/conftest.py", ["tests/helpers.py"]),  # script directory as root
        (Import("api.routes", 1), "tests/conftest.py", []),  # src/app is a package, not a root
        (Import("requests", 1), "setup.py", []),
        (Import("models", 1, (("User", None),), level=2), "src/app/api/routes.py", ["src/app/models.py"]),
        (Import("", 1, (("routes", None),), level=1), "src/app/api/__init__.py", ["src/app/api/routes.py"]),
        (Import("", 1, (("*", None),), level=1), "src/app/api/routes.py", ["src/app/api/__init__.py"]),
        (Import("x", 1, level=5), "src/app/models.py", []),  # beyond the top package
    ],
)
def test_python_resolution(python_resolver: ModuleResolver, imp: Import, from_path: str, expected: list[str]) -> None:
    assert python_resolver.resolve(imp, from_path, "python") == expected


def test_python_prefers_the_importers_own_tree() -> None:
    resolver = ModuleResolver({"svc_a/lib/util.py", "svc_b/lib/util.py", "svc_a/main.py", "svc_b/main.py"})
    assert resolver.resolve(Import("lib.util", 1), "svc_b/main.py", "python") == ["svc_b/lib/util.py"]


# JavaScript / TypeScript --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "from_path", "expected"),
    [
        ("./lib", "web/app.ts", ["web/lib.ts"]),
        ("./lib.js", "web/app.ts", ["web/lib.ts"]),  # ESM TypeScript names the compiled file
        ("../shared", "web/pages/home.tsx", ["web/shared/index.ts"]),
        ("./button", "web/pages/home.tsx", ["web/pages/button.jsx"]),
        ("./data.json", "web/app.ts", ["web/data.json"]),
        ("react", "web/app.ts", []),
        ("../../outside", "web/app.ts", []),
    ],
)
def test_javascript_resolution(module: str, from_path: str, expected: list[str]) -> None:
    files = {
        "web/app.ts",
        "web/lib.ts",
        "web/shared/index.ts",
        "web/pages/home.tsx",
        "web/pages/button.jsx",
        "web/data.json",
    }
    assert ModuleResolver(files).resolve(Import(module, 1), from_path, "typescript") == expected


# Java / Go ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("com.acme.Cart", ["app/src/main/java/com/acme/Cart.java"]),
        ("com.acme.Cart.Item", ["app/src/main/java/com/acme/Cart.java"]),  # nested class
        ("com.acme.Cart.total", ["app/src/main/java/com/acme/Cart.java"]),  # static member
        ("com.acme.*", ["app/src/main/java/com/acme/Cart.java", "app/src/main/java/com/acme/Shop.java"]),
        ("org.junit.Test", []),
    ],
)
def test_java_resolution(module: str, expected: list[str]) -> None:
    files = {"app/src/main/java/com/acme/Cart.java", "app/src/main/java/com/acme/Shop.java"}
    importer = "app/src/main/java/com/acme/web/Api.java"
    assert ModuleResolver(files).resolve(Import(module, 1), importer, "java") == expected


def test_go_resolution_without_go_mod() -> None:
    resolver = ModuleResolver({"internal/db/db.go", "internal/db/db_test.go", "internal/db/pool.go", "main.go"})
    assert resolver.resolve(Import("github.com/acme/shop/internal/db", 1), "main.go", "go") == [
        "internal/db/db.go",
        "internal/db/pool.go",
    ]
    assert resolver.resolve(Import("database/sql", 1), "main.go", "go") == []


# Rust / C -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "names", "from_path", "expected"),
    [
        ("crate::net::http::Client", (), "src/main.rs", ["src/net/http.rs"]),
        ("crate::net", (("http", None), ("Addr", None)), "src/main.rs", ["src/net/mod.rs", "src/net/http.rs"]),
        ("crate::Config", (), "src/net/http.rs", ["src/main.rs"]),
        ("super::super::Config", (), "src/net/http.rs", ["src/main.rs"]),
        ("super::Addr", (), "src/net/http.rs", ["src/net/mod.rs"]),
        ("serde::Serialize", (), "src/main.rs", []),
    ],
)
def test_rust_resolution(module: str, names: tuple, from_path: str, expected: list[str]) -> None:
    files = {"Cargo.toml", "src/main.rs", "src/net/mod.rs", "src/net/http.rs"}
    assert ModuleResolver(files).resolve(Import(module, 1, names), from_path, "rust") == expected


def test_c_include_resolution() -> None:
    files = {"lib/a/util.h", "lib/b/util.h", "lib/a/main.c", "include/proj/config.h", "src/x.c"}
    resolver = ModuleResolver(files)
    assert resolver.resolve(Import("util.h", 1), "lib/a/main.c", "c") == ["lib/a/util.h"]  # beside the file
    assert resolver.resolve(Import("proj/config.h", 1), "src/x.c", "c") == ["include/proj/config.h"]
    assert resolver.resolve(Import("util.h", 1), "src/x.c", "cpp") == ["lib/a/util.h", "lib/b/util.h"]
    assert resolver.resolve(Import("missing.h", 1), "src/x.c", "c") == []
