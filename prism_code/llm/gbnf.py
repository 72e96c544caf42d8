"""Small llama.cpp grammars (GBNF) written by hand, where a JSON schema does not fit."""

from __future__ import annotations

from collections.abc import Sequence

from llama_cpp.llama_grammar import LlamaGrammar


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"')
               .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t"))
    return f'"{escaped}"'


def starts_with(text: str) -> LlamaGrammar:
    """Output that begins with `text` and goes on freely (token healing)."""
    if not text:
        raise ValueError("empty text")
    return LlamaGrammar.from_string(f"root ::= {gbnf_literal(text)} [^\\x00]*\n", verbose=False)


def _char_class(chars: set[str]) -> str:
    """A GBNF class matching any character but `chars` (each escaped by its code point)."""
    return "[^" + "".join(f"\\U{ord(c):08X}" if ord(c) > 0xFFFF else f"\\u{ord(c):04X}" for c in sorted(chars)) + "]"


def line_not_starting_with(texts: Sequence[str]) -> LlamaGrammar:
    """Output whose first line, after its indentation, does not begin with any of `texts`.

    The indentation is spaces and tabs; the line must then start with code (not end at once).
    A line that stops short of a text, or leaves it at some character, goes on freely.
    """
    wanted = [t for t in dict.fromkeys(texts) if t]
    if not wanted:
        raise ValueError("no text to avoid")
    # A trie of the texts: each node is a rule; a child that ends a text has no rule (refused).
    children: list[dict[str, int]] = [{}]
    ends: set[int] = set()
    for text in wanted:
        node = 0
        for char in text:
            if char not in children[node]:
                children[node][char] = len(children)
                children.append({})
            node = children[node][char]
        ends.add(node)
    rules = ["root ::= [ \\t]* n0", "rest ::= [^\\x00]*"]
    for node, kids in enumerate(children):
        if node in ends:
            continue
        avoid = set(kids) | ({" ", "\t", "\n"} if node == 0 else set())  # code first
        options = [f"{gbnf_literal(char)} n{child}" for char, child in kids.items() if child not in ends]
        options.append(f"{_char_class(avoid)} rest")
        body = " | ".join(options)
        rules.append(f"n{node} ::= {body}" if node == 0 else f"n{node} ::= ({body})?")
    return LlamaGrammar.from_string("\n".join(rules) + "\n", verbose=False)
