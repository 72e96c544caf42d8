"""Where a warm keystroke's completion time goes, phase by phase, with and without the shortcuts (issue #17).

Reuses the RepoEval bench's tasks and indexes (`prism-code bench repoeval --per-project 2`
builds them under ~/.cache/prism-code/bench/repoeval) and the real model. At each task's
line it completes at the indentation (the request before the keystroke), then types the
line's first character and completes again on the model path (no typed-through answer),
as the bench's warm figure does, timing each phase of that second request. It does so twice
from the same model state: once on the plain path (`LlamaSession.shortcuts` off, prompt
tokens and retrieval computed afresh: how it was before) and once as the library now runs,
alternating which goes first, and checks that both wrote the same text.

Run it on a quiet machine for absolute figures; under load compare phases with each other.
"""

from __future__ import annotations

import cProfile
import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prism_bench.bench import DEFAULT_MODEL
from prism_bench.lsp_subprocess import load_average
from prism_bench.repoeval import MODES, TIMED_MODE, _blanked
from prism_bench.repoeval_data import PROJECTS, build_benchmark, default_cache_dir, load_tasks, project_root
from prism_bench.report import table
from prism_code.index import RepoIndex
from prism_code.llm import LlamaSession
from prism_code.tasks.complete import Completer, CompletionResult

_spent: dict[str, float] = defaultdict(float)
_active = [False]


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if _active[0]:
                _spent[name] += (time.perf_counter() - started) * 1000
    return wrapper


