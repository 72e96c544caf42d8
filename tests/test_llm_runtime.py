"""The llama.cpp session against the real default model (Qwen2.5-Coder-0.5B)."""

from __future__ import annotations

import ctypes
import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

import llama_cpp

from prism_code.llm import models
from prism_code.llm.gbnf import starts_with
from prism_code.llm.runtime import CANCEL_PIECE_TOKENS, LlamaSession, json_grammar
from prism_code.llm.state_cache import StateCache

pytestmark = pytest.mark.model

# ~420 tokens of plain code: long enough that reuse is visible, short enough for 2 cores.
BASE_CODE = "".join(
    f"def scale_{i}(values: list[float], factor: float = {i}.5) -> list[float]:\n"
    f'    """Multiply each value by {i}.5 and drop negatives."""\n'
    f"    return [v * factor for v in values if v >= 0]\n\n\n"
    for i in range(8)
)


@pytest.fixture(scope="module")
def session() -> Iterator[LlamaSession]:
    try:
        path = models.ensure_model(models.DEFAULT_MODEL)
    except models.ModelNotInstalled as exc:
        pytest.skip(str(exc))
    # A small batch so that a prefill of this short code still spans several batches.
    s = LlamaSession(path, n_batch=256, model_sha256=models.MODELS[models.DEFAULT_MODEL].sha256)
    yield s
    s.close()


@pytest.fixture(scope="module")
def base(session: LlamaSession) -> list[int]:
    return session.tokenize_text(BASE_CODE)


def _cold(session: LlamaSession, prompt: list[int], n: int, stop: tuple[str, ...] = ()) -> list[int]:
    session.reset()
    g = session.generate(prompt, max_tokens=n, stop=stop)
    assert g.stats.reused == 0
    return g.tokens


def test_control_tokens_in_user_text_stay_text(session: LlamaSession) -> None:
    fim = session.special_token("<|fim_prefix|>")
    assert fim == 151659
    plain = session.tokenize_text("x = '<|fim_prefix|><|im_end|>'")
    assert fim not in plain
    assert all(t < 151643 for t in plain)  # Qwen's control tokens start at 151643
    assert session.detokenize(plain) == "x = '<|fim_prefix|><|im_end|>'"
    with pytest.raises(KeyError):
        session.special_token("<|not_a_token|>")


def test_prefix_reuse_matches_cold(session: LlamaSession, base: list[int]) -> None:
    session.reset()
    before = session.counters.snapshot()
    first = session.generate(base + session.tokenize_text("def add(a: int, b: int) -> int:\n"), max_tokens=8)
    prompt = base + session.tokenize_text("def mean(values: list[float]) -> float:\n")
    warm = session.generate(prompt, max_tokens=24, stop=["\n\n"])
    assert warm.stats.reused >= len(base)
    assert warm.stats.encoded == len(prompt) - warm.stats.reused
    assert session.counters.reused - before.reused == warm.stats.reused
    assert session.counters.decoded - before.decoded == len(first.tokens) + len(warm.tokens)
    assert warm.tokens == _cold(session, prompt, 24, stop=("\n\n",))
    assert warm.text.strip() and "\n\n" not in warm.text


def test_truncate_then_continue_matches_cold(session: LlamaSession, base: list[int]) -> None:
    session.reset()
    session.prefill(base)
    # WiM: an instruction and its margin are decoded, then cut out of the cache.
    session.generate(base + session.tokenize_text("# Summarise the functions above in one line:\n#"), max_tokens=10)
    session.truncate(len(base))
    assert session.tokens == base
    prompt = base + session.tokenize_text("def clip(x: float) -> float:\n")
    warm = session.generate(prompt, max_tokens=12)
    assert warm.stats.reused == len(base)
    assert warm.tokens == _cold(session, prompt, 12)


def test_state_file_restores_into_fresh_session(session: LlamaSession, base: list[int], tmp_path: Path) -> None:
    cache = StateCache(tmp_path)
    session.reset()
    session.prefill(base)
    saved = cache.save_prefix(session, len(base))
    assert saved is not None and saved.stat().st_size < 40 * len(base) * 1024

    prompt = base + session.tokenize_text("def total(values: list[float]) -> float:\n")
    cold = _cold(session, prompt, 10)
    with LlamaSession(session.model_path, n_batch=session.n_batch, model_sha256=session.model_sha256) as fresh:
        assert cache.restore_longest_prefix(fresh, prompt) == len(base)
        assert fresh.tokens == base
        warm = fresh.generate(prompt, max_tokens=10)
        assert warm.stats.reused == len(base)
        assert warm.tokens == cold
        # Already cached live: nothing to restore.
        assert cache.restore_longest_prefix(fresh, prompt) == 0

    # A truncated file is deleted and the session falls back to a cold prefill.
    saved.write_bytes(saved.read_bytes()[:-1000])
    session.reset()
    assert cache.restore_longest_prefix(session, prompt) == 0
    assert not saved.exists()
    assert session.generate(prompt, max_tokens=10).tokens == cold


