"""Block completion scored line by line: how many lines a block suggestion should hold.

Each task (block_tasks.py) blanks the first lines of a function body; the completer, asked
at the body's indentation under the header, writes up to BLOCK_LINES lines. Line k of the
answer is compared with line k of the body (stripped, as RepoCoder compares lines), so the
report shows EM and ES at each depth, and how many tasks are right through line k: what
a user who accepts k lines gets.
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass
from pathlib import Path

from prism_bench.block_tasks import BLOCK_LINES, BlockTask, build_block_benchmark, load_block_tasks
from prism_bench.bootstrap import interval
from prism_bench.repoeval_data import default_cache_dir
from prism_bench.task_runs import ModeRuns, TaskRun, by_project, load_outcomes, spread, still_to_run
from prism_code.tasks.complete import CompletionSettings

MODES: dict[str, CompletionSettings] = {
    # The block budget is fixed here, so the product's default can change without
    # invalidating the outcomes kept per mode.
    "retrieval off": CompletionSettings(max_lines=BLOCK_LINES, block_tokens=160, retrieval=False),
    "retrieval on": CompletionSettings(max_lines=BLOCK_LINES, block_tokens=160),
}


@dataclass(frozen=True)
class BlockOutcome:
    task_id: str
    lines: list[str]  # the answer's lines, as inserted
    latency_ms: float
    decoded: int


BlockResult = ModeRuns[BlockTask, BlockOutcome]


def line_scores(task: BlockTask, outcome: BlockOutcome) -> list[tuple[bool, float]]:
    """(EM, ES) at each depth 1..BLOCK_LINES; a missing answer line scores (False, 0)."""
    from prism_bench.repoeval_data import edit_similarity, exact_match

    answer = [*outcome.lines, *[""] * len(task.truth)]
    return [(exact_match(got, want), edit_similarity(got, want) if got.strip() else 0.0)
            for got, want in zip(answer, task.truth)]


def _file(cache: Path, model: str, tasks_file: Path, mode: str) -> Path:
    key = hashlib.sha256(f"{model}\n{tasks_file.name}\n{MODES[mode]!r}".encode()).hexdigest()[:16]
    return cache / "block-results" / f"{key}.jsonl"


def run(model: str, modes: list[str], split: str = "all", limit: int | None = None,
        threads: int = 2) -> BlockResult:
    cache = default_cache_dir()
    tasks_file = build_block_benchmark()
    tasks = [t for t in load_block_tasks(tasks_file) if split == "all" or t.split == split]
    tasks = spread(tasks, limit)
    result = BlockResult(model, split, tasks)
    files = {m: _file(cache, model, tasks_file, m) for m in modes}
    result.outcomes = {m: load_outcomes(files[m], BlockOutcome) for m in modes}
    pending = still_to_run(result, modes)
    if not pending:
        return result
    with TaskRun(model, threads, result.outcomes, files, "block completions", len(pending)) as job:
        result.speed = job.speed
        for task, mode, completer, root in by_project(pending, cache, MODES, job.session):
            text, line, col = task.blanked(root)
            answer = completer.complete(task.path, text, line, col)
            job.keep(mode, BlockOutcome(task.task_id, answer.completion.split("\n"), answer.latency_ms,
                                        answer.decoded))
    return result


def markdown(result: BlockResult, command: str) -> str:
    from prism_bench.report import table

    rows = []
    for mode, known in result.outcomes.items():
        scored = [line_scores(t, known[t.task_id]) for t in result.tasks]
        for depth in range(BLOCK_LINES):
            em = [float(s[depth][0]) for s in scored]
            through = [float(all(s[d][0] for d in range(depth + 1))) for s in scored]
            es = [s[depth][1] for s in scored]
            rows.append([mode, depth + 1, str(interval(em)), f"{statistics.mean(es):.3f}",
                         f"{statistics.mean(through):.3f}"])
        latency = statistics.median(known[t.task_id].latency_ms for t in result.tasks)
        rows.append([mode, "latency p50", f"{latency:.0f} ms", "", ""])
    return "\n".join([
        f"Command: `{command}`", "",
        f"Model {result.model}; {len(result.tasks)} function bodies from the 6 RepoEval projects; the first "
        f"{BLOCK_LINES} lines blanked, the cursor at the body's indentation under the header; greedy.", "",
        table(["mode", "line", "EM [95% CI]", "ES", "all lines right up to here"], rows),
        *(["", result.speed.sentence()] if result.speed else []),
    ])
