"""What the completion benches share: outcomes kept per mode in JSONL files, which (task, mode)
pairs are still to run, the model run that keeps each answer as it comes, the walk over
projects that opens each project's index once for every mode's completer, and the EM chart
by cursor position."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from prism_bench.machine_speed import MachineSpeed, measure
from prism_bench.repoeval_data import PROJECTS, project_root
from prism_code.index import RepoIndex
from prism_code.llm import LlamaSession
from prism_code.progress import StageBars
from prism_code.tasks.complete import Completer, CompletionSettings

T = TypeVar("T")


class ProjectTask(Protocol):
    @property
    def project(self) -> str: ...


P = TypeVar("P", bound=ProjectTask)


class Identified(Protocol):
    """A task, or a mode's outcome of one: what the results files key by."""

    @property
    def task_id(self) -> str: ...


TaskT = TypeVar("TaskT", bound=Identified)
OutcomeT = TypeVar("OutcomeT", bound=Identified)


class ModeOutcomes(Protocol):
    """A bench's result: mode -> task id -> that mode's outcome of the task."""

    @property
    def outcomes(self) -> Mapping[str, Mapping[str, Any]]: ...


@dataclass
class ModeRuns(Generic[TaskT, OutcomeT]):
    """A completion bench's result: its model, split and tasks, each mode's outcomes by task id,
    and the host's speed when the model ran."""

    model: str
    split: str
    tasks: list[TaskT]
    outcomes: dict[str, dict[str, OutcomeT]] = field(default_factory=dict)  # mode -> task id -> outcome
    speed: MachineSpeed | None = None


def spread(tasks: list[TaskT], limit: int | None) -> list[TaskT]:
    """`limit` tasks taken evenly across the list (so across projects and kinds)."""
    if limit is None or limit >= len(tasks):
        return tasks
    return [tasks[i * len(tasks) // limit] for i in range(limit)]


def still_to_run(result: ModeRuns[TaskT, Any], modes: Sequence[str], compute: bool = True) -> list[tuple[TaskT, str]]:
    """The (task, mode) pairs no kept outcome answers yet, task by task. With `compute` False
    none: the result then keeps only the tasks every mode has answered."""
    pending = [(t, m) for t in result.tasks for m in modes if t.task_id not in result.outcomes[m]]
    if compute:
        return pending
    missing = {t.task_id for t, _ in pending}
    result.tasks = [t for t in result.tasks if t.task_id not in missing]
    return []


def column(result: ModeOutcomes, mode: str, metric: str, tasks: Sequence[Identified]) -> list[float]:
    """One metric of a mode's outcomes, task by task."""
    known = result.outcomes[mode]
    return [float(getattr(known[t.task_id], metric)) for t in tasks]


def em_chart(result: ModeOutcomes, path: Path, title: str, groups: Mapping[str, Sequence[Identified]],
             labels: Sequence[str] | None = None) -> Path:
    """Each mode's EM in each group of tasks (all, then by cursor position), as grouped bars."""
    from prism_bench.charts import grouped_bars

    modes = list(result.outcomes)
    series: dict[str, Sequence[float]] = {
        f"{name} ({len(tasks)})": [statistics.mean(column(result, m, "em", tasks)) if tasks else 0.0 for m in modes]
        for name, tasks in groups.items()}
    return grouped_bars(path, title, labels or modes, series, "exact match")


class TaskRun(Generic[OutcomeT]):
    """The model run over a bench's pending pairs: the session (`session`), the host's speed
    (`speed`), and each answer kept as it comes (`keep`) in the result, in its mode's results
    file and on the progress bar, so an interrupted run loses only the answer under way."""

    def __init__(self, model: str, threads: int, outcomes: dict[str, dict[str, OutcomeT]], files: Mapping[str, Path],
                 label: str, total: int) -> None:
        self.session = LlamaSession.open(model, n_threads=threads)
        try:
            self.speed: MachineSpeed = measure(self.session)
        except BaseException:
            self.session.close()
            raise
        self._outcomes, self._files, self._label, self._total = outcomes, files, label, total
        self._bars, self._done = StageBars(), 0

    def keep(self, mode: str, outcome: OutcomeT) -> None:
        self._outcomes[mode][outcome.task_id] = outcome
        append_outcome(self._files[mode], outcome)
        self._done += 1
        self._bars(self._label, self._done, self._total)

    def __enter__(self) -> TaskRun[OutcomeT]:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._bars.close()
        self.session.close()


def load_outcomes(path: Path, kind: type[T]) -> dict[str, T]:
    """task id -> outcome; a line cut by an interrupted run is skipped."""
    known: dict[str, T] = {}
    if not path.is_file():
        return known
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            fields: dict[str, Any] = json.loads(line)
            known[fields["task_id"]] = kind(**fields)
        except (ValueError, TypeError, KeyError):
            continue
    return known


def append_outcome(path: Path, outcome: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(asdict(outcome), ensure_ascii=False) + "\n")


def by_project(pending: Sequence[tuple[P, str]], cache: Path, settings: dict[str, CompletionSettings],
               session: LlamaSession) -> Iterator[tuple[P, str, Completer, Path]]:
    """(task, mode, that mode's completer, project root) for each pending pair, project by project."""
    for spec in PROJECTS:
        todo = [(t, m) for t, m in pending if t.project == spec.package]
        if not todo:
            continue
        root = project_root(spec, cache)
        index = RepoIndex(root, cache_dir=cache / "indexes")
        try:
            index.update()
            completers = {m: Completer(index, session, settings[m]) for m in {m for _, m in todo}}
            for task, mode in todo:
                yield task, mode, completers[mode], root
        finally:
            index.close()
