"""Hover notes: what the symbol under the cursor is, and who calls it and what it calls.

The cursor is read against the text the user sees (an editor buffer may be ahead of the
index), parsed with tree-sitter; callers and callees come from the code graph's resolved
calls (prism_code.call_resolution), and a method's hover also says what it overrides and
what overrides it. A definition is recognised where it is defined and at any call site
that resolves: the buffer's own parse is resolved against the indexed files, so a call
still resolves while the buffer is ahead of the index. A function's hover carries its PRISM
memory note (purpose, input, output, procedure): the model's note when one was written for
the function's current text, else the deterministic note made from the parse and the graph,
and it says which. An import
of a workspace module, or the first line of a file, shows the module's Chain-of-Key
summary once one exists, else a summary made without the model.

The memory modules are imported where they are used, not at start-up. They no longer
load llama.cpp (what they share with the runtime is in prism_code.llm.types).

Parsing and extracting a 5 MB buffer takes ~3 s, so the parsed text is kept
(`ParsedBuffers`): hovers on an unchanged buffer parse it once, and an edited buffer is
reparsed incrementally from its previous tree. The caller owns the cache, one per workspace
(paths are workspace-relative: two folders may both hold `src/main.py`); without one a
call parses the text for itself.
"""

from __future__ import annotations

import re
import threading
from collections import ChainMap, OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import tree_sitter
from tree_sitter import Node

from prism_code.graph import CodeGraph, call_links, def_node
from prism_code.index import RepoIndex
from prism_code.parse import language_for_path
from prism_code.parse.calls import call_target
from prism_code.parse.extract import extract
from prism_code.parse.languages import language_for_source, parser
from prism_code.parse.model import Definition, DefinitionKind, ParsedFile
from prism_code.parse.specs import language_query

if TYPE_CHECKING:
    from prism_code.memory.deterministic_notes import NoteSource
    from prism_code.memory.notes_store import NotesStore

# Hover lists this many callers and callees by name; the counts are always complete.
SHOWN_LINKS = 5

# Parsed buffers kept for hovers: a tree takes ~30 bytes per byte of text (160 MB for a
# 5 MB file), so older ones are kept only while they add up to ~60 MB of trees (the server
# stays under 450 MiB without the model). The most recent one is kept whatever its size.
KEPT_BUFFERS = 8
KEPT_BUFFER_BYTES = 2_000_000

# Node types that name something; what hover can be asked about.
_NAME_TYPES = frozenset({
    "identifier", "property_identifier", "private_property_identifier", "field_identifier",
    "type_identifier", "constant", "name",
})


FoundAt = Literal["definition", "call"]  # the cursor is on the definition, or on a call to it


@dataclass(frozen=True)
class SymbolInfo:
    """A definition found under the cursor, directly or through a call the graph resolves."""

    name: str
    qualname: str
    kind: DefinitionKind
    path: str  # workspace-relative file of the definition
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str
    doc: str
    node: str  # its graph node id
    found_at: FoundAt
    # Where the cursor's identifier is: 1-based line, 0-based character columns [start, end).
    line: int
    start_col: int
    end_col: int


@dataclass
class HoverNote:
    symbol: SymbolInfo
    summary: str  # first paragraph of the docstring or leading comment
    callers: list[str]  # every caller, as "qualname (path:line)", sorted
    callees: list[str]
    overrides: list[str] = field(default_factory=list)  # what this method overrides
    overridden_by: list[str] = field(default_factory=list)  # methods of subclasses overriding it
    # The PRISM memory note by field (purpose, input, output, procedure), when there is one.
    note: dict[str, str] = field(default_factory=dict)
    note_source: NoteSource | Literal[""] = ""  # "" without a note

    @property
    def span(self) -> tuple[int, int, int]:
        """(1-based line, 0-based start and end character) of the hovered name."""
        return self.symbol.line, self.symbol.start_col, self.symbol.end_col

    def markdown(self) -> str:
        s = self.symbol
        fence = _fence_language(s.path)
        parts = [f"```{fence}\n{s.signature}\n```"]
        # A deterministic purpose is the docstring's first sentence: no need to say it twice.
        if self.summary and not (self.note.get("purpose") and
                                 self.summary.startswith(self.note["purpose"].rstrip(". "))):
            parts.append(self.summary)
        if self.note:
            parts.append(_NOTE_HEADINGS.get(self.note_source, "*Memory note*"))
        parts += [f"**{key}**: {value}" for key, value in self.note.items() if value]
        parts.append(f"{s.kind} `{s.qualname}`, defined in `{s.path}:{s.start_line}`")
        parts.append(_link_list("callers", self.callers))
        parts.append(_link_list("callees", self.callees))
        if self.overrides:
            parts.append(_link_list("overrides", self.overrides))
        if self.overridden_by:
            parts.append(_link_list("overridden by", self.overridden_by))
        return "\n\n".join(parts)


