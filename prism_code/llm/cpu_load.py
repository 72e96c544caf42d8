"""How many cores other processes keep busy, read from /proc (Linux; elsewhere: none known),
and so how many llama.cpp threads to run.

llama.cpp's threads spin at barriers, so one thread per core only pays off when every
core is free. Measured on 2 cores with another process using one: a completion took
440-3,100 ms with 2 threads and 180 ms with 1.
"""

from __future__ import annotations

import os
import time

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# Shorter windows are too coarse in clock ticks (10 ms each) to say anything.
_MIN_WINDOW_S = 0.1


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _busy_ticks() -> tuple[int, int] | None:
    """(ticks every CPU spent busy, ticks this process spent), both since boot."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()  # the name before ")" may hold spaces
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    # guest time is already inside user time
    busy = sum(fields[:8]) - idle
    return busy, int(own[11]) + int(own[12])  # utime + stime


class CpuMeter:
    """Busy cores of other processes between one call and the next (our own threads excluded,
    since the model's spinning threads are what the answer is for)."""

    def __init__(self) -> None:
        self._ticks = _busy_ticks()
        self._at = time.monotonic()
        self._others = 0.0

    def others_busy(self) -> float:
        now = time.monotonic()
        if self._ticks is None or now - self._at < _MIN_WINDOW_S:
            return self._others
        ticks = _busy_ticks()
        if ticks is None:
            return self._others
        busy = (ticks[0] - self._ticks[0]) - (ticks[1] - self._ticks[1])
        self._others = max(0.0, busy / _HZ / (now - self._at))
        self._ticks, self._at = ticks, now
        return self._others


def threads_for_now(window_s: float = 0.2) -> int:
    """llama.cpp threads for a command starting now: one per core that other processes
    leave free over a short look, at least one. On 2 cores with other jobs running, 2
    threads wrote a function note every 1-5 minutes and 1 thread about 20 a minute."""
    meter = CpuMeter()
    time.sleep(window_s)
    free = cores() - meter.others_busy()
    return max(1, min(cores(), int(free + 0.5)))
