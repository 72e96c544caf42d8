"""A real prism-code language server in a subprocess, driven by a pygls client, for benches.

The benches that time the server (`server_latency`, `find_server`) start it the way an
editor does: `python -m prism_code.lsp` over stdio, its own cache directory, its stderr read
so a full pipe never stops it. What they measure differs; how the server is started, stopped
and blamed when it fails does not, and lives here.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

STOP_TIMEOUT_S = 30.0
STDERR_TAIL = 40  # lines kept of the server's stderr, shown when a bench fails


class BenchClient(LanguageClient):
    """Accepts progress tokens and registrations, answers configuration with defaults,
    and keeps the server's messages to explain a failure."""

    def __init__(self) -> None:
        super().__init__("prism-bench", "0.1")
        self.messages: list[str] = []

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(params: types.LogMessageParams) -> None:
            self.messages.append(params.message)

        @self.feature(types.WINDOW_SHOW_MESSAGE)
        def show_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

        @self.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            return None

        @self.feature(types.WORKSPACE_CONFIGURATION)
        def configuration(params: types.ConfigurationParams) -> list[None]:
            return [None for _ in params.items]


@asynccontextmanager
async def running_server(client: BenchClient, cache: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """Start the server for `client` with its default cache under `cache`; on leaving, the
    client is stopped, and on an error the server is killed and its stderr's tail printed."""
    env = {**os.environ, "PRISM_CODE_CACHE_DIR": str(cache / "default")}
    await client.start_io(sys.executable, "-m", "prism_code.lsp", env=env)
    server = client._server  # pygls keeps the process there and nowhere else
    assert server is not None
    stderr: list[str] = []
    drain = asyncio.create_task(_drain(server.stderr, stderr))
    try:
        yield server
    except BaseException:
        if server.returncode is None:
            server.kill()
        sys.stderr.write("\n".join(stderr[-20:]) + "\n")
        raise
    finally:
        drain.cancel()
        await client.stop()


async def shut_down(client: BenchClient, server: asyncio.subprocess.Process) -> None:
    """The editor's goodbye: shutdown, exit, and the process ends."""
    await client.shutdown_async(None)
    client.exit(None)
    await asyncio.wait_for(server.wait(), STOP_TIMEOUT_S)


async def _drain(stream: asyncio.StreamReader | None, keep: list[str]) -> None:
    if stream is None:
        return
    while line := await stream.readline():
        keep.append(line.decode("utf-8", "replace").rstrip())
        del keep[:-STDERR_TAIL]


def load_average() -> str:
    """The 1, 5 and 15 minute load, written beside seconds measured on a shared host."""
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank q-quantile (0 for no values)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0
