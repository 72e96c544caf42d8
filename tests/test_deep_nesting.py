"""Pathologically nested sources (issue #13, bug 4): bounded index, no crash, no hang.

A function fragment lists the graph nodes of every definition inside it, each named by its
dotted qualname, so 1,000 nested JavaScript functions once took 35 s, 2 GB of memory and a
1.9 GB index. Definitions deeper than MAX_DEFINITION_DEPTH now belong to the enclosing one.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from prism_code.fragments import MAX_FRAGMENT_NODES, file_fragments, function_key
from prism_code.graph import def_node
from prism_code.index import RepoIndex
from prism_code.parse import parse_source
from prism_code.parse.extract import MAX_DEFINITION_DEPTH, MAX_QUALNAME_CHARS
from prism_code.tasks.find_function import FunctionSearch


def nested_javascript(depth: int) -> str:
    """`function f0(){ function f1(){ ... inner(); } }`, one line per level."""
    return ("".join(f"function f{i}() {{\n" for i in range(depth))
            + "return inner();\n" + "}\n" * depth)


def nested_python(depth: int) -> str:
    """`def f0():` / ` def f1():` ..., one space of indentation per level (tree-sitter parses
    what CPython's own parser would refuse)."""
    return ("".join(" " * i + f"def f{i}():\n" for i in range(depth))
            + " " * depth + "return inner()\n")


def chain(depth: int) -> str:
    return ".".join(f"f{i}" for i in range(depth))


# Indexes the workspace in a fresh interpreter and reports its own peak RSS and the size of
# the index; the address-space limit makes an unbounded index fail fast instead of taking
# the machine's memory.
_CHILD = textwrap.dedent("""
    import json, resource, sys
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    from prism_code.index import RepoIndex

    def peak_rss_kib():
        # VmHWM is this process's own peak; ru_maxrss would carry the forking pytest's peak
        # over the exec, which is hundreds of MiB once the model tests have run.
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    index = RepoIndex(Path(sys.argv[1]), cache_dir=Path(sys.argv[2]))
    summary = index.update()
    db = index.store.path
    index.close()
    print(json.dumps({
        "functions": summary.functions,
        "maxrss_mib": peak_rss_kib() / 1024,
        "index_bytes": sum(f.stat().st_size for f in db.parent.iterdir()),
    }))
""")


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("name", "source"), [
    ("deep.js", nested_javascript(5000)),
    ("deep.py", nested_python(480)),  # tree-sitter's Python grammar gives up near 490
], ids=["javascript-5000", "python-480"])
def test_deeply_nested_file_indexes_in_bounded_memory_and_disk(tmp_path: Path, name: str,
                                                               source: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / name).write_text(source)
    (root / "util.js").write_text("function helper() { return 2; }\n")
    cache = tmp_path / "cache"
    child = subprocess.run([sys.executable, "-c", _CHILD, str(root), str(cache)],
                           capture_output=True, text=True, timeout=280)
    assert child.returncode == 0, child.stderr[-2000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    assert report["maxrss_mib"] < 300
    assert report["index_bytes"] < 20 * 2**20

    index = RepoIndex(root, cache_dir=cache)  # what the indexing process left on disk
    try:
        assert index.update().added == 0
        kept = {f.qualname for f in index.functions() if f.path == name}
        assert kept == {chain(depth) for depth in range(1, MAX_DEFINITION_DEPTH + 1)}
        # The innermost kept function holds the code of the definitions left inside it.
        deepest = index.fragments[function_key(name, chain(MAX_DEFINITION_DEPTH))]
        assert f"f{MAX_DEFINITION_DEPTH}()" in index.text(deepest)
        found = FunctionSearch(index).search("f0", top=3)
        assert (found[0].path, found[0].qualname) == (name, "f0")  # the one whose code says f0
        assert "util.js#helper" in {f.key for f in index.functions()}
    finally:
        index.close()


def test_definitions_past_the_depth_limit_belong_to_the_enclosing_one() -> None:
    parsed = parse_source("deep.js", nested_javascript(200).encode())
    assert parsed is not None
    assert [d.qualname for d in parsed.definitions] == [
        chain(depth) for depth in range(1, MAX_DEFINITION_DEPTH + 1)]
    deepest = parsed.definitions[-1]
    assert (deepest.start_line, deepest.end_line) == (MAX_DEFINITION_DEPTH, 401 - MAX_DEFINITION_DEPTH + 1)
    assert [(c.name, c.caller) for c in parsed.calls] == [("inner", deepest.qualname)]
    # Every line of the file is owned by a kept definition, so no fragment lists a lost node.
    nodes = {node for f in file_fragments(parsed) for node, _ in f.nodes}
    assert nodes == {def_node("deep.js", d.qualname) for d in parsed.definitions}


def test_a_qualname_past_the_limit_is_not_a_definition_and_nor_is_anything_inside() -> None:
    long_name = "a" * (MAX_QUALNAME_CHARS + 1)
    source = f"function {long_name}() {{\n  function inner() {{ work(); }}\n}}\nfunction ok() {{}}\n"
    parsed = parse_source("long.js", source.encode())
    assert parsed is not None
    assert [d.qualname for d in parsed.definitions] == ["ok"]
    assert parsed.blocks == [(1, 3)]  # its lines are a top-level block of the module
    assert [(c.name, c.caller) for c in parsed.calls] == [("work", None)]


def test_a_file_whose_definitions_would_flood_the_index_is_indexed_as_text(caplog) -> None:
    # 400 functions under a 50-deep chain: each may sit in 51 function fragments' node lists
    # under a 505-character qualname.
    source = ("".join(f"function level{i:04d}() {{\n" for i in range(50))
              + "function leaf() { work(); }\n" * 400 + "}\n" * 50)
    with caplog.at_level(logging.WARNING, logger="prism_code.parse.extract"):
        parsed = parse_source("flood.js", source.encode())
    assert parsed is not None
    assert parsed.definitions == []
    assert parsed.blocks == [(1, 500)]
    assert len(parsed.calls) == 400 and {c.caller for c in parsed.calls} == {None}
    assert "flood.js: indexed as plain text without its 450 definitions" in caplog.text


def test_a_function_with_thousands_of_nested_ones_lists_a_bounded_node_set() -> None:
    source = ("function outer() {\n" + "".join(f"  function w{i}() {{ return {i}; }}\n" for i in range(1000))
              + "  return 0;\n}\n")
    parsed = parse_source("wide.js", source.encode())
    assert parsed is not None and len(parsed.definitions) == 1001
    outer = next(f for f in file_fragments(parsed) if f.qualname == "outer")
    assert len(outer.nodes) == MAX_FRAGMENT_NODES
    # The lines of the nested functions left out count for `outer` itself: Eq. 8's weights keep
    # the fragment's length.
    assert sum(lines for _, lines in outer.nodes) == outer.end_line - outer.start_line + 1
    assert dict(outer.nodes)[def_node("wide.js", "outer")] == 1003 - (MAX_FRAGMENT_NODES - 1)


@pytest.mark.parametrize(("name", "source", "definitions", "imports"), [
    # Modules with a body are containers: the outer MAX_DEFINITION_DEPTH are kept, `f` belongs to them.
    ("mods.rs", "".join(f"mod m{i} {{\n" for i in range(3000)) + "fn f() {}\n" + "}\n" * 3000,
     [f"m{i}" for i in range(MAX_DEFINITION_DEPTH)], 0),
    ("uses.rs", "use a::" + "".join(f"b{i}::{{x, " for i in range(3000)) + "z" + "}" * 3000 + ";\n"
     + "fn f() {}\n", ["f"], None),
    ("guards.c", "".join(f"#ifdef X{i}\n" for i in range(3000)) + "int f(void) { return 0; }\n"
     + "#endif\n" * 3000, ["f"], 0),
    ("spaces.cpp", "".join(f"namespace n{i} {{\n" for i in range(3000)) + "int f() { return 0; }\n"
     + "}\n" * 3000, ["f"], 0),
], ids=["rust-modules", "rust-use-groups", "c-ifdefs", "cpp-namespaces"])
def test_deeply_nested_containers_parse_without_recursion(name: str, source: str, definitions: list[str],
                                                          imports: int | None) -> None:
    parsed = parse_source(name, source.encode())
    assert parsed is not None
    assert [d.name for d in parsed.definitions] == definitions
    if imports is not None:
        assert len(parsed.imports) == imports
    else:  # the outer groups of the `use` are read, the ones nested past any real path are not
        assert parsed.imports[-1].module == "a::b0" and parsed.imports[-1].names == (("x", None),)
        assert 10 < len(parsed.imports) < 3000
        assert max(len(i.module) for i in parsed.imports) < 600


@pytest.mark.timeout(60)
def test_an_expression_deeper_than_tree_sitter_queries_reach_parses_quickly() -> None:
    # `a + b + ...` nests to the left: 100,000 terms make a tree 100,000 deep, past the 65,535
    # levels tree-sitter's query cursor handles (it took 120 s here).
    source = "var total = " + " + ".join(["g()"] * 100_000) + ";\nfunction after() { return h(); }\n"
    parsed = parse_source("sum.js", source.encode())
    assert parsed is not None
    assert [d.qualname for d in parsed.definitions] == ["after"]
    assert ("h", "after") in {(c.name, c.caller) for c in parsed.calls}
