"""Benchmark charts as PNG for the README and docs (needs the `bench` extra: matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class ChartsUnavailable(RuntimeError):
    """matplotlib is missing: said before a benchmark runs, not after it."""


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as err:
        raise ChartsUnavailable("benchmark charts need matplotlib, the `bench` extra: "
                                "run `.venv/bin/pip install -e '.[bench]'`, then the benchmark again") from err


def grouped_bars(path: Path, title: str, groups: Sequence[str], series: dict[str, Sequence[float]],
                 ylabel: str, figsize: tuple[float, float] = (8, 3.6), ymax: float | None = None) -> Path:
    """One cluster of bars per group, one bar per series, values printed on the bars; many
    groups need a wider `figsize` (inches), a legend over tall bars a higher `ymax`."""
    import matplotlib

    matplotlib.use("Agg")  # no display on a server or in CI
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, dpi=120)
    width = 0.8 / max(len(series), 1)
    for k, (name, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
        bars = ax.bar(xs, values, width, label=name)
        ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7, padding=1)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    # Four or more series take two legend rows, which need the headroom.
    ax.set_ylim(0, ymax or (1.05 if len(series) <= 3 else 1.2))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, frameon=False, ncol=len(series) if len(series) <= 3 else 2, loc="upper center")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
