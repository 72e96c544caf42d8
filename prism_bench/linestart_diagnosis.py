"""What a mode writes at a line start when it is wrong (issue #28's diagnosis).

Each line-start answer is put in one class, the first that fits:

* right: the line, compared stripped (EM);
* empty: nothing, or only spaces;
* next line: the first non-blank line below the cursor, i.e. the model skipped the hole;
* line above: a line of the 80 above the cursor, written again;
* other: any other line.

Besides, `shifted` counts right answers that would land at the wrong indentation in an editor:
text inserted at the cursor that starts with spaces (EM compares stripped lines, so it
counts them right).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prism_bench.linestart import LinestartResult, Outcome
from prism_bench.linestart_data import PROJECTS, LinestartTask, project_root

CLASSES = ("right", "empty", "next line", "line above", "other")


@dataclass(frozen=True)
class Profile:
    mode: str
    tasks: int
    classes: Counter[str]
    shifted: int


def classify(task: LinestartTask, outcome: Outcome, root: Path) -> str:
    if outcome.em:
        return "right"
    said = (task.typed + outcome.completion).strip()
    if not said:
        return "empty"
    lines = task.blanked(root).split("\n")
    below = next((ln.strip() for ln in lines[task.line:] if ln.strip()), "")
    if said == below:
        return "next line"
    if said in {ln.strip() for ln in lines[max(0, task.line - 81):task.line - 1]}:
        return "line above"
    return "other"


def profiles(result: LinestartResult, kind: str = "indent") -> list[Profile]:
    roots = {p.package: project_root(p) for p in PROJECTS}
    tasks = [t for t in result.tasks if t.kind == kind]
    found = []
    for mode, known in result.outcomes.items():
        classes = Counter(classify(t, known[t.task_id], roots[t.project]) for t in tasks)
        shifted = sum(known[t.task_id].em and known[t.task_id].completion[:1].isspace() for t in tasks)
        found.append(Profile(mode, len(tasks), classes, shifted))
    return found


def markdown(result: LinestartResult, kind: str = "indent") -> str:
    from prism_bench.report import table

    rows = [[p.mode, *(p.classes.get(c, 0) for c in CLASSES), p.shifted] for p in profiles(result, kind)]
    return "\n".join([
        f"What each mode wrote at the {kind} tasks (counts; `shifted`: right, but inserted with leading spaces):",
        "",
        table(["mode", *CLASSES, "shifted"], rows),
    ])
