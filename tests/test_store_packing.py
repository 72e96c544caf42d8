"""The parse and related-set columns are stored compressed, and an index written with them
as plain text (before packing) opens to the same state."""

from __future__ import annotations

import shutil
import sqlite3
import zlib
from pathlib import Path

from test_index import snapshot

from prism_code.index import RepoIndex
from prism_code.store.database import workspace_db_path
from prism_code.workspace import resolve_workspace

FIXTURE = Path(__file__).parent / "fixtures" / "multilang"


def test_packed_columns_are_smaller_and_plain_text_rows_still_open(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    cache = tmp_path / "cache"
    index = RepoIndex(root, cache_dir=cache)
    index.update()
    before = snapshot(index)
    index.close()

    db = sqlite3.connect(workspace_db_path(resolve_workspace(root), cache))
    kinds = {kind for (kind,) in db.execute("SELECT DISTINCT typeof(parsed) FROM files UNION "
                                             "SELECT DISTINCT typeof(related) FROM relations")}
    assert kinds == {"blob"}
    packed_size = db.execute("SELECT sum(length(related)) FROM relations").fetchone()[0]
    # What an index written before packing holds: the same JSON as text.
    db.executemany("UPDATE files SET parsed = ? WHERE path = ?",
                   [(zlib.decompress(blob).decode(), path)
                    for path, blob in db.execute("SELECT path, parsed FROM files")])
    db.executemany("UPDATE relations SET related = ? WHERE key = ?",
                   [(zlib.decompress(blob).decode(), key)
                    for key, blob in db.execute("SELECT key, related FROM relations")])
    db.commit()
    assert db.execute("SELECT sum(length(related)) FROM relations").fetchone()[0] > packed_size
    db.close()

    reopened = RepoIndex(root, cache_dir=cache)
    assert reopened.update().changed == 0
    assert snapshot(reopened) == before
    reopened.close()
