"""Retrieval units: one fragment per function/method and 20-line windows (RepoCoder).

Each fragment records the graph nodes it overlaps with the number of its lines each
one owns: the `len` of FragRel Eq. 8.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Final, Literal

from prism_code.parse.model import Definition, ParsedFile

# The graph's node names are imported where fragments are made, not here: a find answered
# from the saved lexical index (tasks/corpus_files.py) reads Fragments but never makes them
# from parses, and the graph's modules cost a cold CLI process ~0.15 s to import.

FragmentKind = Literal["function", "window"]
FUNCTION: Final = "function"
WINDOW: Final = "window"

# Nodes one fragment lists, at most. Past it the nodes owning the fewest lines give their
# lines to the fragment's own node (a function's definition, a window's module), as if they
# were not separate definitions: a function with thousands of nested ones would otherwise
# list them all, in the index and in every relation product. Real functions list a few.
MAX_FRAGMENT_NODES = 256


def function_key(path: str, qualname: str) -> str:
    """The key of a function's fragment (and of its note, its search result, its memory entry)."""
    return f"{path}#{qualname}"


@dataclass(frozen=True)
class Fragment:
    path: str
    kind: FragmentKind
    start_line: int  # 1-based, inclusive
    end_line: int
    qualname: str = ""  # for function fragments
    position: int = 0  # window index within its file: `loc` of FragRel Eq. 7
    nodes: tuple[tuple[str, int], ...] = ()  # (graph node, lines of this fragment it owns)

    @cached_property  # read for every function on every corpus rebuild
    def key(self) -> str:
        if self.kind == FUNCTION:
            return function_key(self.path, self.qualname)
        return f"{self.path}@{self.start_line}"


def window_spans(line_count: int, size: int, stride: int) -> list[tuple[int, int]]:
    """Windows of `size` lines every `stride` lines; the last one is clipped to the file."""
    if line_count <= 0:
        return []
    spans = []
    start = 1
    while True:
        end = min(start + size - 1, line_count)
        spans.append((start, end))
        if end >= line_count:
            return spans
        start += stride


def is_function(d: Definition) -> bool:
    return d.kind in ("function", "method")


def file_fragments(pf: ParsedFile, window_lines: int = 20, stride: int = 10) -> list[Fragment]:
    from prism_code.graph import def_node, innermost_nodes, module_node

    owners = innermost_nodes(pf)
    fallback = module_node(pf.path)

    def nodes_of(start: int, end: int, home: str) -> tuple[tuple[str, int], ...]:
        # Blank and comment lines between definitions belong to no node; counting them
        # for the module would relate every window to every file of its directory.
        counts = Counter(node for node in owners[start:min(end, pf.line_count) + 1] if node)
        return _bounded(counts, home) or ((fallback, end - start + 1),)

    fragments = [
        Fragment(pf.path, FUNCTION, d.start_line, d.end_line, qualname=d.qualname,
                 nodes=nodes_of(d.start_line, d.end_line, def_node(pf.path, d.qualname)))
        for d in pf.definitions if is_function(d)
    ]
    fragments += [
        Fragment(pf.path, WINDOW, start, end, position=i, nodes=nodes_of(start, end, fallback))
        for i, (start, end) in enumerate(window_spans(pf.line_count, window_lines, stride))
    ]
    return fragments


def type_fragments(parsed: Iterable[ParsedFile], taken: set[str]) -> list[Fragment]:
    """One fragment per class, struct, interface, trait or enum: find's type units
    (retrieval/type_units.py says why), sorted by key. A type whose key is in `taken` (a
    function of the same qualified name) or repeats one already made (a Rust `impl` block
    after its `struct`) is left out, so keys stay unique."""
    from prism_code.graph import def_node

    out: dict[str, Fragment] = {}
    for pf in parsed:
        for d in pf.definitions:
            key = function_key(pf.path, d.qualname)
            if is_function(d) or key in taken or key in out:
                continue
            out[key] = Fragment(pf.path, FUNCTION, d.start_line, d.end_line, qualname=d.qualname,
                                nodes=((def_node(pf.path, d.qualname), d.end_line - d.start_line + 1),))
    return [out[k] for k in sorted(out)]


# A file that defines nothing (a shell plugin of aliases, a settings module, a script) is still
# the answer to "where are the git aliases": find gives it a unit of its own. Shorter ones are
# import lists, re-exports and stubs, which would only crowd the list.
FILE_UNIT_MIN_LINES = 5


def file_units(parsed: Iterable[ParsedFile], texts: Mapping[str, list[str]]) -> list[Fragment]:
    """One fragment spanning each parsed file with no definition and FILE_UNIT_MIN_LINES lines
    or more (`texts`: each file's lines), named by its file name, sorted by path."""
    from prism_code.graph import module_node

    out = []
    for pf in sorted(parsed, key=lambda pf: pf.path):
        text = texts.get(pf.path, [])
        lines = len(text) - (1 if text and text[-1] == "" else 0)  # the final newline ends no line
        if not pf.definitions and lines >= FILE_UNIT_MIN_LINES:
            out.append(Fragment(pf.path, FUNCTION, 1, lines, qualname=file_unit_name(pf.path),
                                nodes=((module_node(pf.path), lines),)))
    return out


def file_unit_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def is_file_unit(fragment: Fragment) -> bool:
    """Whether a function-kind fragment is a file unit (a saved corpus keeps no nodes: the name
    tells, a definition's qualified name never being its file's name)."""
    return fragment.kind == FUNCTION and fragment.qualname == file_unit_name(fragment.path)


def _bounded(counts: Counter[str], home: str) -> tuple[tuple[str, int], ...]:
    """The fragment's (node, lines) pairs sorted by node, at most MAX_FRAGMENT_NODES of them:
    past that, `home` takes the lines of the nodes owning the fewest (ties: the last ids), so
    the fragment's length, Eq. 8's weight, stays the same."""
    if len(counts) <= MAX_FRAGMENT_NODES:
        return tuple(sorted(counts.items()))
    others = sorted((item for item in counts.items() if item[0] != home),
                    key=lambda item: (-item[1], item[0]))
    kept = dict(others[:MAX_FRAGMENT_NODES - 1])
    kept[home] = counts.get(home, 0) + sum(lines for _, lines in others[MAX_FRAGMENT_NODES - 1:])
    return tuple(sorted(kept.items()))


def fragment_text(lines: list[str], fragment: Fragment) -> str:
    return "\n".join(lines[fragment.start_line - 1:fragment.end_line])
