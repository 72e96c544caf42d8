"""The model pass of the function memory: the LLM writes one note per function, ahead of time.

The memory is `FunctionMemory{functions: dict[str, FunctionNote]}` (PRISM App. A,
Listing 2). Every function has a deterministic note at once
(prism_code.memory.deterministic_notes), so hovers and search never wait for the model.
This pass then writes notes in file-dependency order (imported files first, files open in the
editor before everything), each as the revision `add $.'functions'.'<qualname>'`,
validated against the schema and committed to disk at once, keyed by the function's
content hash: an unchanged function is never noted twice, and a killed run resumes
where it stopped.

Speed on a 2-core CPU comes from what the model does not have to do:
- the instruction, schema and three worked examples form a fixed prefix that stays in
  the KV cache for the whole run (and can be restored from a state file);
- the fixed parts of each answer (the qualname key, the field names, the quotes) are
  evaluated as prompt tokens, which costs a fraction of decoding them; the model
  decodes only the four field texts, each stopped at its closing quote and capped.
That second point is a grammar whose fixed parts are prefilled rather than sampled, so
no llama.cpp grammar (which doubles the cost of each sampled token) is needed.

Several functions can share one growing context (`NotesSettings.batch`, one chat turn
each). On marshmallow with the 0.5B model that was slower (45 vs 50 notes/min: the
longer context makes every token dearer) and let one note's phrasing spread to the
next, so by default each function is one turn right after the cached prefix.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from textwrap import dedent
from typing import TYPE_CHECKING, Any

from prism_code.cancel import CancelCheck
from prism_code.file_order import functions_in_order
from prism_code.fragments import Fragment
from prism_code.index import RepoIndex
from prism_code.llm.accounting import Accounting
from prism_code.llm.backend import keeps_kv_state, model_label
from prism_code.llm.types import Generation
from prism_code.memory.code_schemas import FunctionMemory, FunctionNote
from prism_code.memory.deterministic_notes import FIELDS, deterministic_note, is_stub
from prism_code.memory.notes_store import NotesStore, function_hash
from prism_code.memory.revisions import Applied, Revision, apply
from prism_code.memory.schema import format_path, schema_source
from prism_code.parse import language_for_path

if TYPE_CHECKING:
    from prism_code.llm.backend import CompletionBackend, KVBackend
    from prism_code.llm.state_cache import StateCache

log = logging.getLogger(__name__)


_SYSTEM = (
    "You write short notes about functions for a code search index. The user sends one "
    "function at a time; answer with one JSON object that maps the function's qualified "
    "name to a FunctionNote. Keep each field short and plain: no code, no markdown, no "
    "repeating the function's name.\n\n[SCHEMA]\n"
)

# Worked examples, written for this prompt: they set the length and the tone. Their
# domains are far from typical code on purpose, since a small model copies phrases
# from an example that looks like the function at hand.
_EXAMPLES: tuple[tuple[str, str, str, FunctionNote], ...] = (
    ("text/slug.py", "slugify", dedent('''\
        def slugify(title, sep="-"):
            words = re.findall(r"[a-z0-9]+", title.lower())
            return sep.join(words)
        '''),
     FunctionNote("Turns a title into a URL-safe slug.",
                  "title text and a separator",
                  "the slug string",
                  "Lowercases the title and joins its words with the separator.")),
    ("garden/pump.py", "Pump.water", dedent('''\
        class Pump:
            def water(self, bed, litres):
                if self.tank < litres:
                    raise DryTank(bed)
                self.tank -= litres
                self.log.append((bed, litres))
                return self.tank
        '''),
     FunctionNote("Waters a garden bed from the tank.",
                  "the bed and litres of water",
                  "the litres left in the tank",
                  "Raises DryTank if the tank is too low, else pours and logs it.")),
    ("net/retry.py", "retry", dedent('''\
        def retry(call, attempts=3, delay=0.5):
            \"\"\"Call ``call`` until it succeeds.

            :param call: a function without arguments
            :param attempts: how many times to try
            :param delay: seconds to wait between tries
            :raises RuntimeError: when every try failed
            \"\"\"
            for n in range(attempts):
                try:
                    return call()
                except Exception:
                    time.sleep(delay)
            raise RuntimeError("all attempts failed")
        '''),
     FunctionNote("Retries an unreliable call until it succeeds.",
                  "the call, attempts and delay",
                  "the call's result, or RuntimeError",
                  "Loops over the attempts, sleeping after each failure.")),
)

# A longer function is shown up to here, then "...": its head says what it does, and the
# prompt keeps room for the note's fields within a 2k-token context.
MAX_SOURCE_TOKENS = 320
# Tokens each field of a note may decode: a clause each, the procedure a little longer.
FIELD_TOKENS: dict[str, int] = {"purpose": 28, "input": 20, "output": 20, "procedure": 32}


@dataclass
class NotesSettings:
    batch: int = 1  # functions sharing one context before it is cut back to the prefix
    model: str = ""  # recorded with each note; default: the session's model file name


@dataclass
class NotesRun:
    total: int = 0  # functions in the repository (or under the limit)
    up_to_date: int = 0  # already noted for their current text
    copied: int = 0  # taken from a note of the same text elsewhere
    stubs: int = 0  # bodies that do nothing: their deterministic note stands, no model asked
    noted: int = 0  # written by the model in this run
    failed: int = 0
    cancelled: bool = False
    seconds: float = 0.0  # model time of this run
    accounting: Accounting = field(default_factory=Accounting)

    @property
    def notes_per_minute(self) -> float:
        return 60 * self.noted / self.seconds if self.seconds else 0.0

    @property
    def decoded_per_note(self) -> float:
        return self.accounting.decoded / self.noted if self.noted else 0.0

    def as_row(self) -> dict[str, Any]:
        return {"total": self.total, "up_to_date": self.up_to_date, "copied": self.copied, "stubs": self.stubs,
                "noted": self.noted, "failed": self.failed, "cancelled": self.cancelled,
                "seconds": round(self.seconds, 1), "notes_per_minute": round(self.notes_per_minute, 1),
                "decoded_per_note": round(self.decoded_per_note, 1), **self.accounting.as_row()}


class NoteWriter:
    """Writes notes with one session: a cached prefix, then one chat turn per function."""

    def __init__(self, session: CompletionBackend, settings: NotesSettings | None = None) -> None:
        self.session = session
        self.settings = settings or NotesSettings()
        s = session
        self._start, self._end = s.special_token("<|im_start|>"), s.special_token("<|im_end|>")
        self._newline = s.tokenize_text("\n")
        system = s.tokenize_text(_SYSTEM + schema_source(FunctionMemory))
        prefix = s.prompt_start() + self._turn("system", system)
        for path, qualname, source, note in _EXAMPLES:
            prefix += self._turn("user", self._source_tokens(path, source))
            prefix += self._turn("assistant", s.tokenize_text(_answer(qualname, note)))
        self.prefix = prefix
        self.tokens = list(prefix)
        self._in_context = 0

    def _turn(self, role: str, content: list[int]) -> list[int]:
        return [self._start, *self.session.tokenize_text(role + "\n"), *content, self._end, *self._newline]

    def _source_tokens(self, path: str, source: str) -> list[int]:
        language = language_for_path(path) or ""
        head = self.session.tokenize_text(f"{path}\n```{language}\n")
        body = self.session.tokenize_text(source.rstrip("\n"))
        if len(body) > MAX_SOURCE_TOKENS:
            body = body[: MAX_SOURCE_TOKENS] + self.session.tokenize_text("\n    ...")
        return head + body + self.session.tokenize_text("\n```")

    def reset(self) -> None:
        self.tokens = list(self.prefix)
        self._in_context = 0

    def _room_for_one_more(self) -> bool:
        budget = (MAX_SOURCE_TOKENS + sum(FIELD_TOKENS.values()) + 96)
        return (self._in_context < self.settings.batch
                and len(self.tokens) + budget < self.session.n_ctx)

    def write(self, path: str, qualname: str, source: str, accounting: Accounting,
              cancelled: CancelCheck | None = None) -> FunctionNote | None:
        """The model's note for one function; None when cancelled."""
        if not self._room_for_one_more():
            self.reset()
        s = self.session
        tokens = self.tokens + [self._start, *s.tokenize_text("user\n"), *self._source_tokens(path, source),
                                self._end, *self._newline, self._start, *s.tokenize_text("assistant\n")]
        scaffold = "{" + json.dumps(qualname, ensure_ascii=False) + ': {"purpose": "'
        values: dict[str, str] = {}
        for i, name in enumerate(FIELDS):
            tokens += s.tokenize_text(scaffold)
            gen = s.generate(tokens, max_tokens=FIELD_TOKENS[name], stop=('"', "\n"),
                             cancelled=cancelled)
            accounting.add(gen.stats)
            if gen.stats.finish_reason == "cancelled":
                # The turn is incomplete: the next prompt starts again from the batch so far.
                return None
            values[name] = _clean(gen.text, gen.stats.finish_reason)
            kept, pending = _continuation(s, gen)
            tokens += kept
            scaffold = pending + ('", "' + FIELDS[i + 1] + '": "' if i + 1 < len(FIELDS) else '"}}')
        tokens += s.tokenize_text(scaffold) + [self._end, *self._newline]
        self.tokens = tokens
        self._in_context += 1
        return FunctionNote(**values)


