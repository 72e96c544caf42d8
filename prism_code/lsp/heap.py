"""Keeping Python's cyclic garbage collector off the long-lived heap, and giving freed
memory back to the system (`release_memory`).

A full collection walks every tracked object while holding the GIL. The server's heap
(pygls, numpy, scipy, onnxruntime, the index: ~200k objects on a 100k-line repository)
takes 100-300 ms to walk, and indexing allocates fast enough to trigger several such
walks; each one stalls the event loop and every request thread (measured on
torch-geometric: collections of 49, 97 and 142 ms during one index build).

So the objects that survive are frozen (`gc.freeze()`, O(1)): collections then walk
only what was allocated since, which is small. The cost: a reference cycle that was
alive when frozen and dies later is not found by the collector; reference counting
still frees everything else. The index holds no cycles of its own except networkx's
cached views, which CodeGraph breaks when it goes (see CodeGraph.__del__); after indexing
torch-geometric with 4,900 requests answered meanwhile, 435 frozen objects were such
garbage, about as many as 5 s into the run: the loss does not grow with use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Freezing is O(1), but young objects frozen while still in use (a request being
# answered) are those whose cycles could be missed later: freeze at most this often.
# Between two freezes an index build allocates some tens of thousands of objects,
# which a collection walks in a few milliseconds.
MIN_INTERVAL_S = 0.25

_last = 0.0  # monotonic time of the last freeze


def settle(force: bool = False) -> None:
    """Collect the young generations (cheap) and freeze what survives them."""
    global _last
    now = time.monotonic()
    if not force and now - _last < MIN_INTERVAL_S:
        return
    _last = now
    # Young cycles that are already garbage are freed now, not frozen.
    gc.collect(1)
    gc.freeze()


@contextmanager
def building() -> Iterator[None]:
    """No automatic collection while long-lived state is built in one call without
    progress (opening a cached index: ~150k objects in a second, which triggered full
    collections of 44 and 57 ms); what was built is frozen afterwards."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def release_memory() -> None:
    """Give memory freed by an update back to the system: glibc keeps it otherwise, and a
    full index frees a third of what it took (measured on torch-geometric: 235 -> 204 MB)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:
        pass
