"""KV state of stable prompt prefixes on disk, so a restart does not pay the prefill again.

A file holds the llama.cpp sequence state for exactly one token prefix, keyed by
(model sha256, sha256 of the prefix token ids). The sequence-state API carries the KV
cells only (~12 KB per token for the 0.5B model) instead of Llama.save_state()'s
~300 MB logits array. Each file is self-checking (header with the token ids and a
payload sha256) and written with write-then-rename, so a kill leaves no half file under
a real name, and a damaged one is deleted and treated as a miss, never a crash.

File layout: MAGIC, u32 header length, JSON header, int32 LE token ids, payload.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from prism_code.atomic import atomic_write
from prism_code.config import cache_root

from .types import common_prefix


@runtime_checkable
class KVStateSession(Protocol):
    """What the cache needs of a session: a local KV cache to export and import (LlamaSession)."""

    @property
    def tokens(self) -> list[int]: ...
    @property
    def n_ctx(self) -> int: ...
    @property
    def lock(self) -> threading.RLock: ...
    @property
    def model_sha256(self) -> str: ...
    def truncate(self, n: int) -> None: ...
    def export_state(self) -> memoryview: ...
    def import_state(self, tokens: Sequence[int], data: bytearray) -> bool: ...

log = logging.getLogger(__name__)

MAGIC = b"PRISMKV1"
SUFFIX = ".kv"
DEFAULT_MAX_BYTES = 1 << 30
_STALE_TMP_S = 3600


def default_state_dir() -> Path:
    return cache_root() / "kv-states"


def prefix_key(tokens: Sequence[int]) -> str:
    return hashlib.sha256(_pack(tokens)).hexdigest()


def _pack(tokens: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(tokens)}i", *tokens)


class CorruptState(Exception):
    pass


@dataclass(frozen=True)
class StateEntry:
    path: Path
    n_tokens: int
    size: int
    accessed: float


class StateCache:
    def __init__(self, root: Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root or default_state_dir()
        self.max_bytes = max_bytes

    def _model_dir(self, session: KVStateSession) -> Path:
        return self.root / session.model_sha256

    def _path(self, session: KVStateSession, tokens: Sequence[int]) -> Path:
        # The length in the name lets a lookup hash only the prefix lengths that exist.
        return self._model_dir(session) / f"{len(tokens):06d}-{prefix_key(tokens)}{SUFFIX}"

    def save_prefix(self, session: KVStateSession, n_tokens: int) -> Path | None:
        """Persist the state of session.tokens[:n_tokens]; the session's cache is cut back to it.

        Returns the file, or None when it would not fit under the size cap.
        """
        with session.lock:
            return self._save(session, n_tokens)

    def _save(self, session: KVStateSession, n_tokens: int) -> Path | None:
        if not 0 < n_tokens <= len(session.tokens):
            raise ValueError(f"n_tokens must be in 1..{len(session.tokens)}")
        # The sequence state covers every cached cell, so the cache must hold exactly the prefix.
        session.truncate(n_tokens)
        tokens = session.tokens[:n_tokens]
        path = self._path(session, tokens)
        if path.exists():
            _touch(path)
            return path
        payload = session.export_state()
        header = json.dumps(
            {
                "model_sha256": session.model_sha256,
                "llama_cpp": _llama_cpp_version(),
                "n_tokens": n_tokens,
                "prefix_sha256": prefix_key(tokens),
                "payload_size": len(payload),
                "payload_sha256": hashlib.sha256(payload).hexdigest(),
            }
        ).encode()
        total = len(MAGIC) + 4 + len(header) + 4 * n_tokens + len(payload)
        if total > self.max_bytes:
            log.info("state of %d tokens (%d bytes) exceeds the cache cap; not saved", n_tokens, total)
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, [MAGIC, struct.pack("<I", len(header)), header, _pack(tokens), payload])
        self.evict(keep=path)
        return path

    def restore_longest_prefix(self, session: KVStateSession, tokens: Sequence[int]) -> int:
        """Load the longest saved prefix of `tokens` into the session; how many tokens were restored.

        0 if nothing applies, including when the session already caches at least as long a
        prefix of `tokens` as any saved one (then the live cache is the better start).
        """
        with session.lock:
            return self._restore(session, list(tokens))

    def _restore(self, session: KVStateSession, tokens: list[int]) -> int:
        model_dir = self._model_dir(session)
        lengths = sorted({e.n_tokens for e in self._entries(model_dir)}, reverse=True)
        live = common_prefix(session.tokens, tokens)
        for n in lengths:
            if n > len(tokens) or n > session.n_ctx:
                continue
            if n <= live:
                break
            path = self._path(session, tokens[:n])
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("cannot read state file %s: %s", path, exc)
                continue
            try:
                payload = _parse(data, session.model_sha256, tokens[:n])
            except CorruptState as exc:
                log.warning("deleting bad state file %s: %s", path, exc)
                path.unlink(missing_ok=True)
                continue
            if not session.import_state(tokens[:n], payload):
                log.warning("llama.cpp rejected state file %s; deleting it", path)
                path.unlink(missing_ok=True)
                continue
            _touch(path)
            return n
        return 0

    def _entries(self, directory: Path) -> list[StateEntry]:
        out = []
        try:
            names = list(directory.iterdir())
        except OSError:
            return []
        for p in names:
            if p.suffix != SUFFIX:
                continue
            try:
                st = p.stat()
                n = int(p.name.split("-", 1)[0])
            except (OSError, ValueError):
                continue
            out.append(StateEntry(p, n, st.st_size, st.st_mtime))
        return out

    def entries(self) -> list[StateEntry]:
        try:
            dirs = [d for d in self.root.iterdir() if d.is_dir()]
        except OSError:
            return []
        return [e for d in dirs for e in self._entries(d)]

    def total_bytes(self) -> int:
        return sum(e.size for e in self.entries())

    def evict(self, keep: Path | None = None) -> None:
        """Delete least recently used files until the cap holds (mtime is bumped on every hit)."""
        self._sweep_tmp()
        entries = sorted(self.entries(), key=lambda e: e.accessed)
        total = sum(e.size for e in entries)
        for e in entries:
            if total <= self.max_bytes:
                break
            if keep is not None and e.path == keep:
                continue
            e.path.unlink(missing_ok=True)
            total -= e.size
            log.info("evicted state file %s (%d bytes)", e.path, e.size)

    def _sweep_tmp(self) -> None:
        # Temp files of writers killed mid-save; old enough that no live writer owns them.
        now = time.time()
        for tmp in self.root.glob("*/.*.tmp"):
            try:
                if now - tmp.stat().st_mtime > _STALE_TMP_S:
                    tmp.unlink()
            except OSError:
                pass


def _parse(data: bytes, model_sha256: str, tokens: list[int]) -> bytearray:
    """The payload of a state file after checking it belongs to this model and these tokens."""
    if len(data) < len(MAGIC) + 4 or not data.startswith(MAGIC):
        raise CorruptState("bad magic")
    (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
    off = len(MAGIC) + 4
    try:
        header = json.loads(data[off : off + hlen])
    except ValueError as exc:
        raise CorruptState(f"bad header: {exc}") from None
    if not isinstance(header, dict):
        raise CorruptState("bad header")
    if header.get("model_sha256") != model_sha256:
        raise CorruptState("written for another model")
    if header.get("llama_cpp") != _llama_cpp_version():
        raise CorruptState(f"written by llama-cpp-python {header.get('llama_cpp')}")
    n = len(tokens)
    if header.get("n_tokens") != n:
        raise CorruptState("token count differs from its name")
    off += hlen
    if data[off : off + 4 * n] != _pack(tokens):
        raise CorruptState("token ids differ from its key")
    off += 4 * n
    payload = bytearray(data[off:])
    if len(payload) != header.get("payload_size"):
        raise CorruptState(f"truncated: payload {len(payload)} of {header.get('payload_size')} bytes")
    if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
        raise CorruptState("payload checksum mismatch")
    return payload


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def _llama_cpp_version() -> str:
    # Imported here, not with the module: a state file is written or read with a session open,
    # and whoever only passes a StateCache along need not load llama.cpp's library.
    import llama_cpp

    return llama_cpp.__version__