_NOTE_HEADINGS = {
    "llm": "*Memory note (written by the model for this version of the function)*",
    "deterministic": "*Memory note (from the signature, docstring and call graph; the model "
                     "has not noted this version yet)*",
    "stub": "*Memory note (from the signature, docstring and call graph: the body does nothing, "
            "so the model is not asked to describe it)*",
}


@dataclass(frozen=True)
class ModuleHover:
    """A module's summary (ModuleSummary as JSON: purpose, key_functions, depends_on)."""

    path: str  # workspace-relative file of the module
    summary: dict[str, Any]
    source: NoteSource  # "llm": a Chain-of-Key summary
    span: tuple[int, int, int]  # (1-based line, 0-based start and end character) hovered

    def markdown(self) -> str:
        how = ("Chain-of-Key summary" if self.source == "llm"
               else "summary from the docstring, imports and notes; no model summary yet")
        parts = [f"module `{self.path}` *({how})*"]
        if self.summary.get("purpose"):
            parts.append(str(self.summary["purpose"]))
        functions = self.summary.get("key_functions") or {}
        if functions:
            parts.append("**key functions**:\n" + "\n".join(
                f"- `{name}`: {role}" if role else f"- `{name}`" for name, role in functions.items()))
        depends = self.summary.get("depends_on") or []
        if depends:
            parts.append("**depends on**: " + ", ".join(f"`{d}`" for d in depends))
        return "\n\n".join(parts)


def hover_at(index: RepoIndex, path: str, line: int, col: int, text: str | None = None,
             store: NotesStore | None = None,
             buffers: ParsedBuffers | None = None) -> HoverNote | ModuleHover | None:
    """What a hover at (1-based `line`, 0-based character `col`) shows: a function, class or
    method with its memory note, else the module an import names (or, on line 1, this file).

    `store` is the workspace's notes (NotesStore); None opens the index's own for the call.
    `buffers` keeps the parsed text between hovers (the workspace's); None parses afresh.
    """
    symbol = symbol_at(index, path, line, col, text, buffers)
    if symbol is not None:
        return describe(index, symbol, store)
    return module_at(index, path, line, col, text, store, buffers)


def symbol_at(index: RepoIndex, path: str, line: int, col: int, text: str | None = None,
              buffers: ParsedBuffers | None = None) -> SymbolInfo | None:
    """The definition named by the identifier at (1-based `line`, 0-based character `col`).

    `text` is the file as the editor holds it (unsaved edits count); without it the
    indexed text is used. None when the language is unsupported, the cursor is not on a
    name, or the name is neither a definition nor a call the graph resolves.
    """
    buffer = _parsed_buffer(index, path, line, col, text, buffers)
    if buffer is None or buffer.ident is None:
        return None
    ident, source = buffer.ident, buffer.source
    pf = buffer.parsed.file()
    name = (ident.text or b"").decode("utf-8", "replace")
    span = _span(buffer.lines, ident)
    own = _defined_here(pf, source, ident, name)
    if own is not None:
        return _symbol(path, own, "definition", span)
    callee = _called_name(buffer.tree, buffer.language, source, ident, name)
    called = call_target(callee, source) if callee is not None else None
    if callee is None or called is None:
        return None
    with index.lock:
        target = _resolve(index.graph, pf, callee.start_point[0] + 1, name, called[1])
        if target is None:
            return None
        data = index.graph.g.nodes[target]
        definition = index.definition(data["path"], data["qualname"])
    if definition is None:
        return None
    return _symbol(data["path"], definition, "call", span)


