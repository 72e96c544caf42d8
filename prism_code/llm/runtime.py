"""A llama.cpp session that knows exactly which tokens sit in its KV cache.

Every prompt is a token list. A new prompt keeps the longest common prefix with what
is cached and evaluates only the rest, so stable prompt heads (instructions, schema,
repository context) are paid for once. The cache can also be cut back to any
position (WiM drops an instruction and its margin) and exported or imported as the
state of one sequence (see state_cache).
"""

from __future__ import annotations

import ctypes
import json
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import _internals
from llama_cpp.llama_grammar import LlamaGrammar

from prism_code.cancel import CancelCheck

from .models import DEFAULT_MODEL, MODELS, Progress, ensure_model, file_sha256
from .types import (
    ContextOverflow,
    Generation,
    GenerationStats,
    PrefillStats,
    Scored,
    SessionCounters,
    common_prefix,
    first_stop,
)
from .vocab import Vocabulary

log = logging.getLogger(__name__)

_SEQ = 0  # one sequence per session; parallel work gets its own session


def json_grammar(schema: dict[str, Any]) -> LlamaGrammar:
    return LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)


class LlamaSession:
    """One llama.cpp context. Not for concurrent use: calls are serialised by a lock."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int = 2,
        n_batch: int = 512,
        seed: int = 0,
        model_sha256: str | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self._llm = llama_cpp.Llama(
            model_path=str(self.model_path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            n_batch=n_batch,
            logits_all=False,
            seed=seed,
            verbose=False,
        )
        self.n_ctx: int = self._llm.n_ctx()
        self.n_batch = n_batch
        self.n_threads = n_threads
        self.seed = seed
        self.tokens: list[int] = []  # exactly the tokens in the KV cache, in order; read-only for callers
        self.counters = SessionCounters()
        self._memory = llama_cpp.llama_get_memory(self._llm.ctx)
        # The context's output logits belong to the last token of self.tokens only right
        # after a decode; after a truncate or a restore they must be recomputed.
        self._logits_ready = False
        self._model_sha256 = model_sha256
        self.vocabulary = Vocabulary(self._llm, self.model_path.name)
        self._lock = threading.RLock()

    @classmethod
    def open(
        cls,
        name_or_path: str | Path = DEFAULT_MODEL,
        *,
        cache_dir: Path | None = None,
        progress: Progress | None = None,
        n_ctx: int = 4096,
        n_threads: int = 2,
        n_batch: int = 512,
        seed: int = 0,
    ) -> LlamaSession:
        """A session on a registry model (assembled on first use) or on any GGUF path."""
        path = ensure_model(name_or_path, cache_dir, progress)
        spec = MODELS.get(str(name_or_path))
        return cls(
            path, n_ctx=n_ctx, n_threads=n_threads, n_batch=n_batch, seed=seed,
            model_sha256=spec.sha256 if spec else None,
        )

    @property
    def lock(self) -> threading.RLock:
        """Held by every call; take it to make several calls one step (e.g. truncate + export)."""
        return self._lock

    @property
    def llama(self) -> llama_cpp.Llama:
        return self._llm

    @property
    def model_sha256(self) -> str:
        # Only state files need the model's identity, so hashing a foreign GGUF waits until then.
        if self._model_sha256 is None:
            self._model_sha256 = file_sha256(self.model_path)
        return self._model_sha256

    def set_threads(self, n_threads: int, n_threads_batch: int | None = None) -> None:
        """Change the thread count between calls.

        llama.cpp's threads spin at barriers, so when another process keeps one of two
        cores busy (indexing), 2 threads run several times slower than 1.
        """
        with self._lock:
            llama_cpp.llama_set_n_threads(self._llm.ctx, n_threads, n_threads_batch or n_threads)
            self.n_threads = n_threads

    def close(self) -> None:
        self._llm.close()

    def __enter__(self) -> LlamaSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- tokens -------------------------------------------------------------------

    def tokenize_text(self, text: str, special: bool = False) -> list[int]:
        return self.vocabulary.tokenize_text(text, special)

    def special_token(self, name: str) -> int:
        return self.vocabulary.special_token(name)

    def has_special_token(self, name: str) -> bool:
        return self.vocabulary.has_special_token(name)

    def prompt_start(self) -> list[int]:
        return self.vocabulary.prompt_start()

    def chatml(self, messages: Iterable[tuple[str, str]], add_generation_prompt: bool = True) -> list[int]:
        return self.vocabulary.chatml(messages, add_generation_prompt)

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self.vocabulary.detokenize(tokens)

    def is_eog(self, token: int) -> bool:
        return self.vocabulary.is_eog(token)

    # --- KV cache -----------------------------------------------------------------

    def truncate(self, n: int) -> None:
        """Drop cached tokens from position n on (e.g. an instruction and its decoded margin)."""
        if n < 0:
            raise ValueError("n must be >= 0")
        with self._lock:
            if n >= len(self.tokens):
                return
            if not llama_cpp.llama_memory_seq_rm(self._memory, _SEQ, n, -1):
                # Memory kinds that cannot drop a partial range (recurrent models) restart empty.
                llama_cpp.llama_memory_clear(self._memory, True)
                n = 0
            self._llm.n_tokens = n
            del self.tokens[n:]
            self._logits_ready = False

    def reset(self) -> None:
        self.truncate(0)

    def prefill(self, tokens: Sequence[int], cancelled: CancelCheck | None = None) -> PrefillStats:
        """Make the KV cache hold exactly `tokens`, evaluating only what is not cached yet."""
        with self._lock:
            return self._sync(list(tokens), need_logits=False, cancelled=cancelled)

    def _sync(self, tokens: list[int], need_logits: bool, cancelled: CancelCheck | None) -> PrefillStats:
        if len(tokens) > self.n_ctx:
            raise ContextOverflow(f"prompt of {len(tokens)} tokens does not fit the context of {self.n_ctx}")
        t0 = time.perf_counter()
        keep = common_prefix(self.tokens, tokens)
        if need_logits and keep == len(tokens) and not (keep == len(self.tokens) and self._logits_ready):
            keep -= 1  # sampling needs the last prompt token's logits: decode it again
        self.truncate(keep)
        suffix = tokens[keep:]
        encoded = 0
        stopped = False
        # Batches of n_batch are the unit of work; cancelling between them leaves a valid,
        # reusable prefix in the cache for the next request.
        for i in range(0, len(suffix), self.n_batch):
            if cancelled is not None and cancelled():
                stopped = True
                break
            chunk = suffix[i : i + self.n_batch]
            self._llm.eval(chunk)
            self.tokens.extend(chunk)
            self._logits_ready = True
            encoded += len(chunk)
        ms = (time.perf_counter() - t0) * 1000
        self.counters.encoded += encoded
        self.counters.reused += keep
        self.counters.prefill_ms += ms
        return PrefillStats(len(tokens), keep, encoded, ms, stopped)

    # --- generation -----------------------------------------------------------------

    def _sampler(self, grammar: LlamaGrammar | None, temperature: float,
                 seed: int | None) -> _internals.LlamaSampler:
        # One sampler per generation, so the grammar's parse state advances with each token.
        sampler = _internals.LlamaSampler()
        if grammar is not None:
            sampler.add_grammar(self._llm._model, grammar)
        if temperature <= 0.0:
            sampler.add_greedy()
        else:
            sampler.add_top_k(40)
            sampler.add_top_p(0.95, 1)
            sampler.add_temp(temperature)
            sampler.add_dist(self.seed if seed is None else seed)
        return sampler

    def generate(
        self,
        prompt_tokens: Sequence[int],
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        grammar: LlamaGrammar | None = None,
        temperature: float = 0.0,
        cancelled: CancelCheck | None = None,
        seed: int | None = None,
    ) -> Generation:
        """Continue `prompt_tokens`; the text is cut before the first stop string.

        Afterwards the cache holds the prompt and the generated tokens except the last one
        sampled, so a follow-up prompt that quotes the answer reuses it.
        """
        prompt = list(prompt_tokens)
        if not prompt:
            raise ValueError("empty prompt")
        with self._lock:
            pre = self._sync(prompt, need_logits=True, cancelled=cancelled)
            if pre.cancelled:
                stats = GenerationStats(len(prompt), pre.reused, pre.encoded, 0, pre.ms, 0.0, "cancelled")
                return Generation("", [], stats)
            t0 = time.perf_counter()
            stops = [s.encode("utf-8") for s in stop if s]
            longest_stop = max((len(s) for s in stops), default=0)
            out: list[int] = []
            text = bytearray()
            finish = "length"
            sampler = self._sampler(grammar, temperature, seed)
            try:
                while len(out) < max_tokens:
                    if cancelled is not None and cancelled():
                        finish = "cancelled"
                        break
                    token = sampler.sample(self._llm._ctx, -1)
                    if self.is_eog(token):
                        finish = "eos"
                        break
                    out.append(token)
                    search_from = max(0, len(text) - longest_stop + 1)
                    text += self._llm.detokenize([token])
                    cut = first_stop(text, stops, search_from)
                    if cut is not None:
                        del text[cut:]
                        finish = "stop"
                        break
                    if len(out) == max_tokens or len(self.tokens) >= self.n_ctx:
                        break
                    self._llm.eval([token])
                    self.tokens.append(token)
            finally:
                sampler.close()
            ms = (time.perf_counter() - t0) * 1000
            self.counters.decoded += len(out)
            self.counters.decode_ms += ms
            stats = GenerationStats(len(prompt), pre.reused, pre.encoded, len(out), pre.ms, ms, finish)
            return Generation(text.decode("utf-8", errors="replace"), out, stats)

    def continuation_logprobs(self, prefix: Sequence[int], continuation: Sequence[int],
                              cancelled: CancelCheck | None = None) -> Scored:
        """log P(each continuation token | everything before it), read in one forward pass.

        The prefix is synced like a prompt (its cached head reused); the continuation is then
        evaluated with logits kept at every position, and stays in the cache afterwards.
        Counted as encoded tokens: nothing is sampled.
        """
        prefix, continuation = list(prefix), list(continuation)
        if not prefix or not continuation:
            raise ValueError("prefix and continuation must both be non-empty")
        if len(continuation) > self.n_batch:
            raise ValueError(f"continuation of {len(continuation)} tokens exceeds the batch of {self.n_batch}")
        with self._lock:
            # The last prefix token is evaluated again with the continuation: its logits
            # predict the continuation's first token.
            pre = self._sync(prefix[:-1], need_logits=False, cancelled=cancelled)
            if pre.cancelled:
                return Scored([], pre.reused, pre.encoded, True)
            batch = prefix[-1:] + continuation[:-1]
            if len(self.tokens) + len(batch) > self.n_ctx:
                raise ContextOverflow(f"prompt of {len(prefix) + len(continuation)} tokens "
                                      f"does not fit the context of {self.n_ctx}")
            t0 = time.perf_counter()
            n_past = len(self.tokens)
            self._llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=True)
            self._llm._ctx.decode(self._llm._batch)
            self._llm.input_ids[n_past:n_past + len(batch)] = batch
            self._llm.n_tokens = n_past + len(batch)
            self.tokens.extend(batch)
            self._logits_ready = True
            n_vocab = self._llm.n_vocab()
            out = []
            for i, token in enumerate(continuation):
                row = np.ctypeslib.as_array(self._llm._ctx.get_logits_ith(i), shape=(n_vocab,))
                top = float(row.max())
                out.append(float(row[token]) - top - float(np.log(np.exp(row - top).sum())))
            self.counters.encoded += len(batch)
            ms = (time.perf_counter() - t0) * 1000
            self.counters.prefill_ms += ms
            return Scored(out, pre.reused, pre.encoded + len(batch), False, pre.ms + ms)

    # --- sequence state (KV of this session's sequence, without logits) -----------------

    def export_state(self) -> memoryview:
        """The llama.cpp state of the cached tokens (KV only; no 300 MB logits array)."""
        with self._lock:
            size = llama_cpp.llama_state_seq_get_size(self._llm.ctx, _SEQ)
            buf = (ctypes.c_uint8 * size)()
            n = llama_cpp.llama_state_seq_get_data(self._llm.ctx, buf, size, _SEQ)
            if n == 0:
                raise RuntimeError("llama.cpp could not export the sequence state")
            return memoryview(buf).cast("B")[:n]

    def import_state(self, tokens: Sequence[int], data: bytearray) -> bool:
        """Load a state exported for exactly `tokens`; False (and an empty cache) if llama.cpp rejects it."""
        tokens = list(tokens)
        if len(tokens) > self.n_ctx:
            return False
        with self._lock:
            self.truncate(0)
            buf = (ctypes.c_uint8 * len(data)).from_buffer(data)
            if llama_cpp.llama_state_seq_set_data(self._llm.ctx, buf, len(data), _SEQ) == 0:
                llama_cpp.llama_memory_clear(self._memory, True)
                return False
            self._llm.input_ids[: len(tokens)] = tokens
            self._llm.n_tokens = len(tokens)
            self.tokens = tokens
            self._logits_ready = False
            self.counters.restored += len(tokens)
            return True


def rss_mb() -> float:
    """Resident memory of this process, for the load/ctx figures in STACK.md."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
