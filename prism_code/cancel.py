"""Cooperative cancellation shared by long-running jobs (embedding, indexing)."""


class Cancelled(Exception):
    """Raised when a caller's ``cancelled()`` callback asked a running job to stop."""
