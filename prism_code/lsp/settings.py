"""The server's settings: the editor's `prism.*` settings, sent as initializationOptions.

Editors send what users typed, so parsing is tolerant: a bad value is replaced by its
default with a warning that names the setting, the value and what was expected, and
unknown keys are reported rather than silently ignored. Both nested objects
(`{"completion": {"enabled": true}}`) and dotted keys (`{"completion.enabled": true}`)
are accepted, optionally under a `prism` section.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from prism_code.config import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_LINES,
    FRAGREL_ALPHA_RANGE,
    THREADS_RANGE,
)
from prism_code.llm.models import MODELS
from prism_code.tasks.find_events import Strategy
from prism_code.tasks.find_function import DEFAULT_FIND_ALPHA
from prism_code.tasks.find_request import STRATEGIES, as_strategy
from prism_code.tasks.model_policy import AUTO, CHOICES

# Strategies that exist now; prism, wim and long-context arrive with the PRISM issue.
FIND_STRATEGIES = STRATEGIES


@dataclass(frozen=True)
class Settings:
    # A registry model name or an absolute GGUF path; None: the default registry model.
    model_path: str | None = None
    threads: int = 2  # CPU threads for the local LLM
    completion_enabled: bool = True
    completion_max_lines: int = 3  # the library's default (tasks/complete.py says why)
    # `auto`: prism.modelPath when set, else the 1.5B where this host runs it fast enough
    # (tasks/model_policy.py); a registry name forces that model. Notes and find share it.
    completion_model: str = AUTO
    notes_enabled: bool = True  # the background PRISM function-notes pass
    # An OpenAI-compatible server (llama.cpp's llama-server, vLLM) that takes every model job;
    # the local model is then not loaded. Its API key comes from $PRISM_CODE_API_KEY only.
    remote_url: str | None = None
    fragrel_alpha: float = DEFAULT_FIND_ALPHA
    find_strategy: Strategy = "retrieval"
    exclude: tuple[str, ...] = ()  # gitignore-style patterns left out of the index
    # Past these a file is skipped with a logged reason (prism_code/config.py says why).
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_files: int = DEFAULT_MAX_FILES
    max_lines: int = DEFAULT_MAX_LINES
    cache_dir: Path | None = None  # None: the user cache (or $PRISM_CODE_CACHE_DIR)
    # Whether the client trusts the workspace; False: git is never run there. Not a user
    # setting: the client says it from its own trust state (VS Code's workspace trust).
    trusted: bool = True
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, Any]:
        return {KEYS[f.name]: _jsonable(getattr(self, f.name)) for f in fields(self)
                if f.name in KEYS}


# Setting name as the editor spells it -> field.
KEYS = {
    "model_path": "modelPath",
    "threads": "threads",
    "completion_enabled": "completion.enabled",
    "completion_max_lines": "completion.maxLines",
    "completion_model": "completion.model",
    "notes_enabled": "notes.enabled",
    "remote_url": "remote.url",
    "fragrel_alpha": "fragrel.alpha",
    "find_strategy": "find.strategy",
    "exclude": "exclude",
    "max_file_bytes": "index.maxFileBytes",
    "max_files": "index.maxFiles",
    "max_lines": "index.maxLines",
    "cache_dir": "cacheDir",
}

# Keys a client fills in from its own state rather than from the user's settings: not in
# package.json, not in to_json().
CLIENT_KEYS = {
    "trusted": "workspaceTrusted",
}


def parse_settings(raw: Any, base: Any = None) -> Settings:
    """Settings from `raw` over `base`; never raises.

    `base` is the initializationOptions: a configuration change that leaves a setting out
    (a client sending only what it knows) must not move the index to the default cache.
    """
    warnings: list[str] = []
    changed = _flatten(raw, warnings)
    # Values from `base` were judged (and warned about) when it was applied.
    flat = {**_flatten(base, []), **changed}
    values: dict[str, Any] = {}
    by_key = {key: name for name, key in (KEYS | CLIENT_KEYS).items()}
    for key, value in flat.items():
        name = by_key.get(key)
        if name is None or value is None:
            if name is None and key in changed:
                warnings.append(f"unknown setting prism.{key} ignored")
            continue
        parsed = _PARSERS[name](value)
        if not isinstance(parsed, _Invalid):
            values[name] = parsed
        elif key in changed:
            default = _jsonable(getattr(Settings, name))
            warnings.append(f"prism.{key}: {value!r} is not {parsed.expected}; using the default"
                            + ("" if default is None else f" {default!r}"))
    return Settings(**values, warnings=tuple(warnings))


def _flatten(raw: Any, warnings: list[str]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        warnings.append(f"settings must be an object, got {type(raw).__name__}: ignored")
        return {}
    if set(raw) == {"prism"} and isinstance(raw["prism"], Mapping):
        raw = raw["prism"]
    flat: dict[str, Any] = {}

    def walk(prefix: str, node: Mapping[str, Any]) -> None:
        for key, value in node.items():
            name = f"{prefix}{key}"
            # Only the groups are objects; any other object is a value (and then invalid).
            if isinstance(value, Mapping) and name in ("completion", "notes", "fragrel", "find", "remote", "index"):
                walk(f"{name}.", value)
            else:
                flat[name] = value

    walk("", raw)
    return flat


@dataclass(frozen=True)
class _Invalid:
    expected: str


def _int(low: int, high: int) -> Callable[[Any], int | _Invalid]:
    expected = f"an integer from {low} to {high}"

    def parse(value: Any) -> int | _Invalid:
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return _Invalid(expected)
        return value
    return parse


def _float(low: float, high: float) -> Callable[[Any], float | _Invalid]:
    def parse(value: Any) -> float | _Invalid:
        if isinstance(value, bool):
            return _Invalid(f"a number from {low} to {high}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            return _Invalid(f"a number from {low} to {high}")
        return number if low <= number <= high else _Invalid(f"a number from {low} to {high}")
    return parse


def _bool(value: Any) -> bool | _Invalid:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return _Invalid("true or false")


def _strategy(value: Any) -> Strategy | _Invalid:
    strategy = as_strategy(value.strip() if isinstance(value, str) else None)
    if strategy is not None:
        return strategy
    return _Invalid(f"one of {', '.join(FIND_STRATEGIES)}")


def _patterns(value: Any) -> tuple[str, ...] | _Invalid:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v for v in value if v.strip())
    return _Invalid("a list of gitignore-style patterns")


def _path(value: Any) -> Path | None | _Invalid:
    if not isinstance(value, str):
        return _Invalid("a path")
    if not value.strip():
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else _Invalid("an absolute path")


def _model(value: Any) -> str | None | _Invalid:
    expected = f"a model name ({', '.join(sorted(MODELS))}) or an absolute path to a .gguf file"
    if not isinstance(value, str):
        return _Invalid(expected)
    if not value.strip():
        return None
    if value.strip() in MODELS:
        return value.strip()
    path = Path(value).expanduser()
    # Whether the file exists is the model loader's to say, with a message the user sees.
    return str(path) if path.is_absolute() else _Invalid(expected)


def _url(value: Any) -> str | None | _Invalid:
    expected = "an http:// or https:// URL with a host"
    if not isinstance(value, str):
        return _Invalid(expected)
    if not value.strip():
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return _Invalid(expected)
    return value.strip()


def _completion_model(value: Any) -> str | _Invalid:
    name = value.strip() if isinstance(value, str) else None
    if name in CHOICES:
        return name
    # A GGUF file is prism.modelPath's, which `auto` follows: this one names models only,
    # so VS Code can offer them as a list (and an untrusted workspace can name no file).
    return _Invalid(f"one of {', '.join(CHOICES)}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


MAX_LIMIT = 1 << 40  # any limit a user types; the index checks the real ones

_PARSERS = {
    "model_path": _model,
    "threads": _int(*THREADS_RANGE),
    "completion_enabled": _bool,
    "completion_max_lines": _int(1, 200),
    "completion_model": _completion_model,
    "notes_enabled": _bool,
    "remote_url": _url,
    "fragrel_alpha": _float(*FRAGREL_ALPHA_RANGE),
    "find_strategy": _strategy,
    "exclude": _patterns,
    "max_file_bytes": _int(1, MAX_LIMIT),
    "max_files": _int(1, MAX_LIMIT),
    "max_lines": _int(1, MAX_LIMIT),
    "cache_dir": _path,
    "trusted": _bool,
}
