"""The prompts the large completion benchmark compares: the plain fill-in-the-middle floor,
the product's prompt, and the product's prompt with one design choice changed at a time.

Every product mode runs through the same `Completer` from the same cursor split, so a
difference between two of them is the prompt (or the post-processing), nothing else. The
floor is baselines.py's, the same in every completion benchmark.
"""

from __future__ import annotations

from dataclasses import fields, replace

from prism_bench import baselines
from prism_bench.baselines import Baseline
from prism_code.tasks.complete import LINE_TOKENS, QUERY_LINES, TOP_K, CompletionSettings
from prism_code.tasks.fim import PLAIN_LAYOUT, FimBudget, FimLayout

# Issue #28's plain prompt (baselines.py). Before it the floor was the product's Completer
# with its textbook layout (PLAIN_LAYOUT) and these budgets: the same text, but cut to the
# budgets on whole lines, without the newline after the 24th line below, and decoding
# stopped at the first newline (the same first line).
FLOOR = "plain FIM floor"
OLD_FLOOR = "floor before issue #28"

PRODUCT_OFF = "product, retrieval off"
PRODUCT_ON = "product, retrieval on"
_PRODUCT = CompletionSettings(max_lines=1, block_tokens=160)
_OFF = replace(_PRODUCT, retrieval=False)

MODES: dict[str, CompletionSettings | Baseline] = {
    FLOOR: baselines.FLOOR,
    # block_tokens is fixed at its old default: it is part of a mode's key in the outcome files.
    OLD_FLOOR: CompletionSettings(
        block_tokens=160, retrieval=False, max_lines=1, layout=PLAIN_LAYOUT, trim_repeated_suffix=False,
        budget=FimBudget(prefix_tokens=1500, prefix_lines=80, suffix_tokens=400, suffix_lines=24,
                         align_head=False)),
    PRODUCT_OFF: _OFF,
    PRODUCT_ON: _PRODUCT,
    # One change at a time against the product with retrieval off (issue #17's candidates):
    "off: prefix 1,500 tokens": replace(_OFF, budget=replace(_OFF.budget, prefix_tokens=1500)),
    "off: prefix unaligned": replace(_OFF, budget=replace(_OFF.budget, align_head=False)),
    "off: suffix 400 tokens / 24 lines": replace(
        _OFF, budget=replace(_OFF.budget, suffix_tokens=400, suffix_lines=24)),
    "off: hole at the cursor": replace(_OFF, layout=FimLayout(typed_in_middle=False, heal=False)),
    "off: no token healing": replace(_OFF, layout=FimLayout(heal=False)),
    "off: no repository markers": replace(_OFF, layout=FimLayout(repo_markers=False)),
    "off: no suffix-repeat trim": replace(_OFF, trim_repeated_suffix=False),
    # A change chosen on the tuning half with retrieval off, measured in the product's own setting:
    "on: prefix 1,500 tokens": replace(_PRODUCT, budget=replace(_PRODUCT.budget, prefix_tokens=1500)),
}
DEFAULT_MODES = (FLOOR, PRODUCT_OFF, PRODUCT_ON)


# Constants that were CompletionSettings fields until issue #30, after the field each followed: a mode's key
# still names them in their old places, so outcomes kept before stay valid and changing one makes new ones.
_FORMER_FIELDS = {"alpha": (("top_k", TOP_K), ("query_lines", QUERY_LINES)),
                  "max_lines": (("line_tokens", LINE_TOKENS),)}


def _settings_text(settings: CompletionSettings) -> str:
    """The settings as their dataclass repr writes them, the former fields in their places."""
    parts = []
    for f in fields(settings):
        parts.append(f"{f.name}={getattr(settings, f.name)!r}")
        parts += [f"{name}={value!r}" for name, value in _FORMER_FIELDS.get(f.name, ())]
    return f"{type(settings).__qualname__}({', '.join(parts)})"


def mode_key(settings: CompletionSettings | Baseline) -> str:
    """What identifies a mode's results in the cache: its settings, not its display name.

    A setting added later with its default is left out, so outcomes kept before it existed
    stay valid (FimLayout.hold_indent and CompletionSettings.reject_repeats, issue #28).
    """
    text = _settings_text(settings) if isinstance(settings, CompletionSettings) else repr(settings)
    return text.replace(", hold_indent=True", "").replace(", reject_repeats=False", "")