def describe(index: RepoIndex, symbol: SymbolInfo, store: NotesStore | None = None) -> HoverNote:
    """The hover note: docstring summary, memory note, the resolved callers and callees, and
    the overrides a method takes part in."""
    with index.lock:
        graph = index.graph
        # Module-level code is named by the line of its call: "module code (path:48)".
        callers = {_describe_node(graph, c.caller, c.line) for c in graph.calls_to(symbol.node)}
        callees = {_describe_node(graph, n) for n in call_links(graph, symbol.node)[1]}
        note = HoverNote(symbol, summary(symbol.doc), sorted(callers), sorted(callees),
                         [_describe_node(graph, n) for n in graph.overridden(symbol.node)],
                         [_describe_node(graph, n) for n in graph.overrides(symbol.node)])
    if symbol.kind in ("function", "method"):
        from dataclasses import asdict

        from prism_code.memory.deterministic_notes import notes_for

        # A function only in an unsaved buffer is not indexed yet: it has no note.
        lookup = notes_for(index, symbol.path, symbol.qualname, store)
        if lookup is not None:
            note.note, note.note_source = asdict(lookup.note), lookup.source
    return note


def module_at(index: RepoIndex, path: str, line: int, col: int, text: str | None = None,
              store: NotesStore | None = None,
              buffers: ParsedBuffers | None = None) -> ModuleHover | None:
    """The module summary a hover shows: of the workspace module an import at the cursor
    names, or of this file when the cursor is on its first line; None otherwise."""
    buffer = _parsed_buffer(index, path, line, col, text, buffers)
    if buffer is None:
        return None
    ident, lines = buffer.ident, buffer.lines
    span = _span(lines, ident) if ident is not None else (line, 0, len(lines[line - 1]))
    target = _imported_module(index, buffer.parsed.file(), ident, line)
    if target is None and line == 1 and path in index.lines:
        target = path
    if target is None:
        return None
    from prism_code.memory.cok import module_summary

    lookup = module_summary(index, target, store)
    return ModuleHover(target, lookup.summary, lookup.source, span)


def _imported_module(index: RepoIndex, pf: ParsedFile, ident: Node | None, line: int) -> str | None:
    """The workspace file an import on this line refers to, when the cursor is on it."""
    if ident is None:
        return None
    imports = [imp for imp in pf.imports if imp.line == line]
    if not imports:
        return None
    with index.lock:
        resolver = index.graph.resolver
        for imp in imports:
            targets = resolver.resolve(imp, pf.path, pf.language)
            if targets:
                return targets[0]
    return None


def summary(doc: str) -> str:
    """The first paragraph, joined onto one line."""
    paragraph = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0] if doc.strip() else ""
    return " ".join(paragraph.split())


# ---- parsed buffers -----------------------------------------------------------------------


class ParsedText:
    """A file's text, its lines and UTF-8 source, its tree, and (made on first use and
    kept) what extract() finds in it."""

    def __init__(self, path: str, language: str, text: str,
                 previous: ParsedText | None = None) -> None:
        self.path, self.language, self.text = path, language, text
        self.lines = text.replace("\r\n", "\n").split("\n")
        self.source = "\n".join(self.lines).encode("utf-8")
        if previous is None:
            self.tree = parser(language).parse(self.source)
        else:
            old = previous.tree.copy()  # hovers still reading the previous tree keep it
            _edit(old, previous.source, self.source)
            self.tree = parser(language).parse(self.source, old)
        self._file: ParsedFile | None = None
        self._lock = threading.Lock()

    def file(self) -> ParsedFile:
        with self._lock:
            if self._file is None:
                self._file = extract(self.path, self.language, self.source, self.tree)
            return self._file


