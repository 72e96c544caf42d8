"""Bootstrap intervals: they hold the mean, narrow with more tasks, and pair differences by task."""

from __future__ import annotations

import pytest

from prism_bench.bootstrap import interval, paired_difference


def test_interval_holds_the_mean_and_narrows_with_more_tasks():
    few = interval([1, 0] * 10)
    many = interval([1, 0] * 200)
    assert few.low < 0.5 < few.high and many.mean == pytest.approx(0.5)
    assert (many.high - many.low) < (few.high - few.low) / 3


def test_two_tasks_apart_is_not_a_result_but_a_steady_gain_is():
    base = [1, 0, 0, 1] * 30
    two_more = list(base)
    two_more[1] = two_more[2] = 1
    assert paired_difference(two_more, base).low <= 0.0
    better = [1] * 120
    gain = paired_difference(better, base)
    assert gain.mean == pytest.approx(0.5) and gain.low > 0.3


def test_paired_scores_must_cover_the_same_tasks():
    with pytest.raises(ValueError, match="length"):
        paired_difference([1, 0], [1])
