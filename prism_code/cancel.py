"""Cooperative cancellation shared by long-running jobs (embedding, indexing, model calls)."""

from collections.abc import Callable

# A job polls one of these; True asks it to stop (it raises Cancelled, or returns early).
CancelCheck = Callable[[], bool]


class Cancelled(Exception):
    """Raised when a caller's ``cancelled()`` callback asked a running job to stop."""