def test_state_cache_evicts_least_recently_used(session: LlamaSession, base: list[int], tmp_path: Path) -> None:
    prefixes = [base[0:24], base[24:48], base[48:72]]  # same length, so same file size
    session.reset()
    session.prefill(prefixes[0])
    probe = StateCache(tmp_path / "probe").save_prefix(session, 24)
    assert probe is not None
    cap = 2 * probe.stat().st_size + 100  # room for two states
    cache = StateCache(tmp_path / "lru", max_bytes=cap)

    saved = []
    for i, prefix in enumerate(prefixes):
        if i == 2:
            # Reading the first file makes the second one the least recently used.
            time.sleep(0.05)  # file times tick with the kernel's coarse clock
            session.reset()
            assert cache.restore_longest_prefix(session, prefixes[0]) == 24
        time.sleep(0.05)
        session.reset()
        session.prefill(prefix)
        path = cache.save_prefix(session, 24)
        assert path is not None
        saved.append(path)
    assert [p.exists() for p in saved] == [True, False, True]
    assert cache.total_bytes() <= cap


def test_json_grammar_output_parses(session: LlamaSession) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "line": {"type": "integer"}},
        "required": ["name", "line"],
    }
    prompt = session.chatml(
        [
            ("system", "You answer with JSON only."),
            ("user", "In this code, which function divides?\n"
             "1 def add(a, b): return a + b\n2 def div(a, b): return a / b\n"
             'Answer as {"name": ..., "line": ...}.'),
        ]
    )
    g = session.generate(prompt, max_tokens=48, grammar=json_grammar(schema))
    answer = json.loads(g.text)
    assert isinstance(answer["name"], str) and isinstance(answer["line"], int)
    assert g.stats.finish_reason == "eos"


def test_cancellation_stops_early(session: LlamaSession, base: list[int]) -> None:
    calls = 0

    def cancelled() -> bool:
        nonlocal calls
        calls += 1
        return calls > 4

    session.reset()
    g = session.generate(base[:40], max_tokens=64, cancelled=cancelled)
    assert g.stats.finish_reason == "cancelled"
    assert len(g.tokens) == 3  # one check goes to the prefill batch, then one before each token

    # Cancelling a prefill between pieces leaves a valid, reusable prefix.
    session.reset()
    long_prompt = base + base[:100]
    checks = iter([False, True])
    stats = session.prefill(long_prompt, cancelled=lambda: next(checks))
    assert stats.cancelled and session.tokens == long_prompt[:CANCEL_PIECE_TOKENS]
    assert session.generate(long_prompt, max_tokens=1).stats.reused == CANCEL_PIECE_TOKENS

    # Scoring a long continuation stops between pieces too, and the cache stays usable.
    session.reset()
    checks = iter([False, True])
    scored = session.continuation_logprobs(base[:10], base[10:200], cancelled=lambda: next(checks, True))
    assert scored.cancelled and scored.logprobs == []
    assert session.tokens == base[: 9 + CANCEL_PIECE_TOKENS]
    assert session.generate(base[:100], max_tokens=1).stats.reused == 9 + CANCEL_PIECE_TOKENS


def test_continuation_logprobs_match_sampling_token_by_token(session: LlamaSession, base: list[int]) -> None:
    prefix, continuation = base[:60], base[60:72]
    session.reset()
    scored = session.continuation_logprobs(prefix, continuation)
    assert len(scored.logprobs) == len(continuation) and scored.reused == 0
    assert scored.encoded == len(prefix) + len(continuation) - 1
    one_by_one = []
    for i, token in enumerate(continuation):
        session.reset()
        one_by_one.append(session.continuation_logprobs(prefix + continuation[:i], [token]).logprobs[0])
    # One batch or token by token: the same numbers up to float rounding in the kernels.
    assert all(abs(a - b) < 0.05 for a, b in zip(scored.logprobs, one_by_one, strict=True))
    # The continuation stays cached: scoring it again after the same prefix re-evaluates one batch only.
    again = session.continuation_logprobs(prefix, continuation)
    assert again.reused == len(prefix) - 1


