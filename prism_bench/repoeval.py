"""RepoEval-style completion benchmark: EM / ES per retrieval mode, latency and KV reuse."""

from __future__ import annotations

import copy
import os
import resource
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from prism_bench.machine_speed import MachineSpeed, measure
from prism_bench.repoeval_data import (
    PROJECTS,
    CompletionTask,
    build_benchmark,
    default_cache_dir,
    edit_similarity,
    exact_match,
    load_tasks,
    project_root,
)
from prism_code.index import RepoIndex
from prism_code.llm import LlamaSession, StateCache
from prism_code.tasks.complete import Completer, CompletionResult, CompletionSettings

# Scored as RepoCoder does: one line per task, so every mode completes a single line.
_BASE = CompletionSettings(max_lines=1, block_tokens=160)  # one line: the block budget is unused
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
    # Prompt tokens evaluated by the completion after one keystroke: what the latency
    # follows, without the machine's load in it.
    warm_encoded: list[int] = field(default_factory=list)
    # The typed character plus the completion after it is the task's line: the keystroke
    # prompt (typed text after the suffix) is scored too, not only timed.
    warm_em: list[bool] = field(default_factory=list)
    warm_decoded: list[int] = field(default_factory=list)  # what the warm latency's spread follows
    # The same keystrokes as the product answers them: those that type the suggestion's first
    # character are read off it (typed_through.py); how fast, and whether the text matches the model's.
    typed_through_ms: list[float] = field(default_factory=list)
    typed_through_same: int = 0
    # The model path of the keystrokes the suggestion did not foresee: the session's kept
    # logits also cheapen a keystroke that types the model's own next letter, so warm_ms
    # alone would count the product's easy keystrokes twice.
    unforeseen_ms: list[float] = field(default_factory=list)
    restart_ms: list[float] = field(default_factory=list)
    reused: int = 0
    encoded: int = 0
    peak_rss_mib: float = 0.0  # this process: the model and six project indexes
    completion_rss_mib: float = 0.0  # one `prism-code complete` process on its own
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)
    speed: MachineSpeed | None = None


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
    result.speed = measure(session)
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
                    # The model path first: the completer keeps the suggestion a keystroke may follow.
                    model_path = copy.copy(completer)
                    model_path.settings = replace(completer.settings, type_through=False)
                    warm = _keystroke(model_path, task, text, line, col)
                    result.warm_ms.append(warm.latency_ms)
                    result.warm_encoded.append(warm.encoded)
                    result.warm_decoded.append(warm.decoded)
                    product = _keystroke(completer, task, text, line, col)
                    if product.typed_through:
                        result.typed_through_ms.append(product.latency_ms)
                        result.typed_through_same += product.completion == warm.completion
                    else:
                        result.unforeseen_ms.append(warm.latency_ms)
                    result.warm_em.append(exact_match(task.ground_truth.strip()[:1] + warm.completion,
                                                      task.ground_truth.strip()))
                    if len(restart_tasks) < restarts:  # per project
                        completer.checkpoint()  # what the server does when the editor idles
                        restart_tasks.append((completer, task, text, line, col))
        result.restart_ms += _after_restart(session, states, restart_tasks, model, threads)
        restart_tasks = []
        index.close()
    session.close()
    result.peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    first = tasks[0]
    result.completion_rss_mib = completion_process_rss(
        project_root(next(s for s in PROJECTS if s.package == first.project), cache), first,
        model, threads, cache / "indexes")
    result.load_average = os.getloadavg()
    return result


# Linux keeps a process's peak RSS across exec, so a child forked from this big process
# would report this process's peak: a small Python process starts the command and reports
# the peak of its own child instead.
_PEAK_OF_CHILD = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(code)\n"
)


def completion_process_rss(root: Path, task: CompletionTask, model: str, threads: int,
                           index_dir: Path) -> float:
    """Peak RSS (MiB) of `prism-code complete` run alone at a task's line, as an editor's CLI call.

    The file is read from disk, so the line is not blanked: the memory is what is measured.
    """
    command = [sys.executable, "-m", "prism_code.cli", "complete", str(root), task.path,
               str(task.line), str(len(task.indent) + 1), "--model", model,
               "--threads", str(threads), "--cache-dir", str(index_dir), "--json"]
    done = subprocess.run([sys.executable, "-c", _PEAK_OF_CHILD, *command],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"prism-code complete failed ({done.returncode}): {done.stderr[-400:]}")
    return int(done.stdout.split()[-1]) / 1024


def _score(score: ModeScore, task: CompletionTask, answer: CompletionResult) -> None:
    hit = exact_match(answer.completion, task.ground_truth.strip())
    score.em.append(hit)
    score.es.append(edit_similarity(answer.completion, task.ground_truth.strip()))
    score.latency_ms.append(answer.latency_ms)
    score.by_kind.setdefault(task.kind, []).append(hit)


