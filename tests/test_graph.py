"""The code graph and FragRel relations, checked against values computed by hand.

Fixture tests/fixtures/pyrepo: pkg/a.py imports `helper` from pkg/b.py and calls it from
`caller`; `Greeter.greet` calls `self.format`.
"""

from pathlib import Path

import pytest

from prism_code.fragments import FUNCTION, Fragment, file_fragments, window_spans
from prism_code.graph import (
    CodeGraph,
    ResolvedCall,
    block_node,
    call_links,
    def_node,
    dir_node,
    file_node,
    module_node,
)
from prism_code.parse import parse_source
from prism_code.relations import StrengthTable, code_relation_rows, context_relation, relation_rows

FIXTURE = Path(__file__).parent / "fixtures" / "pyrepo"
A, B = "pkg/a.py", "pkg/b.py"


def parsed(path: str):
    return parse_source(path, (FIXTURE / path).read_bytes())


@pytest.fixture()
def graph() -> CodeGraph:
    g = CodeGraph()
    g.update([parsed(A), parsed(B), parsed("pkg/__init__.py")])
    return g


def weight(g: CodeGraph, u: str, v: str) -> float:
    return g.g[u][v]["weight"]


def test_edges_carry_fragrel_weights(graph):
    assert weight(graph, dir_node(""), dir_node("pkg")) == 0.3
    assert weight(graph, dir_node("pkg"), file_node(A)) == 0.3
    assert weight(graph, file_node(A), module_node(A)) == 1.0
    assert weight(graph, module_node(A), def_node(A, "Greeter")) == 0.5
    assert weight(graph, def_node(A, "Greeter"), def_node(A, "Greeter.greet")) == 0.5
    assert weight(graph, module_node(A), block_node(A, 1)) == 0.5
    # call sites: cross-file through the import, and through self
    assert weight(graph, def_node(A, "caller"), def_node(B, "helper")) == 0.8
    assert weight(graph, def_node(A, "Greeter.greet"), def_node(A, "Greeter.format")) == 0.8
    # the import statement links to the imported symbol
    assert weight(graph, block_node(A, 1), def_node(B, "helper")) == 0.8
    # nothing calls `unrelated`
    assert not any(graph.g[def_node(B, "unrelated")][n]["weight"] == 0.8
                   for n in graph.g.neighbors(def_node(B, "unrelated")))


def test_calls_are_directed_with_their_lines(graph):
    """The relation graph is undirected; the resolved calls say who calls whom, and where."""
    caller, helper = def_node(A, "caller"), def_node(B, "helper")
    greet, fmt = def_node(A, "Greeter.greet"), def_node(A, "Greeter.format")
    assert graph.resolved_calls() == sorted([ResolvedCall(caller, helper, 5), ResolvedCall(greet, fmt, 10)])
    assert call_links(graph, helper) == ({caller}, set())
    assert call_links(graph, caller) == (set(), {helper})
    assert graph.calls_to(caller) == [] and graph.calls_from(helper) == []


def test_relation_strength_is_max_product_over_paths(graph):
    s = graph.relation_strengths(def_node(A, "caller"), cutoff=0.01)
    assert s[def_node(A, "caller")] == pytest.approx(1.0)
    assert s[def_node(B, "helper")] == pytest.approx(0.8)
    # caller -0.8- helper -0.5- module b -0.5- unrelated beats the directory route (0.0225)
    assert s[def_node(B, "unrelated")] == pytest.approx(0.2)
    # caller -0.5- module a -0.5- Greeter -0.5- greet
    assert s[def_node(A, "Greeter.greet")] == pytest.approx(0.125)
    greet = graph.relation_strengths(def_node(A, "Greeter.greet"), cutoff=0.01)
    assert greet[def_node(A, "Greeter.format")] == pytest.approx(0.8)
    assert greet[def_node(B, "helper")] == pytest.approx(0.1)


def test_cutoff_keeps_neighbourhoods_sparse(graph):
    s = graph.relation_strengths(def_node(A, "caller"), cutoff=0.15)
    assert def_node(B, "unrelated") in s
    assert def_node(A, "Greeter.greet") not in s


