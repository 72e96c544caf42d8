"""A workspace's index: scan, parse, graph, fragments and relations, kept in step on disk.

`RepoIndex.update()` looks only at files whose stat changed, re-parses those whose
content changed, and redoes relations only where the change reaches.

An update has two phases. The first publishes files, definitions, graph and fragments
(what search and completion read) and records the relation work it leaves (fragments
whose nodes changed, graph nodes whose edges changed) in one transaction. The second
(`finish_relations`) recomputes the related sets of fragments within the relation cutoff
of a changed node (every node pair whose best path crosses a changed node lies there),
patches the sets that merely list or meet a changed fragment, and clears the record in
another transaction. Until it runs, readers keep the previous related sets (a new
fragment has none); a kill in between leaves the record, and the next update finishes it.

The database may be shared with other processes (the language server and the command
line on one repository). Both phases hold the store's write lock and start by catching up
with what another process committed (`refresh`): the in-memory graph, fragments and
relations are reloaded from the store whenever its generation token is not the one this
process last read or wrote, so no process diffs against, or writes relations from, a graph
another one has moved on from. A damaged database is moved aside and rebuilt.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.config import IndexConfig
from prism_code.fragments import (
    FUNCTION,
    WINDOW,
    Fragment,
    file_fragments,
    file_units,
    fragment_text,
    function_key,
    is_function,
    type_fragments,
)
from prism_code.graph import CodeGraph
from prism_code.parse import PARSER_VERSION, language_for_path
from prism_code.parse.model import Definition, ParsedFile
from prism_code.parse_pool import decode, open_first, parsed_files
from prism_code.related_sets import RelatedSets
from prism_code.relation_update import (
    FULL_RECOMPUTE_SHARE,
    Dirty,
    Progress,
    context_neighbours,
    patched,
    planned,
    recompute,
    relating,
)
from prism_code.store.database import workspace_db_path
from prism_code.store.errors import IndexBusy, StaleIndex, is_damage
from prism_code.store.index_store import Store
from prism_code.workspace import (
    FileState,
    LoadedFile,
    ScanDiff,
    ScannedFile,
    content_hash,
    diff_scan,
    resolve_workspace,
    scan,
)

log = logging.getLogger(__name__)

# Attempts at an update whose commit finds that another process committed first (only
# possible where the write lock does not work, see store.file_lock.FileLock).
_STALE_ATTEMPTS = 3

# The stored mtime of a file indexed from an editor buffer: no real stat matches it, so once
# the overlay is dropped the next scan reads the file from disk again.
OVERLAY_MTIME_NS = -1


@dataclass
class IndexSummary:
    files: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    skipped: int = 0
    parse_errors: int = 0
    functions: int = 0
    types: int = 0  # classes, structs, interfaces...: find's units beside the functions
    file_units: int = 0  # files that define nothing, searched whole: find's units too
    fragments: int = 0
    relations_recomputed: int = 0
    relations_pending: bool = False  # relation work left for finish_relations()
    lines: int = 0
    seconds: float = 0.0
    skipped_reasons: list[tuple[str, str]] = field(default_factory=list)

    def line(self) -> str:
        return (f"{self.files} files ({self.added} added, {self.changed} changed, "
                f"{self.removed} removed, {self.skipped} skipped), {self.lines} lines, "
                f"{self.functions} functions, {self.fragments} fragments in {self.seconds:.2f} s")


def _definition_hashes(lines: dict[str, list[str]], pf: ParsedFile) -> dict[str, str]:
    text = lines[pf.path]
    return {d.qualname: content_hash("\n".join(text[d.start_line - 1:d.end_line]).encode())
            for d in pf.definitions}


def _count_functions(fragments: Iterable[Fragment]) -> int:
    return sum(1 for f in fragments if f.kind == FUNCTION)


def _keys_by_path(fragments: Iterable[Fragment]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in fragments:
        out.setdefault(f.path, []).append(f.key)
    return out


@dataclass(frozen=True)
class _FileFindUnits:
    """How many type units and file units one file gives find (the summary counts them), kept
    while the file's parse and lines are the same objects: an edit recounts its own file."""

    parsed: ParsedFile
    lines: list[str]
    types: int
    file_units: int

    @classmethod
    def of(cls, pf: ParsedFile, lines: list[str]) -> _FileFindUnits:
        # A type named as a function of its file is not a unit of its own (type_fragments).
        functions = {function_key(pf.path, d.qualname) for d in pf.definitions if is_function(d)}
        return cls(pf, lines, len(type_fragments([pf], functions)), len(file_units([pf], {pf.path: lines})))


