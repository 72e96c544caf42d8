"""A model on another machine, behind an OpenAI-compatible `/v1/completions` endpoint.

For teams that run a bigger model on llama.cpp's server (`llama-server`) or vLLM.
Prompts are still built here as token lists with a local copy of the model's vocabulary
(a GGUF loaded vocab-only), so repository text is tokenized with special tokens disabled
exactly as for the local session, and are sent as token ids: the server never
re-tokenizes text, so `<|fim_prefix|>` written in someone's code stays plain text.

Servers that accept only text prompts (llama-cpp-python's own `llama_cpp.server`
validates `prompt` as a string) get the detokenized prompt instead, with every spelling
of a control token inside repository text broken by a zero-width space, because such
servers tokenize text prompts with special tokens enabled.

The transport (json_http) is the standard library's http.client, with a watcher that
closes the socket the moment a request is cancelled or its deadline passes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prism_code.cancel import CancelCheck, Cancelled

from . import prompt_logprobs
from .json_http import JsonHttpClient, RemoteError, RequestCancelled, error_message
from .models import DEFAULT_MODEL, MODELS, ensure_model, file_sha256
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
from .vocab_tokens import VocabularyTokens

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar

log = logging.getLogger(__name__)

API_KEY_ENV = "PRISM_CODE_API_KEY"
PromptFormat = Literal["auto", "tokens", "text"]

_ZWSP = "\u200b"  # breaks a control-token spelling without visibly changing the code
_FALLBACK_N_CTX = 4096
# The longest continuation scored in one request, as the local session's batch: the
# likelihood rerank cuts a description to it.
N_BATCH = 512


@dataclass(frozen=True)
class RemoteSettings:
    url: str = "http://127.0.0.1:8080"  # the server's base URL; "/v1" may be included or not
    model: str | None = None  # the served model's name; None: the server's only/first model
    api_key: str | None = field(default=None, repr=False)  # None: $PRISM_CODE_API_KEY
    # The vocabulary the server's model uses: a GGUF path or a registry model name.
    # Qwen2.5-Coder models of every size share the default model's vocabulary.
    tokenizer: str | Path = DEFAULT_MODEL
    prompt_format: PromptFormat = "auto"  # auto: token ids, text if the server refuses them
    n_ctx: int | None = None  # None: asked from the server (llama-server /props, vLLM /v1/models)
    connect_timeout: float = 5.0  # seconds to establish the connection
    timeout: float = 60.0  # seconds for a whole request, connection to last byte
    stream: bool = False  # stream tokens: a cancelled request keeps the text received so far
    cache_prompt: bool = True  # llama.cpp keeps the prompt's KV for the next request
    # How the server returns a prompt's own log-probabilities (the likelihood rerank, WiM's
    # margin label): None finds out on first use (echo + logprobs, then vLLM's prompt_logprobs).
    prompt_logprobs: prompt_logprobs.Mode | None = None
    # The request field a GBNF grammar goes in: "grammar" (llama.cpp's llama-server and
    # llama-cpp-python's server) or "guided_grammar" (vLLM).
    grammar_field: Literal["grammar", "guided_grammar"] = "grammar"


@dataclass(frozen=True)
class RemoteCall:
    """What the last request sent and what the server reported about it."""

    url: str
    prompt_format: Literal["tokens", "text"]
    wall_ms: float
    # Where reused/encoded/decoded came from: llama.cpp "timings", OpenAI "usage", or
    # "estimate" (common prefix with the previous prompt, as a caching server would keep).
    reported: Literal["timings", "usage", "estimate"]
    server_prompt_tokens: int | None  # the server's own count of the prompt, if it gave one


@dataclass
class _Reply:
    text: str = ""
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict)  # the last response object, as received


class RemoteSession(VocabularyTokens):
    """The `CompletionBackend` of a remote server. Calls are serialised by a lock.

    The KV cache lives on the server; `tokens`, `truncate` and `reset` are client-side
    bookkeeping of the last prompt sent, so callers' prefix accounting keeps working.
    """

    # The server sends text back; its tokens here are this side's tokenization of it.
    exact_tokens = False

    def __init__(self, settings: RemoteSettings | None = None) -> None:
        self.settings = settings or RemoteSettings()
        self._http = JsonHttpClient(self.settings.url, self.settings.connect_timeout, self.settings.timeout,
                                    self.settings.api_key or os.environ.get(API_KEY_ENV) or None)
        self._endpoint = self._http.endpoint
        self.tokenizer_path = ensure_model(self.settings.tokenizer)
        # llama.cpp's library is loaded here, not when this module is imported.
        import llama_cpp

        from .vocab import ModelVocabulary

        # The vocabulary only: tokenizing needs no weights, so loading takes ~0.3 s.
        self._vocab_llm = llama_cpp.Llama(model_path=str(self.tokenizer_path), vocab_only=True, verbose=False)
        self._format: PromptFormat = self.settings.prompt_format
        self._n_ctx = self.settings.n_ctx
        self._model_name = self.settings.model
        self._model_sha256: str | None = None
        self._scoring: prompt_logprobs.Mode | None = self.settings.prompt_logprobs
        self._no_scoring: RemoteError | None = None  # the server was asked and has neither mode
        self.vocabulary = ModelVocabulary(self._vocab_llm, self.tokenizer_path.name)
        self._lock = threading.RLock()
        self.tokens: list[int] = []  # the last prompt sent; read-only for callers
        self.counters = SessionCounters()
        self.last_call: RemoteCall | None = None

    # --- identity ------------------------------------------------------------------

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @property
    def url(self) -> str:
        return self._endpoint.url("/v1/completions")

    @property
    def n_batch(self) -> int:
        return N_BATCH

    @property
    def model_label(self) -> str:
        """What notes written through this session say wrote them."""
        return f"remote:{self.model_name}"

    @property
    def prompt_format(self) -> PromptFormat:
        """"tokens" or "text" once the server has answered (or as configured)."""
        return self._format

    @property
    def model_name(self) -> str:
        """The served model's name, as configured or as the server lists it."""
        if self._model_name is None:
            models = self._get_json("/v1/models").get("data") or []
            if not models or not isinstance(models[0], dict) or "id" not in models[0]:
                raise RemoteError(self._endpoint.url("/v1/models"), "the server lists no model")
            self._model_name = str(models[0]["id"])
        return self._model_name

    @property
    def model_sha256(self) -> str:
        """A stable id of (remote model, tokenizer): what the answers depend on. The model is its
        configured name, else the server's URL: asking the server here would make a mere
        protocol check (`isinstance(session, KVStateSession)` reads every attribute on
        Python 3.11) a network request that can fail."""
        if self._model_sha256 is None:
            tokenizer = self.settings.tokenizer
            spec = MODELS.get(tokenizer) if isinstance(tokenizer, str) else None
            # A registry model's checksum is known; a foreign GGUF is hashed once, here.
            vocab = spec.sha256 if spec else file_sha256(self.tokenizer_path)
            model = self.settings.model or self._endpoint.base_url
            self._model_sha256 = hashlib.sha256(f"remote\0{model}\0{vocab}".encode()).hexdigest()
        return self._model_sha256

    @property
    def n_ctx(self) -> int:
        if self._n_ctx is None:
            self._n_ctx = self._discover_n_ctx()
        return self._n_ctx

    def _discover_n_ctx(self) -> int:
        # llama-server reports its context in /props; vLLM lists max_model_len per model.
        for path, find in (("/props", _n_ctx_from_props), ("/v1/models", _n_ctx_from_models)):
            try:
                n = find(self._get_json(path))
            except RemoteError:
                continue
            if n:
                return n
        log.info("%s does not report its context size; assuming %d tokens (set n_ctx to override)",
                 self._endpoint.base_url, _FALLBACK_N_CTX)
        return _FALLBACK_N_CTX

    def close(self) -> None:
        self._vocab_llm.close()

    def __enter__(self) -> RemoteSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- tokens (the rest come from VocabularyTokens, as LlamaSession's do) ---------------

    def _is_control(self, token: int) -> bool:
        return self.vocabulary.is_control(token)

    # --- client-side cache bookkeeping ----------------------------------------------------

    def truncate(self, n: int) -> None:
        if n < 0:
            raise ValueError("n must be >= 0")
        with self._lock:
            del self.tokens[n:]

    def reset(self) -> None:
        self.truncate(0)

    def prefill(self, tokens: Sequence[int], cancelled: CancelCheck | None = None) -> PrefillStats:
        """Nothing to do ahead of time: the server evaluates the prompt with the request.

        (A warm-up request with max_tokens=0 would mean "no limit" to some servers.)
        """
        return PrefillStats(len(tokens), 0, 0, 0.0)

    # --- generation -------------------------------------------------------------------

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
        """Continue `prompt_tokens` on the server; the text is cut before the first stop string.

        `grammar` is sent as its GBNF text in `settings.grammar_field` (llama.cpp's servers
        read `grammar`, vLLM `guided_grammar`); a server that ignores it answers unconstrained,
        and JSON answers are validated as always.
        """
        prompt = list(prompt_tokens)
        self._check_fits(prompt)
        stops = [s for s in stop if s]
        body = self._body(max_tokens, temperature, stops, seed)
        if self.settings.stream:
            body["stream_options"] = {"include_usage": True}
        if grammar is not None:
            body[self.settings.grammar_field] = grammar._grammar  # the GBNF source LlamaGrammar keeps
        with self._lock:
            if cancelled is not None and cancelled():
                return Generation("", [], GenerationStats(len(prompt), 0, 0, 0, 0.0, 0.0, "cancelled"))
            estimate = common_prefix(self.tokens, prompt)
            t0 = time.perf_counter()
            reply, used_format, was_cancelled = self._complete(prompt, body, cancelled)
            wall_ms = (time.perf_counter() - t0) * 1000
            # A cancelled request may have left only the part shared with the last one cached.
            self.tokens = prompt[:estimate] if was_cancelled else prompt
            return self._generation(prompt, stops, reply, used_format, was_cancelled, estimate, wall_ms)

    def _check_fits(self, prompt: list[int]) -> None:
        if not prompt:
            raise ValueError("empty prompt")
        if self._n_ctx is not None and len(prompt) > self._n_ctx:
            raise ContextOverflow(f"prompt of {len(prompt)} tokens does not fit the context of {self._n_ctx}")

    def _body(self, max_tokens: int, temperature: float, stops: list[str], seed: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": temperature,
            # The local session's sampler: top-k 40 / top-p 0.95 when sampling and no penalties;
            # servers' request defaults include repeat_penalty 1.1, which changes greedy answers.
            "top_k": 40,
            "top_p": 0.95,
            "min_p": 0.0,
            "repeat_penalty": 1.0,
            "frequency_penalty": 0.0,
            "presence_penalty": 0.0,
            "stream": self.settings.stream,
            "cache_prompt": self.settings.cache_prompt,
        }
        if self.settings.model:
            body["model"] = self.settings.model
        if stops:
            body["stop"] = stops
        if seed is not None:
            body["seed"] = seed
        return body

    # --- scoring ----------------------------------------------------------------------

    def heal(self, prompt_tokens: Sequence[int], text: str,
             cancelled: CancelCheck | None = None) -> Generation:
        from .gbnf import starts_with  # builds a llama.cpp grammar: loaded when one is needed

        return self.generate(prompt_tokens, max_tokens=1, grammar=starts_with(text), cancelled=cancelled)

    def prepare_heal(self) -> None:
        """Nothing to build: the server applies the grammar."""

    def next_token_scores(self, prompt: Sequence[int], candidates: Sequence[int],
                          cancelled: CancelCheck | None = None) -> dict[int, float]:
        """Each candidate scored as a one-token continuation of the same prompt, which the
        server's prefix cache holds after the first."""
        scored = {t: self.continuation_logprobs(prompt, [t], cancelled) for t in set(candidates)}
        if any(v.cancelled for v in scored.values()):
            raise Cancelled("cancelled")
        return {t: v.logprobs[0] for t, v in scored.items()}

    def continuation_logprobs(self, prefix: Sequence[int], continuation: Sequence[int],
                              cancelled: CancelCheck | None = None) -> Scored:
        """log P(each continuation token | everything before it), from the server's log-probabilities
        of the prompt `prefix + continuation` (see prompt_logprobs); one token is generated, unread.

        The first call finds out how the server returns them; a server that has no way is a
        RemoteError saying so, at once on every later call.
        """
        prefix, continuation = list(prefix), list(continuation)
        if not prefix or not continuation:
            raise ValueError("prefix and continuation must both be non-empty")
        prompt = prefix + continuation
        self._check_fits(prompt)
        with self._lock:
            if self._no_scoring is not None:
                raise RemoteError(self._no_scoring.url, self._no_scoring.reason)
            if cancelled is not None and cancelled():
                return Scored([], 0, 0, True)
            if self._scoring is not None:
                try:
                    return self._score(self._scoring, prompt, continuation, cancelled)
                except prompt_logprobs.NotSupported as exc:
                    raise RemoteError(self.url, f"no prompt log-probabilities through {self._scoring} "
                                      f"({exc})") from None
            refusals: list[str] = []
            for mode in prompt_logprobs.MODES:
                try:
                    scored = self._score(mode, prompt, continuation, cancelled, probe=mode == "echo")
                except prompt_logprobs.NotSupported as exc:
                    refusals.append(f"{mode}: {exc}")
                    continue
                if not scored.cancelled:
                    log.info("%s returns prompt log-probabilities through %s", self.url, mode)
                    self._scoring = mode
                return scored
            self._no_scoring = RemoteError(
                self.url, "the server returns no log-probabilities of prompt tokens, which the likelihood "
                "rerank and WiM need (tried " + "; ".join(refusals) + "); vLLM has them, llama.cpp's "
                "llama-server and llama-cpp-python's server do not")
            raise RemoteError(self._no_scoring.url, self._no_scoring.reason)

    def _score(self, mode: prompt_logprobs.Mode, prompt: list[int], continuation: list[int],
               cancelled: CancelCheck | None, probe: bool = False) -> Scored:
        """One scoring request in `mode` (after the echo probe when asked); NotSupported when the
        server refuses the fields (HTTP 4xx) or answers without what they ask for."""
        body = {**self._body(1, 0.0, [], None), **prompt_logprobs.request(mode), "stream": False}
        estimate = common_prefix(self.tokens, prompt)
        t0 = time.perf_counter()
        try:
            if probe:
                reply, _, was_cancelled = self._complete(self.tokenize_text(prompt_logprobs.PROBE), body, cancelled)
                if was_cancelled:
                    return Scored([], 0, 0, True)
                prompt_logprobs.check_probe(reply.raw)
            reply, fmt, was_cancelled = self._complete(prompt, body, cancelled)
        except RemoteError as exc:
            # A 4xx is the server refusing the fields; a 5xx or no answer is the server failing.
            if 400 <= (exc.status or 0) < 500:
                raise prompt_logprobs.NotSupported(exc.reason) from None
            raise
        wall_ms = (time.perf_counter() - t0) * 1000
        if was_cancelled:
            self.tokens = prompt[:estimate]
            return Scored([], estimate, 0, True, wall_ms)
        try:
            values = prompt_logprobs.read(mode, reply.raw, len(prompt), continuation, self.detokenize(continuation))
        except prompt_logprobs.NotSupported:
            raise
        except ValueError as exc:
            raise RemoteError(self.url, str(exc)) from None
        self.tokens = prompt
        reply.text = ""  # the echoed prompt, not decoded text
        stats = self._generation(prompt, [], reply, fmt, False, estimate, wall_ms).stats
        return Scored(values, stats.reused, stats.encoded, False, wall_ms)

    def _complete(self, prompt: list[int], body: dict[str, Any],
                  cancelled: CancelCheck | None) -> tuple[_Reply, Literal["tokens", "text"], bool]:
        if self._format == "text":
            return self._with_format("text", body, prompt, cancelled)
        try:
            return self._with_format("tokens", body, prompt, cancelled)
        except RemoteError as exc:
            if self._format != "auto" or "prompt" not in exc.reason:
                raise
            first = exc
        # The server refused a token-id prompt (llama-cpp-python's server does). Only a
        # retry that succeeds as text fixes the format, so an unrelated error cannot.
        try:
            result = self._with_format("text", body, prompt, cancelled)
        except RemoteError as second:
            # What the server says of the text prompt is what the user can act on (a deadline, a
            # grammar it cannot parse); the refusal of ids only said to send text.
            raise second from None
        log.warning("%s does not accept token-id prompts (%s...); sending prompts as text, with "
                    "control-token spellings in repository text broken by U+200B",
                    self.url, first.reason[:80])
        self._format = "text"
        return result

    def _with_format(self, fmt: Literal["tokens", "text"], body: dict[str, Any], prompt: list[int],
                     cancelled: CancelCheck | None) -> tuple[_Reply, Literal["tokens", "text"], bool]:
        payload = {**body, "prompt": prompt if fmt == "tokens" else self._text_prompt(prompt)}
        reply, was_cancelled = self._post_completion(payload, cancelled)
        if fmt == "tokens" and self._format == "auto" and not was_cancelled:
            self._format = "tokens"
        return reply, fmt, was_cancelled

    def _generation(self, prompt: list[int], stops: list[str], reply: _Reply, fmt: Literal["tokens", "text"],
                    was_cancelled: bool, estimate: int, wall_ms: float) -> Generation:
        text = reply.text
        # Servers cut at stop strings already; cutting again is free and covers those that don't.
        cut = first_stop(text, stops)
        if cut is not None:
            text = text[:cut]
        out = self.tokenize_text(text)
        finish = "cancelled" if was_cancelled else _finish(reply.finish_reason, cut is not None)
        timings, usage = reply.timings or {}, reply.usage or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        server_prompt = _int(usage.get("prompt_tokens"))
        prefill_ms, decode_ms = 0.0, wall_ms
        reported: Literal["timings", "usage", "estimate"]
        if "prompt_n" in timings:
            reported = "timings"
            reused = _int(timings.get("cache_n")) or 0
            encoded = _int(timings.get("prompt_n")) or 0
            decoded = _int(timings.get("predicted_n")) or len(out)
            prefill_ms = float(timings.get("prompt_ms") or 0.0)
            decode_ms = float(timings.get("predicted_ms") or 0.0)
            server_prompt = server_prompt or reused + encoded
        elif cached is not None and server_prompt is not None:
            reported = "usage"
            reused = _int(cached) or 0
            encoded = server_prompt - reused
            decoded = _int(usage.get("completion_tokens")) or len(out)
        else:
            reported = "estimate"
            reused = estimate
            encoded = len(prompt) - estimate
            decoded = _int(usage.get("completion_tokens")) or len(out)
        self.counters.encoded += encoded
        self.counters.reused += reused
        self.counters.decoded += decoded
        self.counters.prefill_ms += prefill_ms
        self.counters.decode_ms += decode_ms
        self.last_call = RemoteCall(self.url, fmt, wall_ms, reported, server_prompt)
        stats = GenerationStats(len(prompt), reused, encoded, decoded, prefill_ms, decode_ms, finish)
        return Generation(text, out, stats)

    # --- text prompts for servers that take no token ids --------------------------------

    def _text_prompt(self, prompt: list[int]) -> str:
        """The prompt as text that a server tokenizing with special tokens enabled reads back
        with exactly the control tokens of `prompt` and no others."""
        if prompt[:1] == self.prompt_start() != []:
            prompt = prompt[1:]  # servers add BOS to text prompts themselves
        parts: list[str] = []
        run: list[int] = []
        controls = 0
        for token in [*prompt, None]:
            if token is not None and not self._is_control(token):
                run.append(token)
                continue
            if run:
                parts.append(self._defuse(self.detokenize(run)))
                run = []
            if token is not None:
                parts.append(self._vocab_llm.detokenize([token], special=True).decode("utf-8", errors="replace"))
                controls += 1
        text = "".join(parts)
        if sum(map(self._is_control, self.tokenize_text(text, special=True))) != controls:
            raise RemoteError(self.url, "this prompt cannot be sent as text without changing its control tokens")
        return text

    def _defuse(self, text: str) -> str:
        for _ in range(8):
            spelled = {t for t in self.tokenize_text(text, special=True) if self._is_control(t)}
            if not spelled:
                return text
            for token in spelled:
                piece = self._vocab_llm.detokenize([token], special=True).decode("utf-8", errors="replace")
                if len(piece) < 2:
                    raise RemoteError(self.url, f"control token {piece!r} cannot be written as plain text")
                text = text.replace(piece, piece[0] + _ZWSP + piece[1:])
        raise RemoteError(self.url, "repository text keeps spelling control tokens")

    # --- HTTP ---------------------------------------------------------------------------

    def _post_completion(self, payload: dict[str, Any], cancelled: CancelCheck | None) -> tuple[_Reply, bool]:
        """(reply, cancelled?) of one completion request; RemoteError on any failure."""
        reply = _Reply()
        chunks = self._http.send("POST", "/v1/completions", payload, cancelled)
        received = 0
        try:
            for chunk in chunks:
                _merge(self.url, reply, chunk)
                received += 1
        except RequestCancelled:
            return reply, True
        finally:
            chunks.close()
        if not received:
            raise RemoteError(self.url, "the server closed the stream without an answer")
        return reply, False

    def _get_json(self, path: str) -> dict[str, Any]:
        return self._http.get_json(path)


def _merge(url: str, reply: _Reply, chunk: dict[str, Any]) -> None:
    """Add one response (or one streamed chunk) to what has been received."""
    if "error" in chunk:
        # Some servers report failures inside a 200 stream.
        raise RemoteError(url, f"server error: {error_message(json.dumps(chunk).encode())}")
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices:
        choice = choices[0] if isinstance(choices[0], dict) else {}
        reply.raw = chunk
        reply.text += str(choice.get("text") or "")
        reply.finish_reason = choice.get("finish_reason") or reply.finish_reason
    elif choices is None and not chunk.get("usage") and not chunk.get("timings"):
        raise RemoteError(url, "the response holds no completion choices")
    if isinstance(chunk.get("usage"), dict):
        reply.usage = chunk["usage"]
    if isinstance(chunk.get("timings"), dict):
        reply.timings = chunk["timings"]


def _finish(reason: str | None, cut_here: bool) -> str:
    # OpenAI's "stop" covers both a stop string and the end-of-generation token.
    if cut_here or reason == "stop":
        return "stop"
    if reason == "length":
        return "length"
    return reason or "stop"


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _n_ctx_from_props(props: dict[str, Any]) -> int | None:
    settings = props.get("default_generation_settings")
    n = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _int(n) or _int(props.get("n_ctx"))


def _n_ctx_from_models(models: dict[str, Any]) -> int | None:
    for entry in models.get("data") or []:
        if isinstance(entry, dict) and _int(entry.get("max_model_len")):
            return _int(entry["max_model_len"])
    return None
