"""The model backend a command asked for: the local model, or a remote engine at a URL.

One place decides, so `find`, `notes` and `complete` treat `--remote` alike: a remote
engine keeps its own prompt cache, so it gets no state files, and its API key comes
from $PRISM_CODE_API_KEY only (never a flag: flags show up in process lists and logs).
A registry model that is not set up yet is set up first, saying so (model_setup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .backend import ScoringBackend
    from .state_cache import StateCache


def open_backend(remote: str | None, model: str, threads: int | None = None) -> ScoringBackend:
    """A RemoteSession on `remote` when given, else the local `model` on `threads` threads."""
    from .model_setup import provide_model

    if remote:
        from .remote import RemoteSession, RemoteSettings

        settings = RemoteSettings(url=remote)
        provide_model(settings.tokenizer)  # prompts are built with the local model's vocabulary
        return RemoteSession(settings)
    from .cpu_load import threads_for_now
    from .runtime import LlamaSession

    provide_model(model)
    return LlamaSession.open(model, n_threads=threads or threads_for_now())


def state_cache_for(session: ScoringBackend) -> StateCache | None:
    """State files for a local session; None for a remote one (nothing to export)."""
    from .backend import keeps_kv_state
    from .state_cache import StateCache

    return StateCache() if keeps_kv_state(session) else None
