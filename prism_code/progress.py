"""Progress for long work: a bar per stage on a TTY, silence otherwise."""

from __future__ import annotations

import sys
from typing import Never

from tqdm import tqdm


class StageBars:
    """A `(stage, done, total)` callback that draws one tqdm bar per stage on stderr."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._bar: tqdm[Never] | None = None  # a bar without an iterable
        self._stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if stage != self._stage or self._bar is None:
            self.close()
            self._stage = stage
            self._bar = tqdm(total=total, desc=stage, unit="", leave=False, file=sys.stderr)
        if self._bar.total != total:
            self._bar.total = total
        self._bar.n = done
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
