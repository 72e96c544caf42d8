"""RepoEval-style completion benchmark: EM / ES per retrieval mode, latency and KV reuse."""

from __future__ import annotations

import resource
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from prism_code.bench.repoeval_data import (PROJECTS, CompletionTask, build_benchmark,
                                            default_cache_dir, edit_similarity, exact_match,
                                            load_tasks, project_root)
from prism_code.index import RepoIndex
from prism_code.llm import LlamaSession, StateCache
from prism_code.tasks.complete import Completer, CompletionResult, CompletionSettings

# Scored as RepoCoder does: one line per task, so every mode completes a single line.
_BASE = CompletionSettings(max_lines=1)
MODES: dict[str, CompletionSettings] = {
    "in-file": replace(_BASE, retrieval=False),
    "vanilla retrieval": replace(_BASE, alpha=0.0),
    "retrieval + FragRel": replace(_BASE, alpha=0.5),
    "FragRel + RepoCoder iteration": replace(_BASE, alpha=0.5, iterations=2),
}
# Warm and restart latencies are measured in this mode.
TIMED_MODE = "retrieval + FragRel"


@dataclass
class ModeScore:
    em: list[bool] = field(default_factory=list)
    es: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    by_kind: dict[str, list[bool]] = field(default_factory=dict)


@dataclass
class RepoEvalResult:
    model: str
    tasks: int
    scores: dict[str, ModeScore]
    warm_ms: list[float] = field(default_factory=list)
    restart_ms: list[float] = field(default_factory=list)
    reused: int = 0
    encoded: int = 0
    peak_rss_mib: float = 0.0


def _blanked(task: CompletionTask, root: Path) -> tuple[str, int, int]:
    """The file with the task's line cut back to its indentation, and the cursor there."""
    before, after = task.context(root)
    return before + task.indent + "\n" + after, task.line, len(task.indent) + 1


def run(model: str, per_project: int, modes: list[str], restarts: int = 2,
        threads: int = 2) -> RepoEvalResult:
    cache = default_cache_dir()
    task_file = build_benchmark(cache, per_project_line=per_project, per_project_api=per_project)
    tasks = load_tasks(task_file)
    session = LlamaSession.open(model, n_threads=threads)
    states = StateCache(cache / "states")
    result = RepoEvalResult(model=model, tasks=len(tasks), scores={m: ModeScore() for m in modes})
    restart_tasks: list[tuple[Completer, CompletionTask, str, int, int]] = []
    for spec in PROJECTS:
        root = project_root(spec, cache)
        index = RepoIndex(root, cache_dir=cache / "indexes")
        index.update()
        for task in (t for t in tasks if t.project == spec.package):
            text, line, col = _blanked(task, root)
            for mode in modes:
                completer = Completer(index, session, MODES[mode], states)
                answer = completer.complete(task.path, text, line, col)
                _score(result.scores[mode], task, answer)
                if mode == TIMED_MODE:
                    result.reused += answer.reused
                    result.encoded += answer.encoded
                    result.warm_ms.append(_keystroke(completer, task, text, line, col))
                    if len(restart_tasks) < restarts:  # per project
                        completer.checkpoint()  # what the server does when the editor idles
                        restart_tasks.append((completer, task, text, line, col))
        result.restart_ms += _after_restart(session, states, restart_tasks, model, threads)
        restart_tasks = []
        index.close()
    session.close()
    result.peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _score(score: ModeScore, task: CompletionTask, answer: CompletionResult) -> None:
    hit = exact_match(answer.completion, task.ground_truth.strip())
    score.em.append(hit)
    score.es.append(edit_similarity(answer.completion, task.ground_truth.strip()))
    score.latency_ms.append(answer.latency_ms)
    score.by_kind.setdefault(task.kind, []).append(hit)


def _keystroke(completer: Completer, task: CompletionTask, text: str, line: int, col: int) -> float:
    """Type the answer's first character and complete again: the warm path of an editor."""
    first = task.ground_truth.strip()[:1]
    lines = text.split("\n")
    lines[line - 1] += first
    return completer.complete(task.path, "\n".join(lines), line, col + 1).latency_ms


def _after_restart(session: LlamaSession, states: StateCache, pending: list, model: str,
                   threads: int) -> list[float]:
    """A fresh model session (as after a restart) completing at places seen before."""
    if not pending:
        return []
    fresh = LlamaSession.open(model, n_threads=threads)
    try:
        timings = []
        for completer, task, text, line, col in pending:
            again = Completer(completer.index, fresh, completer.settings, states)
            fresh.reset()
            timings.append(again.complete(task.path, text, line, col).latency_ms)
        return timings
    finally:
        fresh.close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def markdown(r: RepoEvalResult, command: str) -> str:
    from prism_code.bench.report import table

    rows = []
    for mode, s in r.scores.items():
        kinds = {k: sum(v) / len(v) for k, v in s.by_kind.items()}
        rows.append([mode, sum(s.em) / len(s.em), statistics.mean(s.es), kinds.get("line", 0.0),
                     kinds.get("api", 0.0), f"{_pct(s.latency_ms, 0.5):.0f} / {_pct(s.latency_ms, 0.95):.0f}"])
    total = r.reused + r.encoded
    return "\n".join([
        f"Command: `{command}`",
        "",
        f"Model {r.model}; {r.tasks} tasks (line and API level) from 6 projects RepoEval used, "
        "PyPI releases of January 2023; single-line completion, greedy.",
        "",
        table(["mode", "EM", "ES", "EM line", "EM api", "latency p50 / p95 ms (new context)"], rows),
        "",
        f"{TIMED_MODE}: warm completion after one keystroke p50 {_pct(r.warm_ms, 0.5):.0f} ms, "
        f"p95 {_pct(r.warm_ms, 0.95):.0f} ms; first completion after a restart (state files) "
        f"p50 {_pct(r.restart_ms, 0.5):.0f} ms over {len(r.restart_ms)} places; "
        f"prompt tokens reused from the KV cache {100 * r.reused / total if total else 0:.0f}%; "
        f"peak RSS {r.peak_rss_mib:.0f} MiB.",
    ])


def chart(r: RepoEvalResult, path: Path) -> Path:
    from prism_code.bench.charts import grouped_bars

    modes = list(r.scores)
    return grouped_bars(path, f"RepoEval-style completion, {r.model} ({r.tasks} tasks)", modes,
                        {"EM": [sum(r.scores[m].em) / len(r.scores[m].em) for m in modes],
                         "ES": [statistics.mean(r.scores[m].es) for m in modes]}, "score")
