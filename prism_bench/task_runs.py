"""What the completion benches share: outcomes kept per mode in JSONL files, and the
walk over projects that opens each project's index once for every mode's completer."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol, TypeVar

from prism_bench.repoeval_data import PROJECTS, project_root
from prism_code.index import RepoIndex
from prism_code.llm import LlamaSession
from prism_code.tasks.complete import Completer, CompletionSettings

T = TypeVar("T")


class ProjectTask(Protocol):
    @property
    def project(self) -> str: ...


P = TypeVar("P", bound=ProjectTask)


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
