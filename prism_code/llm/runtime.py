"""A llama.cpp session that knows exactly which tokens sit in its KV cache.

Every prompt is a token list. A new prompt keeps the longest common prefix with what
is cached and evaluates only the rest, so stable prompt heads (instructions, schema,
repository context) are paid for once. The cache can also be cut back to any
position (WiM drops an instruction and its margin) and exported or imported as the
state of one sequence (see state_cache).

Shortcuts that give the very tokens the plain path gives (`LlamaSession.shortcuts`):

- the logits of the last tokens evaluated one at a time are kept (`SAVED_ROWS` of them), so a
  prompt that ends inside the cache is not evaluated again to get its last logits, and a
  generation that walks along tokens already cached (the user typed what the last one wrote)
  reads their logits instead of evaluating them. A token evaluated alone after the same cached
  tokens gives the same logits again, which is what the plain path would have done;
- greedy sampling without a grammar is numpy's argmax, which picks the first of equal
  maxima as llama.cpp's greedy sampler does, instead of llama.cpp building its candidate
  array over the 152k-token vocabulary for each token;
- token healing's one-token step (`heal`) hands llama.cpp's grammar only the tokens that
  could begin with the text to heal (`HealIndex`), instead of the whole vocabulary.
"""

from __future__ import annotations

import ctypes
import json
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import _internals
from llama_cpp.llama_grammar import LlamaGrammar

from prism_code.cancel import CancelCheck

from .gbnf import starts_with
from .heal_index import HealCandidates, HealIndex
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
from .vocab import ModelVocabulary
from .vocab_tokens import VocabularyTokens

log = logging.getLogger(__name__)

_SEQ = 0  # one sequence per session; parallel work gets its own session

# Logits rows kept of tokens evaluated one at a time (608 KB each with Qwen's vocabulary):
# a single-line completion decodes 9 tokens at p50 and 24 at p95.
SAVED_ROWS = 32

# Prompts are evaluated this many tokens at a time and a cancel is checked between pieces.
# On the 0.5B with 2 threads, 64-token pieces prefill as fast as 512-token ones (86 tok/s
# each, 1,536 tokens) while the longest piece takes 0.9 s instead of 6.3 s: a closed find
# frees the model within about a second instead of after a whole batch (issue #16).
CANCEL_PIECE_TOKENS = 64

# llama_token_data as numpy lays it out, to hand llama.cpp's samplers a candidate array.
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


def json_grammar(schema: dict[str, Any]) -> LlamaGrammar:
    return LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)


