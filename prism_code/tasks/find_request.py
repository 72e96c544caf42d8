"""What one find asks for, typed, whatever the strategy and whoever asks.

The command line, the language server and the benchmarks each build a `FindRequest` and
hand it to `find_strategies.run_find`, the one entry point. The request's defaults are
find's defaults: a caller sets only what its user chose. Options a strategy does not read
are ignored by it (retrieval reads no model settings; the model strategies read
retrieval's list at its default weights, as they always have).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import get_args

from prism_code.tasks.find_events import Strategy
from prism_code.tasks.find_function import DEFAULT_FIND_ALPHA
from prism_code.tasks.find_settings import LongContextSettings, PrismSettings, WimSettings

STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
MODEL_STRATEGIES: tuple[Strategy, ...] = tuple(s for s in STRATEGIES if s != "retrieval")
DEFAULT_TOP = 10  # results a find returns unless asked for another number

# Control characters other than whitespace (a NUL pasted from a binary, JSON's "\u0000")
# are no part of a description: they read as spaces.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# A lone surrogate (an argv byte that is not UTF-8, JSON's "\ud800") cannot be encoded, and
# the MiniLM tokenizer raises on it: it reads as U+FFFD, as a decoder replaces a bad byte.
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def description_text(description: str) -> str:
    """`description` as every strategy and caller reads it: controls as spaces, lone
    surrogates as U+FFFD, stripped. One normalization for the CLI and the server, so
    both rank the same text; ValueError when nothing is left to search for."""
    text = _SURROGATES.sub("\ufffd", _CONTROLS.sub(" ", description)).strip()
    if not text:
        raise ValueError("the description is empty")
    return text


def as_strategy(value: object) -> Strategy | None:
    """The strategy `value` names exactly, or None."""
    return next((s for s in STRATEGIES if s == value), None)


def named_strategy(value: str) -> Strategy:
    """The strategy `value` names; ValueError listing the strategies otherwise."""
    strategy = as_strategy(value)
    if strategy is None:
        raise ValueError(f"unknown find strategy {value!r}; choose from {', '.join(STRATEGIES)}")
    return strategy


@dataclass(frozen=True)
class FindRequest:
    """One find. Built with a description that `description_text` normalizes (ValueError
    when it is empty) and a strategy of STRATEGIES (ValueError otherwise)."""

    description: str
    strategy: Strategy = "retrieval"
    top: int = DEFAULT_TOP
    # Retrieval's ranking (and the list a failed model strategy falls back to): FragRel's
    # weight, and the model's guess at the code to fuse with the description by rank.
    alpha: float = DEFAULT_FIND_ALPHA
    expansion: str | None = None
    # prism and wim: retrieval's top-k the model reads; None is the strategy's own number
    # (PrismSettings.candidates, find_wim's default).
    candidates: int | None = None
    prism: PrismSettings = field(default_factory=PrismSettings)
    long_context: LongContextSettings = field(default_factory=LongContextSettings)
    wim: WimSettings = field(default_factory=WimSettings)

    def __post_init__(self) -> None:
        if as_strategy(self.strategy) is None:
            raise ValueError(f"unknown find strategy {self.strategy!r}; choose from {', '.join(STRATEGIES)}")
        object.__setattr__(self, "description", description_text(self.description))

    @property
    def uses_model(self) -> bool:
        return self.strategy in MODEL_STRATEGIES

    def as_retrieval(self) -> FindRequest:
        """The same find by retrieval: what a model strategy's failure answers with."""
        return replace(self, strategy="retrieval")

    def prism_settings(self) -> PrismSettings:
        """PRISM's settings with the request's candidate count in them."""
        return self.prism if self.candidates is None else replace(self.prism, candidates=self.candidates)
