"""The language server reopening a large repository whose index exists (issue #29).

Starts `python -m prism_code.lsp` on `repo` with `cacheDir` pointing at the index the
command line built, sends `prism.findFunction` right after `initialized` and again, one at a
time, until an answer has results; then polls `prism.status` until the folder's index has
loaded (no longer opening or indexing: embedding the missing vectors, or idle) and times a
few more finds. Completions and notes are off, so no language model loads; the embedding
model does (the server embeds what the index lacks, into that index).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from prism_bench.lsp_subprocess import BenchClient, running_server, shut_down

LOADED_TIMEOUT_S = 1800.0  # sympy's index loads in about a minute on a busy host
FIRST_RESULTS_TIMEOUT_S = 600.0
TIMED_FINDS = 3  # per query, once the index has loaded
LOADED_STATES = ("embedding", "idle")
RETRY_PAUSE_S = 0.1


@dataclass
class ServerRun:
    initialize_s: float  # from sending `initialize` to its answer (the server's imports)
    first_answer_s: float  # from sending `initialize` to the first find's answer
    first_results_s: float  # ... to the first answer with results
    empty_answers: int  # answers without results before that one
    first_from_saved: bool  # that answer came from the saved lexical index
    first_top: list[str]  # its first three qualnames
    rss_first_results_mib: float
    loaded_s: float  # ... until the status said the index had loaded
    state_loaded: str  # "embedding" (vectors missing) or "idle"
    find_ms: list[float]  # finds once loaded
    rss_end_mib: float
    rss_peak_mib: float
    # ... from the files parsed so far, the folder's first index still being built
    first_from_partial: bool = False

    @property
    def find_p50_ms(self) -> float:
        return statistics.median(self.find_ms) if self.find_ms else 0.0


def _rss_mib(pid: int, key: str) -> float:
    """VmRSS or VmHWM of a process from /proc (0 where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


async def _find(client: BenchClient, query: str) -> list[dict[str, Any]]:
    answer = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="prism.findFunction", arguments=[{"description": query, "top": 10}]))
    return list(answer or [])


async def _folder_states(client: BenchClient) -> list[str]:
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="prism.status", arguments=[]))
    folders = answer.get("workspaces", answer.get("folders")) if isinstance(answer, dict) else None
    return [str(f.get("state")) for f in folders or []]


async def measure(repo: Path, cache_dir: Path, queries: Sequence[str]) -> ServerRun:
    """One server session on `repo` whose index lives under `cache_dir`."""
    client = BenchClient()
    with tempfile.TemporaryDirectory() as scratch:
        async with running_server(client, Path(scratch)) as server:
            sent = time.monotonic()
            await client.initialize_async(types.InitializeParams(
                process_id=os.getpid(), root_uri=repo.as_uri(),
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name=repo.name)],
                initialization_options={"cacheDir": str(cache_dir), "completion": {"enabled": False},
                                        "notes": {"enabled": False}, "find": {"strategy": "retrieval"}}))
            client.initialized(types.InitializedParams())
            initialize_s = time.monotonic() - sent
            first_answer_s: float | None = None
            empty = 0
            while True:
                results = await _find(client, queries[0])
                at = time.monotonic() - sent
                first_answer_s = at if first_answer_s is None else first_answer_s
                if results:
                    break
                if at > FIRST_RESULTS_TIMEOUT_S:
                    raise TimeoutError(f"no find with results within {FIRST_RESULTS_TIMEOUT_S:.0f} s")
                empty += 1
                await asyncio.sleep(RETRY_PAUSE_S)
            rss_first = _rss_mib(server.pid, "VmRSS")
            states: list[str] = []
            while time.monotonic() - sent < LOADED_TIMEOUT_S:
                states = await _folder_states(client)
                if states and all(s in LOADED_STATES for s in states):
                    break
                await asyncio.sleep(0.2)
            loaded_s = time.monotonic() - sent
            latencies = []
            for query in list(queries) * TIMED_FINDS:
                started = time.monotonic()
                await _find(client, query)
                latencies.append((time.monotonic() - started) * 1000)
            run = ServerRun(
                initialize_s=initialize_s, first_answer_s=first_answer_s, first_results_s=at,
                empty_answers=empty, first_from_saved=bool(results[0].get("fromSavedIndex")),
                first_from_partial=bool(results[0].get("fromPartialIndex")),
                first_top=[str(r.get("qualname")) for r in results[:3]], rss_first_results_mib=rss_first,
                loaded_s=loaded_s, state_loaded=states[0] if states else "unknown", find_ms=latencies,
                rss_end_mib=_rss_mib(server.pid, "VmRSS"), rss_peak_mib=_rss_mib(server.pid, "VmHWM"))
            await shut_down(client, server)
    return run
