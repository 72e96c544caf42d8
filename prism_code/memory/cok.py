"""Chain-of-Key summaries of modules, on the PRISM revision engine.

A module summary (`ModuleSummary{purpose, key_functions, depends_on}`) starts from what
the index knows without a model: the module docstring, the files it imports. As the
notes of its functions arrive, one CoK step merges them in, in the paper's two parts
within one answer: first UPDATE revisions on paths that already exist (the purpose, a
function already listed), then ADD revisions for keys that are new. Each part is
constrained by a grammar naming exactly the paths it may touch, and every revision
still goes through validation.
"""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from prism_code.cancel import CancelCheck
from prism_code.file_order import file_order
from prism_code.index import RepoIndex
from prism_code.llm.accounting import Accounting
from prism_code.llm.backend import model_label
from prism_code.llm.json_grammar import json_layout_grammar
from prism_code.memory.code_schemas import FunctionNote, ModuleSummary
from prism_code.memory.deterministic_notes import DETERMINISTIC, LLM, STUB, NoteSource, notes_for
from prism_code.memory.notes_store import NotesStore
from prism_code.memory.revisions import (
    Rejected,
    Revision,
    Target,
    apply_all,
    parse_revisions,
    revision_json_schema,
)
from prism_code.memory.schema import format_path, schema_source
from prism_code.workspace import content_hash

if TYPE_CHECKING:
    from prism_code.llm.backend import CompletionBackend

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class SummaryLookup:
    summary: dict[str, Any]  # ModuleSummary as JSON
    source: NoteSource


@dataclass
class CokResult:
    memory: dict[str, Any]
    applied: list[Revision] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    accounting: Accounting = field(default_factory=Accounting)


_INSTRUCTION = (
    "You keep a structured summary up to date. [CLASS] defines it, [PARTIAL SUMMARY] is its "
    "current state and [NEW INFORMATION] is what just arrived. Answer in two parts.\n"
    "[UPDATED OBJECTS]: a JSON list of revisions {\"path\": ..., \"op\": \"update\", \"value\": ...} "
    "for paths that already exist in [PARTIAL SUMMARY] and that the new information improves; "
    "a new value keeps what the old one said and adds to it. [] when nothing improves.\n"
    "[ADDED OBJECTS]: a JSON list of revisions {\"path\": ..., \"op\": \"add\", \"value\": ...} for "
    "keys that are new, only the important ones. Paths name each key in single quotes.\n\n"
    "Example (for a different file):\n"
    "[PARTIAL SUMMARY]\n"
    '{"purpose": "", "key_functions": {"read_config": "Reads the settings file."}, '
    '"depends_on": ["app/paths.py"]}\n'
    "[NEW INFORMATION]\n"
    '{"write_config": "Saves the settings to disk."}\n'
    "[UPDATED OBJECTS]\n"
    "[{\"path\": \"$.'purpose'\", \"op\": \"update\", \"value\": \"Loads and saves the "
    'application settings file."}]\n'
    "[ADDED OBJECTS]\n"
    "[{\"path\": \"$.'key_functions'.'write_config'\", \"op\": \"add\", \"value\": \"Saves the "
    'settings to disk."}]'
)


def cok_step(session: CompletionBackend, schema: type, memory: dict[str, Any], new_information: str,
             update_targets: Sequence[Target], add_targets: Sequence[Target], *,
             max_updates: int = 2, max_adds: int = 4, max_tokens: int = 160,
             cancelled: CancelCheck | None = None) -> CokResult:
    """One Chain-of-Key merge of `new_information` into `memory` (changed in place)."""
    s = session
    start, end = s.special_token("<|im_start|>"), s.special_token("<|im_end|>")
    newline = s.tokenize_text("\n")
    tokens = (s.prompt_start() + [start] + s.tokenize_text("system\n" + _INSTRUCTION) + [end] + newline
              + [start] + s.tokenize_text("user\n")
              + s.tokenize_text("[CLASS]\n" + schema_source(schema) + "\n")
              + s.tokenize_text("[PARTIAL SUMMARY]\n" + json.dumps(memory, ensure_ascii=False) + "\n\n")
              + s.tokenize_text("[NEW INFORMATION]\n" + new_information.strip())
              + [end] + newline + [start] + s.tokenize_text("assistant\n[UPDATED OBJECTS]\n"))
    result = CokResult(memory)
    for op, targets, limit, header in (("update", update_targets, max_updates, "\n[ADDED OBJECTS]\n"),
                                       ("add", add_targets, max_adds, "")):
        if targets and limit > 0:
            grammar = json_layout_grammar(revision_json_schema(ops=(op,), targets=targets, max_items=limit))
            gen = s.generate(tokens, max_tokens=max_tokens, grammar=grammar, cancelled=cancelled)
            result.accounting.add(gen.stats)
            if gen.stats.finish_reason == "cancelled":
                return result
            proposed, errors = parse_revisions(gen.text)
            for error in errors:
                log.info("CoK %s: %s", op, error)
            applied, rejected = apply_all(memory, [r for r in proposed if r.op == op], schema)
            result.applied += [a.revision for a in applied]
            result.rejected += rejected
            answer = s.tokenize_text(gen.text.strip() or "[]")
        else:
            answer = s.tokenize_text("[]")
        tokens = tokens + answer + s.tokenize_text(header)
    return result


# ---- modules ---------------------------------------------------------------------------------


def _module_doc(text: str) -> str:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ""
    return ast.get_docstring(tree) or ""


def _first_sentence(doc: str) -> str:
    text = " ".join(doc.strip().split("\n\n", 1)[0].split())
    end = text.find(". ")
    return text[: end + 1] if end >= 0 else text


