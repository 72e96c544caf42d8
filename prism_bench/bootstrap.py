"""95% bootstrap intervals for per-task scores, alone and as paired differences.

A mean over 120 tasks moves by a task's weight (0.008) per task, so two modes a couple
of tasks apart are not told apart by their means; the interval says what the sample can.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
SEED = 0  # fixed, so a report regenerated from the same scores shows the same intervals


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"

    def signed(self) -> str:
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def _percentiles(means: np.ndarray, mean: float) -> Interval:
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(mean, float(low), float(high))


def interval(scores: Sequence[float] | np.ndarray) -> Interval:
    """The mean of `scores` with its 95% percentile bootstrap interval."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return Interval(0.0, 0.0, 0.0)
    picks = np.random.default_rng(SEED).integers(0, values.size, (RESAMPLES, values.size))
    return _percentiles(values[picks].mean(axis=1), float(values.mean()))


def paired_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> Interval:
    """mean(a - b) over the same tasks, resampling tasks (not each side on its own)."""
    if len(a) != len(b):
        raise ValueError(f"paired scores differ in length: {len(a)} and {len(b)}")
    return interval(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
