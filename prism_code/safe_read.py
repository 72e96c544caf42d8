"""Reading a file of an untrusted workspace: race-safe, never through a symlink, never blocking.

Between the scan and a read anything in the workspace can be swapped: a file for a FIFO (a
plain open() then waits for a writer forever), a file or any directory above it for a
symlink (a plain open() then reads what the link names, a key outside the workspace say,
into the index and into prompts). So a read walks down from the root one component at a
time with O_NOFOLLOW (a symlink anywhere fails the open instead of being followed), opens
the file with O_NONBLOCK (a FIFO swapped in after the lstat opens at once instead of
blocking), and reads only once fstat of that very descriptor shows a regular file: the
scan's file when it recorded one.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path

_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _O_NOFOLLOW | _O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC
# Where open() cannot refuse symlinks or start from a directory descriptor, reads check the
# resolved path instead: a narrower race, not none.
_WALK_BY_FD = bool(_O_NOFOLLOW) and {os.open, os.stat} <= os.supports_dir_fd


class NotRegularFile(OSError):
    """The path leads through a symlink, or to a FIFO, device or directory."""


class ReplacedFile(OSError):
    """A regular file, but not the one the scan listed."""


def is_plain(rel: str) -> bool:
    """Whether `rel` is a "/"-separated path that stays below the directory it starts from."""
    return all(part not in ("", ".", "..") for part in rel.split("/"))


def read_inside(
    root: Path, rel: str, identity: tuple[int, int] | None = None, limit: int = -1
) -> bytes:
    """Up to `limit` bytes (-1: all) of the regular file `rel` below `root`; see the module docstring."""
    fd = open_inside(root, rel)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", rel)
        if identity is not None and (st.st_dev, st.st_ino) != identity:
            raise ReplacedFile(errno.ESTALE, "replaced by another file since the scan", rel)
        # Regular files never block; blocking mode keeps a short read from looking like EOF.
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit)


def open_inside(root: Path, rel: str) -> int:
    """A read-only descriptor for `rel` below `root`, reached without following a symlink."""
    if not rel or not is_plain(rel):
        raise NotRegularFile(errno.EINVAL, "not a path inside the workspace", rel)
    if not _WALK_BY_FD:
        return _open_by_path(root, rel)
    parts = rel.split("/")
    # The root itself may be a symlink: the user named it, and resolve_workspace follows it.
    dir_fd = os.open(root, _DIR_FLAGS & ~_O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            parent, dir_fd = dir_fd, -1
            try:
                dir_fd = _no_symlink(rel, partial(os.open, part, _DIR_FLAGS, dir_fd=parent))
            finally:
                os.close(parent)
        # Checked before opening, so a FIFO or device present all along is never opened.
        st = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise NotRegularFile(errno.EINVAL, kind, rel)
        return _no_symlink(rel, lambda: os.open(parts[-1], _FILE_FLAGS, dir_fd=dir_fd))
    finally:
        if dir_fd >= 0:
            os.close(dir_fd)


def _no_symlink(rel: str, opener: Callable[[], int]) -> int:
    try:
        return opener()
    except OSError as exc:
        # O_NOFOLLOW meeting a symlink: ELOOP on Linux and macOS, EMLINK on FreeBSD.
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise NotRegularFile(exc.errno, "a symlink on the way (not followed)", rel) from None
        raise


def _open_by_path(root: Path, rel: str) -> int:
    path = os.path.join(root, *rel.split("/"))
    real_root = os.path.realpath(root)
    if os.path.commonpath([os.path.realpath(os.path.dirname(path)), real_root]) != real_root:
        raise NotRegularFile(errno.EINVAL, "a symlink on the way (not followed)", rel)
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise NotRegularFile(errno.EINVAL, "not a regular file", rel)
    return os.open(path, _FILE_FLAGS)
