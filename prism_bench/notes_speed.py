"""How fast the local model writes function notes (the PRISM function-memory pass).

Two numbers a user feels: the steady rate of the background pass over a repository
(functions per minute, tokens decoded per note) and how long after opening a file its
functions have model notes (that file goes first; the clock starts at model load, with
the prompt prefix restored from a state file as after a restart). Each run starts from an
empty notes store in a temporary cache, so nothing is skipped as already noted.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from prism_bench.report import table
from prism_code.index import RepoIndex
from prism_code.llm import LlamaSession, StateCache
from prism_code.memory.note_writer import NotesRun, run_notes


@dataclass
class NotesSpeed:
    repo: str
    model: str
    functions: int
    run: dict
    open_file: str
    open_file_functions: int
    open_file_seconds: float
    load_average: float


def _middle_sized_file(index: RepoIndex) -> tuple[str, int]:
    """A file with a typical number of functions: the one at the median count (at least 3)."""
    counts: dict[str, int] = {}
    for fragment in index.functions():
        counts[fragment.path] = counts.get(fragment.path, 0) + 1
    candidates = sorted((n, p) for p, n in counts.items() if n >= 3) or sorted((n, p) for p, n in counts.items())
    if not candidates:
        raise ValueError("the repository has no functions to note")
    n, path = candidates[len(candidates) // 2]
    return path, n


def run(repo: Path, model: str = "qwen2.5-coder-0.5b", limit: int = 40, threads: int = 2) -> NotesSpeed:
    with tempfile.TemporaryDirectory(prefix="prism-notes-bench-") as tmp:
        index = RepoIndex(repo, cache_dir=Path(tmp) / "index")
        try:
            index.update()
            open_file, open_count = _middle_sized_file(index)
            states = StateCache(Path(tmp) / "states")

            # An opened file right after (re)start: load the model, restore the prefix if a
            # state file exists (the first run makes it), note that file's functions.
            warm_session = LlamaSession.open(model, n_threads=threads)
            try:
                run_notes(warm_session, index, limit=1, state_cache=states)  # writes the prefix state
            finally:
                warm_session.close()
            _forget_notes(index)
            started = time.perf_counter()
            session = LlamaSession.open(model, n_threads=threads)
            try:
                first = run_notes(session, index, priority=[open_file], limit=open_count, state_cache=states)
                open_seconds = time.perf_counter() - started
                if first.noted != open_count:
                    raise RuntimeError(f"noted {first.noted} of {open_count} functions in {open_file}")
                steady: NotesRun = run_notes(session, index, limit=limit, state_cache=states)
            finally:
                session.close()
            functions = len(index.functions())
        finally:
            index.close()
    return NotesSpeed(repo=repo.name, model=model, functions=functions, run=steady.as_row(),
                      open_file=open_file, open_file_functions=open_count,
                      open_file_seconds=round(open_seconds, 1), load_average=os.getloadavg()[0])


def _forget_notes(index: RepoIndex) -> None:
    from prism_code.memory.notes_store import NotesStore

    with NotesStore.for_index(index) as store:
        store.delete_missing(set())


def markdown(r: NotesSpeed, command: str) -> str:
    row = r.run
    return "\n".join([
        f"### Function notes: {r.repo}, {r.model}",
        "",
        f"`{command}` (1-minute load average at the end: {r.load_average:.1f})",
        "",
        table(["functions noted", "seconds", "notes / min", "decoded tokens / note", "prompt tokens encoded",
               "reused (cache hit %)", "failed"],
              [[row["noted"], row["seconds"], row["notes_per_minute"], row["decoded_per_note"], row["net_tokens"],
                f"{row['reused']} ({row['cache_hit_pct']}%)", row["failed"]]]),
        "",
        f"Opened file `{r.open_file}` ({r.open_file_functions} functions): model notes for all of them "
        f"{r.open_file_seconds} s after the model starts loading (prompt prefix restored from a state file). "
        f"The repository has {r.functions} functions. Targets: >= 30 notes/min; an opened file's notes "
        "within 30 s.",
    ])

