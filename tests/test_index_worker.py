"""The server's indexing worker: what an edit and what new notes do to a running embedding."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from prism_code.lsp.index_worker import IDLE, IndexWorker
from prism_code.lsp.settings import Settings

# Enough functions for several embedding batches (64 texts each, a code and a card text per
# function), so a reschedule can land between two of them.
FUNCTIONS = 50


@dataclass
class Job:
    embedded: list[tuple[int, int]] = field(default_factory=list)  # (done, total) as reported
    ended: str | None = None


@dataclass
class Jobs:
    """Every visible job's progress, in order, and a hook called at its first embedded batch."""

    on_first_batch: threading.Event = field(default_factory=threading.Event)
    jobs: list[Job] = field(default_factory=list)
    rescheduled: bool = False

    def sink(self, title: str) -> Sink:
        self.jobs.append(Job())
        return Sink(self, self.jobs[-1])


@dataclass
class Sink:
    owner: Jobs
    job: Job

    def begin(self) -> None:
        pass

    def report(self, stage: str, message: str, percentage: float) -> None:
        if stage != "embeddings":
            return
        match = re.search(r"(\d+)/(\d+)", message)
        assert match is not None, message
        done, total = int(match[1]), int(match[2])
        self.job.embedded.append((done, total))
        if 0 < done < total and not self.owner.rescheduled:
            self.owner.rescheduled = True
            self.owner.on_first_batch.set()

    def end(self, message: str) -> None:
        self.job.ended = message


def _repository(root: Path) -> Path:
    root.mkdir()
    body = "\n\n".join(
        f"def measure_{i}(values, scale={i}):\n"
        f"    \"\"\"Scale the values by {i} and keep those above the mean.\"\"\"\n"
        f"    mean = sum(values) / max(len(values), 1)\n"
        f"    return [v * scale for v in values if v > mean + {i}]\n"
        for i in range(FUNCTIONS))
    (root / "measures.py").write_text(body, encoding="utf-8")
    return root


def _run(tmp_path: Path, interrupts: bool) -> list[Job]:
    jobs = Jobs()
    worker = IndexWorker(_repository(tmp_path / "repo"), Settings(cache_dir=tmp_path / "cache"),
                         progress=jobs.sink)

    def reschedule_at_first_batch() -> None:
        if jobs.on_first_batch.wait(120):
            worker.schedule(0.0, visible=True, interrupts=interrupts)

    helper = threading.Thread(target=reschedule_at_first_batch, daemon=True)
    worker.start()
    helper.start()
    try:
        helper.join(130)
        for _ in range(1200):
            if len(jobs.jobs) >= 2 and jobs.jobs[-1].ended is not None and worker.state == IDLE:
                break
            threading.Event().wait(0.1)
    finally:
        worker.stop()
    assert jobs.rescheduled, "the embedding never reported a batch between its first and last"
    return jobs.jobs


@pytest.mark.parametrize("interrupts", [False, True])
def test_a_reschedule_stops_a_running_embedding_only_when_it_interrupts(tmp_path: Path,
                                                                        interrupts: bool) -> None:
    first, second = _run(tmp_path, interrupts)[:2]
    last_done, total = first.embedded[-1]
    if interrupts:
        # An edit: the first job gives way between batches, the next one embeds the rest.
        assert last_done < total
        assert second.embedded and second.embedded[-1][0] == second.embedded[-1][1]
    else:
        # New notes to embed: the running embedding finishes instead of starting over.
        assert last_done == total
        assert all(done == total for done, total in second.embedded)
