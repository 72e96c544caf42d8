"""What a person waits for after Enter (issue #28): the first suggestion on a new line.

For each line start of the set, in file order, the editor state before Enter is the file
without that line, the cursor at the end of the line above, where the last keystroke's
completion ran (so the model's context holds that prompt). Enter then opens the line at its
indentation (as editors indent), and the product completes there: that second completion is
timed, with the prompt tokens it evaluated and those it reused from the model's cache.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prism_bench.linestart import MODES, PRODUCT, _Project
from prism_bench.linestart_data import PROJECTS, LinestartTask, default_cache_dir, load_set, materialise, split_of
from prism_bench.lsp_subprocess import load_average
from prism_bench.machine_speed import MachineSpeed, measure
from prism_bench.task_runs import spread
from prism_code.llm import LlamaSession
from prism_code.tasks.complete import CompletionSettings


@dataclass(frozen=True)
class EnterTiming:
    task_id: str
    ms: float  # the completion after Enter, end to end in the library
    encoded: int  # prompt tokens evaluated for it
    reused: int  # prompt tokens kept from the model's cache
    before_ms: float  # the completion at the end of the line above, before Enter


@dataclass
class EnterLatency:
    model: str
    threads: int
    split: str
    mode: str
    timings: list[EnterTiming] = field(default_factory=list)
    speed: MachineSpeed | None = None
    load: list[str] = field(default_factory=list)


def before_enter(task: LinestartTask, root: Path) -> tuple[str, int, int]:
    """(the file as it was before Enter, the cursor's line, its column): the task's line is
    not there yet and the cursor ends the line above."""
    lines = (root / task.path).read_bytes().decode("utf-8").split("\n")
    above = lines[task.line - 2]
    return "\n".join(lines[:task.line - 1] + lines[task.line:]), task.line - 1, len(above) + 1


def run(model: str, split: str = "test", limit: int | None = 30, threads: int = 1,
        mode: str = PRODUCT) -> EnterLatency:
    tasks = spread([t for t in load_set() if t.kind == "indent" and (split == "all" or split_of(t) == split)
                    and t.line > 1], limit)
    cache = default_cache_dir()
    settings = MODES[mode]
    if not isinstance(settings, CompletionSettings):
        raise ValueError(f"{mode} is a baseline prompt, not the product's: it keeps no cache to time")
    result = EnterLatency(model, threads, split, mode, load=[load_average()])
    session = LlamaSession.open(model, n_threads=threads)
    try:
        result.speed = measure(session)
        for project in PROJECTS:
            todo = sorted((t for t in tasks if t.project == project.package), key=lambda t: (t.path, t.line))
            if not todo:
                continue
            root = materialise(project, cache)
            with _Project(root, cache, session) as runner:
                completer = runner.completer(mode, settings)
                for task in todo:
                    text, line, col = before_enter(task, root)
                    before = completer.complete(task.path, text, line, col)
                    after = completer.complete(task.path, task.blanked(root), task.line, task.col)
                    result.timings.append(EnterTiming(task.task_id, after.latency_ms, after.encoded, after.reused,
                                                      before.latency_ms))
    finally:
        session.close()
    result.load.append(load_average())
    return result


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def markdown(r: EnterLatency, command: str) -> str:
    ms = [t.ms for t in r.timings]
    encoded = [float(t.encoded) for t in r.timings]
    reused = [float(t.reused) for t in r.timings]
    return "\n".join([
        f"Command: `{command}`",
        "",
        f"Mode {r.mode}, model {r.model}, {r.threads} thread(s); {len(r.timings)} line starts of the {r.split} "
        "half, each completed at the end of the line above (the last keystroke before Enter), then at the new line's "
        f"indentation (timed). {r.speed.sentence() if r.speed is not None else ''} Load average {r.load[0]} "
        f"before, {r.load[-1]} after.",
        "",
        "| first suggestion after Enter | p50 | p90 | max |",
        "| --- | --- | --- | --- |",
        f"| latency ms | {statistics.median(ms) if ms else 0:.0f} | {_pct(ms, 0.9):.0f} | {max(ms, default=0):.0f} |",
        f"| prompt tokens evaluated | {statistics.median(encoded) if encoded else 0:.0f} | {_pct(encoded, 0.9):.0f} "
        f"| {max(encoded, default=0):.0f} |",
        f"| prompt tokens reused from the cache | {statistics.median(reused) if reused else 0:.0f} | "
        f"{_pct(reused, 0.9):.0f} | {max(reused, default=0):.0f} |",
    ])
