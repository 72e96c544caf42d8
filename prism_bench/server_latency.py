"""`prism-code bench server`: how long requests wait while the language server indexes.

The real server runs as a subprocess (`python -m prism_code.lsp`) on stdio with a fresh cache,
so it indexes the repository from nothing (parse, graph, relations, embeddings). A
pygls client opens one file and, from `initialized` until the index's work-done
progress ends, sends `prism.status` and `textDocument/hover` at a steady rate without
waiting for earlier answers (until the status says the index and its embeddings are
complete: opening the file makes the server fold the buffer in with a second, silent
update after the first progress ends): a request sent while the event loop or the request threads
are stuck waits for as long as they are, so each latency is how long a user would have
waited at that moment. `prism.status` is answered on the event loop itself; a hover
runs on a request thread and reads the index and the notes. The server's resident
memory is read from /proc while it works (the LLM stays unloaded: completions and
notes are off).

With `notes_file`, the same server then turns the function-notes pass on (a
configuration change), waits until the model is writing notes, opens that file and
times how long until a hover on every function in it shows the model's note: how long
a user who opens a file waits for its notes while the pass runs elsewhere.

The library never imports the server: it is driven only through the protocol.
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lsprotocol import types

from prism_bench.lsp_subprocess import BenchClient, load_average, percentile, running_server, shut_down

# A request answered later than this counts as blocked (issue 5's target).
BLOCKED_MS = 100.0
# prism.status (answered on the event loop: it sees every stall) is sent this often while
# indexing runs, and a hover (which parses the file: a real cost) every HOVER_EVERY-th time,
# about as often as a user could hover.
INTERVAL_S = 0.05
HOVER_EVERY = 4
INDEX_TIMEOUT_S = 3600.0
RSS_POLL_S = 0.25
MIB = 1024


Method = Literal["status", "hover"]  # the requests timed


@dataclass(frozen=True)
class Sample:
    method: Method
    at_s: float  # when it was sent, seconds after `initialized`
    latency_ms: float
    stage: str  # the indexing stage the server last reported when it was sent


@dataclass
class NotesReady:
    path: str  # the opened file, workspace-relative
    functions: int
    ready_s: float | None  # didOpen -> every function hovers with the model's note; None: timed out
    noted_at_open: int  # of the file's functions, already noted when it was opened
    pass_started_s: float  # notes enabled -> the pass reported its first note
    load: str = ""


@dataclass
class ServerLatency:
    repo: str
    hovered: str  # "path:line" of the hovered definition
    index_s: float  # initialized -> end of the first indexing progress
    end_message: str
    samples: list[Sample] = field(default_factory=list)
    rss_peak_mib: float = 0.0  # VmHWM at the end of indexing
    rss_end_mib: float = 0.0  # VmRSS once indexing ended
    rss_by_stage_mib: dict[str, float] = field(default_factory=dict)  # highest VmRSS seen per stage
    load: str = ""  # /proc/loadavg when the run ended
    notes: NotesReady | None = None

    def latencies(self, method: str) -> list[float]:
        return [s.latency_ms for s in self.samples if s.method == method]


def _proc_status_kib(pid: int, key: str) -> int:
    """A memory line of /proc/<pid>/status in KiB (0 once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def pick_definition(repo: Path) -> tuple[Path, int, int]:
    """(file, 0-based line, character) of a `def` name in a mid-sized Python file: a hover
    there parses the file, resolves the definition and looks its note up."""
    candidates = sorted(p for p in repo.rglob("*.py") if "test" not in p.name)
    sized = sorted(candidates, key=lambda p: abs(p.stat().st_size - 12_000))
    for path in sized:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        for row, line in enumerate(lines):
            if line.startswith("def ") and "(" in line:
                return path, row, 5
    raise ValueError(f"{repo} has no Python file with a top-level function to hover")


class _Client(BenchClient):
    """A client that accepts progress tokens, records progress and answers configuration."""

    def __init__(self) -> None:
        super().__init__()
        self.stage = "starting"
        self.index_token: str | None = None
        self.index_end: str | None = None  # the end message of the indexing progress
        self.ended = asyncio.Event()
        self.notes_reports = 0

        @self.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            token, value = str(params.token), params.value
            if token.startswith("prism-notes/"):
                self.notes_reports += 1
            if not token.startswith("prism-index/"):
                return
            kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
            message = value.get("message") if isinstance(value, dict) else getattr(value, "message", None)
            if kind == "begin" and self.index_token is None:
                self.index_token = token
            if token != self.index_token:
                return
            if kind == "report" and message:
                self.stage = message.split(" ", 1)[0] if not message.startswith("relations") \
                    else " ".join(message.split(" ", 2)[:2])
            if kind == "end":
                self.index_end = message or ""
                self.stage = "after progress"


def _complete(status: object) -> bool:
    """Whether a prism.status answer says indexing and embeddings are done."""
    if not isinstance(status, dict):
        status = getattr(status, "__dict__", None) or {}
    embeddings = status.get("embeddings") or {}
    return (status.get("state") == "idle"
            and embeddings.get("done") == embeddings.get("total"))


def _definitions(path: Path) -> list[tuple[int, int]]:
    """(0-based line, character) of the name of every `def` in a Python file."""
    found = []
    for row, line in enumerate(path.read_text(encoding="utf-8", errors="replace").split("\n")):
        match = re.match(r"\s*(?:async\s+)?def\s+(\w+)", line)
        if match:
            found.append((row, match.start(1) + 1))
    return found


async def _noted(client: _Client, uri: str, places: list[tuple[int, int]]) -> int:
    """How many of the places hover with a note the model wrote."""
    count = 0
    for row, column in places:
        answer = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=row, character=column)))
        if answer is not None and "written by the model" in str(getattr(answer.contents, "value", answer.contents)):
            count += 1
    return count