def _answer(qualname: str, note: FunctionNote) -> str:
    return json.dumps({qualname: asdict(note)}, ensure_ascii=False)


def _continuation(session: CompletionBackend, gen: Generation) -> tuple[list[int], str]:
    """(tokens to keep as they were sampled, text to tokenize with the next scaffold).

    The sampled tokens are in the KV cache; re-tokenizing their text could split it
    differently and force a re-evaluation. Only the last token, which held the closing
    quote, is replaced by the text before the quote.
    """
    if gen.stats.finish_reason != "stop" or not gen.tokens:
        return list(gen.tokens), ""
    body = gen.tokens[:-1]
    kept_text = session.detokenize(body)
    if gen.text.startswith(kept_text):
        return body, gen.text[len(kept_text):]
    return [], gen.text


def _clean(raw: str, finish: str) -> str:
    try:
        text = json.loads('"' + raw + '"')
    except json.JSONDecodeError:
        text = raw
    text = " ".join(text.replace("\\", " ").split())
    if finish == "length" and " " in text and not text.endswith((".", ")", "]")):
        text = text.rsplit(" ", 1)[0] + " ..."  # cut at the cap: drop the half word
    return text


@dataclass(frozen=True)
class _Work:
    fragment: Fragment
    hash: str


def run_notes(
    session: CompletionBackend,
    index: RepoIndex,
    *,
    priority: Sequence[str] = (),
    limit: int | None = None,
    cancelled: CancelCheck | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_note: Callable[[str, str, FunctionNote], None] | None = None,
    store: NotesStore | None = None,
    settings: NotesSettings | None = None,
    state_cache: StateCache | None = None,
) -> NotesRun:
    """Note every function whose text has no note yet; returns counts and cost.

    `limit` caps how many notes the model writes in this run (the first in order).
    `state_cache` (prism_code.llm.StateCache) keeps the prompt prefix's KV state on disk
    across runs.
    """
    settings = settings or NotesSettings()
    own = store is None
    store = store or NotesStore.for_index(index)
    run = NotesRun()
    try:
        work = _plan(index, store, priority, run)
        if limit is not None:
            work = work[:max(limit, 0)]
        run.total = run.up_to_date + run.copied + run.stubs + len(work)
        if work:
            started = time.perf_counter()
            _write_all(session, index, store, work, run, settings, cancelled, progress, on_note, state_cache)
            run.seconds = time.perf_counter() - started
        if limit is None and not run.cancelled:
            # Every current function has its note now (or a copy made by _plan), so rows of
            # functions that are gone can go too.
            store.delete_missing({(f.path, f.qualname) for f in index.functions()})
    finally:
        if own:
            store.close()
    return run


