"""Dense vectors for functions: over their source and over their card, cached by text hash.

A function's card is the short description a search query most resembles: its name
split into words, where it lives, its signature and docstring (and, once the PRISM
memory has one, its note).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from prism_code.cancel import CancelCheck
from prism_code.fragments import Fragment
from prism_code.parse.model import Definition
from prism_code.retrieval.dense import Embedder
from prism_code.store.index_store import Store
from prism_code.workspace import content_hash

_BATCH = 64
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def name_words(name: str) -> str:
    return " ".join(w.lower() for w in _WORD.findall(name))


def card_text(fragment: Fragment, definition: Definition | None, note: str = "") -> str:
    name = fragment.qualname.rsplit(".", 1)[-1]
    parts = [name_words(name), f"{fragment.qualname} in {fragment.path}"]
    if definition is not None:
        parts.append(definition.signature)
        if definition.doc:
            parts.append(definition.doc)
    if note:
        parts.append(note)
    return "\n".join(parts)


def text_key(text: str) -> str:
    return content_hash(text.encode("utf-8"))


class VectorCache:
    """Looks vectors up in the store and embeds only what is missing, batch by batch."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    def missing(self, texts: Sequence[str]) -> list[str]:
        keys = {text_key(t): t for t in texts}
        have = self.store.embeddings(keys, self.embedder.model_id)
        return [t for k, t in keys.items() if k not in have]

    def fill(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None,
             cancelled: CancelCheck | None = None) -> int:
        """Embed the texts that have no vector yet; each batch is committed on its own.
        Returns how many were embedded here.

        One process embeds a workspace at a time: a second one (another `index`, the
        language server) waits, then finds the vectors stored and computes only what is
        still missing. `cancelled` also ends the wait (as Cancelled).
        """
        with self.store.embed_lock.held(cancelled=cancelled):
            todo = self.missing(texts)
            # Short texts first: batches of similar length waste less padding.
            todo.sort(key=len)
            for start in range(0, len(todo), _BATCH):
                if progress:
                    progress(start, len(todo))
                batch = todo[start:start + _BATCH]
                vectors = self.embedder.embed(batch, cancelled=cancelled)
                self.store.put_embeddings(self.embedder.model_id,
                                          {text_key(t): v for t, v in zip(batch, vectors)})
            if progress:
                progress(len(todo), len(todo))
            return len(todo)

    def available(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Text -> vector for those of `texts` that are embedded already."""
        keys = {text_key(t): t for t in texts}
        found = self.store.embeddings(list(keys), self.embedder.model_id)
        return {keys[k]: v for k, v in found.items()}

    def matrix(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors in text order, or None while any is still missing."""
        return self.matrix_by_keys([text_key(t) for t in texts])

    def matrix_by_keys(self, keys: Sequence[str]) -> np.ndarray | None:
        """Vectors in the order of their text keys, or None while any is still missing.
        Counted before read: while embedding is incomplete no vector is loaded at all."""
        if not self.store.has_embeddings(keys, self.embedder.model_id):
            return None
        found = self.store.embeddings(keys, self.embedder.model_id)
        if len(found) < len(set(keys)):
            return None
        if not keys:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys])
