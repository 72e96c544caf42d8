"""What can go wrong with the index database's file, told so a user knows what to do."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

# SQLite primary result codes (the low byte of an extended code).
_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT = 3, 8, 10, 11
_SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 13, 14, 26
_DAMAGED = {_SQLITE_CORRUPT, _SQLITE_NOTADB}
UNUSABLE_CODES = {_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN}

_ADVICE = ("make it writable, or choose another cache directory with --cache-dir "
           "or PRISM_CODE_CACHE_DIR")


class CacheDirError(ValueError):
    """The cache directory cannot hold the index. A ValueError, which the command line
    reports as `prism-code: error: ...` without a traceback."""


class IndexBusy(RuntimeError):
    """Another process held the index's lock longer than the caller would wait."""


class StaleIndex(RuntimeError):
    """Another process committed to the index since this one read it (without the lock:
    a file system without flock, say). The writer reloads and tries again."""


def result_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_damage(exc: BaseException) -> bool:
    """Whether an error says the database file is damaged (not merely busy or unwritable)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = result_code(exc)
    if code is not None:
        return code in _DAMAGED
    return "malformed" in str(exc) or "not a database" in str(exc)


def unusable(path: Path, exc: BaseException) -> CacheDirError:
    return CacheDirError(f"cannot use the index database {path} ({exc}): {_ADVICE}")


def file_id(path: Path) -> tuple[int, int] | None:
    """The identity of the file at `path` now: it changes when the file is replaced."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def make_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileExistsError) or exc.errno == errno.ENOTDIR:
            reason = "a file is in the way of the directory"
        raise CacheDirError(f"cannot create the index directory {path} ({reason}): {_ADVICE}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise CacheDirError(f"the index directory {path} is not writable: {_ADVICE}")