async def _notes_ready(client: _Client, repo: Path, target: Path, timeout_s: float) -> NotesReady:
    started = time.monotonic()
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"notes": {"enabled": True}}))
    while client.notes_reports == 0 and time.monotonic() - started < timeout_s:
        await asyncio.sleep(0.2)
    pass_started = time.monotonic() - started
    uri, places = target.as_uri(), _definitions(target)
    opened = time.monotonic()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=target.read_text(encoding="utf-8",
                                                                   errors="replace"))))
    at_open = await _noted(client, uri, places)
    ready = None
    while time.monotonic() - opened < timeout_s:
        if await _noted(client, uri, places) == len(places):
            ready = time.monotonic() - opened
            break
        await asyncio.sleep(0.5)
    return NotesReady(str(target.relative_to(repo)), len(places), ready, at_open, pass_started,
                      load_average())


async def _measure(repo: Path, cache: Path, interval_s: float,
                   notes_file: Path | None = None, notes_timeout_s: float = 600.0) -> ServerLatency:
    target, row, column = pick_definition(repo)
    client = _Client()
    result = ServerLatency(repo.name, f"{target.relative_to(repo)}:{row + 1}", 0.0, "")
    async with running_server(client, cache) as server:
        await client.initialize_async(types.InitializeParams(
            process_id=os.getpid(), root_uri=repo.as_uri(),
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True),
                text_document=types.TextDocumentClientCapabilities(
                    hover=types.HoverClientCapabilities(
                        content_format=[types.MarkupKind.Markdown]))),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name=repo.name)],
            initialization_options={"cacheDir": str(cache / "index"),
                                    "completion": {"enabled": False},
                                    "notes": {"enabled": False}}))
        started = time.monotonic()
        client.initialized(types.InitializedParams())
        uri = target.as_uri()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                 text=target.read_text(encoding="utf-8",
                                                                       errors="replace"))))
        hover = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                  position=types.Position(line=row, character=column))
        status = types.ExecuteCommandParams(command="prism.status", arguments=[])

        async def timed(method: Method, request) -> None:
            stage, sent = client.stage, time.monotonic()
            try:
                answer = await request
            except Exception as exc:  # noqa: BLE001 - an error answer is still an answer
                client.messages.append(f"{method} failed: {exc}")
                answer = None
            if method == "status" and client.index_end is not None and _complete(answer):
                client.ended.set()
            result.samples.append(Sample(method, sent - started,
                                         (time.monotonic() - sent) * 1000, stage))

        async def steady(method: Method, make, every: float) -> None:
            tasks = []
            while not client.ended.is_set():
                tasks.append(asyncio.create_task(timed(method, make())))
                await asyncio.sleep(every)
            await asyncio.gather(*tasks)

        async def memory() -> None:
            while not client.ended.is_set():
                rss = _proc_status_kib(server.pid, "VmRSS") / MIB
                stage = client.stage
                result.rss_by_stage_mib[stage] = max(result.rss_by_stage_mib.get(stage, 0.0), rss)
                await asyncio.sleep(RSS_POLL_S)

        watchers = [asyncio.create_task(steady(
                        "status", lambda: client.workspace_execute_command_async(status), interval_s)),
                    asyncio.create_task(steady(
                        "hover", lambda: client.text_document_hover_async(hover),
                        interval_s * HOVER_EVERY)),
                    asyncio.create_task(memory())]
        try:
            await asyncio.wait_for(client.ended.wait(), INDEX_TIMEOUT_S)
        finally:
            client.ended.set()
            await asyncio.gather(*watchers, return_exceptions=True)
        result.index_s = max(s.at_s for s in result.samples)
        result.end_message = str(client.index_end)
        result.rss_peak_mib = _proc_status_kib(server.pid, "VmHWM") / MIB
        result.rss_end_mib = _proc_status_kib(server.pid, "VmRSS") / MIB
        result.load = load_average()
        if notes_file is not None:
            result.notes = await _notes_ready(client, repo, notes_file, notes_timeout_s)
        await shut_down(client, server)
    return result


