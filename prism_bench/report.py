"""Benchmark results as markdown, written into a named section of docs/benchmarks.md."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def command_line() -> str:
    return "prism-code " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def write_section(doc: Path, name: str, body: str) -> None:
    """Replace (or append) the section between `<!-- bench:name -->` markers."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
