"""argparse `type=` checks for the command line: a bad value is a usage error naming the option.

argparse turns an ArgumentTypeError into `prism-code CMD: error: argument --top: ...` and
exit status 2 before any work starts, so `--top -3` cannot silently drop results and
`index ""` cannot index the current directory.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path


def bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    """An integer from `low` to `high` (no upper bound when None)."""
    expected = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not {expected}") from None
        if number < low or (high is not None and number > high):
            raise argparse.ArgumentTypeError(f"{value} is not {expected}")
        return number
    parse.__name__ = "integer"
    return parse


def bounded_float(low: float, high: float) -> Callable[[str], float]:
    """A finite number from `low` to `high` (nan and inf are refused: they order nothing)."""
    expected = f"a finite number from {low:g} to {high:g}"

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not {expected}") from None
        if not math.isfinite(number) or not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{value} is not {expected}")
        return number
    parse.__name__ = "number"
    return parse


def non_empty_path(value: str) -> Path:
    """A path that is not the empty string (which pathlib would read as the current directory)."""
    if value == "":
        raise argparse.ArgumentTypeError("an empty path is not allowed (use . for the current directory)")
    return Path(value)


def non_empty_text(value: str) -> str:
    """A string with something in it other than spaces (an empty --remote is not "no server")."""
    if not value.strip():
        raise argparse.ArgumentTypeError("an empty value is not allowed")
    return value
