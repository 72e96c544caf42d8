"""Completion against a plain fill-in-the-middle floor, on the large RepoEval-style set.

240 tasks (6 projects x 20 line-level + 20 API-level), each with its cursor at the line's
indentation, mid-line after typed text, or after a `.`. Tasks alternate between a tuning
half, where prompt changes are chosen, and a test half, where they are reported. Every
mode's per-task outcome is kept in a results file, so adding a mode or the other half
never recomputes what is known; the report gives each mode's EM and ES with 95% bootstrap
intervals and its paired gain over the floor.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

from prism_bench import baselines
from prism_bench.bootstrap import interval, paired_difference
from prism_bench.completion_modes import FLOOR, MODES, PRODUCT_OFF, PRODUCT_ON, mode_key
from prism_bench.repoeval_data import (
    CURSOR_KINDS,
    PROJECTS,
    CompletionTask,
    build_benchmark,
    default_cache_dir,
    edit_similarity,
    exact_match,
    load_tasks,
    project_root,
)
from prism_bench.task_runs import (
    Identified,
    ModeRuns,
    TaskRun,
    by_project,
    column,
    em_chart,
    load_outcomes,
    spread,
    still_to_run,
)
from prism_code.llm import LlamaSession
from prism_code.tasks.complete import Completer, CompletionSettings
from prism_code.tasks.fim import split_at_cursor

PER_PROJECT = 20  # line-level and API-level tasks per project, each


@dataclass(frozen=True)
class Outcome:
    """One mode's answer to one task."""

    task_id: str
    completion: str
    em: bool
    es: float
    prompt_tokens: int
    latency_ms: float


GainResult = ModeRuns[CompletionTask, Outcome]


def blanked(task: CompletionTask, root: Path) -> tuple[str, int, int]:
    """The file with the task's line cut at its cursor, and that (line, column), 1-based."""
    before, after = task.context(root)
    return before + task.typed + "\n" + after, task.line, len(task.typed) + 1


def score(task: CompletionTask, completion: str) -> tuple[bool, float]:
    """EM and ES of the line as completed (typed text + completion) against the real line."""
    line = task.typed + completion
    return exact_match(line, task.ground_truth), edit_similarity(line, task.ground_truth)


def _results_file(cache: Path, model: str, task_file: Path, mode: str) -> Path:
    key = hashlib.sha256(f"{model}\n{task_file.name}\n{mode_key(MODES[mode])}".encode()).hexdigest()[:16]
    return cache / "completion-results" / f"{key}.jsonl"


def run(model: str, modes: Sequence[str], split: str = "tune", threads: int = 2,
        limit: int | None = None, compute: bool = True) -> GainResult:
    """Complete every task of `split` ("tune", "test" or "all") in each mode not already known.

    With `compute` False nothing runs: the result holds the tasks every mode has answered.
    """
    cache = default_cache_dir()
    task_file = build_benchmark(cache, PER_PROJECT, PER_PROJECT, cursor_kinds=CURSOR_KINDS)
    tasks = [t for t in load_tasks(task_file) if split == "all" or t.split == split]
    tasks = spread(tasks, limit)
    result = GainResult(model, split, tasks)
    files = {mode: _results_file(cache, model, task_file, mode) for mode in modes}
    result.outcomes = {mode: load_outcomes(files[mode], Outcome) for mode in modes}
    pending = still_to_run(result, modes, compute)
    if not pending:
        return result
    products = {m: s for m, s in MODES.items() if isinstance(s, CompletionSettings)}
    with TaskRun(model, threads, result.outcomes, files, "completions", len(pending)) as job:
        result.speed = job.speed
        answers = chain(
            ((task, mode, _complete(completer, task, root))
             for task, mode, completer, root in by_project([p for p in pending if p[1] in products],
                                                           cache, products, job.session)),
            ((task, mode, _baseline(job.session, MODES[mode], task, cache))
             for task, mode in pending if mode not in products))
        for _, mode, outcome in answers:
            job.keep(mode, outcome)
    return result


def _complete(completer: Completer, task: CompletionTask, root: Path) -> Outcome:
    text, line, col = blanked(task, root)
    answer = completer.complete(task.path, text, line, col)
    em, es = score(task, answer.completion)
    return Outcome(task.task_id, answer.completion, em, es, answer.prompt_tokens, answer.latency_ms)


def _baseline(session: LlamaSession, mode: object, task: CompletionTask, cache: Path) -> Outcome:
    """The floor's answer (baselines.py); this set has no editing history for the peer."""
    if mode != baselines.FLOOR:
        raise ValueError(f"{mode!r}: only the floor runs on this set")
    spec = next(s for s in PROJECTS if s.package == task.project)
    text, line, col = blanked(task, project_root(spec, cache))
    started = time.perf_counter()
    said = baselines.answer(session, baselines.floor_prompt(session, *split_at_cursor(text, line, col)))
    em, es = score(task, said.completion)
    return Outcome(task.task_id, said.completion, em, es, said.prompt_tokens,
                   round((time.perf_counter() - started) * 1000, 1))