def module_imports(index: RepoIndex, path: str) -> list[str]:
    with index.lock:
        pf = index.graph.parsed.get(path)
        if pf is None:
            return []
        resolver = index.graph.resolver
        return sorted({t for imp in pf.imports for t in resolver.resolve(imp, path, pf.language) if t != path})


def _file_hash(index: RepoIndex, path: str) -> str:
    return content_hash("\n".join(index.lines.get(path, [])).encode("utf-8"))


def deterministic_summary(index: RepoIndex, path: str, store: NotesStore | None = None) -> dict[str, Any]:
    """A ModuleSummary from the docstring, the imports and the notes that exist now."""
    text = "\n".join(index.lines.get(path, []))
    doc = _first_sentence(_module_doc(text)) if path.endswith(".py") else ""
    functions = sorted((f for f in index.functions() if f.path == path), key=lambda f: f.start_line)
    # Module-level functions and public methods: what another file would call.
    top = [f.qualname for f in functions if "." not in f.qualname
           or (f.qualname.count(".") == 1 and not f.qualname.rsplit(".", 1)[1].startswith("_"))]
    key_functions = {}
    for qualname in top[:8]:
        lookup = notes_for(index, path, qualname, store)
        if lookup is not None:
            key_functions[qualname] = lookup.note.purpose
    purpose = doc or (f"Defines {', '.join(top[:5])}." if top else f"Source file {path}.")
    return asdict(ModuleSummary(purpose=purpose, key_functions=key_functions,
                                depends_on=module_imports(index, path)))


def module_summary(index: RepoIndex, path: str, store: NotesStore | None = None) -> SummaryLookup:
    """The module's CoK summary if it was made for the file's current text, else a deterministic one."""
    own = store is None
    store = store or NotesStore.for_index(index)
    try:
        stored = store.summary(path)
        if stored is not None and stored.hash == _file_hash(index, path):
            return SummaryLookup(stored.summary, LLM)
        return SummaryLookup(deterministic_summary(index, path, store), DETERMINISTIC)
    finally:
        if own:
            store.close()


def _notes_text(notes: dict[str, FunctionNote]) -> str:
    return "\n".join(json.dumps({q: n.purpose}, ensure_ascii=False) for q, n in notes.items())


def files_ready_for_summary(index: RepoIndex, store: NotesStore, paths: Sequence[str] | None = None) -> list[str]:
    """Files whose summary is out of date and whose every function has its model note
    for its current text: summarising earlier would store a summary of stand-in notes
    under the file's hash, and it would not be redone when the real notes arrive."""
    by_file: dict[str, list[str]] = {}
    for f in index.functions():
        by_file.setdefault(f.path, []).append(f.qualname)
    out = []
    for path in (paths if paths is not None else file_order(index)):
        if path not in by_file:
            continue
        stored = store.summary(path)
        if stored is not None and stored.hash == _file_hash(index, path):
            continue
        if all((lookup := notes_for(index, path, q, store)) is not None and lookup.source in (LLM, STUB)
               for q in by_file[path]):
            out.append(path)
    return out


class ModuleSummarizer:
    """Keeps module summaries current as function notes arrive (CoK Update/Add steps)."""

    def __init__(self, session: CompletionBackend, index: RepoIndex, store: NotesStore,
                 model: str = "", notes_per_step: int = 6) -> None:
        self.session = session
        self.index = index
        self.store = store
        self.model = model or model_label(session)
        self.notes_per_step = notes_per_step
        self.accounting = Accounting()

    def _start(self, path: str) -> dict[str, Any]:
        stored = self.store.summary(path)
        if stored is not None and stored.hash == _file_hash(self.index, path):
            return stored.summary
        memory = deterministic_summary(self.index, path, self.store)
        # The model fills these from the notes; a placeholder purpose would only be kept.
        memory["key_functions"] = {}
        if not _module_doc("\n".join(self.index.lines.get(path, []))):
            memory["purpose"] = ""
        return memory

    def notes_arrived(self, path: str, notes: dict[str, FunctionNote],
                      cancelled: CancelCheck | None = None) -> dict[str, Any]:
        """Merge new notes of one file into its summary; persists and returns the summary."""
        memory = self._start(path)
        items = list(notes.items())
        for i in range(0, len(items), self.notes_per_step):
            group = dict(items[i:i + self.notes_per_step])
            existing = [Target(str, path=format_path(("key_functions", k))) for k in memory["key_functions"]]
            updates = [Target(str, path="$.'purpose'"), *existing]
            adds = [Target(str, path=format_path(("key_functions", q))) for q in group
                    if q not in memory["key_functions"]]
            result = cok_step(self.session, ModuleSummary, memory, _notes_text(group), updates, adds,
                              cancelled=cancelled)
            self.accounting.add(result.accounting)
        self.store.put_summary(path, _file_hash(self.index, path), memory, self.model)
        return memory

    def summarize(self, paths: Sequence[str] | None = None, cancelled: CancelCheck | None = None,
                  progress: Callable[[int, int], None] | None = None) -> int:
        """Summaries for files whose text changed since their last one, from their notes."""
        by_file: dict[str, list[str]] = {}
        for f in self.index.functions():
            by_file.setdefault(f.path, []).append(f.qualname)
        todo = [p for p in (paths if paths is not None else file_order(self.index)) if p in by_file]
        todo = [p for p in todo if (s := self.store.summary(p)) is None or s.hash != _file_hash(self.index, p)]
        done = 0
        for n, path in enumerate(todo):
            if cancelled is not None and cancelled():
                break
            notes = {q: lookup.note for q in by_file[path]
                     if (lookup := notes_for(self.index, path, q, self.store)) is not None}
            self.notes_arrived(path, notes, cancelled)
            done += 1
            if progress is not None:
                progress(n + 1, len(todo))
        return done
