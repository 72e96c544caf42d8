"""The language server's first find on reopening a folder whose index exists (issue #29).

Starts `python -m prism_code.lsp` on `repo` with `cacheDir` pointing at an existing index,
sends `prism.findFunction` right after `initialized` and again, one at a time, until an
answer has results; then waits until `prism.status` says the folder's index has loaded (no
longer opening or indexing: embedding the missing vectors or idle) and times a few more
finds. Prints one JSON object: seconds from sending `initialize` to the first answer and to
the first answer with results, whether that answer came from the saved lexical index
(results carry `fromSavedIndex`), the server's RSS then and at the end, its peak RSS, and the
find latencies once loaded. Completions and notes are off, so no language model loads (the
embedding model does: the server embeds what is missing, into the index it was given).

    flock /tmp/prism-bench.lock python scripts/bench_first_find.py /tmp/sympy /tmp/prism-cache-scale
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from prism_bench.lsp_subprocess import BenchClient, load_average, running_server, shut_down

QUERIES = ["compute the determinant of a matrix", "solve a system of linear equations",
           "simplify a trigonometric expression"]
LOADED_TIMEOUT_S = 900.0
TIMED_FINDS = 3  # per query, once the index has loaded


def _rss_mib(pid: int, key: str) -> float:
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


async def measure(repo: Path, cache_dir: Path) -> dict[str, Any]:
    client = BenchClient()
    out: dict[str, Any] = {"repo": str(repo), "load_before": load_average()}
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
            out["initialize_s"] = round(time.monotonic() - sent, 2)
            answers = []
            while True:
                results = await _find(client, QUERIES[0])
                at = round(time.monotonic() - sent, 2)
                answers.append([at, len(results)])
                if results:
                    break
                await asyncio.sleep(0.1)
            out["first_answer_s"] = answers[0][0]
            out["first_results_s"] = at
            out["empty_answers"] = len(answers) - 1
            out["first_from_saved"] = bool(results[0].get("fromSavedIndex"))
            out["first_top"] = [r["qualname"] for r in results[:3]]
            out["rss_first_results_mib"] = round(_rss_mib(server.pid, "VmRSS"))
            status = types.ExecuteCommandParams(command="prism.status", arguments=[])
            while time.monotonic() - sent < LOADED_TIMEOUT_S:
                answer = await client.workspace_execute_command_async(status)
                folders = answer.get("workspaces", answer.get("folders", [])) if isinstance(answer, dict) else []
                if folders and all(f.get("state") in ("embedding", "idle") for f in folders):
                    break
                await asyncio.sleep(0.2)
            out["loaded_s"] = round(time.monotonic() - sent, 2)
            out["state_loaded"] = folders[0].get("state")
            latencies, from_saved = [], 0
            for query in QUERIES * TIMED_FINDS:
                started = time.monotonic()
                results = await _find(client, query)
                latencies.append((time.monotonic() - started) * 1000)
                from_saved += bool(results and results[0].get("fromSavedIndex"))
            out["find_ms_p50_loaded"] = round(statistics.median(latencies), 1)
            out["find_ms_max_loaded"] = round(max(latencies), 1)
            out["loaded_finds_from_saved"] = from_saved
            out["rss_end_mib"] = round(_rss_mib(server.pid, "VmRSS"))
            out["rss_peak_mib"] = round(_rss_mib(server.pid, "VmHWM"))
            out["load_after"] = load_average()
            await shut_down(client, server)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(measure(Path(sys.argv[1]).resolve(), Path(sys.argv[2]))), indent=1))