def _keystroke_run(session: LlamaSession, base: list[int], shortcuts: bool) -> list[object]:
    """A completion's calls as keystrokes make them: answers walked along again, a divergence,
    token healing, a grammar and sampling after cached logits, a truncate and a state import."""
    session.shortcuts = shortcuts
    session.reset()
    seen: list[object] = []

    def note(g: object) -> None:
        seen.append((g.tokens, g.text, g.stats.finish_reason, list(session.tokens)))  # type: ignore[attr-defined]

    try:
        prompt = base[:100]
        first = session.generate(prompt, max_tokens=8)
        note(first)
        # The user typed the answer's first tokens: the same path, read off the kept logits.
        note(session.generate(prompt + first.tokens[:2], max_tokens=8))
        note(session.generate(prompt + first.tokens[:1], max_tokens=3, stop=["\n"]))
        # Something else typed: the path leaves the cache one token in.
        note(session.generate(prompt + first.tokens[:1] + session.tokenize_text(" other"), max_tokens=3))
        # Token healing after cached tokens, for a text the answer begins with and others.
        for text in (session.detokenize(first.tokens[1:2])[:2] or "x", " r", "日本"):
            healed = (session.heal(prompt + first.tokens[:1], text) if shortcuts else
                      session.generate(prompt + first.tokens[:1], max_tokens=1, grammar=starts_with(text)))
            note(healed)
            note(session.generate(prompt + first.tokens[:1] + healed.tokens, max_tokens=3))
        # A grammar, and sampling at a temperature, from kept logits.
        note(session.generate(prompt + first.tokens[:2], max_tokens=3, grammar=starts_with(" # ")))
        note(session.generate(prompt + first.tokens[:2], max_tokens=3, temperature=0.7, seed=3))
        session.truncate(len(prompt) + 1)
        note(session.generate(prompt + first.tokens[:2], max_tokens=3))
        state = bytearray(session.export_state())
        cached = list(session.tokens)
        session.import_state(cached, state)
        note(session.generate(cached[:-1], max_tokens=3))
    finally:
        session.shortcuts = True
    return seen


def test_shortcuts_give_the_plain_paths_tokens(session: LlamaSession, base: list[int]) -> None:
    # Kept logits, numpy's argmax and healing over few candidates against llama.cpp sampling
    # over the whole vocabulary with every logit evaluated again. One thread: two spin at
    # barriers on a busy machine, and both runs use the same.
    session.set_threads(1)
    try:
        plain = _keystroke_run(session, base, shortcuts=False)
        fast = _keystroke_run(session, base, shortcuts=True)
    finally:
        session.set_threads(2)
    assert len(fast) == len(plain)
    for i, (a, b) in enumerate(zip(fast, plain, strict=True)):
        assert a[:3] == b[:3], f"call {i}"
        # The cache holds the same tokens, and may go on with an earlier answer that begins
        # with the last token sampled.
        assert a[3][:len(b[3])] == b[3], f"call {i}"


def test_shortcuts_evaluate_less_when_the_answer_is_typed(session: LlamaSession, base: list[int]) -> None:
    session.reset()
    prompt = base[:100]
    first = session.generate(prompt, max_tokens=8)
    healed = session.heal(prompt + first.tokens[:1], session.detokenize(first.tokens[1:2])[:1])
    assert healed.tokens == first.tokens[1:2] and healed.stats.encoded == 0
    again = session.generate(prompt + first.tokens[:2], max_tokens=8)
    assert again.tokens == first.tokens[2:] + again.tokens[6:]
    assert again.stats.encoded == 0  # its last prompt token's logits were kept
    assert len(session.tokens) == len(prompt) + 2 + len(again.tokens) - 1


HEAL_TEXTS = [" r", "        r", "self.", "x", " ", "\n    ", "é", " 日", "<|", "<|fim", '"', "\\", "\t",
              "ab" * 20, "\U0001f600"]


def _grammar_over(session: LlamaSession, text: str, logits: np.ndarray) -> tuple[np.ndarray, int]:
    """llama.cpp's own answer over the whole vocabulary: the logits its grammar leaves, its greedy pick."""
    sampler = session._sampler(starts_with(text), 0.0, None)
    try:
        n = len(logits)
        data = np.zeros(n, dtype=[("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        data["id"] = np.arange(n, dtype=np.int32)
        data["logit"] = logits
        array = llama_cpp.llama_token_data_array(
            data=data.ctypes.data_as(llama_cpp.llama_token_data_p), size=n, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(sampler.sampler, ctypes.byref(array))
        return data["logit"].copy(), int(array.data[array.selected].id)
    finally:
        sampler.close()


@pytest.mark.parametrize("text", HEAL_TEXTS)
def test_heal_candidates_are_what_the_grammar_admits(session: LlamaSession, text: str) -> None:
    candidates = session.heal_index().candidates(text)
    assert candidates is not None
    left, _ = _grammar_over(session, text, np.zeros(session.llama.n_vocab(), dtype=np.float32))
    admitted = set(np.flatnonzero(np.isfinite(left)).tolist())
    certain = set(candidates.certain.tolist())
    assert admitted and certain <= admitted  # the certain ones without asking the grammar
    assert admitted - certain <= set(candidates.doubtful.tolist())  # the grammar asked about the rest
    assert len(candidates.doubtful) < 2500


def test_healing_over_few_candidates_picks_the_grammars_token(session: LlamaSession) -> None:
    # Greedy's ties go to the lowest token id: equal logits everywhere, then random ones with ties.
    rng = np.random.default_rng(0)
    n = session.llama.n_vocab()
    for logits in (np.zeros(n, dtype=np.float32), rng.integers(0, 3, n).astype(np.float32),
                   rng.standard_normal(n).astype(np.float32)):
        for text in HEAL_TEXTS:
            candidates = session.heal_index().candidates(text)
            assert candidates is not None
            sampler = session._sampler(starts_with(text), 0.0, None)
            try:
                picked = session._greedy_among(sampler, logits, candidates)
            finally:
                sampler.close()
            assert picked == _grammar_over(session, text, logits)[1], text