def _instrument(session: LlamaSession) -> None:
    for name in ("_shape", "_retrieve", "_prompt", "_restore", "_generate", "_followed"):
        setattr(Completer, name, _timed(name, getattr(Completer, name)))

    def model_call(phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if phase == "generate" and kwargs.get("grammar") is not None:
                phase_name = "heal"  # the plain path heals through generate with a grammar
            else:
                phase_name = "heal" if phase == "heal" else "rest"
            started = time.perf_counter()
            out = fn(*args, **kwargs)
            if _active[0]:
                _spent[f"model {phase_name}"] += (time.perf_counter() - started) * 1000
                _spent[f"model {phase_name}: prefill"] += out.stats.prefill_ms
                _spent[f"model {phase_name}: sample+decode"] += out.stats.decode_ms
                _spent[f"model {phase_name}: tokens evaluated in prefill"] += out.stats.encoded
                _spent[f"model {phase_name}: tokens decoded"] += out.stats.decoded
            return out
        return call

    session.generate = model_call("generate", session.generate)  # type: ignore[method-assign]
    session.heal = model_call("heal", session.heal)  # type: ignore[method-assign]


def _keystroke(completer: Completer, session: LlamaSession, path: str, typed: str, line: int, col: int,
               plain: bool, profiler: cProfile.Profile | None) -> tuple[CompletionResult, dict[str, float]]:
    session.shortcuts = not plain
    if plain:  # as before: every prompt text tokenized and every retrieval run again
        completer._tokens = session  # type: ignore[assignment]
        completer._ranked = None
    _spent.clear()
    _active[0] = True
    if profiler is not None and not plain:
        profiler.enable()
    started = time.perf_counter()
    try:
        answer = completer.complete(path, typed, line, col)
    finally:
        total = (time.perf_counter() - started) * 1000
        if profiler is not None and not plain:
            profiler.disable()
        _active[0] = False
        session.shortcuts = True
    row = dict(_spent)
    row["total"] = total
    row["outside the model calls"] = total - row.get("_generate", 0.0)
    model = sum(row.get(f"model {p}", 0.0) for p in ("heal", "rest"))
    row["in _generate, outside the model calls"] = row.get("_generate", 0.0) - model
    for p in ("heal", "rest"):
        if f"model {p}" in row:
            row[f"model {p}: outside prefill and decode"] = (
                row[f"model {p}"] - row[f"model {p}: prefill"] - row[f"model {p}: sample+decode"])
    return answer, row


@dataclass
class KeystrokeProfile:
    """Each keystroke's milliseconds per phase, on the plain path and as the library runs now."""

    plain: list[dict[str, float]] = field(default_factory=list)
    now: list[dict[str, float]] = field(default_factory=list)
    # The keystrokes that typed the suggestion's first letter, per path (the others are the rest).
    typed_plain: list[dict[str, float]] = field(default_factory=list)
    typed_now: list[dict[str, float]] = field(default_factory=list)
    differ: int = 0  # keystrokes whose two paths wrote different texts
    load: str = ""


def run(tasks: int = 20, model: str = DEFAULT_MODEL, threads: int = 1,
        cprofile: Path | None = None) -> KeystrokeProfile:
    """Profile `tasks` warm keystrokes of the RepoEval bench; `cprofile` keeps a cProfile of the new path."""
    cache = default_cache_dir()
    specs = load_tasks(build_benchmark(cache, per_project_line=2, per_project_api=2))
    session = LlamaSession.open(model, n_threads=threads)
    session.heal_index()  # what the server's warm-up builds; once per process
    _instrument(session)
    settings = replace(MODES[TIMED_MODE], type_through=False)
    profiler = cProfile.Profile() if cprofile else None
    result = KeystrokeProfile()
    rows = {True: result.plain, False: result.now}
    typed_on = {True: result.typed_plain, False: result.typed_now}  # by: the suggestion's first letter typed
    done = 0
    for spec in PROJECTS:
        if done >= tasks:
            break
        index = RepoIndex(project_root(spec, cache), cache_dir=cache / "indexes")
        index.update()
        for task in (t for t in specs if t.project == spec.package):
            if done >= tasks:
                break
            text, line, col = _blanked(task, index.root)
            first = task.ground_truth.strip()[:1]
            lines = text.split("\n")
            lines[line - 1] += first
            typed = "\n".join(lines)
            answers: dict[bool, CompletionResult] = {}
            for plain in ((False, True) if done % 2 else (True, False)):
                completer = Completer(index, session, settings)
                before = completer.complete(task.path, text, line, col)  # the state the keystroke meets
                answers[plain], row = _keystroke(completer, session, task.path, typed, line, col + 1, plain,
                                                 profiler)
                rows[plain].append(row)
                if before.completion.startswith(first):
                    typed_on[plain].append(row)
            same = answers[True].completion == answers[False].completion
            result.differ += not same
            done += 1
            print(f"{task.task_id:28s} plain {rows[True][-1]['total']:7.1f} ms  now {rows[False][-1]['total']:7.1f} ms"
                  f"  decoded {answers[False].decoded:2d}  evaluated {answers[True].encoded}->{answers[False].encoded}"
                  f"  same text: {same}  {answers[False].completion[:40]!r}", flush=True)
        index.close()
    session.close()
    result.load = load_average()
    if profiler is not None and cprofile is not None:
        profiler.dump_stats(cprofile)
    return result


def _table(title: str, rows: list[dict[str, float]]) -> list[str]:
    if not rows:
        return []
    body = []
    for key in sorted({k for row in rows for k in row}):
        values = [row.get(key, 0.0) for row in rows]
        body.append([key, f"{statistics.median(values):.1f}", f"{statistics.mean(values):.1f}", f"{max(values):.1f}"])
    return ["", f"{title}: {len(rows)} keystrokes", "", table(["phase (ms; tokens for the token rows)", "p50", "mean",
                                                              "max"], body)]


def _others(rows: list[dict[str, float]], typed: list[dict[str, float]]) -> list[dict[str, float]]:
    return [r for r in rows if not any(r is t for t in typed)]


def markdown(r: KeystrokeProfile, command: str) -> str:
    lines = [f"Command: `{command}`", "",
             f"{len(r.now)} keystrokes, {r.differ} with a different text on the two paths; load average {r.load}."]
    lines += _table("plain path (before)", r.plain)
    lines += _table("now", r.now)
    lines += _table("plain path, keystrokes that type the suggestion's first letter", r.typed_plain)
    lines += _table("now, keystrokes that type the suggestion's first letter", r.typed_now)
    lines += _table("plain path, other keystrokes", _others(r.plain, r.typed_plain))
    lines += _table("now, other keystrokes", _others(r.now, r.typed_now))
    return "\n".join(lines)
