"""The large completion benchmark's cursor split, scoring and resumable results."""

from __future__ import annotations

import json
from pathlib import Path

from prism_bench import completion_gain
from prism_bench.repoeval_data import CURSOR_KINDS, build_tasks
from prism_bench.task_runs import load_outcomes
from prism_code.tasks.fim import split_at_cursor

SOURCE = '''\
import math


def spread(values, scale):
    """How far the values reach, scaled."""
    low = min(values)
    high = max(values)
    return math.fabs(high - low) * scale.factor


def centre(values):
    total = sum(values)
    return total / len(values)
'''


def _tasks(tmp_path: Path):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "stats.py").write_text(SOURCE)
    return root, build_tasks(root, n_line=20, n_api=0, max_per_file=20, cursor_kinds=CURSOR_KINDS)


def test_the_blanked_file_ends_the_prefix_with_what_was_typed(tmp_path: Path):
    root, tasks = _tasks(tmp_path)
    assert tasks
    for task in tasks:
        text, line, col = completion_gain.blanked(task, root)
        prefix, suffix = split_at_cursor(text, line, col)
        assert prefix.endswith("\n" + task.typed) and suffix.startswith("\n")
        # everything but the rest of the line is the real file
        assert prefix + task.ground_truth[len(task.typed):] + suffix == SOURCE


def test_the_completed_line_is_scored_with_the_typed_text(tmp_path: Path):
    _, tasks = _tasks(tmp_path)
    task = next(t for t in tasks if t.cursor_kind != "indent")
    rest = task.ground_truth[len(task.typed):]
    assert completion_gain.score(task, rest) == (True, 1.0)
    em, es = completion_gain.score(task, rest[:-1])
    assert not em and 0.5 < es < 1.0


def test_an_interrupted_results_file_keeps_the_finished_outcomes(tmp_path: Path):
    done = completion_gain.Outcome("p/line/0", "x = 1", True, 1.0, 900, 812.5)
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(done.__dict__) + "\n" + '{"task_id": "p/line/1", "compl')
    assert load_outcomes(path, completion_gain.Outcome) == {"p/line/0": done}


def test_two_models_are_compared_on_the_tasks_both_answered(tmp_path: Path):
    _, tasks = _tasks(tmp_path)
    tasks = tasks[:4]
    mode = completion_gain.PRODUCT_ON

    def result(model: str, right: list[bool]) -> completion_gain.GainResult:
        outcomes = {t.task_id: completion_gain.Outcome(t.task_id, "", ok, 1.0 if ok else 0.5, 900, 1.0)
                    for t, ok in zip(tasks, right)}
        return completion_gain.GainResult(model, "tune", tasks, {mode: outcomes})

    large = result("qwen2.5-coder-1.5b", [True, True, True, False])
    small = result("qwen2.5-coder-0.5b", [True, False, False])  # has not answered the fourth
    line = completion_gain.model_comparison(large, small)
    assert "1.000 against qwen2.5-coder-0.5b 0.333 on the 3 tasks both answered" in line
    assert "EM +0.667" in line
    assert "has answered none" in completion_gain.model_comparison(
        large, completion_gain.GainResult("other", "tune", tasks, {mode: {}}))