def _write_all(session: CompletionBackend, index: RepoIndex, store: NotesStore, work: list[_Work], run: NotesRun,
               settings: NotesSettings, cancelled: CancelCheck | None,
               progress: Callable[[int, int], None] | None,
               on_note: Callable[[str, str, FunctionNote], None] | None,
               state_cache: StateCache | None) -> None:
    """The model writes each note; each is applied as a revision of its file's memory and committed."""
    model = settings.model or model_label(session)
    writer = NoteWriter(session, settings)
    # A remote engine keeps the prefix in its own prompt cache: no state files.
    if state_cache is not None and keeps_kv_state(session):
        state_cache.restore_longest_prefix(session, writer.prefix)
    memories: dict[str, dict[str, Any]] = {}  # path -> FunctionMemory of that file, as stored
    for n, item in enumerate(work):
        if cancelled is not None and cancelled():
            run.cancelled = True
            return
        fragment = item.fragment
        note = writer.write(fragment.path, fragment.qualname, _shown_source(index, fragment), run.accounting,
                            cancelled)
        if n == 0 and state_cache is not None and keeps_kv_state(session):
            _save_prefix(state_cache, session, writer)
        if note is None:
            run.cancelled = True
            return
        note = _fill_gaps(note, index, fragment)
        if fragment.path not in memories:
            stored = store.notes_in(fragment.path)
            memories[fragment.path] = {"functions": {q: asdict(v) for q, v in stored.items()}}
        memory = memories[fragment.path]
        op = "update" if fragment.qualname in memory["functions"] else "add"
        outcome = apply(memory, Revision(format_path(("functions", fragment.qualname)), op, asdict(note)),
                        FunctionMemory)
        if isinstance(outcome, Applied):
            store.put(fragment.path, fragment.qualname, item.hash, note, model)
            run.noted += 1
            if on_note is not None:
                on_note(fragment.path, fragment.qualname, note)
        else:
            log.warning("note for %s#%s rejected: %s", fragment.path, fragment.qualname, outcome.reason)
            run.failed += 1
        if progress is not None:
            progress(run.up_to_date + run.copied + run.stubs + n + 1, run.total)


