"""What the PRISM pass shows the model of each candidate, in the room its window leaves.

A candidate is shown as its card (`### key`, its place, its signature and its note) or as
the head of its body. A header can be thousands of tokens: fastapi's `FastAPI.__init__`
takes every option as `Annotated[..., Doc("...")]`, 4,799 tokens of signature, and its
deterministic note lists the same parameters again; on semble's fastapi question "how are
routes registered" one step's prompt reached 11,415 tokens against the 0.5B's 4,096. So a
card shows the head of each part, and a step's cards are fitted to the room the pass's
prompt leaves (`memory.encoding.PromptBuilder.chunk_room`): the lowest-ranked candidate's
text is cut first, then dropped. Token counts are the model's own tokenizer's, as every
other prompt budget of the tasks (find_wim, find_long_context, fim).
"""

from __future__ import annotations

from dataclasses import dataclass

from prism_code.index import RepoIndex
from prism_code.memory.deterministic_notes import notes_for
from prism_code.memory.notes_store import NotesStore
from prism_code.tasks.fim import Tokenizer
from prism_code.tasks.find_function import FoundFunction
from prism_code.tasks.find_settings import View
from prism_code.tasks.query_likelihood import body_text
from prism_code.tasks.signature_pmi import MAX_SIGNATURE_TOKENS

# A card's signature is shown to its first MAX_SIGNATURE_TOKENS (96) tokens, the head the
# signature PMI scores: the name and the first parameters say what it is. Its note to the first
# NOTE_TOKENS: the purpose (the docstring's first sentence, at most 30 words) comes first.
# On semble's sample a card was 20 to 100 tokens (the 4 cards of a query 77 to 409 tokens, 35
# queries of the branch's v2 outcomes), so these caps only cut headers like fastapi's.
NOTE_TOKENS = 128
CUT_MARK = " ..."  # ends a part shown to its head


@dataclass(frozen=True)
class CandidateText:
    """One of retrieval's results as the PRISM pass shows it to the model: a name and a text."""

    key: str  # the name the model sees and writes (qualname; path-qualified when ambiguous)
    found: FoundFunction
    text: str  # what the model is shown for it


def head_of(tokens: Tokenizer, text: str, limit: int) -> str:
    """`text` to its first `limit` tokens, marked as cut when it was longer."""
    ids = tokens.tokenize_text(text)
    if len(ids) <= limit:
        return text
    return tokens.detokenize(ids[:limit]).rstrip() + CUT_MARK


def candidate_text(index: RepoIndex, found: FoundFunction, key: str, view: View,
                   store: NotesStore | None, max_body_lines: int, tokens: Tokenizer | None = None) -> str:
    """The candidate as the pass shows it; with `tokens`, a card's signature and note are shown
    to their heads (MAX_SIGNATURE_TOKENS, NOTE_TOKENS)."""
    if view == "bodies":
        return body_text(index, found, key, max_body_lines)
    definition = index.definition(found.path, found.qualname)
    signature = definition.signature.strip() if definition and definition.signature else found.qualname
    lookup = notes_for(index, found.path, found.qualname, store)
    note = lookup.note.text() if lookup is not None else ""
    if tokens is not None:
        signature = head_of(tokens, signature, MAX_SIGNATURE_TOKENS)
        note = head_of(tokens, note, NOTE_TOKENS) if note else ""
    return f"### {key}\n# {found.path}:{found.start_line}\n" + signature + "\n" + (f"Note: {note}\n" if note else "")


def fit_texts(tokens: Tokenizer, texts: list[str], room: int) -> str:
    """`texts` (best first) joined by newlines in at most `room` tokens: texts are kept whole
    while they fit, the first that does not is shown to its head, and the ones after it are dropped."""
    joined = "\n".join(texts)
    if len(tokens.tokenize_text(joined)) <= room:
        return joined
    kept: list[str] = []
    used = 0
    for text in texts:
        cost = len(tokens.tokenize_text(text)) + 1  # its newline
        if used + cost <= room:
            kept.append(text)
            used += cost
            continue
        left = room - used - len(tokens.tokenize_text(CUT_MARK)) - 1
        if left > 0:
            kept.append(head_of(tokens, text, left))
        break
    return "\n".join(kept)
