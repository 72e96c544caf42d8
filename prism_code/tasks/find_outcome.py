"""What every find strategy returns, and the answer helpers the model strategies share.

Below the strategies (find_prism, find_wim, find_long_context) and their entry point
(find_strategies): each imports from here, none from another strategy.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from prism_code.llm.json_grammar import json_layout_grammar
from prism_code.tasks.find_function import FoundFunction

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar

    from prism_code.llm.accounting import Accounting
    from prism_code.llm.backend import BackendError


@dataclass
class FindOutcome:
    """What a find run produced, whatever the strategy."""

    results: list[FoundFunction]  # best first; each carries a one-line `reason`
    accounting: Accounting | None = None  # model tokens and time (None for retrieval)
    stats: dict[str, Any] = field(default_factory=dict)  # strategy-specific numbers
    # Set when a model strategy's backend failed and these are retrieval's results instead.
    model_error: BackendError | None = None

    def to_json(self) -> list[dict[str, Any]]:
        """The CLI contract: the results only."""
        return [r.to_json() for r in self.results]


class Named(Protocol):
    """A function the model is shown: a FoundFunction or a function Fragment."""

    @property
    def path(self) -> str: ...

    @property
    def qualname(self) -> str: ...


def candidate_labels(found: Sequence[Named]) -> list[str]:
    """The names the model sees: qualnames, path-qualified where two candidates share one
    (the model must tell them apart)."""
    names = [_label_text(f.qualname) for f in found]
    counts = Counter(names)
    return [name if counts[name] == 1 else f"{_label_text(f.path)}:{name}" for f, name in zip(found, names)]


def _label_text(name: str) -> str:
    """A name as a grammar literal can hold it: C++'s `operator""_json_pointer` broke
    llama.cpp's JSON-schema converter (a quote inside an enum value), so quotes and
    backslashes are written as ' and /, and control characters dropped."""
    return "".join(c for c in name.replace('"', "'").replace("\\", "/") if c.isprintable())


def parse_function_json(text: str, names: list[str]) -> str | None:
    """The memory key a `{"function": NAME}` answer names, read tolerantly; None when it names none."""
    value: object = None
    try:
        data = json.loads(text)
        value = data.get("function") if isinstance(data, dict) else data
    except (json.JSONDecodeError, ValueError):
        match = re.search(r'"function"\s*:\s*"([^"]*)"', text)
        value = match.group(1) if match else text
    if not isinstance(value, str):
        return None
    value = value.strip().strip("`'\" ")
    if value in names:
        return value
    # A bare name for a method or a path-qualified key: accept it when it is unambiguous.
    tails = [n for n in names if n.rsplit(".", 1)[-1].rsplit(":", 1)[-1] == value.rsplit(".", 1)[-1]]
    if len(tails) == 1:
        return tails[0]
    mentioned = [n for n in sorted(names, key=len, reverse=True) if re.search(rf"\b{re.escape(n)}\b", value)]
    return mentioned[0] if len(mentioned) == 1 else None


def answer_grammar(names: list[str]) -> LlamaGrammar:
    return json_layout_grammar({"type": "object", "properties": {"function": {"enum": names}},
                                "required": ["function"], "additionalProperties": False})