@dataclass(frozen=True)
class IndexSnapshot:
    """One published state of the index, readable without its lock: an update swaps in
    new mappings and never changes published ones (the parse map is copied here, since a
    small update edits the graph's in place)."""

    generation: int
    lines: dict[str, list[str]]
    fragments: dict[str, Fragment]
    related: Mapping[str, list[tuple[str, float]]]
    parsed: dict[str, ParsedFile]

    def definition(self, path: str, qualname: str) -> Definition | None:
        return _definition(self.parsed, path, qualname)

    def functions(self) -> list[Fragment]:
        return _of_kind(self.fragments, FUNCTION)

    def text(self, fragment: Fragment) -> str:
        return fragment_text(self.lines.get(fragment.path, []), fragment)


def _definition(parsed: dict[str, ParsedFile], path: str, qualname: str) -> Definition | None:
    pf = parsed.get(path)
    if pf is None:
        return None
    return next((d for d in pf.definitions if d.qualname == qualname), None)


def _of_kind(fragments: dict[str, Fragment], kind: str) -> list[Fragment]:
    return sorted((f for f in fragments.values() if f.kind == kind), key=lambda f: f.key)


class ParsedSink(Protocol):
    """Hears a first index's files as they are parsed, before anything is linked or stored
    (tasks/partial_find.py makes them searchable meanwhile)."""

    def expect(self, files: int) -> None: ...
    def add(self, path: str, text: str, parsed: ParsedFile) -> None: ...
    def parsed_all(self) -> None: ...


@dataclass
class _Stored:
    """What the store holds, read in one transaction: the in-memory index rebuilt from it."""

    token: str  # the store's generation token when it was read
    graph: CodeGraph
    lines: dict[str, list[str]]
    fragments: dict[str, Fragment]
    related: RelatedSets
    dirty: Dirty
    states: dict[str, FileState]


