"""Hostile files in each query-file language: binary bytes, invalid UTF-8, 5,000-deep nesting,
a 20 MB line, syntax errors. Each is a partial parse within seconds, in bounded memory, never a
crash or a hang.

The cases of one language run in a fresh interpreter under an address-space limit, so a grammar
that crashed (a segfault in C) or took unbounded memory fails its test instead of the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from prism_code.parse.extract import MAX_DEFINITION_DEPTH
from prism_code.parse.tagged_languages import TAGGED_RULES

FIXTURES = Path(__file__).parent / "fixtures" / "languages"
DEPTH = 5000

# language -> (file name, one level of nesting opened, the innermost code, one level closed)
_NESTING = {
    "bash": ("x.sh", "f{i}() {{\n", "inner\n", "}\n"),
    "csharp": ("x.cs", "class C{i} {{\n", "void M() { Inner(); }\n", "}\n"),
    "elixir": ("x.ex", "defmodule M{i} do\n", "def f, do: inner()\n", "end\n"),
    "haskell": ("x.hs", "(", "inner 1", ")"),  # no nested definitions in Haskell: a deep expression
    "kotlin": ("x.kt", "class C{i} {{\n", "fun m() { inner() }\n", "}\n"),
    "lua": ("x.lua", "function f{i}()\n", "inner()\n", "end\n"),
    "php": ("x.php", "function f{i}() {{\n", "inner();\n", "}\n"),
    "ruby": ("x.rb", "module M{i}\n", "def f; inner(1); end\n", "end\n"),
    "scala": ("x.scala", "object O{i} {{\n", "def m = inner()\n", "}\n"),
    "swift": ("x.swift", "class C{i} {{\n", "func m() { inner() }\n", "}\n"),
    "zig": ("x.zig", "const S{i} = struct {{\n", "fn m() void { inner(); }\n", "};\n"),
}
# A definition whose name holds invalid UTF-8, then one named `later`.
_INVALID_UTF8 = {
    "bash": b"b\xffad() { :; }\nlater() { :; }\n",
    "csharp": b"class A { void B\xffad() {} void later() {} }\n",
    "elixir": b"defmodule A do\n  def b\xffad, do: 1\n  def later, do: 2\nend\n",
    "haskell": b"b\xffad = 1\nlater = 2\n",
    "kotlin": b"fun b\xffad() {}\nfun later() {}\n",
    "lua": b"function b\xffad() end\nfunction later() end\n",
    "php": b"<?php\nfunction b\xffad() {}\nfunction later() {}\n",
    "ruby": b"def b\xffad; end\ndef later; end\n",
    "scala": b"object A {\n  def b\xffad = 1\n  def later = 2\n}\n",
    "swift": b"func b\xffad() {}\nfunc later() {}\n",
    "zig": b"fn b\xffad() void {}\nfn later() void {}\n",
}
# Each language's fixture with its shapes: a run of stray brackets is put in its middle.
_FIXTURE = {
    "bash": "bash/bin/shop.sh", "csharp": "csharp/Shop/Core/Cart.cs", "elixir": "elixir/lib/shop/cart.ex",
    "haskell": "haskell/src/Shop/Cart.hs", "kotlin": "kotlin/src/com/example/shop/Cart.kt",
    "lua": "lua/shop/cart.lua", "php": "php/src/Shop/Cart.php", "ruby": "ruby/lib/shop/cart.rb",
    "scala": "scala/src/com/example/shop/Cart.scala", "swift": "swift/Sources/Shop/Cart.swift",
    "zig": "zig/src/cart.zig",
}

# Parses the cases given as JSON (name -> [file name, latin-1 text]) and reports, per case, the
# seconds taken and what was found; then its own peak RSS.
_CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    from prism_code.parse import parse_source

    cases = json.loads(sys.stdin.read())
    report = {}
    for case, (name, text) in cases.items():
        started = time.perf_counter()
        parsed = parse_source(name, text.encode("latin-1"))
        report[case] = {"seconds": time.perf_counter() - started, "errors": parsed.has_errors,
                        "names": [d.name for d in parsed.definitions],
                        "qualname_chars": max((len(d.qualname) for d in parsed.definitions), default=0),
                        "calls": len(parsed.calls)}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            report["maxrss_mib"] = int(line.split()[1]) / 1024
    print(json.dumps(report))
""")


def _cases(language: str) -> dict[str, tuple[str, bytes]]:
    name, opened, inner, closed = _NESTING[language]
    nested = "".join(opened.format(i=i) for i in range(DEPTH)) + inner + closed * DEPTH
    if language == "php":
        nested = "<?php\n" + nested
    fixture = (FIXTURES / _FIXTURE[language]).read_bytes()
    middle = fixture.index(b"\n", len(fixture) // 2) + 1
    return {
        "nested": (name, nested.encode()),
        "long_line": (name, b"x = " + b"a" * (20 << 20) + b"\n"),
        "binary": (name, bytes(range(256)) * 4096 + b"\x00" * 4096),
        "invalid_utf8": (name, _INVALID_UTF8[language]),
        "syntax_errors": (name, fixture[:middle] + b"\n)))] }}} end end ]] @@ \\\n" + fixture[middle:]),
        "intact": (name, fixture),
    }


@pytest.mark.timeout(300)
@pytest.mark.parametrize("language", sorted(TAGGED_RULES))
def test_hostile_files_parse_partially_in_bounded_time_and_memory(language: str) -> None:
    cases = {case: [name, text.decode("latin-1")] for case, (name, text) in _cases(language).items()}
    child = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(cases), capture_output=True,
                           text=True, timeout=280)
    assert child.returncode == 0, child.stderr[-2000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    for case in cases:
        assert report[case]["seconds"] < 20, (case, report[case]["seconds"])
    assert report["maxrss_mib"] < 1024

    nested = report["nested"]
    assert len(nested["names"]) <= MAX_DEFINITION_DEPTH
    if language != "haskell":  # every level is a definition; those past the limit belong to the 64th
        assert len(nested["names"]) == MAX_DEFINITION_DEPTH
        assert nested["qualname_chars"] < 1000
    assert report["long_line"]["names"] == [] or len(report["long_line"]["names"]) <= 1
    assert "later" in report["invalid_utf8"]["names"]  # the bad byte spoils its own definition at most

    broken, intact = report["syntax_errors"], report["intact"]
    assert broken["errors"] and not intact["errors"]
    # What stands before the damage is read as before, and most of what follows it.
    kept = set(broken["names"]) & set(intact["names"])
    assert len(kept) >= len(set(intact["names"])) // 2, (broken["names"], intact["names"])
