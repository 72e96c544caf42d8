"""Find while a folder's first index is built (tasks/partial_find.py, lsp/first_index_find.py):
parsed files answer before the index has linked, stored or published anything, the files
open in the editor and their folders first, ranked as the finished index ranks them."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from prism_code.index import RepoIndex
from prism_code.lsp.settings import Settings
from prism_code.lsp.workspace_state import Found, WorkspaceState
from prism_code.parse.model import ParsedFile
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.partial_find import FIRST_BATCH_FILES, PartialIndex, next_search

FOLDERS = 15
FILES_PER_FOLDER = 10  # 150 files: batches at 64 and 128 files, then the rest
QUERY = "convert the temperature reading to kelvin"


def _repository(root: Path) -> Path:
    for f in range(FOLDERS):
        folder = root / f"unit_{f:02d}"
        folder.mkdir(parents=True)
        for m in range(FILES_PER_FOLDER):
            n = f * FILES_PER_FOLDER + m
            (folder / f"sensor_{m}.py").write_text(
                f"class Sensor{n}:\n"
                f"    \"\"\"Reads gauge {n} and keeps its last value.\"\"\"\n\n"
                f"    def read_{n}(self, port):\n"
                f"        self.last = port.poll({n})\n"
                f"        return self.last\n\n\n"
                f"def average_{n}(values):\n"
                f"    return sum(values) / max(len(values), 1)\n", encoding="utf-8")
    # One file answers the query; it sorts last, so only its place in the parse order
    # decides when it becomes searchable.
    (root / "unit_14" / "zz_kelvin.py").write_text(
        "def to_kelvin(celsius):\n"
        "    \"\"\"Convert a temperature reading in celsius to kelvin.\"\"\"\n"
        "    return celsius + 273.15\n", encoding="utf-8")
    return root


@dataclass
class Recorder:
    """A ParsedSink that keeps what it heard, and what find answered at each batch."""

    index_total: int = 0
    order: list[str] = field(default_factory=list)
    partial: PartialIndex = field(default_factory=PartialIndex)
    answers: list[tuple[int, list[str]]] = field(default_factory=list)  # (files searchable, qualnames)

    def expect(self, files: int) -> None:
        self.index_total = files
        self.partial.expect(files)

    def add(self, path: str, text: str, parsed: ParsedFile) -> None:
        self.order.append(path)
        self.partial.add(path, text, parsed)
        self._answer()

    def parsed_all(self) -> None:
        self.partial.parsed_all()
        self._answer()

    def _answer(self) -> None:
        if self.partial.due():
            search = next_search(self.partial, None)
            found = search.search(QUERY, top=5)
            self.answers.append((self.partial.files, [f.qualname for f in found]))


def test_open_files_and_their_folders_are_parsed_first_and_answer_in_the_first_batch(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    recorder = Recorder()
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        index.update(opened=["unit_14/sensor_3.py"], sink=recorder)
        opened_first = list(index.fragments)
    finally:
        index.close()

    assert recorder.order[0] == "unit_14/sensor_3.py"
    assert {p.split("/")[0] for p in recorder.order[:FILES_PER_FOLDER + 1]} == {"unit_14"}
    assert recorder.order[FILES_PER_FOLDER + 1:] == sorted(recorder.order[FILES_PER_FOLDER + 1:])
    # Batches: 64 files, 128, then all 151; the open folder's answer is there from the first.
    assert [files for files, _ in recorder.answers] == [FIRST_BATCH_FILES, 2 * FIRST_BATCH_FILES, 151]
    assert all(names[0] == "to_kelvin" for _, names in recorder.answers)

    # The parse order changes nothing in what is indexed.
    plain = RepoIndex(root, cache_dir=tmp_path / "cache-plain")
    try:
        plain.update()
        assert list(plain.fragments) == opened_first
    finally:
        plain.close()


def test_without_open_files_a_late_file_answers_once_parsed(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    recorder = Recorder()
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        index.update(sink=recorder)
    finally:
        index.close()
    assert recorder.order == sorted(recorder.order)
    first_batch, *_, last = recorder.answers
    assert "to_kelvin" not in first_batch[1]  # not parsed yet
    assert last[1][0] == "to_kelvin"


@dataclass
class Observer:
    """Progress from the worker; when the parse is over and the graph is about to be linked
    (nothing published yet), it asks find, as an editor would meanwhile."""

    state: WorkspaceState | None = None
    during: list[Found] = field(default_factory=list)
    searchable: dict[str, int] | None = None
    messages: list[str] = field(default_factory=list)

    def sink(self, title: str) -> Observer:
        return self

    def begin(self) -> None:
        pass

    def report(self, stage: str, message: str, percentage: float) -> None:
        self.messages.append(message)
        if stage == "graph" and self.state is not None and not self.during:
            self.during = self.state.search(FindRequest(QUERY, top=5), lambda: False)
            self.searchable = self.state.status()["searchable"]

    def end(self, message: str) -> None:
        pass


def test_the_server_answers_find_before_its_first_index_is_published(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    observer = Observer()
    state = WorkspaceState(root, Settings(cache_dir=tmp_path / "cache"), observer.sink)
    observer.state = state
    state.start()
    try:
        for _ in range(3000):
            if state.loaded:
                break
            threading.Event().wait(0.1)
        assert state.loaded and state.index is not None
        after = state.search(FindRequest(QUERY, top=5), lambda: False)
        status = state.status()
        lexical = FunctionSearch(state.index).search(QUERY, top=5)
    finally:
        state.stop()

    assert observer.during and all(hit.from_partial for hit in observer.during)
    assert observer.searchable == {"files": 151, "total": 151}
    assert any("find searches" in m for m in observer.messages)
    # Every file parsed: the index's own lexical find gives the same functions, scores and order.
    assert [(h.function.key, h.function.score) for h in observer.during] == [(f.key, f.score) for f in lexical]
    assert after and not any(hit.from_partial for hit in after)
    assert status["searchable"] is None


def test_a_partial_corpus_of_every_file_ranks_as_the_index(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    recorder = Recorder()
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        index.update(sink=recorder)
        expected = FunctionSearch(index).search("average of the values", top=10)
    finally:
        index.close()
    partial = PartialIndex()
    for path, text, pf in [(p, t, f) for p, t, f in _reparsed(recorder)]:
        partial.add(path, text, pf)
    partial.parsed_all()
    got = next_search(partial, None).search("average of the values", top=10)
    assert [(f.key, f.score, f.kind) for f in got] == [(f.key, f.score, f.kind) for f in expected]


def _reparsed(recorder: Recorder) -> list[tuple[str, str, ParsedFile]]:
    snapshot = recorder.partial.published
    return [(path, "\n".join(snapshot.lines[path]), snapshot.parsed[path]) for path in sorted(snapshot.lines)]
