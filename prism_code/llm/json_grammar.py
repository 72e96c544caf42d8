"""llama.cpp grammars for JSON answers that let the model lay the JSON out its own way.

llama.cpp's JSON-schema converter allows at most one space between tokens. A chat
model writes `[` and then a newline and an indent; under the converter's grammar that
token is forbidden and the model falls back to what is still allowed, which for a
list of revisions is `]`: an empty answer. Allowing newlines and short indents where
the converter allows a space keeps the model on its own path.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar

_SPACE = 'space ::= " "?'
_LAYOUT = 'space ::= ("\\n" [ ]{0,12} | " ")?'


def json_layout_grammar(schema: dict[str, Any]) -> LlamaGrammar:
    # Imported here: llama.cpp's library loads with it, and the memory modules are
    # imported by readers of notes (hover) that never build a grammar.
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(schema))
    if _SPACE not in gbnf:
        raise RuntimeError("llama.cpp's grammar converter changed its whitespace rule")
    return LlamaGrammar.from_string(gbnf.replace(_SPACE, _LAYOUT), verbose=False)
