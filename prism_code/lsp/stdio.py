"""Reading the client's messages on the event loop itself.

pygls reads stdin on a thread pool: every message costs three or four round trips
between the event loop and a reader thread (each header line, then the body). Each
round trip wakes two threads, and each woken thread must get a core and then the GIL
back from the indexing thread. A `prism.status` cost ~30 context switches (~2 read
this way); on a busy machine, while indexing ran Python on a core, those waits added
up and messages queued behind each other: answers took 100-270 ms although every
handler was quick. Read through asyncio, the loop wakes once per chunk of input and
parses every message already in it without another thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
from typing import BinaryIO

from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

# Longest header line accepted; a longer one is skipped (message bodies have no limit).
HEADER_LIMIT = 64 * 1024


def _readable_by_loop(stdin: BinaryIO, stdout: BinaryIO) -> bool:
    """Whether asyncio can read `stdin` without changing how `stdout` behaves.

    The loop makes the descriptor non-blocking: fine for a pipe or a socket of its own,
    but not for a regular file (epoll refuses it), nor for one open file shared with
    stdout (a terminal, one socket for both), whose writes would then fail when full.
    """
    try:
        info, out = os.fstat(stdin.fileno()), os.fstat(stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    if not (stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
        return False
    return (info.st_dev, info.st_ino) != (out.st_dev, out.st_ino)


class _LoopReader:
    """The reader pygls' message loop expects, over an asyncio stream."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream

    async def readline(self) -> bytes:
        try:
            return await self._stream.readline()
        except ValueError:  # an overlong line, dropped by the stream: an unknown header
            log.warning("skipped a header line longer than %d bytes", HEADER_LIMIT)
            return b"X-Skipped: overlong\r\n"

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._stream.readexactly(n)
        except asyncio.IncompleteReadError:  # the client went away mid-message
            return b""


def start_io(server: LanguageServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve `server` on stdin/stdout until the client exits or closes stdin."""
    if not _readable_by_loop(stdin, stdout):
        server.start_io(stdin, stdout)
        return
    server.protocol.set_writer(StdoutWriter(stdout))

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=HEADER_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
        await run_async(stop_event=threading.Event(), reader=_LoopReader(stream),
                        protocol=server.protocol, logger=log,
                        error_handler=server.report_server_error)

    try:
        asyncio.run(serve())
    except BrokenPipeError:
        log.error("the connection to the client is lost: shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
