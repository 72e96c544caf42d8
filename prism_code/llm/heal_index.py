"""Which vocabulary tokens token healing's one-token step must ask the grammar about.

Token healing (`LlamaSession.heal`) constrains the first generated token to begin with the
text the prompt stopped inside of, or to be a beginning of it. llama.cpp's grammar sampler
checks every candidate it is handed; `HealIndex` narrows the candidates by bisection over the
sorted token pieces so the grammar sees ~2,000 tokens instead of the whole vocabulary.
"""

from __future__ import annotations

import bisect
import ctypes
from dataclasses import dataclass

import llama_cpp
import numpy as np


@dataclass(frozen=True)
class HealCandidates:
    """Sorted token ids: those a `starts_with` grammar surely admits first, and those it may."""

    certain: np.ndarray
    doubtful: np.ndarray


class HealIndex:
    """Which tokens a `starts_with(text)` grammar admits as its first token, found by bisection.

    llama.cpp's grammar sampler reads every candidate's piece (its bytes, control tokens
    spelled out) and decodes it as UTF-8, so asked about the whole vocabulary it took 19 ms a
    token on a busy core of the test machine. A piece that is valid UTF-8, holds no NUL byte, is not
    empty and is no end-of-generation token decodes to exactly its code points: the grammar
    admits it when it begins with the text or is a beginning of it (the literal, then any
    character but NUL), and otherwise rejects it where its code points and the text's first
    differ. The other pieces (~2,000) are doubtful: the grammar itself decides about them.
    """

    def __init__(self, llm: llama_cpp.Llama) -> None:
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        buf = ctypes.create_string_buffer(256)
        pieces: list[bytes] = []
        for token in range(llama_cpp.llama_vocab_n_tokens(vocab)):
            size = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
            if size < 0:  # longer than the buffer: -size is its length
                buf = ctypes.create_string_buffer(-size)
                size = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
            pieces.append(buf.raw[:size])
        odd = np.array([not _plain_utf8(piece) or bool(llama_cpp.llama_vocab_is_eog(vocab, token))
                        for token, piece in enumerate(pieces)])
        self._doubtful = np.flatnonzero(odd).astype(np.int32)
        self._odd = odd
        self._order = np.array(sorted(range(len(pieces)), key=pieces.__getitem__), dtype=np.int32)
        self._sorted = [pieces[i] for i in self._order]

    def candidates(self, text: str) -> HealCandidates | None:
        """None when the text is one the argument does not cover (let the grammar see all)."""
        if not text or "\x00" in text:
            return None  # a NUL ends the grammar's string in C: let it do whatever it does
        try:
            head = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        lo = bisect.bisect_left(self._sorted, head)
        after = _after_prefix(head)
        hi = len(self._sorted) if after is None else bisect.bisect_left(self._sorted, after, lo)
        found = [self._order[lo:hi]]  # pieces that begin with the text
        for j in range(1, len(head)):  # pieces that are a beginning of it
            piece = head[:j]
            at = bisect.bisect_left(self._sorted, piece)
            while at < len(self._sorted) and self._sorted[at] == piece:
                found.append(self._order[at:at + 1])
                at += 1
        ids = np.unique(np.concatenate(found))
        return HealCandidates(ids[~self._odd[ids]], self._doubtful)


def _plain_utf8(piece: bytes) -> bool:
    """Decodes the same in llama.cpp's grammar as in Python: valid UTF-8, no NUL, not empty."""
    if not piece or b"\x00" in piece:
        return False
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _after_prefix(prefix: bytes) -> bytes | None:
    """The least byte string above every string that begins with `prefix`; None if there is none."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])
