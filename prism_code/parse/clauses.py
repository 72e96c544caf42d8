"""One definition from the clauses that spell it: Haskell's signature and equations, Elixir's `def` heads.

`f :: Int -> Int`, `f 0 = 1`, `f n = n * f (n - 1)` are three nodes of the grammar and one
function to a reader; so are Elixir's `def check(0)` and `def check(n) when n > 0`. Consecutive
definitions with the same qualname and kind at the same nesting depth merge into the first: its
name, signature and doc, with the last one's end. Definitions nested inside a clause stay its
children (their qualnames already name it).
"""

from __future__ import annotations

from dataclasses import replace

from prism_code.parse.model import Definition


def merge_clauses(definitions: list[Definition], depths: list[int]) -> tuple[list[Definition], list[int]]:
    """`definitions` in source order with their nesting depths -> the same with clauses merged."""
    merged: list[Definition] = []
    merged_depths: list[int] = []
    # depth -> index in `merged` of the last definition seen at that depth, for the open scopes only
    last_at: dict[int, int] = {}
    for definition, depth in zip(definitions, depths):
        for deeper in [level for level in last_at if level > depth]:
            del last_at[deeper]  # a shallower definition closed them
        previous = last_at.get(depth)
        if previous is not None:
            first = merged[previous]
            if first.qualname == definition.qualname and first.kind == definition.kind:
                merged[previous] = replace(first, end_line=max(first.end_line, definition.end_line),
                                           end_byte=max(first.end_byte, definition.end_byte))
                continue
        last_at[depth] = len(merged)
        merged.append(definition)
        merged_depths.append(depth)
    return merged, merged_depths