class LlamaSession(VocabularyTokens):
    """One llama.cpp context. Not for concurrent use: calls are serialised by a lock."""

    exact_tokens = True  # its generations' tokens are the ones the model sampled

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
        self.vocabulary = ModelVocabulary(self._llm, self.model_path.name)
        self._lock = threading.RLock()
        self._n_vocab: int = self._llm.n_vocab()
        # False: every token is sampled by llama.cpp over the whole vocabulary and every logit
        # a prompt needs is evaluated again, as before the shortcuts (tests compare the two).
        self.shortcuts = True
        # Logits of tokens evaluated alone, by position; valid while the cache up to them stands.
        self._rows: dict[int, np.ndarray] = {}
        self._row_floor = 0  # rows below this position may make room for the current call's
        self._heal_index: HealIndex | None = None

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
            for position in [p for p in self._rows if p >= n]:
                del self._rows[position]

    def reset(self) -> None:
        self.truncate(0)

    def prefill(self, tokens: Sequence[int], cancelled: CancelCheck | None = None) -> PrefillStats:
        """Make the KV cache hold exactly `tokens`, evaluating only what is not cached yet."""
        with self._lock:
            return self._sync(list(tokens), need_logits=False, cancelled=cancelled)[0]

    def _sync(self, tokens: list[int], need_logits: bool, cancelled: CancelCheck | None,
              keep_tail: bool = False) -> tuple[PrefillStats, np.ndarray | None]:
        """Evaluate what of `tokens` is not cached; with `need_logits`, also where the logits
        after them are: None for the context's output, else a kept row. `keep_tail` leaves
        cached tokens after `tokens` in place when no evaluation is needed (a generation may
        walk along them)."""
        if len(tokens) > self.n_ctx:
            raise ContextOverflow(f"prompt of {len(tokens)} tokens does not fit the context of {self.n_ctx}")
        t0 = time.perf_counter()
        self._row_floor = len(tokens) - 1
        keep = common_prefix(self.tokens, tokens)
        row = None
        if need_logits and keep == len(tokens) and not (keep == len(self.tokens) and self._logits_ready):
            row = self._rows.get(keep - 1) if self.shortcuts else None
            if row is None:
                keep -= 1  # sampling needs the last prompt token's logits: decode it again
        if not (keep_tail and row is not None):
            self.truncate(keep)
        suffix = tokens[keep:]
        encoded = 0
        stopped = False
        # Cancelling between pieces leaves a valid, reusable prefix in the cache.
        piece = min(self.n_batch, CANCEL_PIECE_TOKENS)
        for i in range(0, len(suffix), piece):
            if cancelled is not None and cancelled():
                stopped = True
                break
            chunk = suffix[i : i + piece]
            self._llm.eval(chunk)
            self.tokens.extend(chunk)
            self._logits_ready = True
            if len(chunk) == 1:
                self._save_row()
            encoded += len(chunk)
        ms = (time.perf_counter() - t0) * 1000
        self.counters.encoded += encoded
        self.counters.reused += keep
        self.counters.prefill_ms += ms
        return PrefillStats(len(tokens), keep, encoded, ms, stopped), row

    def _logits(self) -> np.ndarray:
        """The context's output logits (of the last token evaluated), not copied."""
        return np.ctypeslib.as_array(self._llm._ctx.get_logits_ith(-1), shape=(self._n_vocab,))

    def _save_row(self) -> None:
        """Keep the logits of the token just evaluated on its own (the last one cached)."""
        if not self.shortcuts:
            return
        if len(self._rows) >= SAVED_ROWS:
            lowest = min(self._rows)
            if lowest >= self._row_floor:
                return  # full with this call's own rows: the earliest are the ones a keystroke reuses
            del self._rows[lowest]
        self._rows[len(self.tokens) - 1] = self._logits().copy()

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
        sampled, so a follow-up prompt that quotes the answer reuses it; it goes on holding
        what an earlier call cached after that point when that begins with the last token
        sampled (a follow-up prompt that quotes the whole answer then reuses that too).
        """
        with self._lock:
            return self._generate(list(prompt_tokens), max_tokens, stop, grammar, temperature,
                                  cancelled, seed, None)

    def heal(self, prompt_tokens: Sequence[int], text: str,
             cancelled: CancelCheck | None = None) -> Generation:
        """The one token after `prompt_tokens` whose text begins with `text` or is a beginning of it.

        Exactly `generate(prompt_tokens, max_tokens=1, grammar=starts_with(text))` (token
        healing), with llama.cpp's grammar shown only the tokens `HealIndex` says it could admit.
        """
        with self._lock:
            candidates = self.heal_index().candidates(text) if self.shortcuts else None
            return self._generate(list(prompt_tokens), 1, (), starts_with(text), 0.0, cancelled, None,
                                  candidates)

    def prepare_heal(self) -> None:
        self.heal_index()

    def heal_index(self) -> HealIndex:
        """The vocabulary's pieces sorted for `heal` (built on first use: ~0.3 s on a slow core)."""
        with self._lock:
            if self._heal_index is None:
                self._heal_index = HealIndex(self._llm)
            return self._heal_index

    def _generate(self, prompt: list[int], max_tokens: int, stop: Sequence[str], grammar: LlamaGrammar | None,
                  temperature: float, cancelled: CancelCheck | None, seed: int | None,
                  first_candidates: HealCandidates | None) -> Generation:
        if not prompt:
            raise ValueError("empty prompt")
        pre, row = self._sync(prompt, need_logits=True, cancelled=cancelled, keep_tail=True)
        if pre.cancelled:
            stats = GenerationStats(len(prompt), pre.reused, pre.encoded, 0, pre.ms, 0.0, "cancelled")
            return Generation("", [], stats)
        t0 = time.perf_counter()
        stops = [s.encode("utf-8") for s in stop if s]
        longest_stop = max((len(s) for s in stops), default=0)
        out: list[int] = []
        text = bytearray()
        finish = "length"
        position = len(prompt)  # where the next token goes; cached tokens may follow (keep_tail)
        greedy = temperature <= 0.0
        sampler = self._sampler(grammar, temperature, seed)
        try:
            while len(out) < max_tokens:
                if cancelled is not None and cancelled():
                    finish = "cancelled"
                    break
                token = self._sample(sampler, row, greedy and grammar is None,
                                     first_candidates if not out else None)
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
                if len(out) == max_tokens or position >= self.n_ctx:
                    break
                cached = self.shortcuts and position < len(self.tokens) and self.tokens[position] == token
                row = self._rows.get(position) if cached else None
                if row is None:  # not cached, or cached without its logits: evaluate it
                    self.truncate(position)
                    self._llm.eval([token])
                    self.tokens.append(token)
                    self._logits_ready = True
                    self._save_row()
                position += 1
        finally:
            sampler.close()
        # The tokens after the last one evaluated stay only when they go on from the last one sampled.
        if not (out and finish in ("stop", "length") and position < len(self.tokens)
                and self.tokens[position] == out[-1]):
            self.truncate(position)
        ms = (time.perf_counter() - t0) * 1000
        self.counters.decoded += len(out)
        self.counters.decode_ms += ms
        stats = GenerationStats(len(prompt), pre.reused, pre.encoded, len(out), pre.ms, ms, finish)
        return Generation(text.decode("utf-8", errors="replace"), out, stats)

    def _sample(self, sampler: _internals.LlamaSampler, row: np.ndarray | None, plain_greedy: bool,
                candidates: HealCandidates | None) -> int:
        """The next token from `row` (None: the context's output logits), as llama.cpp's
        `llama_sampler_sample` would choose it over the whole vocabulary.

        With `candidates` the sampler must be greedy under a grammar that admits every token of
        `candidates.certain` and nothing outside it and `candidates.doubtful`.
        """
        if row is None and candidates is None and not (plain_greedy and self.shortcuts):
            return int(sampler.sample(self._llm._ctx, -1))
        logits = self._logits() if row is None else row
        if plain_greedy and self.shortcuts:
            token = int(np.argmax(logits))  # the first of equal maxima, as llama.cpp's greedy sampler
            if not np.isnan(logits[token]):  # llama.cpp's greedy never picks a NaN; argmax does
                return token
        picked = None if candidates is None else self._greedy_among(sampler, logits, candidates)
        if picked is not None:
            llama_cpp.llama_sampler_accept(sampler.sampler, picked)
            return picked
        token, _ = self._apply(sampler, logits, None)
        llama_cpp.llama_sampler_accept(sampler.sampler, token)
        return token

    def _greedy_among(self, sampler: _internals.LlamaSampler, logits: np.ndarray,
                      candidates: HealCandidates) -> int | None:
        """What greedy sampling under the grammar picks over the whole vocabulary: the lowest id
        among the admitted tokens of the highest logit. The grammar is asked about the doubtful
        tokens only. None where that rule may not be llama.cpp's (NaN, nothing admitted)."""
        doubtful, doubtful_logit = -1, -np.inf
        if len(candidates.doubtful):
            doubtful, doubtful_logit = self._apply(sampler, logits, candidates.doubtful)
        certain, certain_logit = -1, -np.inf
        if len(candidates.certain):
            values = logits[candidates.certain]
            best = int(np.argmax(values))
            certain, certain_logit = int(candidates.certain[best]), float(values[best])
        if np.isnan(certain_logit) or np.isnan(doubtful_logit) or max(certain_logit, doubtful_logit) == -np.inf:
            return None
        if certain_logit > doubtful_logit:
            return certain
        if doubtful_logit > certain_logit:
            return doubtful
        return min(certain, doubtful)

    def _apply(self, sampler: _internals.LlamaSampler, logits: np.ndarray,
               ids: np.ndarray | None) -> tuple[int, float]:
        """Run the sampler chain over a candidate array in token order (all tokens, or `ids`),
        as `llama_sampler_sample` builds it; (chosen token, its logit after the chain)."""
        data = np.zeros(self._n_vocab if ids is None else len(ids), dtype=_TOKEN_DATA)
        if ids is None:
            data["id"] = np.arange(self._n_vocab, dtype=np.int32)
            data["logit"] = logits
        else:
            data["id"] = ids
            data["logit"] = logits[ids]
        array = llama_cpp.llama_token_data_array(
            data=data.ctypes.data_as(llama_cpp.llama_token_data_p), size=len(data), selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(sampler.sampler, ctypes.byref(array))
        if not 0 <= array.selected < array.size:
            raise RuntimeError("llama.cpp's sampler chose no token")
        chosen = array.data[array.selected]  # samplers may point `data` elsewhere
        return int(chosen.id), float(chosen.logit)

    def next_token_scores(self, prompt: Sequence[int], candidates: Sequence[int],
                          cancelled: CancelCheck | None = None) -> dict[int, float]:
        """The logits of the last evaluated token (`prompt`'s last) for each candidate: they
        differ from log-probabilities by one shared constant."""
        vocab = self._llm.n_vocab()
        logits = llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
        return {t: float(logits[t]) for t in candidates if t < vocab}

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
            pre = self._sync(prefix[:-1], need_logits=False, cancelled=cancelled)[0]
            if pre.cancelled:
                return Scored([], pre.reused, pre.encoded, True)
            batch = prefix[-1:] + continuation[:-1]
            if len(self.tokens) + len(batch) > self.n_ctx:
                raise ContextOverflow(f"prompt of {len(prefix) + len(continuation)} tokens "
                                      f"does not fit the context of {self.n_ctx}")
            t0 = time.perf_counter()
            out: list[float] = []
            for i in range(0, len(batch), CANCEL_PIECE_TOKENS):
                if i and cancelled is not None and cancelled():
                    self.counters.encoded += i
                    return Scored([], pre.reused, pre.encoded + i, True, pre.ms)
                piece = batch[i : i + CANCEL_PIECE_TOKENS]
                out += self._decode_scoring(piece, continuation[i : i + len(piece)])
            self.counters.encoded += len(batch)
            ms = (time.perf_counter() - t0) * 1000
            self.counters.prefill_ms += ms
            return Scored(out, pre.reused, pre.encoded + len(batch), False, pre.ms + ms)

    def _decode_scoring(self, piece: list[int], targets: list[int]) -> list[float]:
        """Evaluate `piece` after the cache, logits kept at every position; the log-probability
        of each target token under the logits of the piece's token at the same position."""
        n_past = len(self.tokens)
        self._llm._batch.set_batch(batch=piece, n_past=n_past, logits_all=True)
        self._llm._ctx.decode(self._llm._batch)
        self._llm.input_ids[n_past:n_past + len(piece)] = piece
        self._llm.n_tokens = n_past + len(piece)
        self.tokens.extend(piece)
        self._logits_ready = True
        n_vocab = self._llm.n_vocab()
        out = []
        for i, token in enumerate(targets):
            row = np.ctypeslib.as_array(self._llm._ctx.get_logits_ith(i), shape=(n_vocab,))
            top = float(row.max())
            out.append(float(row[token]) - top - float(np.log(np.exp(row - top).sum())))
        return out

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