class ParsedBuffers:
    """The texts hovers parsed, most recent last, so that hovering again reuses the parse.

    A hover on the same path and text reuses its ParsedText; other text of a kept path
    (the buffer was edited) is reparsed incrementally: the old tree is edited where the
    texts differ and tree-sitter reuses everything outside that span.
    """

    def __init__(self, kept: int = KEPT_BUFFERS, kept_bytes: int = KEPT_BUFFER_BYTES) -> None:
        self.kept, self.kept_bytes = kept, kept_bytes
        self._texts: OrderedDict[str, ParsedText] = OrderedDict()
        # One parse at a time: a second hover on text being parsed waits and reuses it.
        self._lock = threading.Lock()
        self.parsed = self.reparsed = self.reused = 0

    def get(self, path: str, language: str, text: str) -> ParsedText:
        with self._lock:
            kept = self._texts.get(path)
            if kept is not None and kept.language == language and (
                    kept.text is text or kept.text == text):
                self.reused += 1
            else:
                previous = kept if kept is not None and kept.language == language else None
                kept = self._texts[path] = ParsedText(path, language, text, previous=previous)
                if previous is None:
                    self.parsed += 1
                else:
                    self.reparsed += 1
            self._texts.move_to_end(path)
            self._evict()
            return kept

    def discard(self, path: str) -> None:
        with self._lock:
            self._texts.pop(path, None)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"parsed": self.parsed, "reparsed": self.reparsed, "reused": self.reused,
                    "kept": len(self._texts),
                    "keptBytes": sum(len(t.source) for t in self._texts.values())}

    def _evict(self) -> None:
        while len(self._texts) > 1 and (
                len(self._texts) > self.kept
                or sum(len(t.source) for t in self._texts.values()) > self.kept_bytes):
            self._texts.popitem(last=False)


def _edit(tree: tree_sitter.Tree, old: bytes, new: bytes) -> None:
    """Tell `tree` (of `old`) that `new` differs from it in one span: after the common
    prefix and before the common suffix."""
    start = _common_prefix(old, new)
    tail = _common_prefix(old[start:][::-1], new[start:][::-1])
    tree.edit(start_byte=start, old_end_byte=len(old) - tail, new_end_byte=len(new) - tail,
              start_point=_point(old, start), old_end_point=_point(old, len(old) - tail),
              new_end_point=_point(new, len(new) - tail))


def _common_prefix(a: bytes, b: bytes, block: int = 1 << 16) -> int:
    """How many leading bytes `a` and `b` share (compared a block at a time, in C)."""
    n, start = min(len(a), len(b)), 0
    while start < n and a[start:start + block] == b[start:start + block]:
        start += block
    if start >= n:
        return n
    lo, hi = start, min(start + block, n)  # the first difference is in [lo, hi)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[lo:mid + 1] == b[lo:mid + 1]:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _point(source: bytes, byte: int) -> tuple[int, int]:
    """tree-sitter's (row, byte column) of a byte offset."""
    row = source.count(b"\n", 0, byte)
    return row, byte - (source.rfind(b"\n", 0, byte) + 1)


# ---- the cursor ---------------------------------------------------------------------------


@dataclass
class _Buffer:
    parsed: ParsedText
    ident: Node | None  # the identifier under the cursor

    @property
    def language(self) -> str:
        return self.parsed.language

    @property
    def lines(self) -> list[str]:
        return self.parsed.lines

    @property
    def source(self) -> bytes:
        return self.parsed.source

    @property
    def tree(self) -> tree_sitter.Tree:
        return self.parsed.tree


def _parsed_buffer(index: RepoIndex, path: str, line: int, col: int, text: str | None,
                   buffers: ParsedBuffers | None = None) -> _Buffer | None:
    """The file as the editor holds it (else as indexed), parsed; None for an unsupported
    language or a position outside the text."""
    language = language_for_path(path)
    if language is None:
        return None
    if text is None:
        text = "\n".join(index.lines.get(path, []))
    language = language_for_source(path, text.encode("utf-8")) or language  # a C++ .h is cpp, as indexed
    parsed = (buffers if buffers is not None else ParsedBuffers()).get(path, language, text)
    if not 1 <= line <= len(parsed.lines) or col < 0:
        return None
    return _Buffer(parsed, _identifier_at(parsed.tree, parsed.lines, line, col))