def test_fragment_relation_is_length_weighted_mean(graph):
    """FragRel Eq. 8 on hand-made fragments.

    X = {caller: 2 lines, import block: 1 line}, Y = {helper: 2, unrelated: 2}.
    Strengths: caller-helper 0.8, caller-unrelated 0.2, block-helper 0.8, block-unrelated 0.2.
    (2*2*0.8 + 2*2*0.2 + 1*2*0.8 + 1*2*0.2) / ((2+1) * (2+2)) = 6.0 / 12 = 0.5
    """
    x = Fragment(A, FUNCTION, 1, 5, "x", nodes=((def_node(A, "caller"), 2), (block_node(A, 1), 1)))
    y = Fragment(B, FUNCTION, 1, 6, "y", nodes=((def_node(B, "helper"), 2), (def_node(B, "unrelated"), 2)))
    rows = code_relation_rows(StrengthTable(graph, 0.05), [x, y], [0, 1])
    assert rows[0, 1] == pytest.approx(0.5)
    assert rows[1, 0] == pytest.approx(0.5)
    # with itself: caller-block is 0.64 (caller -0.8- helper -0.8- block)
    assert rows[0, 0] == pytest.approx((2 * 2 * 1.0 + 2 * (2 * 1 * 0.64) + 1 * 1 * 1.0) / 9)


def test_function_fragments_and_related_sets(graph):
    fragments = [f for path in (A, B) for f in file_fragments(graph.parsed[path]) if f.kind == FUNCTION]
    names = [f.qualname for f in fragments]
    assert names == ["caller", "Greeter.greet", "Greeter.format", "helper", "unrelated"]
    related = relation_rows(StrengthTable(graph, 0.05), fragments, list(range(len(fragments))),
                            top_k=10, context_weight=0.3)
    by_name = {fragments[i].qualname: {fragments[j].qualname: w for j, w in pairs}
               for i, pairs in related.items()}
    assert by_name["caller"]["helper"] == pytest.approx(0.8)
    assert by_name["caller"]["unrelated"] == pytest.approx(0.2)
    assert by_name["Greeter.greet"]["Greeter.format"] == pytest.approx(0.8)
    assert "caller" not in by_name["caller"]  # a fragment is not its own environment


def test_windows_follow_repocoder_and_context_relation():
    assert window_spans(45, 20, 10) == [(1, 20), (11, 30), (21, 40), (31, 45)]
    assert window_spans(7, 20, 10) == [(1, 7)]
    assert window_spans(0, 20, 10) == []
    # FragRel Eq. 7 with w_rel = 0.3
    assert context_relation(3, 5, 0.3) == pytest.approx(0.09)
    assert context_relation(4, 4, 0.3) == 1.0


def test_removing_a_file_withdraws_its_edges(graph):
    graph.update([], removed=[B])
    assert def_node(B, "helper") not in graph.g
    assert file_node(B) not in graph.g
    assert not any(n.startswith("s:pkg/b.py") for n in graph.g)
    # caller still exists but its call no longer resolves
    assert all(graph.g[def_node(A, "caller")][n]["weight"] != 0.8
               for n in graph.g.neighbors(def_node(A, "caller")))
    # re-adding restores the same weighted graph
    graph.update([parsed(B)])
    assert weight(graph, def_node(A, "caller"), def_node(B, "helper")) == 0.8
    assert weight(graph, block_node(A, 1), def_node(B, "helper")) == 0.8


def test_a_function_added_or_removed_as_a_leaf_changes_no_other_strength(graph):
    """Appending a function that calls nothing hangs one leaf under the module: strengths
    between other nodes stay, so the update says the module changed only by a leaf."""
    text = (FIXTURE / B).read_text() + "\n\ndef appended(v):\n    return v\n"
    before = graph.relation_strengths(module_node(B), cutoff=0.05)
    touched = graph.update([parse_source(B, text.encode())])
    leaf = def_node(B, "appended")
    assert {leaf, module_node(B)} <= touched
    assert graph.last_leaf_only == {leaf, module_node(B)}
    after = graph.relation_strengths(module_node(B), cutoff=0.05)
    assert after.pop(leaf) == pytest.approx(0.5) and after == pytest.approx(before)
    graph.update([parsed(B)])  # and removed again
    assert graph.last_leaf_only == {leaf, module_node(B)}
    # A function that calls another is no leaf: paths now pass through it.
    calling = (FIXTURE / B).read_text() + "\n\ndef appended(v):\n    return helper(v)\n"
    graph.update([parse_source(B, calling.encode())])
    assert graph.last_leaf_only == set()