class RepoIndex:
    def __init__(self, root: Path | str, config: IndexConfig | None = None,
                 cache_dir: Path | None = None, lock_timeout: float | None = None) -> None:
        self.root = resolve_workspace(root)
        self.config = config or IndexConfig()
        # How long a writer waits for another process's write lock (None: as long as it
        # takes) before IndexBusy; the language server bounds it, the command line waits.
        self.lock_timeout = lock_timeout
        self.store = Store(workspace_db_path(self.root, cache_dir))
        self.graph = CodeGraph()
        self.lines: dict[str, list[str]] = {}
        self.fragments: dict[str, Fragment] = {}
        self.related = RelatedSets()
        # Published with `fragments`: a status poll should not walk them.
        self.function_count = 0
        # Each file's fragment keys, kept with `fragments` so an update finds a file's own
        # without walking every fragment of the repository.
        self._keys_by_path: dict[str, list[str]] = {}
        self._find_units: dict[str, _FileFindUnits] = {}  # path -> its counts for the summary
        self.generation = 0  # bumped on every change so derived caches know to rebuild
        # Held while the graph changes and while state is swapped; readers of the graph take it.
        self.lock = threading.RLock()
        # Serialises the writers (both update phases): the second phase reads the graph
        # without `lock`, which only the first phase changes.
        self._write_lock = threading.RLock()
        self._dirty = Dirty()  # the relation work owed, as the store records it
        self._overlays: dict[str, str] = {}  # path -> unsaved editor text, replaced whole
        self._token = ""  # the store's generation token this process last read or wrote
        # The files' stored states, as of `_token`: read with the rest of the store and kept in
        # step with every write of the files table, so an update does not read them again
        # (~2 ms on 600 files, issue #29). Replaced whole, never changed in place.
        self._states: dict[str, FileState] = {}
        try:
            self._reload()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self.store.recover(exc)
            self._reload()

    def close(self) -> None:
        self.store.close()

    # ---- loading --------------------------------------------------------------------

    def _reload(self) -> None:
        """Replace the in-memory index with what the store holds. Built aside and swapped
        in under `lock`, so readers keep the previous state meanwhile."""
        stored = self._read_store()
        with self.lock:
            self.graph = stored.graph
            self.lines, self.fragments, self.related = stored.lines, stored.fragments, stored.related
            self.function_count = _count_functions(stored.fragments.values())
            self._keys_by_path = _keys_by_path(stored.fragments.values())
            self._dirty = stored.dirty
            self._states = stored.states
            self._token = stored.token
            self.generation += 1

    def _read_store(self) -> _Stored:
        parsed, lines = [], {}
        with self.store.reading():
            token = self.store.generation()
            for path, text, pf in self.store.load_files():
                lines[path] = text.split("\n")
                parsed.append(pf)
            fragments = {f.key: f for f in self.store.load_fragments()}
            related = self.store.load_relations()
            dirty = Dirty(*self.store.dirty())
            states = self.store.file_states()
        graph = CodeGraph()
        graph.update(parsed)
        return _Stored(token, graph, lines, fragments, related, dirty, states)

    def refresh(self) -> bool:
        """Catch up with what another process committed to the store since this one last
        read or wrote it; True if the index was reloaded (or rebuilt empty from a damaged
        database: the next update fills it). Never waits for a writer: while this process
        writes, its writer catches up first, and a damaged database is left to a writer
        while another process holds the lock."""
        if not self._write_lock.acquire(blocking=False):
            return False
        try:
            try:
                return self._catch_up(timeout=0)
            except IndexBusy:
                return False
            except sqlite3.DatabaseError as exc:
                if not is_damage(exc):
                    raise
                try:
                    self.recover(exc, timeout=0)
                except IndexBusy:
                    return False
                return True
        finally:
            self._write_lock.release()

    def _catch_up(self, timeout: float | None = None) -> bool:
        """Reload if the store is not the state this process last saw (call holding
        `_write_lock`). `timeout`: how long to wait for a recovery in another process."""
        replaced = self.store.follow_replacement(timeout)
        if not replaced and self.store.generation() == self._token:
            return False
        started = time.perf_counter()
        self._reload()
        log.info("%s: reloaded the index another process changed (%.2f s)", self.root.name,
                 time.perf_counter() - started)
        return True

    def recover(self, damage: sqlite3.DatabaseError, timeout: float | None = None) -> None:
        """Move the damaged database aside and start over from an empty index."""
        with self.store.write_lock.held(timeout=timeout), self._write_lock:
            self.store.recover(damage)
            self._reload()

    @contextmanager
    def _writing(self, cancelled: CancelCheck | None) -> Iterator[None]:
        """Hold the write locks and start from what the store holds. Other processes' lock
        first: while this process waits for it, a request may still catch up (refresh)."""
        with self.store.write_lock.held(cancelled, self.lock_timeout), self._write_lock:
            self._catch_up()
            yield

    # ---- queries ----------------------------------------------------------------------

    @property
    def store_token(self) -> str:
        """The store's generation token of the state this process holds ("" before any commit)."""
        return self._token

    def snapshot(self) -> IndexSnapshot:
        """The current published state, taken under the lock in O(files)."""
        with self.lock:
            return IndexSnapshot(self.generation, self.lines, self.fragments, self.related,
                                 dict(self.graph.parsed))

    def definition(self, path: str, qualname: str) -> Definition | None:
        return _definition(self.graph.parsed, path, qualname)

    def functions(self) -> list[Fragment]:
        return _of_kind(self.fragments, FUNCTION)

    def windows(self) -> list[Fragment]:
        return _of_kind(self.fragments, WINDOW)

    def text(self, fragment: Fragment) -> str:
        return fragment_text(self.lines.get(fragment.path, []), fragment)

    def fragments_at(self, path: str, line: int) -> list[Fragment]:
        return sorted((f for f in self.fragments.values()
                       if f.path == path and f.start_line <= line <= f.end_line),
                      key=lambda f: (f.kind, f.start_line))

    # ---- updating ---------------------------------------------------------------------

    def set_overlay(self, path: str, text: str | None) -> None:
        """Index `text` instead of the disk content of workspace file `path` (None: disk again).

        Takes effect at the next update(). An overlay only applies to a file the scan lists,
        so excludes, .gitignore and the size and binary checks still decide what is indexed.
        """
        overlays = dict(self._overlays)
        if text is None:
            overlays.pop(path, None)
        else:
            overlays[path] = text
        self._overlays = overlays  # swapped whole: an update in progress keeps its snapshot

    def overlays(self) -> dict[str, str]:
        return self._overlays

    def _diff(self, files: list[ScannedFile], states: dict[str, FileState]) -> ScanDiff:
        """Stored states against the scan, with overlaid files compared by the overlay text."""
        overlays = self._overlays
        loaded: dict[str, LoadedFile] = {}
        for file in files:
            if file.path not in overlays:
                continue
            data = overlays[file.path].encode("utf-8")
            if len(data) > self.config.max_file_bytes:
                log.info("%s: the editor buffer is too large to index; using the file on disk",
                         file.path)
                continue
            loaded[file.path] = LoadedFile(ScannedFile(file.path, len(data), OVERLAY_MTIME_NS),
                                           data, content_hash(data))
        diff = diff_scan({p: s for p, s in states.items() if p not in loaded},
                         [f for f in files if f.path not in loaded], self.root)
        for path, item in sorted(loaded.items()):
            old = states.get(path)
            if old is None:
                diff.added.append(item)
            elif old.content_hash != item.content_hash:
                diff.changed.append(item)
            elif old != item.state:
                diff.touched[path] = item.state
            else:
                diff.unchanged += 1
        return diff

    @property
    def relations_pending(self) -> bool:
        """Whether finish_relations() has work: some related sets are not yet up to date."""
        return bool(self._dirty)

    def update(self, progress: Progress | None = None,
               cancelled: CancelCheck | None = None,
               relations: bool = True, opened: Sequence[str] = (),
               sink: ParsedSink | None = None) -> IndexSummary:
        """Bring the index in line with the workspace; with `relations=False`, only the
        first phase: the relations it makes stale are left to finish_relations().
        The files open in the editor (`opened`) and their folders are parsed first, and
        `sink` hears each parsed file at once."""
        started = time.perf_counter()
        try:
            summary = self._update_shared(progress, cancelled, relations, opened, sink)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self.recover(exc, self.lock_timeout)
            summary = self._update_shared(progress, cancelled, relations, opened, sink)  # a rebuild
        summary.seconds = time.perf_counter() - started
        return summary

    def _update_shared(self, progress: Progress | None, cancelled: CancelCheck | None,
                       relations: bool, opened: Sequence[str], sink: ParsedSink | None) -> IndexSummary:
        with self._writing(cancelled):
            for attempt in range(1, _STALE_ATTEMPTS + 1):
                try:
                    summary = self._update(progress, cancelled, opened, sink)
                    break
                except StaleIndex:
                    if attempt == _STALE_ATTEMPTS:
                        raise
                    self._catch_up()
            if relations:
                summary.relations_recomputed = self.finish_relations(progress, cancelled)
            summary.relations_pending = self.relations_pending
            return summary

    def _update(self, progress: Progress | None, cancelled: CancelCheck | None,
                opened: Sequence[str] = (), sink: ParsedSink | None = None) -> IndexSummary:
        report = progress or (lambda stage, done, total: None)
        summary = IndexSummary()
        states = self._states  # what the store holds: another process's commit reloaded it
        outdated = self.store.meta("parser_version") != str(PARSER_VERSION)
        if outdated:
            # No stored parse can be trusted: every file reads as changed, once.
            states = {path: FileState(state.size, -1, "") for path, state in states.items()}
        result = scan(self.root, self.config.exclude, self.config.max_file_bytes,
                      is_source=lambda p: language_for_path(p) is not None, known=states,
                      trusted=self.config.trusted, max_files=self.config.max_files)
        summary.skipped_reasons = [(s.path, s.reason) for s in result.skipped]
        diff = self._diff(result.files, states)
        loaded = self._within_line_limit(diff, summary)
        summary.skipped = len(summary.skipped_reasons)
        parsed: list[tuple[LoadedFile, str, ParsedFile]] = []
        report("parse", 0, len(loaded))
        if sink is not None:
            sink.expect(len(loaded))
        if opened:
            loaded = open_first(loaded, opened)
        results = parsed_files([(item.path, item.data) for item in loaded], cancelled)
        for i, (item, pf) in enumerate(zip(loaded, results), 1):
            report("parse", i, len(loaded))
            if pf is None:
                continue
            summary.parse_errors += pf.has_errors
            text = decode(item.data)
            parsed.append((item, text, pf))
            if sink is not None:
                sink.add(pf.path, text, pf)
        if cancelled and cancelled():
            raise Cancelled("indexing cancelled; the index is unchanged")
        if sink is not None:
            sink.parsed_all()
        parsed.sort(key=lambda row: row[0].path)  # what follows is the same whatever the parse order
        summary.added, summary.changed, summary.removed = len(diff.added), len(diff.changed), len(diff.removed)
        if parsed or diff.removed:
            self._apply(parsed, diff.removed, report)
        if diff.touched:
            with self.store.transaction():
                for path, state in diff.touched.items():
                    self.store.touch_file(path, state)
            self._states = {**self._states, **diff.touched}
        if outdated:
            with self.store.transaction():
                self.store.set_meta("parser_version", str(PARSER_VERSION))
        summary.files = len(self.lines)
        summary.lines = sum(len(v) for v in self.lines.values())
        summary.functions = self.function_count
        summary.types, summary.file_units = self._count_find_units()
        summary.fragments = len(self.fragments)
        return summary

    def _count_find_units(self) -> tuple[int, int]:
        """(type units, file units) find searches besides the functions, recounting only the
        files whose parse or lines changed since the last count."""
        counts = {}
        for path, pf in self.graph.parsed.items():
            lines = self.lines.get(path, [])
            kept = self._find_units.get(path)
            if kept is None or kept.parsed is not pf or kept.lines is not lines:
                kept = _FileFindUnits.of(pf, lines)
            counts[path] = kept
        self._find_units = counts
        return sum(c.types for c in counts.values()), sum(c.file_units for c in counts.values())

    def _within_line_limit(self, diff: ScanDiff, summary: IndexSummary) -> list[LoadedFile]:
        """The added and changed files that fit the repository's line limit, in path order;
        the others are skipped with a logged reason (a changed one leaves the index: its
        stored text would be stale)."""
        replaced = {item.path for item in diff.changed} | set(diff.removed)
        budget = self.config.max_lines - sum(len(text) for path, text in self.lines.items()
                                             if path not in replaced)
        kept: list[LoadedFile] = []
        over: list[LoadedFile] = []
        for item in sorted(diff.added + diff.changed, key=lambda i: i.path):
            lines = item.data.count(b"\n") + 1
            if lines > budget:
                over.append(item)
            else:
                budget -= lines
                kept.append(item)
        if over:
            reason = f"over the repository's limit of {self.config.max_lines} lines"
            log.info("%s: %d files not indexed, %s (raise it with --max-lines)", self.root.name, len(over), reason)
            summary.skipped_reasons += [(item.path, reason) for item in over]
            changed = {item.path for item in diff.changed}
            diff.removed = sorted(set(diff.removed) | {item.path for item in over if item.path in changed})
        return kept

    def _apply(self, parsed: list[tuple[LoadedFile, str, ParsedFile]], removed: list[str],
               report: Progress) -> None:
        """Phase 1: update graph and fragments and record the relation work owed; commit;
        publish.

        Readers keep using the previous dicts until the final swap, so a search running
        during an update sees one consistent index, never a half-applied one.
        """
        changed_paths = {item.path for item, _, _ in parsed} | set(removed)
        keys_by_path = dict(self._keys_by_path)
        old_fragments = {k: self.fragments[k] for path in changed_paths for k in keys_by_path.pop(path, ())}
        new_fragments: list[Fragment] = []
        for _, _, pf in parsed:
            new_fragments += file_fragments(pf, self.config.window_lines, self.config.window_stride)
        new_by_key = {f.key: f for f in new_fragments}
        keys_by_path.update(_keys_by_path(new_by_key.values()))
        # A fragment that came back with the same nodes relates as before unless the graph
        # around it changed: after a one-line edit most of a file's fragments are such.
        changed = [f for k, f in old_fragments.items()
                   if relating(new_by_key.get(k)) != relating(f)]
        changed += [f for k, f in new_by_key.items()
                    if relating(old_fragments.get(k)) != relating(f)]
        # A large update recomputes every relation anyway.
        everything = len(changed_paths) > FULL_RECOMPUTE_SHARE * max(len(self.lines), 1)
        report("graph", 0, 1)
        try:
            graph, touched = self._updated_graph(parsed, removed, changed_paths, everything)
            lines = dict(self.lines)
            fragments = dict(self.fragments)
            related = self.related.copy()
            for path in removed:
                lines.pop(path, None)
            for key in old_fragments:
                del fragments[key]
            for _, text, pf in parsed:
                lines[pf.path] = text.split("\n")
            fragments.update(new_by_key)
            function_count = (self.function_count - _count_functions(old_fragments.values())
                              + _count_functions(new_by_key.values()))
            dropped = set(old_fragments) - set(fragments)
            # Until phase 2, a changed fragment keeps its previous related set.
            for key in dropped:
                related.pop(key, None)
            owed = Dirty(changed={f.key for f in changed},
                         # The windows near a changed one are in its file, whose fragments are new.
                         recompute=set(fragments) if everything else context_neighbours(
                             new_by_key, changed, self.config),
                         # The strengths a leaf changes are those to the leaf itself: the
                         # rows of the changed fragments holding it carry them (phase 2).
                         nodes=set() if everything else touched - graph.last_leaf_only)
            report("graph", 1, 1)
            states = dict(self._states)
            for path in removed:
                states.pop(path, None)
            for item, _, pf in parsed:
                states[pf.path] = item.state  # as put_file below
            with self.store.transaction():
                token = self.store.advance_generation(self._token)
                for path in removed:
                    self.store.delete_file(path)
                for item, text, pf in parsed:
                    self.store.delete_file(pf.path)
                    self.store.put_file(pf.path, item.state, text, pf, _definition_hashes(lines, pf))
                self.store.put_fragments(new_fragments)
                self.store.put_relations({}, dropped)
                self.store.mark_dirty(owed.changed - self._dirty.changed,
                                      owed.recompute - self._dirty.recompute,
                                      owed.nodes - self._dirty.nodes)
                owners = graph.owners_of(changed_paths | graph.last_relinked,
                                         tree_changed=bool(removed or graph.last_appeared))
                self.store.replace_edges(owners, graph.edges_of(owners))
        except BaseException:
            # A small update changed the graph in place: rebuild memory from what the store holds.
            self._reload()
            raise
        with self.lock:
            self.graph = graph
            self.lines, self.fragments, self.related = lines, fragments, related
            self.function_count = function_count
            self._keys_by_path = keys_by_path
            self._states = states
            self._dirty = self._dirty.merged(owed)
            self._token = token
            self.generation += 1

    def _updated_graph(self, parsed: list[tuple[LoadedFile, str, ParsedFile]], removed: list[str],
                       changed_paths: set[str], everything: bool) -> tuple[CodeGraph, set[str]]:
        """The graph after this update and the nodes that changed.

        A large update (a first index, a checkout) builds a new graph aside: that takes
        seconds on a 100k-line repository, during which readers keep the previous graph,
        consistent with the fragments they see, instead of waiting for `lock`. A small one
        changes the graph in place, under `lock`, in milliseconds.
        """
        if everything:
            graph = CodeGraph()
            kept = [pf for path, pf in self.graph.parsed.items() if path not in changed_paths]
            return graph, graph.update(kept + [pf for _, _, pf in parsed])
        with self.lock:
            return self.graph, self.graph.update([pf for _, _, pf in parsed], removed)

    def finish_relations(self, progress: Progress | None = None,
                         cancelled: CancelCheck | None = None) -> int:
        """Phase 2: bring every related set up to date, commit, publish; returns how many
        sets were rewritten. Cancelling leaves the work recorded for a later call.

        A fragment's related set changes when its own nodes or the strengths from them
        changed (it is recomputed), or when a fragment it relates to changed: then, if
        its stored set was not cut at `related_per_fragment` or lost no member, swapping
        the changed fragments' entries for their new weights (read from the changed
        fragments' own rows: Eq. 8 is symmetric) gives what a recomputation would.
        """
        report = progress or (lambda stage, done, total: None)
        with self._writing(cancelled):
            owed = self._dirty
            if not owed:
                return 0
            related = self.related.copy()
            full, patch = planned(owed, self.fragments, related, self.graph, self.config)
            recomputed, changed_rows = recompute(self.graph, self.config, self.fragments, related, full,
                                                 owed.changed, report, cancelled)
            rewritten = recomputed | patched(related, patch, changed_rows, full, owed.changed,
                                             self.config.related_per_fragment)
            try:
                with self.store.transaction():
                    token = self.store.advance_generation(self._token)
                    self.store.put_relations({k: related[k] for k in rewritten}, ())
                    self.store.clear_dirty()
            except StaleIndex:
                # Only without a working write lock: the work stays recorded in the store
                # for whichever process updates next.
                self._catch_up()
                return 0
            with self.lock:
                self.related = related
                self._dirty = Dirty()
                self._token = token
                self.generation += 1
            return len(rewritten)
