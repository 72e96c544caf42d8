"""`prism-code notes PATH [SYMBOL] [--run] [--limit N] [--json]`: the function memory.

Without --run it prints what exists now: the model's note where one was written for
the function's current text, else the deterministic note. With --run the model pass
writes the missing notes first (resumable: notes already written are kept).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from prism_code.cli_args import bounded_int
from prism_code.config import THREADS_RANGE, IndexConfig
from prism_code.progress import StageBars
from prism_code.terminal import shown

if TYPE_CHECKING:
    from prism_code.fragments import Fragment
    from prism_code.index import RepoIndex


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The notes command's own arguments (the workspace ones come from prism_code.cli)."""
    p.add_argument("symbol", nargs="?",
                   help="a qualname (Greeter.greet), a name (greet), a file (pkg/a.py) or FILE:QUALNAME")
    p.add_argument("--run", action="store_true", help="write missing notes with the model first")
    p.add_argument("--limit", type=bounded_int(1), help="with --run: write at most N notes in this run")
    p.add_argument("--model", default="qwen2.5-coder-0.5b",
                   help="qwen2.5-coder-0.5b, qwen2.5-coder-1.5b or a GGUF path")
    p.add_argument("--threads", type=bounded_int(*THREADS_RANGE),
                   help="llama.cpp threads (default: one per core other processes leave free)")
    p.add_argument("--no-summaries", action="store_true",
                   help="with --run: skip the Chain-of-Key module summaries of fully noted files")


def _selected(index: RepoIndex, symbol: str | None) -> list[Fragment]:
    functions = index.functions()
    if not symbol:
        return functions
    if ":" in symbol:
        path, qualname = symbol.rsplit(":", 1)
        return [f for f in functions if f.path == path and f.qualname == qualname]
    in_file = [f for f in functions if f.path == symbol]
    if in_file:
        return in_file
    exact = [f for f in functions if f.qualname == symbol]
    return exact or [f for f in functions if f.qualname.rsplit(".", 1)[-1] == symbol]


def notes_command(args: argparse.Namespace) -> int:
    from prism_code.index import RepoIndex
    from prism_code.memory.deterministic_notes import notes_for
    from prism_code.memory.notes_store import NotesStore

    config = IndexConfig(exclude=list(getattr(args, "exclude", None) or []),
                         trusted=not getattr(args, "untrusted", False))
    index = RepoIndex(args.path, config,
                      cache_dir=getattr(args, "cache_dir", None))
    try:
        index.update()
        if args.run:
            _run(index, args)
        chosen = _selected(index, args.symbol)
        if args.symbol and not chosen:
            raise ValueError(f"no function matches {args.symbol!r}")
        rows = []
        with NotesStore.for_index(index) as store:
            for f in chosen:
                lookup = notes_for(index, f.path, f.qualname, store)
                if lookup is None:
                    continue
                rows.append({"path": f.path, "qualname": f.qualname, "start_line": f.start_line,
                             "end_line": f.end_line, "source": lookup.source,
                             **{k: getattr(lookup.note, k) for k in ("purpose", "input", "output", "procedure")}})
    finally:
        index.close()
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=1, ensure_ascii=False))
    else:
        for row in rows:
            print(f"{shown(row['qualname'])}  {shown(row['path'])}:{row['start_line']}-{row['end_line']}  "
                  f"[{row['source']}]")
            for key in ("purpose", "input", "output", "procedure"):
                if row[key]:
                    print(f"  {key}: {shown(row[key])}")
    return 0


def _run(index: RepoIndex, args: argparse.Namespace) -> None:
    from prism_code.llm.open_backend import open_backend, state_cache_for
    from prism_code.memory.cok import ModuleSummarizer, files_ready_for_summary
    from prism_code.memory.note_writer import run_notes
    from prism_code.memory.notes_store import NotesStore

    bars = StageBars()
    session = open_backend(getattr(args, "remote", None), args.model, args.threads)
    summarized = 0
    try:
        with NotesStore.for_index(index) as store:
            run = run_notes(session, index, limit=args.limit, store=store, state_cache=state_cache_for(session),
                            progress=lambda done, total: bars("notes", done, total))
            if not args.no_summaries:
                summarizer = ModuleSummarizer(session, index, store)
                summarized = summarizer.summarize(files_ready_for_summary(index, store),
                                                  progress=lambda done, total: bars("summaries", done, total))
    finally:
        bars.close()
        session.close()
    print(f"notes: {run.noted} written in {run.seconds:.1f} s ({run.notes_per_minute:.1f}/min, "
          f"{run.decoded_per_note:.1f} decoded tokens each), {run.up_to_date} up to date, "
          f"{run.copied} copied from identical functions, {run.stubs} stubs (nothing to describe), "
          f"{run.failed} failed; "
          f"{summarized} module summaries written", file=sys.stderr)
