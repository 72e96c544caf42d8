"""The background PRISM function-notes pass: the library's `run_notes`, on the shared model.

One model serves completions and notes, on the model scheduler's thread, and
completions always come first: the pass polls, at every generated token, whether an
editor job waits for the model or the editor used it in the last few seconds, and
returns when so (each note is committed as soon as it exists, so nothing is lost). It
starts again once the editor has left the model alone for QUIET_S, after the scheduler
has saved its KV state; the notes prompt's own prefix comes back from its state file.
A completion that interrupts notes waits for at most one prefill batch (128 tokens) and
then rebuilds its own context, from a state file when the scheduler saved one.

A pass starts when a workspace finishes indexing (and embedding), takes the files open
in the editor first, and restarts with the new order when another file is opened. It
stops for pauseIndexing, while its workspace re-indexes, when `prism.notes.enabled` is
turned off and at shutdown. Progress is one work-done progress per workspace that stays
open across the pauses completions cause.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prism_code.llm.backend import BackendError
from prism_code.lsp.index_worker import ProgressSink
from prism_code.lsp.model_scheduler import ModelScheduler
from prism_code.lsp.workspace_state import WorkspaceState

if TYPE_CHECKING:
    from prism_code.memory.note_writer import NotesRun

log = logging.getLogger(__name__)

# The editor leaves the model alone this long (after its last request and its last job)
# before notes take it back: past the scheduler's KV checkpoint (3 s), and long enough that
# a pause in typing is not taken for the end of it.
QUIET_S = 5.0
# How soon to look again when the pass cannot start yet.
RETRY_S = 1.0

# What status() reports for a workspace's pass.
OFF, WAITING, WRITING, DONE, PAUSED, NO_MODEL, FAILED = (
    "off", "waiting", "writing", "done", "paused", "no model", "failed")


class NotesScheduler:
    def __init__(self, loop: asyncio.AbstractEventLoop, scheduler: ModelScheduler,
                 progress: Callable[[str], ProgressSink],
                 open_paths: Callable[[WorkspaceState], list[str]]) -> None:
        self._loop = loop
        self._scheduler = scheduler
        self._new_progress = progress
        self._open_paths = open_paths  # files open in the editor, most recent first
        self._enabled = True
        self._paused = False
        self._closing = False
        self._pending: dict[Path, WorkspaceState] = {}  # workspaces that may lack notes
        self._running: WorkspaceState | None = None
        self._priority: list[str] = []  # the running pass's first files
        self._generation = 0  # bumped to make the running pass start over
        self._timer: asyncio.TimerHandle | None = None
        self._progress: dict[Path, ProgressSink] = {}
        self._states: dict[Path, str] = {}
        self._no_model = False

    # ---- control (event loop) ------------------------------------------------------------

    def configure(self, enabled: bool, workspaces: list[WorkspaceState]) -> None:
        turned_on = enabled and not self._enabled
        self._enabled, self._no_model = enabled, False  # new settings may name a usable model
        if turned_on:
            for state in workspaces:
                self.request(state)
        self._kick(0.0)

    def request(self, state: WorkspaceState, opened: str | None = None) -> None:
        """Notes of `state` may be missing (it was indexed, or `opened` was opened)."""
        if self._closing or state.index is None:
            return
        self._pending[state.root] = state
        if opened is not None and self._running is state and opened not in self._priority:
            self._generation += 1  # start over with the opened file first
        self._kick(0.0)

    def forget(self, state: WorkspaceState) -> None:
        self._pending.pop(state.root, None)
        self._end(state, "workspace closed")
        if self._running is state:
            self._generation += 1

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._kick(0.0)

    def close(self) -> None:
        self._closing = True
        if self._timer is not None:
            self._timer.cancel()
        for root in list(self._progress):
            self._end_root(root, "server shutting down")

    def status(self, state: WorkspaceState) -> dict[str, Any]:
        done, total = state.noted
        if not self._enabled:
            kind = OFF
        elif self._paused:
            kind = PAUSED
        else:
            kind = self._states.get(state.root, WAITING if state.root in self._pending
                                    or state.busy else DONE)
        return {"state": kind, "done": done, "total": total}

    # ---- scheduling (event loop) ---------------------------------------------------------

    def _kick(self, delay: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_later(delay, self._try_start)

    def _try_start(self) -> None:
        self._timer = None
        if self._running is not None or self._closing or not self._pending:
            return
        if not self._enabled or self._paused or self._no_model:
            for root in list(self._progress):
                self._end_root(root, "notes paused" if self._paused else "notes off")
            return
        quiet = QUIET_S - (time.monotonic() - self._scheduler.last_activity)
        if quiet > 0 or self._scheduler.model_wanted():
            self._kick(max(quiet, RETRY_S))
            return
        state = next((s for s in self._pending.values() if not s.busy and s.index is not None),
                     None)
        if state is None:
            self._kick(RETRY_S)
            return
        self._running, self._priority = state, self._open_paths(state)
        generation = self._generation
        future = self._scheduler.submit(self._run, state, list(self._priority), generation,
                                         background=True)
        future.add_done_callback(lambda f: self._loop.call_soon_threadsafe(self._finished, state, f))

    def _finished(self, state: WorkspaceState, future: Future[NotesRun | _Cancelled | None]) -> None:
        self._running = None
        try:
            run = future.result()
        except BackendError as exc:  # the remote engine: a status, and the next edit tries again
            self._scheduler.host.remote_failed(exc, "notes")
            self._states[state.root] = FAILED
            self._pending.pop(state.root, None)
            self._end(state, "notes failed: the remote engine failed")
            return
        except Exception as exc:  # a failed pass is reported, the server goes on
            log.exception("%s: the notes pass failed", state.root.name)
            self._states[state.root] = FAILED
            self._pending.pop(state.root, None)
            self._end(state, f"notes failed: {exc}")
            return
        if run is None:  # no model
            self._no_model = True
            self._states[state.root] = NO_MODEL
            self._end(state, "no model: notes are off")
        elif not isinstance(run, _Cancelled) and not run.cancelled:
            self._pending.pop(state.root, None)
            self._states[state.root] = DONE
            log.info("%s: notes pass done: %d written, %d up to date, %d copied, %d failed "
                     "(%.1f notes/min)", state.root.name, run.noted, run.up_to_date, run.copied,
                     run.failed, run.notes_per_minute)
            self._end(state, f"{state.noted[0]} of {state.noted[1]} functions noted")
        else:
            self._states[state.root] = WAITING
        if getattr(run, "noted", 0) or getattr(run, "copied", 0):
            # New notes change find's function cards: the worker embeds them (and then
            # asks for notes again, which finds the pass's work done or resumes it).
            state.schedule(delay=QUIET_S, interrupts=False)
        self._kick(0.0)

    def _end(self, state: WorkspaceState, message: str) -> None:
        self._end_root(state.root, message)

    def _end_root(self, root: Path, message: str) -> None:
        progress = self._progress.pop(root, None)
        if progress is not None:
            progress.end(message)

    # ---- the pass (model thread) ---------------------------------------------------------

    def _yield(self, state: WorkspaceState, generation: int) -> bool:
        return (self._closing or self._paused or not self._enabled
                or generation != self._generation or state.busy
                or self._scheduler.model_wanted()
                or time.monotonic() - self._scheduler.last_activity < QUIET_S)

    def _run(self, state: WorkspaceState, priority: list[str], generation: int) -> NotesRun | _Cancelled | None:
        index = state.index
        if index is None or self._yield(state, generation):
            return _Cancelled()
        session = self._scheduler.session()
        if session is None:
            return None
        from prism_code.file_order import file_order
        from prism_code.llm.state_cache import StateCache
        from prism_code.memory.cok import ModuleSummarizer, files_ready_for_summary
        from prism_code.memory.note_writer import run_notes

        self._states[state.root] = WRITING
        progress = self._progress.get(state.root)
        if progress is None:
            # begin() waits for the client to accept the token: never on the event loop.
            progress = self._progress[state.root] = self._new_progress(
                f"Writing function notes ({state.root.name})")
            progress.begin()

        def report(done: int, total: int) -> None:
            state.noted = (done, total)
            progress.report("notes", f"notes {done}/{total}", 100 * done / total if total else 100)

        if state.noted[1]:
            report(*state.noted)
        store = state.notes_store(index)
        run = run_notes(session, index, priority=priority,
                        cancelled=lambda: self._yield(state, generation), progress=report,
                        store=store, state_cache=StateCache(self._scheduler.state_dir))
        if not run.cancelled:
            state.noted = (run.total - run.failed, run.total)
            # Module summaries (hovers over modules and imports) once a file is fully noted.
            summarizer = ModuleSummarizer(session, index, store)
            summarizer.summarize(files_ready_for_summary(index, store, file_order(index, priority)),
                                 cancelled=lambda: self._yield(state, generation))
        return run


class _Cancelled:
    """A pass that found a reason to stop before it began."""

    cancelled = True
