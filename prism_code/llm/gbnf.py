"""Small llama.cpp grammars (GBNF) written by hand, where a JSON schema does not fit."""

from __future__ import annotations

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
