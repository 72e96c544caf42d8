"""The llama.cpp session against the real default model (Qwen2.5-Coder-0.5B)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from prism_code.llm import models
from prism_code.llm.runtime import LlamaSession, json_grammar
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

    # Cancelling a prefill between batches leaves a valid, reusable prefix.
    session.reset()
    long_prompt = base + base[:100]
    checks = iter([False, True])
    stats = session.prefill(long_prompt, cancelled=lambda: next(checks))
    assert stats.cancelled and session.tokens == long_prompt[: session.n_batch]
    assert session.generate(long_prompt, max_tokens=1).stats.reused == session.n_batch


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
