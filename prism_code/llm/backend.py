"""What tasks need from a model backend: a local llama.cpp session or a remote server.

`LlamaSession` (runtime.py) and `RemoteSession` (remote.py) both satisfy this protocol
structurally; neither inherits from it. Prompts are token lists built with
`tokenize_text` (special tokens disabled) plus `special_token` markers, so a backend must
tokenize exactly as the model that answers does.

State files (`StateCache`) need `export_state` / `import_state`, which only a local
session has; they are deliberately not part of this protocol. `ScoringBackend` adds what
the likelihood rerank reads (log-probabilities of given tokens): every task but
completion takes one, so the same task code runs on either backend.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeGuard

from prism_code.cancel import CancelCheck

from .types import Generation, PrefillStats, Scored, SessionCounters


class BackendError(RuntimeError):
    """A model backend failed in a way the user must hear about (server down, timeout)."""


if TYPE_CHECKING:
    # Typing only: importing llama_cpp loads llama.cpp's shared library.
    from llama_cpp.llama_grammar import LlamaGrammar

    from .state_cache import KVStateSession


class CompletionBackend(Protocol):
    @property
    def n_ctx(self) -> int: ...

    @property
    def tokens(self) -> list[int]:
        """The tokens the backend holds cached (local) or last sent (remote); read-only."""
        ...

    @property
    def counters(self) -> SessionCounters: ...

    @property
    def lock(self) -> threading.RLock: ...

    @property
    def model_sha256(self) -> str: ...

    def tokenize_text(self, text: str, special: bool = False) -> list[int]: ...

    def special_token(self, name: str) -> int: ...

    def has_special_token(self, name: str) -> bool: ...

    def prompt_start(self) -> list[int]: ...

    def chatml(self, messages: Iterable[tuple[str, str]], add_generation_prompt: bool = True) -> list[int]: ...

    def detokenize(self, tokens: Sequence[int]) -> str: ...

    def prefill(self, tokens: Sequence[int], cancelled: CancelCheck | None = None) -> PrefillStats: ...

    def generate(
        self,
        prompt_tokens: Sequence[int],
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        grammar: LlamaGrammar | None = None,
        temperature: float = 0.0,
        cancelled: CancelCheck | None = None,
        seed: int | None = None,
    ) -> Generation: ...

    def heal(self, prompt_tokens: Sequence[int], text: str,
             cancelled: CancelCheck | None = None) -> Generation:
        """The one token after `prompt_tokens` whose text begins with `text` or is a beginning
        of it (token healing): `generate(..., max_tokens=1, grammar=starts_with(text))`."""
        ...

    def prepare_heal(self) -> None:
        """Build what `heal` needs ahead of the first keystroke (nothing for some backends)."""
        ...

    @property
    def exact_tokens(self) -> bool:
        """Whether a generation's tokens are the path the model took (a local model), not
        this side's tokenization of the text a server sent back: only then can an answer
        be followed token by token as the user types it."""
        ...

    def truncate(self, n: int) -> None: ...

    def reset(self) -> None: ...

    def close(self) -> None: ...


class ScoringBackend(CompletionBackend, Protocol):
    @property
    def n_batch(self) -> int:
        """The longest continuation `continuation_logprobs` scores in one call."""
        ...

    def continuation_logprobs(self, prefix: Sequence[int], continuation: Sequence[int],
                              cancelled: CancelCheck | None = None) -> Scored: ...

    def next_token_scores(self, prompt: Sequence[int], candidates: Sequence[int],
                          cancelled: CancelCheck | None = None) -> dict[int, float]:
        """How likely each candidate token is right after `prompt`, as log-probabilities up
        to one constant shared by all of them (only their differences mean anything). A
        local session reads the logits it holds, so `prompt` must be what it evaluated last.
        Raises Cancelled when `cancelled` stops it."""
        ...


if TYPE_CHECKING:
    class KVBackend(CompletionBackend, KVStateSession, Protocol):
        """A backend with a local KV cache: state files apply to it."""


def keeps_kv_state(session: CompletionBackend) -> TypeGuard[KVBackend]:
    """Whether state files apply to `session` (it exports and imports its KV cache).

    Read off the class: `isinstance(session, KVStateSession)` evaluates every property on
    Python 3.11, and a remote session's may ask its server.
    """
    kind = type(session)
    return callable(getattr(kind, "export_state", None)) and callable(getattr(kind, "import_state", None))


def model_label(session: object) -> str:
    """The name notes and summaries record as their writer: the GGUF's file name locally,
    `remote:<served model>` for a remote engine."""
    label = getattr(session, "model_label", None)
    if isinstance(label, str):
        return label
    path = getattr(session, "model_path", None)
    return str(getattr(path, "name", "") or "unknown")
