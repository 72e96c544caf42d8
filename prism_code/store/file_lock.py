"""An advisory lock on a file beside the database, so one writer of a kind works at a time."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.store.errors import IndexBusy, unusable

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # not POSIX: writers go unserialised, the generation check still holds
    fcntl = None

log = logging.getLogger(__name__)

# A lock wait longer than this is logged, so a command that waits says what for.
LOCK_NOTICE_S = 1.0
# Waiting polls with a doubling pause up to this, so a cancelled wait ends within it.
_LOCK_POLL_MAX_S = 0.25


class FileLock:
    """An advisory lock (flock) on a file beside the database, for one kind of writer.

    flock locks belong to an open file, so two processes, or two Stores in one process,
    exclude each other, and the kernel drops a lock when its holder dies: a killed indexer
    never leaves the index locked. Re-entrant for the thread holding it, since an update
    holds it across its relations phase. Waiting polls, so a caller can cancel the wait.
    """

    def __init__(self, path: Path, activity: str) -> None:
        self.path = path
        self.activity = activity  # what the holder is doing, for the waiting message
        self._mutex = threading.Lock()  # threads of this process, before the file lock
        self._owner: int | None = None
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def held(self, cancelled: CancelCheck | None = None,
             timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the block. Raises Cancelled when `cancelled()` turns true while
        waiting, IndexBusy after `timeout` seconds (None: wait as long as it takes)."""
        if self._owner == threading.get_ident():
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._acquire(cancelled, timeout)
        try:
            yield
        finally:
            self._release()

    def _acquire(self, cancelled: CancelCheck | None, timeout: float | None) -> None:
        started = time.monotonic()
        pause, told, have_mutex = 0.01, False, False
        try:
            while True:
                have_mutex = have_mutex or self._mutex.acquire(blocking=False)
                if have_mutex and self._try_lock():
                    self._owner, self._depth = threading.get_ident(), 1
                    return
                if cancelled is not None and cancelled():
                    raise Cancelled(f"stopped waiting for {self._holder()} {self.activity}")
                waited = time.monotonic() - started
                if timeout is not None and waited >= timeout:
                    raise IndexBusy(f"{self._holder()} has been {self.activity} for over "
                                    f"{timeout:.0f} s (lock {self.path})")
                if not told and waited >= LOCK_NOTICE_S:
                    log.warning("waiting for %s, which is %s (lock %s)", self._holder(),
                                self.activity, self.path)
                    told = True
                time.sleep(pause)
                pause = min(pause * 2, _LOCK_POLL_MAX_S)
        except BaseException:
            if have_mutex:
                self._mutex.release()
            raise

    def _try_lock(self) -> bool:
        if fcntl is None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise unusable(self.path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError:
            # No flock here (some network file systems): the generation check in each
            # write transaction still keeps writers from publishing stale work.
            log.info("%s: no file locking on this file system; writers are not serialised",
                     self.path)
        try:  # who holds it, for the message of whoever waits
            holder = f"{os.getpid()}\n".encode()
            # Rewritten only when it names another process: truncating a file that holds data
            # costs ~4 ms on ext4 (its flush on close), on each update of this process (#29).
            if os.pread(fd, len(holder) + 1, 0) != holder:
                os.ftruncate(fd, 0)
                os.write(fd, holder)
        except OSError:
            pass
        self._fd = fd
        return True

    def _release(self) -> None:
        fd, self._fd, self._owner, self._depth = self._fd, None, None, 0
        if fd is not None:
            os.close(fd)  # closing the last descriptor of the open file drops the flock
        self._mutex.release()

    def _holder(self) -> str:
        if self._mutex.locked() and self._owner is not None:
            return "another thread of this process"
        try:
            pid = self.path.read_text().strip()
        except OSError:
            pid = ""
        return f"process {pid}" if pid.isdigit() else "another process"
