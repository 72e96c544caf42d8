"""Deterministic function notes: what the parse and the graph know, before any model runs.

Every function of the PRISM function memory (`FunctionMemory{functions: dict[str,
FunctionNote]}`, PRISM App. A, Listing 2) has a note at once: the signature's parameters
and return annotation, the docstring's first sentence, callers and callees (the graph's
resolved calls). Hovers and search never wait for the model; `notes_for` prefers the
model's note (prism_code.memory.note_writer) once one was written for the function's
current text.

A function whose body does nothing (abstract, `pass`, `...`, `raise NotImplementedError`,
a TypeScript abstract or interface method) has no behaviour for the model to describe, and
a model asked anyway invents one. Its deterministic note says so and names the methods
that implement it; that note is final (source "stub"): the model pass skips it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from prism_code.embeddings import name_words
from prism_code.fragments import Fragment, function_key
from prism_code.graph import call_links, def_node
from prism_code.index import RepoIndex
from prism_code.memory.code_schemas import FunctionNote
from prism_code.memory.notes_store import NotesStore, function_hash

# A model's note, one made from the parse and the graph, or that one for a stub (final).
NoteSource = Literal["llm", "deterministic", "stub"]
LLM: Final = "llm"
DETERMINISTIC: Final = "deterministic"
STUB: Final = "stub"
FIELDS = ("purpose", "input", "output", "procedure")


@dataclass(frozen=True)
class NoteLookup:
    note: FunctionNote
    source: NoteSource


def _first_sentence(doc: str, max_words: int = 30) -> str:
    paragraph = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0] if doc.strip() else ""
    text = " ".join(paragraph.split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = match.group(1) if match else text
    words = sentence.split()
    return " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "")


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket group opening at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{<":
            depth += 1
        elif text[i] in ")]}>" and not (text[i] == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def signature_parts(signature: str) -> tuple[list[str], str]:
    """(parameters without self/cls/this, return annotation or "") read off a signature line."""
    open_at = signature.find("(")
    if open_at < 0:
        return [], ""
    end = _balanced(signature, open_at)
    if signature.lstrip().startswith("func (") and "(" in signature[end:]:
        open_at = signature.index("(", end)  # a Go method: skip the receiver
        end = _balanced(signature, open_at)
    inner = signature[open_at + 1:end - 1]
    params, depth, current = [], 0, ""
    for c in inner:
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        if c == "," and depth == 0:
            params.append(current.strip())
            current = ""
        else:
            current += c
    if current.strip():
        params.append(current.strip())
    receivers = ("self", "cls", "this", "mut self")
    params = [p for p in params if p.split(":")[0].strip().lstrip("&*") not in receivers]
    rest = signature[end:].strip()
    returns = ""
    if rest.startswith("->"):
        returns = rest[2:].strip()
    elif rest.startswith(":"):
        returns = rest[1:].strip()
    elif rest and not rest.startswith(("{", "throws", "const", "override", "where")):
        returns = rest  # Go: func f(x int) (int, error)
    return params, returns.rstrip(":{ ").strip()


def deterministic_note(index: RepoIndex, fragment: Fragment) -> FunctionNote:
    """A note from what the parse and the graph know, available before any model runs."""
    definition = index.definition(fragment.path, fragment.qualname)
    name = fragment.qualname.rsplit(".", 1)[-1]
    signature = definition.signature if definition else ""
    doc = definition.doc if definition else ""
    kind = definition.kind if definition else "function"
    owner = f" of {definition.parent}" if definition and definition.parent else ""
    purpose = _first_sentence(doc) or f"{name_words(name).capitalize() or name} ({kind}{owner})."
    params, returns = signature_parts(signature)
    node = def_node(fragment.path, fragment.qualname)
    with index.lock:
        callers, callees = call_links(index.graph, node)
        caller_names = sorted({index.graph.g.nodes[n].get("qualname", "module code") for n in callers})
        callee_names = sorted({index.graph.g.nodes[n].get("qualname", "?") for n in callees})
        implementations = _names(index, index.graph.overrides(node))
    procedure = []
    if definition is not None and definition.stub:
        procedure.append("Does nothing itself (an abstract or placeholder body); "
                         + ("implemented by " + _first_six(implementations) if implementations
                            else "nothing in the repository implements it"))
    if callee_names:
        procedure.append("Calls " + _first_six(callee_names))
    if caller_names:
        procedure.append("called by " + _first_six(caller_names))
    return FunctionNote(
        purpose=purpose,
        input=", ".join(params) if params else "no parameters",
        output=f"returns {returns}" if returns else "",
        procedure=("; ".join(procedure) + ".") if procedure else "",
    )


def _names(index: RepoIndex, nodes: list[str]) -> list[str]:
    """Qualnames of definition nodes, with the file when two share a qualname."""
    data = [index.graph.g.nodes[n] for n in nodes if n in index.graph.g]
    counts: dict[str, int] = {}
    for d in data:
        counts[d["qualname"]] = counts.get(d["qualname"], 0) + 1
    return sorted(d["qualname"] if counts[d["qualname"]] == 1 else f"{d['qualname']} ({d['path']})" for d in data)


def _first_six(names: list[str]) -> str:
    return ", ".join(names[:6]) + ("" if len(names) <= 6 else ", ...")


def is_stub(index: RepoIndex, path: str, qualname: str) -> bool:
    """Whether the function's body does nothing (its note is the deterministic one, for good)."""
    definition = index.definition(path, qualname)
    return definition is not None and definition.stub


def notes_for(index: RepoIndex, path: str, qualname: str,
              store: NotesStore | None = None) -> NoteLookup | None:
    """The best note for a function now: the LLM's if it was written for this text, else the
    deterministic one; for a stub always the deterministic one. None when the index has no
    such function."""
    fragment = index.fragments.get(function_key(path, qualname))
    if fragment is None:
        return None
    if is_stub(index, path, qualname):
        return NoteLookup(deterministic_note(index, fragment), STUB)
    own = store is None
    store = store or NotesStore.for_index(index)
    try:
        stored = store.get(path, qualname)
        current = function_hash(index, fragment)
        if stored is not None and stored.hash == current:
            return NoteLookup(stored.note, LLM)
        moved = store.by_hash(current)
        if moved is not None:
            return NoteLookup(moved.note, LLM)
    finally:
        if own:
            store.close()
    return NoteLookup(deterministic_note(index, fragment), DETERMINISTIC)
