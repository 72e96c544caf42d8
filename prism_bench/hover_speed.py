"""Hover latency on a big open buffer, through a real `python -m prism_code.lsp` over stdio.

A copy of tests/fixtures/multilang is the workspace; big.py is opened with a few MB of Python
(this repository's prism_code/*.py repeated). The bench times hovers on the unchanged buffer
(first, then repeated), then after one-character edits sent as incremental didChange. The
server is left to finish indexing before each hover is timed, so the figures are the hover's
own. PYTHONPATH decides which tree's server runs.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from prism_bench.lsp_subprocess import BenchClient, load_average, running_server, shut_down

REPO = Path(__file__).resolve().parents[1]
EDITS = 2  # one-character edits, each followed by its hovers
DEBOUNCE_S = 0.5  # past the server's edit debounce before asking whether it is idle
IDLE_POLL_S = 0.2


@dataclass(frozen=True)
class TimedHover:
    label: str  # "first", "repeated", "after edit N"
    ms: float
    found: str | None  # the hover's second line (the definition it names), None for no hover


@dataclass
class HoverSpeed:
    megabytes: float
    lines: int
    hovered: str  # the line hovered, as `N: text`
    hovers: list[TimedHover] = field(default_factory=list)
    hover_buffers: object = None  # prism.status's hoverBuffers, when the server reports them
    load: str = ""


def _field(answer: Any, name: str) -> Any:
    """A field of a command's answer, which the client gives as a dict or an attribute object."""
    return answer.get(name) if isinstance(answer, dict) else getattr(answer, name, None)


async def _idle(client: BenchClient) -> None:
    await asyncio.sleep(DEBOUNCE_S)
    status = types.ExecuteCommandParams(command="prism.status", arguments=[])
    while _field(await client.workspace_execute_command_async(status), "state") != "idle":
        await asyncio.sleep(IDLE_POLL_S)


async def _measure(tmp: Path, megabytes: float, repeat: int) -> HoverSpeed:
    root = tmp / "multilang"
    shutil.copytree(REPO / "tests" / "fixtures" / "multilang", root)
    chunk = "".join(p.read_text() for p in sorted((REPO / "prism_code").rglob("*.py")))
    text = chunk * int(megabytes * 1e6 // len(chunk) + 1)
    (root / "big.py").write_text("")
    lines = text.split("\n")
    row = next(i for i, line in enumerate(lines) if line.startswith("def "))
    uri = (root / "big.py").as_uri()
    result = HoverSpeed(len(text.encode()) / 1e6, len(lines), f"{row + 1}: {lines[row][:40]}")
    client = BenchClient()
    async with running_server(client, tmp / "cache") as server:
        # No model at work meanwhile (completions, notes): the hovers have the CPU.
        await client.initialize_async(types.InitializeParams(
            process_id=os.getpid(), root_uri=root.as_uri(), capabilities=types.ClientCapabilities(),
            initialization_options={"completion": {"enabled": False}, "notes": {"enabled": False}}))
        client.initialized(types.InitializedParams())
        await _idle(client)
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        await _idle(client)
        hover = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                  position=types.Position(line=row, character=5))

        async def timed(label: str) -> None:
            started = time.perf_counter()
            answer = await client.text_document_hover_async(hover)
            ms = 1000 * (time.perf_counter() - started)
            contents = answer.contents if answer is not None else None
            value = contents.value if isinstance(contents, types.MarkupContent) else None
            result.hovers.append(TimedHover(label, ms, value.split("\n")[1] if value else None))

        for i in range(repeat):
            await timed("first" if i == 0 else "repeated")
        for edit in range(EDITS):
            # A one-character edit near the end of the buffer, sent incrementally.
            end = types.Position(line=len(lines) - 2, character=0)
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2 + edit),
                content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=end, end=end),
                                                                        text="#")]))
            await _idle(client)
            for i in range(repeat):
                await timed(f"after edit {edit + 1}" if i == 0 else "repeated")
        status = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="prism.status", arguments=[]))
        result.hover_buffers = _field(status, "hoverBuffers")
        result.load = load_average()
        await shut_down(client, server)
    return result


def run(megabytes: float = 5.0, repeat: int = 3) -> HoverSpeed:
    """Open a buffer of about `megabytes` MB in a real server and time `repeat` hovers at each stage."""
    with tempfile.TemporaryDirectory(prefix="prism-bench-hover-") as tmp:
        return asyncio.run(_measure(Path(tmp), megabytes, repeat))


def markdown(r: HoverSpeed, command: str) -> str:
    from prism_bench.report import table

    lines = [f"Command: `{command}`", "",
             f"An open buffer of {r.megabytes:.1f} MB, {r.lines} lines, in `python -m prism_code.lsp` (completions "
             f"and notes off); hover on line {r.hovered!r}, each timed once the server is idle; load average "
             f"{r.load} at the end.", "",
             table(["hover", "ms", "shows"], [[h.label, f"{h.ms:.0f}", h.found or "-"] for h in r.hovers])]
    if r.hover_buffers is not None:
        lines += ["", f"hoverBuffers: {r.hover_buffers}"]
    return "\n".join(lines)
