"""A receiver's text read as a chain of names and calls (prism_code.call_resolution).

`$li.eq(0).parent()` -> ["$li", "eq", CALL, "parent", CALL]: the resolver follows the chain
from the head's value through each member and each call's declared return type. Only a plain
chain is read: an index (`a[0]`), type arguments (`f<T>()`), an operator or unbalanced brackets
give no chain, so the call stays unresolved rather than guessed.
"""

from __future__ import annotations

import re

CALL = "()"  # a step of the chain that calls what the steps before it denote
# Longer receivers are not read: real chains are a few lines; a generated blob is no chain.
MAX_CHAIN_CHARS = 4000
# How deep brackets may nest inside one call's arguments before the chain is given up.
MAX_BRACKET_DEPTH = 64
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_OPENING = {"(": ")", "[": "]", "{": "}"}
_QUOTES = frozenset("'\"`")


def call_chain(text: str) -> list[str] | None:
    """The steps of a receiver such as `new Dog("rex").owner()`, or None when it is no plain chain."""
    if len(text) > MAX_CHAIN_CHARS:
        return None
    position = _skip_space(text, 0)
    if text.startswith("new ", position):  # `new Dog()` is read as the call of Dog
        position = _skip_space(text, position + 4)
    head = _NAME.match(text, position)
    if head is None:
        return None
    steps = [head.group()]
    position = head.end()
    while True:
        position = _skip_space(text, position)
        if position >= len(text):
            return steps
        char = text[position]
        if char == "!":  # TypeScript's non-null assertion changes no type we read
            position += 1
        elif char == "(":
            end = _closing(text, position)
            if end is None:
                return None
            steps.append(CALL)
            position = end + 1
        elif char == "." or text.startswith("?.", position):
            position = _skip_space(text, position + (2 if char == "?" else 1))
            name = _NAME.match(text, position)
            if name is None:
                return None
            steps.append(name.group())
            position = name.end()
        else:
            return None


def _closing(text: str, start: int) -> int | None:
    """The index of the bracket closing the one at `start`, skipping strings; None if unbalanced."""
    expected: list[str] = []
    position = start
    while position < len(text):
        char = text[position]
        if char in _QUOTES:
            position = _string_end(text, position)
            if position < 0:
                return None
        elif char in _OPENING:
            if len(expected) >= MAX_BRACKET_DEPTH:
                return None
            expected.append(_OPENING[char])
        elif char in ")]}":
            if not expected or expected.pop() != char:
                return None
            if not expected:
                return position
        position += 1
    return None


def _string_end(text: str, start: int) -> int:
    """The index of the quote closing the string opened at `start`; -1 when it never closes."""
    quote = text[start]
    position = start + 1
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if char == quote:
            return position
        position += 1
    return -1


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position