def _identifier_at(tree: tree_sitter.Tree, lines: list[str], line: int, col: int) -> Node | None:
    text = lines[line - 1]
    # A cursor just after a name (`name|(`) still means that name.
    for c in (col, col - 1):
        if not 0 <= c < len(text):
            continue
        byte = len(text[:c].encode("utf-8"))
        point = (line - 1, byte)
        node = tree.root_node.descendant_for_point_range(point, point)
        if node is not None and node.type in _NAME_TYPES:
            return node
    return None


def _span(lines: list[str], ident: Node) -> tuple[int, int, int]:
    row, start_byte = ident.start_point
    raw = lines[row].encode("utf-8")
    start = len(raw[:start_byte].decode("utf-8", "replace"))
    end = start + len((ident.text or b"").decode("utf-8", "replace"))
    return row + 1, start, end


def _defined_here(pf: ParsedFile, source: bytes, ident: Node, name: str) -> Definition | None:
    """The definition whose name this identifier is: its first mention inside the definition."""
    word = re.compile(rb"(?<![\w$])" + re.escape(name.encode("utf-8")) + rb"(?![\w$])")
    for d in sorted(pf.definitions, key=lambda d: d.start_byte, reverse=True):
        if d.name != name or not d.start_byte <= ident.start_byte < d.end_byte:
            continue
        first = word.search(source, d.start_byte, d.end_byte)
        if first is not None and first.start() == ident.start_byte:
            return d
    return None


def _called_name(tree: tree_sitter.Tree, language: str, source: bytes, ident: Node,
                 name: str) -> Node | None:
    """The innermost call whose called name is this identifier, if any."""
    cursor = tree_sitter.QueryCursor(language_query(language))
    cursor.set_byte_range(ident.start_byte, ident.end_byte)
    callees = [n for n in cursor.captures(tree.root_node).get("callee", ())
               if n.start_byte <= ident.start_byte and ident.end_byte <= n.end_byte]
    for callee in sorted(callees, key=lambda n: n.end_byte - n.start_byte):
        target = call_target(callee, source)
        if target is not None and target[0] == name:
            return callee
    return None


def _resolve(graph: CodeGraph, pf: ParsedFile, line: int, name: str, receiver: str | None) -> str | None:
    """The definition node the call `receiver.name(...)` on this line of the buffer calls.

    The buffer's own parse is resolved against the indexed files: its lines and its local
    names are the ones the user sees, even before the index has caught up with them."""
    sites = [c for c in pf.calls if c.line == line and c.name == name and c.receiver == receiver]
    if not sites:
        return None
    resolver = graph.call_resolver(ChainMap({pf.path: pf}, graph.parsed))
    for site in sites:
        for path, qualname in resolver.resolve_call(pf, site):
            node = def_node(path, qualname)
            if node in graph.g:
                return node
    return None


def _describe_node(graph: CodeGraph, node: str, line: int | None = None) -> str:
    data = graph.g.nodes[node]
    where = f"{data['path']}:{line if line is not None and 'qualname' not in data else data.get('start_line', 1)}"
    if "qualname" in data:
        return f"{data['qualname']} ({where})"
    return f"module code ({where})"


def _symbol(path: str, d: Definition, found_at: FoundAt, span: tuple[int, int, int]) -> SymbolInfo:
    line, start, end = span
    return SymbolInfo(d.name, d.qualname, d.kind, path, d.start_line, d.end_line, d.signature,
                      d.doc, def_node(path, d.qualname), found_at, line, start, end)


def _fence_language(path: str) -> str:
    language = language_for_path(path) or ""
    return {"tsx": "typescript"}.get(language, language)


def _link_list(label: str, names: list[str]) -> str:
    if not names:
        return f"{label}: 0"
    shown = ", ".join(f"`{n}`" for n in names[:SHOWN_LINKS])
    more = f" and {len(names) - SHOWN_LINKS} more" if len(names) > SHOWN_LINKS else ""
    return f"{label}: {len(names)} ({shown}{more})"
