"""`prism-code bench callgraph`: reference edges, call shapes, prism's edges and the scores."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prism_bench.callgraph import CallgraphResult, ProjectResult, examples, markdown, site_shapes
from prism_bench.callgraph_data import CallgraphProject
from prism_bench.callgraph_prism import index_and_read
from prism_bench.callgraph_reference import (
    TYPESCRIPT_DIR,
    Reference,
    ReferenceUnavailable,
    cached,
    python_reference,
    typescript_reference,
    typescript_version,
)
from prism_bench.callgraph_score import CallEdge, edge_score, pair_score, shape_scores
from prism_bench.callgraph_sites import project_modules, python_sites, typescript_sites

FIXTURES = Path(__file__).parent / "fixtures"
PY_ROOT = FIXTURES / "callgraph_py"
TS_ROOT = FIXTURES / "callgraph_ts"
PY_FILES = ["draw.py", "geometry.py"]
TS_FILES = ["main.ts", "shapes.ts"]

MODULE_DRAW = ("draw.py", 0)
REPORT, CANVAS_DRAW = ("draw.py", 7), ("draw.py", 18)
SQUARE, SHAPE, SHAPE_INIT, SHAPE_AREA = (("geometry.py", line) for line in (6, 10, 11, 14))
DESCRIBE, UNIT, MAKE = (("geometry.py", line) for line in (17, 21, 25))
CIRCLE, CIRCLE_INIT, CIRCLE_AREA, LARGEST = (("geometry.py", line) for line in (29, 30, 34, 38))


def edge(caller, callee, line, name=""):
    return CallEdge(caller, callee, line, name)


def test_jedi_reference_edges_of_the_python_fixture():
    reference = python_reference(PY_ROOT, PY_FILES)
    assert reference.tool == "jedi 0.19.2"
    assert set(reference.edges) == {
        edge(MODULE_DRAW, SHAPE, 16),  # a class body calls from the module
        edge(MODULE_DRAW, REPORT, 22), edge(MODULE_DRAW, CIRCLE, 22),
        edge(REPORT, LARGEST, 8),  # from-import
        edge(REPORT, CIRCLE, 10),  # constructor: the class
        edge(REPORT, DESCRIBE, 11),  # inherited method on an inferred instance
        edge(REPORT, SQUARE, 12),  # through the module
        # `largest(shapes)` returns a Circle or the Shape in `Canvas.draw`'s list: jedi says both
        edge(REPORT, SHAPE_AREA, 12), edge(REPORT, CIRCLE_AREA, 12),
        edge(CANVAS_DRAW, REPORT, 19), edge(CANVAS_DRAW, CIRCLE, 19),
        edge(DESCRIBE, SHAPE_AREA, 18),
        edge(UNIT, MAKE, 22),
        edge(CIRCLE_INIT, SHAPE_INIT, 31),
        edge(CIRCLE_AREA, SQUARE, 35),
    }
    # A parameter (`callback`, `cls(size)`), builtins and the stdlib are asked about but give no edge.
    assert reference.calls == 20
    assert reference.resolved == 14


def test_python_sites_have_shapes_callers_and_jedi_positions():
    source = (PY_ROOT / "geometry.py").read_bytes()
    sites = {(s.line, s.name): s for s in python_sites("geometry.py", source, project_modules(PY_FILES))}
    assert sites[(18, "area")].shape == "self"
    assert sites[(22, "make")].shape == "cls"
    assert sites[(31, "__init__")].shape == "super"
    assert sites[(35, "square")].shape == "bare"
    assert sites[(26, "cls")].shape == "bare"
    assert sites[(39, "area")].caller == LARGEST  # inside a lambda: the enclosing function's
    assert (sites[(22, "make")].name_line, sites[(22, "make")].name_column) == (22, 19)

    draw = (PY_ROOT / "draw.py").read_bytes()
    sites = {(s.line, s.name): s for s in python_sites("draw.py", draw, project_modules(PY_FILES))}
    assert sites[(8, "largest")].shape == "bare"
    assert sites[(10, "Circle")].shape == "constructor"
    assert sites[(11, "describe")].shape == "receiver"
    assert sites[(12, "square")].shape == "module"  # `import geometry`
    assert sites[(12, "area")].shape == "receiver"
    assert sites[(16, "Shape")].shape == "constructor"  # a CapWords name is a constructor, module or not
    assert sites[(16, "Shape")].caller == MODULE_DRAW
    assert sites[(19, "report")].caller == CANVAS_DRAW


def test_typescript_sites_have_shapes():
    shapes = {(s.line, s.name): s.shape for s in typescript_sites("shapes.ts", (TS_ROOT / "shapes.ts").read_bytes())}
    assert shapes[(21, "helper")] == "bare"
    assert shapes[(27, "super")] == "super"  # super(1)
    assert shapes[(31, "bump")] == "self"
    assert shapes[(35, "bump")] == "super"  # super.bump()
    main = {(s.line, s.name): s.shape for s in typescript_sites("main.ts", (TS_ROOT / "main.ts").read_bytes())}
    assert main[(5, "Counter")] == "constructor"
    assert main[(6, "bump")] == "receiver"
    assert main[(7, "overloaded")] == "module"  # import * as shapes
    assert main[(8, "max")] == "receiver"
    assert main[(12, "Counter")] == "constructor"


def _typescript_ready() -> bool:
    try:
        typescript_version()
    except ReferenceUnavailable:
        return False
    return True


@pytest.mark.skipif(not _typescript_ready(), reason="node or the checkout's node_modules/typescript missing")
def test_typescript_reference_edges_of_the_fixture():
    reference = typescript_reference(TS_ROOT, TS_FILES)
    helper, overloaded, arrow = ("shapes.ts", 1), ("shapes.ts", 7), ("shapes.ts", 11)
    base, base_bump = ("shapes.ts", 17), ("shapes.ts", 20)
    counter, counter_ctor, greet, counter_bump = ("shapes.ts", 25), ("shapes.ts", 26), ("shapes.ts", 30), \
        ("shapes.ts", 34)
    square, side = ("shapes.ts", 39), ("shapes.ts", 40)
    run, main = ("main.ts", 4), ("main.ts", 0)
    assert set(reference.edges) == {
        edge(arrow, helper, 11),  # an arrow function assigned to a name is a definition
        edge(base_bump, helper, 21),
        edge(counter_ctor, base, 27),  # super(1): the base class
        edge(greet, counter_bump, 31),
        edge(counter_bump, base_bump, 35), edge(counter_bump, arrow, 35),
        edge(run, counter, 5),
        edge(run, counter_bump, 6),
        edge(run, overloaded, 7),  # the implementation, not the overload signatures
        edge(run, helper, 9),
        edge(main, run, 12), edge(main, counter, 12),
        edge(main, square, 13),  # a class without its own constructor is still the callee
        edge(main, side, 13),
    }
    # `greeter.greet()` lands on an interface's signature: no edge; `Math.max` is the library's.
    assert reference.signature_calls == 1
    assert reference.calls == 16


def test_typescript_reference_says_when_typescript_is_missing(tmp_path):
    if shutil.which("node") is None:
        pytest.skip("node missing")
    with pytest.raises(ReferenceUnavailable, match="npm ci"):
        typescript_version(tmp_path / "typescript")
    assert TYPESCRIPT_DIR.name == "typescript"


def test_prism_edges_are_keyed_like_the_reference():
    prism = index_and_read(PY_ROOT)
    edges = set(prism.edges)
    # Bare calls to a from-import and constructor calls are resolved by the graph today and after.
    assert edge(REPORT, LARGEST, 8) in edges
    assert edge(REPORT, CIRCLE, 10) in edges
    # Top-level code and class bodies call from the module, line 0, not from a block or the class.
    assert edge(MODULE_DRAW, REPORT, 22) in edges
    assert edge(MODULE_DRAW, SHAPE, 16) in edges
    callers = {e.caller for e in edges}
    assert callers <= {MODULE_DRAW, REPORT, CANVAS_DRAW, ("geometry.py", 0), DESCRIBE, UNIT, MAKE, CIRCLE_INIT,
                       CIRCLE_AREA, LARGEST, SHAPE_INIT, SHAPE_AREA}


def test_scores_over_edges_pairs_and_shapes():
    a, b, c = ("x.py", 1), ("x.py", 5), ("y.py", 3)
    prism = [edge(a, b, 2, "f"), edge(a, b, 3, "f"), edge(a, c, 4, "g"), edge(b, c, 6, "g")]
    reference = [edge(a, b, 2, "f"), edge(a, c, 4, "g"), edge(a, c, 9, "g"), edge(b, a, 7, "h")]
    edges = edge_score(prism, reference)
    assert (edges.precision, edges.recall) == (2 / 4, 2 / 4)
    pairs = pair_score(prism, reference)  # prism {ab, ac, bc}, reference {ab, ac, ba}
    assert (pairs.precision, pairs.recall) == (2 / 3, 2 / 3)
    shape = {2: "bare", 3: "bare", 4: "self", 6: "self", 9: "self", 7: "super"}
    by_shape = shape_scores(prism, reference, lambda e: shape[e.line])
    assert (by_shape["bare"].precision, by_shape["bare"].recall) == (1 / 2, 1.0)
    assert (by_shape["self"].precision, by_shape["self"].recall) == (1 / 2, 1 / 2)
    assert (by_shape["super"].precision, by_shape["super"].recall) == (None, 0.0)
    assert by_shape["module"].prism == by_shape["module"].reference == 0
    assert edge_score([], reference).precision is None


def test_reference_cache_round_trips(tmp_path):
    reference = Reference("jedi 0.19.2", [edge(("a.py", 0), ("a.py", 3), 7, "f")], 4, 1, 2.5)
    calls = []

    def compute():
        calls.append(1)
        return reference

    first = cached(tmp_path / "ref.json", compute)
    again = cached(tmp_path / "ref.json", compute)
    assert calls == [1]
    assert not first.cached and again.cached
    assert again.edges == reference.edges and again.edges[0].name == "f"
    assert (again.calls, again.resolved, again.seconds) == (4, 1, 2.5)


def test_markdown_reports_a_project_by_shape():
    reference = python_reference(PY_ROOT, PY_FILES)
    prism = index_and_read(PY_ROOT)
    shapes, lines = site_shapes(PY_ROOT, PY_FILES)
    result = ProjectResult(CallgraphProject("fixture", "python", "0", "fixture"), "0", PY_ROOT, 2, lines,
                           reference, prism, shapes)
    assert all(result.shape_of(e) != "unknown" for e in [*reference.edges, *prism.edges])
    text = markdown(CallgraphResult([result], []), "prism-code bench callgraph")
    assert "| fixture 0 | 2 |" in text
    assert "By call shape, Python:" in text
    assert "| `super().m()` / `super.m()` |" in text
    # Jedi's second reading of `best.area()` is one prism lacks; the listing shows its source line.
    listing = examples(CallgraphResult([result], []), per_shape=5)
    assert "fixture, reference only, receiver:" in listing
    assert "draw.py:12  return geometry.square(best.area())" in listing