def _keystroke(completer: Completer, task: CompletionTask, text: str, line: int,
              col: int) -> CompletionResult:
    """Type the answer's first character and complete again: the warm path of an editor."""
    first = task.ground_truth.strip()[:1]
    lines = text.split("\n")
    lines[line - 1] += first
    return completer.complete(task.path, "\n".join(lines), line, col + 1)


def _after_restart(session: LlamaSession, states: StateCache, pending: list, model: str,
                   threads: int) -> list[float]:
    """A fresh model session (as after a restart) completing at places seen before.

    The window index is index state, not model state: the server rebuilds it when the
    editor reopens a file (the open-file warm-up), before anyone types, so it is shared
    here and the figure is what the KV cache costs.
    """
    if not pending:
        return []
    fresh = LlamaSession.open(model, n_threads=threads)
    try:
        timings = []
        for completer, task, text, line, col in pending:
            again = Completer(completer.index, fresh, completer.settings, states, completer.retriever)
            fresh.reset()
            timings.append(again.complete(task.path, text, line, col).latency_ms)
        return timings
    finally:
        fresh.close()


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def markdown(r: RepoEvalResult, command: str) -> str:
    from prism_bench.report import table

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
        f"{TIMED_MODE}: warm completion after one keystroke, by the model, p50 {_pct(r.warm_ms, 0.5):.0f} ms, "
        f"p95 {_pct(r.warm_ms, 0.95):.0f} ms (decoded tokens p50 {_pct(r.warm_decoded, 0.5):.0f}, "
        f"p95 {_pct(r.warm_decoded, 0.95):.0f}); first completion after a restart (state files) "
        f"p50 {_pct(r.restart_ms, 0.5):.0f} ms over {len(r.restart_ms)} places; "
        f"prompt tokens reused from the KV cache {100 * r.reused / total if total else 0:.0f}%; "
        f"peak RSS {r.peak_rss_mib:.0f} MiB (this process: model and six indexes).",
        "",
        _typed_through_line(r),
        "",
        _keystroke_line(r),
    ])


def _typed_through_line(r: RepoEvalResult) -> str:
    n, hits = len(r.warm_ms), len(r.typed_through_ms)
    # Timed apart: the product's own call comes after the model path's on the same session,
    # whose kept logits would answer it without decoding.
    product = r.typed_through_ms + r.unforeseen_ms
    if not hits:
        return (f"Typing into the suggestion: none of the {n} keystrokes typed the first character of the "
                "suggestion shown.")
    return (f"Typing into the suggestion: {hits} of {n} keystrokes typed the first character of the "
            "suggestion shown and were answered from it without the model, "
            f"p50 {_pct(r.typed_through_ms, 0.5):.1f} ms, "
            f"p95 {_pct(r.typed_through_ms, 0.95):.1f} ms; the text equals the model path's in "
            f"{r.typed_through_same} of {hits}. The other {len(r.unforeseen_ms)} take the model path: "
            f"p50 {_pct(r.unforeseen_ms, 0.5):.0f} ms, p95 {_pct(r.unforeseen_ms, 0.95):.0f} ms. "
            "Every keystroke as the product answers it (read off the suggestion, or this model path): "
            f"p50 {_pct(product, 0.5):.0f} ms, p95 {_pct(product, 0.95):.0f} ms.")


def _keystroke_line(r: RepoEvalResult) -> str:
    warm_em = sum(r.warm_em) / len(r.warm_em) if r.warm_em else 0.0
    load = " / ".join(f"{x:.2f}" for x in r.load_average)
    return (f"Prompt tokens evaluated by the completion after one keystroke (load-independent): "
            f"p50 {_pct(r.warm_encoded, 0.5):.0f}, p95 {_pct(r.warm_encoded, 0.95):.0f}; "
            f"EM of the line completed after that keystroke {warm_em:.3f}. "
            f"Peak RSS of one `prism-code complete` process on its own: "
            f"{r.completion_rss_mib:.0f} MiB. Load average at the end: {load}."
            + (f" {r.speed.sentence()}" if r.speed else ""))


def chart(r: RepoEvalResult, path: Path) -> Path:
    from prism_bench.charts import grouped_bars

    modes = list(r.scores)
    return grouped_bars(path, f"RepoEval-style completion, {r.model} ({r.tasks} tasks)", modes,
                        {"EM": [sum(r.scores[m].em) / len(r.scores[m].em) for m in modes],
                         "ES": [statistics.mean(r.scores[m].es) for m in modes]}, "score")