# ---- report -------------------------------------------------------------------------------


def _share(result: GainResult, mode: str, tasks: Sequence[CompletionTask]) -> str:
    return f"{statistics.mean(column(result, mode, 'em', tasks)):.3f}" if tasks else "-"


def markdown(result: GainResult, command: str) -> str:
    from prism_bench.report import table

    tasks = result.tasks
    modes = list(result.outcomes)
    by_cursor = {k: [t for t in tasks if t.cursor_kind == k] for k in CURSOR_KINDS}
    by_kind = {k: [t for t in tasks if t.kind == k] for k in ("line", "api")}
    floor_em = column(result, FLOOR, "em", tasks) if FLOOR in modes else None
    floor_es = column(result, FLOOR, "es", tasks) if FLOOR in modes else None
    rows = []
    for mode in modes:
        em, es = column(result, mode, "em", tasks), column(result, mode, "es", tasks)
        gain_em = paired_difference(em, floor_em).signed() if floor_em and mode != FLOOR else "-"
        gain_es = paired_difference(es, floor_es).signed() if floor_es and mode != FLOOR else "-"
        tokens = statistics.median(column(result, mode, "prompt_tokens", tasks))
        rows.append([mode, str(interval(em)), gain_em, str(interval(es)), gain_es,
                     *(_share(result, mode, by_cursor[k]) for k in CURSOR_KINDS),
                     *(_share(result, mode, by_kind[k]) for k in ("line", "api")), f"{tokens:.0f}"])
    counts = ", ".join(f"{len(v)} {k}" for k, v in by_cursor.items())
    header = ["mode", "EM [95% CI]", "EM gain over floor", "ES [95% CI]", "ES gain over floor",
              *(f"EM {k}" for k in CURSOR_KINDS), "EM line", "EM api", "prompt tokens p50"]
    return "\n".join([
        f"Command: `{command}`",
        "",
        f"Model {result.model}; {len(tasks)} tasks ({result.split} half of the 240-task set: "
        f"6 RepoEval projects x 20 line-level + 20 API-level; cursors: {counts}); one line, greedy. "
        "EM and ES compare the completed line with the real one; intervals are 95% bootstrap "
        "over tasks, gains are paired by task.",
        "",
        table(header, rows),
        *(["", _retrieval_gain(result, tasks)] if {PRODUCT_ON, PRODUCT_OFF} <= set(modes) else []),
        *(["", result.speed.sentence()] if result.speed else []),
    ])


def _retrieval_gain(result: GainResult, tasks: Sequence[CompletionTask]) -> str:
    """What retrieval adds to the product's own prompt, paired by task."""
    em = paired_difference(column(result, PRODUCT_ON, "em", tasks), column(result, PRODUCT_OFF, "em", tasks))
    es = paired_difference(column(result, PRODUCT_ON, "es", tasks), column(result, PRODUCT_OFF, "es", tasks))
    return f"Retrieval's gain (product, retrieval on minus off, paired): EM {em.signed()}, ES {es.signed()}."


def model_comparison(result: GainResult, other: GainResult) -> str:
    """Each mode against the same mode of another model, paired over the tasks both answered
    (the other model's kept outcomes: nothing runs for it)."""
    lines = []
    for mode, known in result.outcomes.items():
        theirs = other.outcomes.get(mode, {})
        both = [t for t in result.tasks if t.task_id in known and t.task_id in theirs]
        if not both:
            lines.append(f"{mode}: {other.model} has answered none of these tasks.")
            continue
        em = paired_difference(column(result, mode, "em", both), column(other, mode, "em", both))
        es = paired_difference(column(result, mode, "es", both), column(other, mode, "es", both))
        lines.append(f"{mode}: {result.model} {_share(result, mode, both)} against {other.model} "
                     f"{_share(other, mode, both)} on the {len(both)} tasks both answered; "
                     f"difference, paired: EM {em.signed()}, ES {es.signed()}.")
    return "\n".join(lines)


def chart(result: GainResult, path: Path) -> Path:
    """EM per mode, overall and by where the cursor sits."""
    groups: dict[str, list[Identified]] = {"all": list(result.tasks)}
    groups.update({k: [t for t in result.tasks if t.cursor_kind == k] for k in CURSOR_KINDS})
    return em_chart(result, path, f"Completion EM, {result.model}, {result.split} tasks, by cursor position", groups,
                    [m.replace(", ", ",\n") for m in result.outcomes])