def run(repo: Path, interval_s: float = INTERVAL_S, notes_file: Path | None = None) -> ServerLatency:
    """Index `repo` from scratch in a real server while timing requests sent meanwhile; with
    `notes_file` (inside `repo`), then time the model's notes for that file once opened."""
    repo = repo.resolve()
    if not repo.is_dir():
        raise ValueError(f"{repo} is not a directory")
    if notes_file is not None:
        notes_file = (repo / notes_file).resolve()
        if not notes_file.is_file() or repo not in notes_file.parents:
            raise ValueError(f"{notes_file} is not a file in {repo}")
        if not _definitions(notes_file):
            raise ValueError(f"{notes_file} defines no Python function to note")
    with tempfile.TemporaryDirectory(prefix="prism-bench-server-") as tmp:
        return asyncio.run(_measure(repo, Path(tmp), interval_s, notes_file))


def markdown(r: ServerLatency, command: str) -> str:
    from prism_bench.report import table

    rows = []
    for method in ("status", "hover"):
        values = r.latencies(method)
        if not values:
            continue
        blocked = sum(1 for v in values if v > BLOCKED_MS)
        rows.append([f"`{'prism.status' if method == 'status' else 'textDocument/hover'}`",
                     len(values), f"{statistics.median(values):.1f}",
                     f"{percentile(values, 0.99):.1f}", f"{max(values):.0f}",
                     f"{blocked} ({100 * blocked / len(values):.1f}%)"])
    worst = sorted(r.samples, key=lambda s: -s.latency_ms)[:5]
    stages = Counter(s.stage for s in r.samples if s.latency_ms > BLOCKED_MS)
    memory = ", ".join(f"{stage} {mib:.0f}" for stage, mib in r.rss_by_stage_mib.items())
    lines = [
        f"Command: `{command}`",
        "",
        f"Repository {r.repo}, indexed from scratch by `python -m prism_code.lsp` (completions and notes "
        f"off, so no LLM is loaded) in {r.index_s:.1f} s (progress: {r.end_message}); `prism.status` "
        f"sent every {INTERVAL_S * 1000:.0f} ms and a hover on `{r.hovered}` every "
        f"{INTERVAL_S * HOVER_EVERY * 1000:.0f} ms while indexing ran, without waiting for answers; load "
        f"average {r.load} at the end.",
        "",
        table(["request", "sent", "p50 ms", "p99 ms", "max ms", f"> {BLOCKED_MS:.0f} ms"], rows),
        "",
        "Slowest: " + "; ".join(f"{s.method} {s.latency_ms:.0f} ms at {s.at_s:.1f} s ({s.stage})"
                                for s in worst),
    ]
    if stages:
        lines.append("Blocked requests by indexing stage: "
                     + ", ".join(f"{stage} {n}" for stage, n in stages.most_common()))
    lines += ["", f"Server memory: peak RSS (VmHWM) {r.rss_peak_mib:.0f} MiB, {r.rss_end_mib:.0f} MiB "
                  f"once indexed; highest RSS per stage (MiB): {memory}."]
    n = r.notes
    if n is not None:
        ready = f"{n.ready_s:.1f} s" if n.ready_s is not None else "not within the time limit"
        lines += ["", f"Function notes (default model, `prism.notes.enabled` turned on afterwards, "
                      f"completions off): the pass wrote its first note {n.pass_started_s:.1f} s "
                      f"after being enabled (model load included); `{n.path}` opened then, "
                      f"{n.functions} functions ({n.noted_at_open} noted already): every one "
                      f"hovered with the model's note {ready} after opening; load average "
                      f"{n.load}."]
    return "\n".join(lines)
