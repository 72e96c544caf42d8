"""`Store`: one workspace's index database, with what the index reads and writes."""

from __future__ import annotations

from prism_code.store.reads import IndexReads
from prism_code.store.writes import IndexWrites


class Store(IndexReads, IndexWrites):
    """The database of one workspace's index (`database.workspace_db_path`): the index opens one,
    reads it whole at start and writes each update in one transaction."""
