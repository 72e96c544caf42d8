"""A workspace's index: scan, parse, graph, fragments and relations, kept in step on disk.

`RepoIndex.update()` looks only at files whose stat changed, re-parses those whose
content changed, and recomputes relations only for fragments near the change (every
node pair whose best path crosses a changed node lies within the relation cutoff of it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from prism_code.cancel import Cancelled
from prism_code.config import IndexConfig
from prism_code.fragments import FUNCTION, WINDOW, Fragment, file_fragments, fragment_text
from prism_code.graph import CodeGraph
from prism_code.parse import language_for_path, parse_source
from prism_code.parse.model import Definition, ParsedFile
from prism_code.relations import StrengthTable, relation_rows
from prism_code.store import Store, workspace_db_path
from prism_code.workspace import (FileState, LoadedFile, ScanDiff, ScannedFile, content_hash,
                                  diff_scan, resolve_workspace, scan)

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (stage, done, total)

# When more than this share of fragments is affected, one full pass is cheaper.
_FULL_RECOMPUTE_SHARE = 0.5

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
    fragments: int = 0
    relations_recomputed: int = 0
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


def _decode(data: bytes) -> str:
    # Invalid UTF-8 must not stop indexing: keep what decodes, mark the rest.
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n")


class RepoIndex:
    def __init__(self, root: Path | str, config: IndexConfig | None = None,
                 cache_dir: Path | None = None) -> None:
        self.root = resolve_workspace(root)
        self.config = config or IndexConfig()
        self.store = Store(workspace_db_path(self.root, cache_dir))
        self.graph = CodeGraph()
        self.lines: dict[str, list[str]] = {}
        self.fragments: dict[str, Fragment] = {}
        self.related: dict[str, list[tuple[str, float]]] = {}
        self.generation = 0  # bumped on every change so derived caches know to rebuild
        # Held while the graph changes and while state is swapped; readers of the graph take it.
        self.lock = threading.RLock()
        self._overlays: dict[str, str] = {}  # path -> unsaved editor text, replaced whole
        self._load()

    def close(self) -> None:
        self.store.close()

    # ---- loading --------------------------------------------------------------------

    def _reload(self) -> None:
        with self.lock:
            self.graph = CodeGraph()
            self._load()
            self.generation += 1

    def _load(self) -> None:
        parsed, lines = [], {}
        for path, text, pf in self.store.load_files():
            lines[path] = text.split("\n")
            parsed.append(pf)
        self.lines = lines
        self.graph.update(parsed)
        self.fragments = {f.key: f for f in self.store.load_fragments()}
        self.related = self.store.load_relations()

    # ---- queries ----------------------------------------------------------------------

    def definition(self, path: str, qualname: str) -> Definition | None:
        pf = self.graph.parsed.get(path)
        if pf is None:
            return None
        return next((d for d in pf.definitions if d.qualname == qualname), None)

    def functions(self) -> list[Fragment]:
        return sorted((f for f in self.fragments.values() if f.kind == FUNCTION), key=lambda f: f.key)

    def windows(self) -> list[Fragment]:
        return sorted((f for f in self.fragments.values() if f.kind == WINDOW), key=lambda f: f.key)

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

    def update(self, progress: Progress | None = None,
               cancelled: Callable[[], bool] | None = None) -> IndexSummary:
        started = time.perf_counter()
        report = progress or (lambda stage, done, total: None)
        summary = IndexSummary()
        states = self.store.file_states()
        result = scan(self.root, self.config.exclude, self.config.max_file_bytes,
                      is_source=lambda p: language_for_path(p) is not None, known=states)
        summary.skipped = len(result.skipped)
        summary.skipped_reasons = [(s.path, s.reason) for s in result.skipped]
        diff = self._diff(result.files, states)
        loaded = diff.added + diff.changed
        parsed: list[tuple[LoadedFile, str, ParsedFile]] = []
        for i, item in enumerate(loaded):
            if cancelled and cancelled():
                raise Cancelled("indexing cancelled; the index is unchanged")
            report("parse", i, len(loaded))
            text = _decode(item.data)
            pf = parse_source(item.path, text.encode("utf-8"))
            if pf is None:
                continue
            summary.parse_errors += pf.has_errors
            parsed.append((item, text, pf))
        report("parse", len(loaded), len(loaded))
        summary.added, summary.changed, summary.removed = len(diff.added), len(diff.changed), len(diff.removed)
        if parsed or diff.removed:
            summary.relations_recomputed = self._apply(parsed, diff.removed, report)
        if diff.touched:
            with self.store.transaction():
                for path, state in diff.touched.items():
                    self.store.touch_file(path, state)
        summary.files = len(self.lines)
        summary.lines = sum(len(v) for v in self.lines.values())
        summary.functions = sum(1 for f in self.fragments.values() if f.kind == FUNCTION)
        summary.fragments = len(self.fragments)
        summary.seconds = time.perf_counter() - started
        return summary

    def _apply(self, parsed: list[tuple[LoadedFile, str, ParsedFile]], removed: list[str],
               report: Progress) -> int:
        """Update graph, fragments and relations; commit; then publish the new state.

        Readers keep using the previous dicts until the final swap, so a search running
        during an update sees one consistent index, never a half-applied one.
        """
        changed_paths = {item.path for item, _, _ in parsed} | set(removed)
        old_fragments = [f for f in self.fragments.values() if f.path in changed_paths]
        # A large update recomputes every relation anyway: skip the neighbourhood search.
        everything = len(changed_paths) > _FULL_RECOMPUTE_SHARE * max(len(self.lines), 1)
        near_old = set() if everything else self.graph.ball(
            {node for f in old_fragments for node, _ in f.nodes}, self.config.relation_cutoff)
        report("graph", 0, 1)
        try:
            with self.lock:
                touched = self.graph.update([pf for _, _, pf in parsed], removed)
            near_new = set() if everything else self.graph.ball(touched, self.config.relation_cutoff)
            lines = {p: v for p, v in self.lines.items() if p not in changed_paths}
            fragments = {k: f for k, f in self.fragments.items() if f.path not in changed_paths}
            related = {k: v for k, v in self.related.items() if k in fragments}
            new_fragments: list[Fragment] = []
            for _, text, pf in parsed:
                lines[pf.path] = text.split("\n")
                new_fragments += file_fragments(pf, self.config.window_lines, self.config.window_stride)
            fragments.update((f.key, f) for f in new_fragments)
            report("graph", 1, 1)
            affected = None if everything else near_old | near_new | touched
            recomputed = self._recompute_relations(fragments, related, affected, report)
            dropped = {f.key for f in old_fragments} - set(fragments)
            with self.store.transaction():
                for path in removed:
                    self.store.delete_file(path)
                for item, text, pf in parsed:
                    self.store.delete_file(pf.path)
                    self.store.put_file(pf.path, item.state, text, pf, _definition_hashes(lines, pf))
                self.store.put_fragments(new_fragments)
                self.store.put_relations({k: related[k] for k in recomputed}, dropped)
                owners = self.graph.owners_of(changed_paths | self.graph.last_relinked,
                                              tree_changed=bool(removed or self.graph.last_appeared))
                self.store.replace_edges(owners, self.graph.edges_of(owners))
        except BaseException:
            # The graph was changed in place: rebuild memory from what the store holds.
            self._reload()
            raise
        with self.lock:
            self.lines, self.fragments, self.related = lines, fragments, related
            self.generation += 1
        return len(recomputed)

    def _recompute_relations(self, fragments: dict[str, Fragment],
                             related: dict[str, list[tuple[str, float]]],
                             affected_nodes: set[str] | None, report: Progress) -> set[str]:
        """Recompute, in `related`, the sets near affected nodes (None: all of them)."""
        plans = []
        for kind in (FUNCTION, WINDOW):
            corpus = sorted((f for f in fragments.values() if f.kind == kind), key=lambda f: f.key)
            rows = [i for i, f in enumerate(corpus)
                    if affected_nodes is None or f.key not in related
                    or any(n in affected_nodes for n, _ in f.nodes)]
            plans.append((kind, corpus, rows))
        region = None
        if all(len(rows) <= _FULL_RECOMPUTE_SHARE * len(corpus) for _, corpus, rows in plans):
            sources = {n for _, corpus, rows in plans for i in rows for n, _ in corpus[i].nodes}
            region = self.graph.ball(sources, self.config.relation_cutoff)
        table = StrengthTable(self.graph, self.config.relation_cutoff, region)
        recomputed: set[str] = set()
        for kind, corpus, rows in plans:
            report(f"relations ({kind}s)", 0, len(rows))
            for i, pairs in relation_rows(table, corpus, rows, self.config.related_per_fragment,
                                          self.config.context_weight).items():
                key = corpus[i].key
                related[key] = [(corpus[j].key, w) for j, w in pairs]
                recomputed.add(key)
            report(f"relations ({kind}s)", len(rows), len(rows))
        return recomputed