def _plan(index: RepoIndex, store: NotesStore, priority: Sequence[str], run: NotesRun) -> list[_Work]:
    """Functions needing a note, in order; counts the ones that do not."""
    known = store.hashes()
    work = []
    for fragment in functions_in_order(index, priority):
        if is_stub(index, fragment.path, fragment.qualname):
            run.stubs += 1  # nothing to describe: a model would invent behaviour
            continue
        current = function_hash(index, fragment)
        stored = known.get((fragment.path, fragment.qualname))
        if stored == current:
            run.up_to_date += 1
            continue
        twin = store.by_hash(current)
        if twin is not None:
            store.put(fragment.path, fragment.qualname, current, twin.note, twin.model)
            run.copied += 1
            continue
        work.append(_Work(fragment, current))
    return work


def _shown_source(index: RepoIndex, fragment: Fragment) -> str:
    """The function's text; a method is shown under its class line so `self` has a type."""
    text = index.text(fragment)
    definition = index.definition(fragment.path, fragment.qualname)
    if definition is not None and definition.parent and fragment.path.endswith(".py"):
        return f"class {definition.parent.rsplit('.', 1)[-1]}:\n{text}"
    return text


def _fill_gaps(note: FunctionNote, index: RepoIndex, fragment: Fragment) -> FunctionNote:
    """Fields the model left empty take the deterministic note's value."""
    if all(getattr(note, f) for f in FIELDS):
        return note
    fallback = deterministic_note(index, fragment)
    return FunctionNote(**{f: getattr(note, f) or getattr(fallback, f) for f in FIELDS})


def _save_prefix(state_cache: StateCache, session: KVBackend, writer: NoteWriter) -> None:
    """Persist the prefix's KV state once it has been evaluated (a later run restores it).

    Saving cuts the cache back to the prefix, so the context is rebuilt from the prefix.
    """
    n = len(writer.prefix)
    if session.tokens[:n] == writer.prefix:
        state_cache.save_prefix(session, n)
        writer.reset()
