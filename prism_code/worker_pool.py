"""An ordered map over spawned worker processes, for the CPU-bound stages of a large index.

Parsing and the relation pass run C code that holds the GIL (tree-sitter, scipy), so only
processes use a second core. Workers are spawned, not forked: the language server has
threads, and a fork would copy their held locks. Results come back in input order, so a
stage writes exactly what one process would; a pool that breaks (a worker killed, no
process could start) is logged and the rest is done in this process.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from prism_code.cancel import CancelCheck

log = logging.getLogger(__name__)

# Never more workers than this, whatever the core count: each holds its own imports and
# whatever state its stage sends it.
MAX_WORKERS = 4

Item = TypeVar("Item")
Result = TypeVar("Result")


def usable_cores() -> int:
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def ordered_map(fn: Callable[[Item], Result], items: Sequence[Item], workers: int,
                should_stop: CancelCheck | None = None,
                initializer: Callable[..., None] | None = None,
                initargs: tuple[Any, ...] = (), chunksize: int = 1) -> Iterator[Result]:
    """fn(item) for every item, in order; in `workers` processes when more than one.

    `fn` and `initializer` must be module-level functions (they are sent by name); the
    initializer also runs here before any item is done in this process. Stops (without
    raising) once `should_stop()` is true; the caller raises what fits its stage."""
    done = 0
    if workers > 1 and len(items) > 1:
        try:
            for result in _in_workers(fn, items, workers, should_stop, initializer, initargs, chunksize):
                yield result
                done += 1
        except (BrokenProcessPool, OSError) as exc:
            log.warning("worker processes failed (%s); finishing in this process", exc)
    if done < len(items) and not _stopped(should_stop):
        if initializer is not None:
            initializer(*initargs)
        for item in items[done:]:
            if _stopped(should_stop):
                return
            yield fn(item)


def _in_workers(fn: Callable[[Item], Result], items: Iterable[Item], workers: int,
                should_stop: CancelCheck | None, initializer: Callable[..., None] | None,
                initargs: tuple[Any, ...], chunksize: int) -> Iterator[Result]:
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=initializer, initargs=initargs)
    try:
        for result in pool.map(fn, items, chunksize=chunksize):
            yield result
            if _stopped(should_stop):
                return
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _stopped(should_stop: CancelCheck | None) -> bool:
    return should_stop is not None and should_stop()
