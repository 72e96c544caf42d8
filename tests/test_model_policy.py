"""The completion model policy: auto takes the 1.5B only where this host runs it fast enough."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prism_code.llm.machine_speed import MachineSpeed, SpeedCache, host_key, measured_speed
from prism_code.llm.models import MODELS
from prism_code.tasks.fim import MIDDLE_STEP_LINES, FimBudget
from prism_code.tasks.model_policy import (
    LARGE,
    LEFT_LINE_TOKENS,
    SMALL,
    choose,
    new_line_prompt_tokens,
    predict,
)

NEW_LINE_TOKENS = new_line_prompt_tokens(FimBudget())


def speed_at(keystroke_ms: float, new_line_ms: float) -> MachineSpeed:
    """A measured-speed stub whose predicted latencies are the given ones: the keystroke's
    two tokens cost one decode step, so a keystroke is 10 decode steps, and a new line's
    prompt is evaluated at the prefill rate."""
    decode = keystroke_ms / 10
    prefill = 1000 * NEW_LINE_TOKENS / (new_line_ms - 9 * decode)
    return MachineSpeed(prefill, decode, threads=2)


def auto(speed: MachineSpeed | None, installed: bool = True, model_path: str | None = None):
    return choose("auto", model_path, large_installed=installed, speed=speed)


def test_the_stub_predicts_what_it_is_built_for():
    assert predict(speed_at(420, 1500)).keystroke_ms == 420
    assert predict(speed_at(420, 1500)).new_line_ms == 1500


def test_auto_takes_the_1_5b_on_a_fast_host():
    choice = auto(speed_at(300, 900))
    assert choice.model == LARGE and not choice.measuring
    assert "300 ms a keystroke" in choice.reason and "900 ms on a new line" in choice.reason


def test_auto_takes_the_1_5b_exactly_at_both_limits():
    assert auto(speed_at(500, 2000)).model == LARGE


@pytest.mark.parametrize(("keystroke_ms", "new_line_ms"), [(500.1, 2000), (500, 2000.1), (900, 7500)])
def test_auto_keeps_the_0_5b_when_either_latency_passes_its_limit(keystroke_ms, new_line_ms):
    choice = auto(speed_at(keystroke_ms, new_line_ms))
    assert choice.model == SMALL
    assert "too slow here" in choice.reason
    assert choice.prediction is not None and choice.to_json()["speed"]["model"] == LARGE


def test_the_1_5b_on_the_slow_benchmark_host_is_too_slow():
    # docs/benchmarks.md: the 0.5B on the 2-core test machine prefills 99 tokens/s and decodes
    # 34 ms/token; a new line alone costs its suffix at the prefill rate, ~2.7 s, for the 0.5B.
    slow = predict(MachineSpeed(99, 34, 2))
    assert slow.new_line_ms > 2000
    assert auto(MachineSpeed(99, 34, 2)).model == SMALL


def test_a_longer_suffix_budget_predicts_a_slower_new_line():
    speed = speed_at(300, 1500)
    assert predict(speed, FimBudget(suffix_tokens=512)).new_line_ms > 1500
    assert predict(speed, FimBudget(suffix_tokens=512)).keystroke_ms == 300


def test_a_named_model_is_used_whatever_the_speed():
    fast, slow = speed_at(200, 800), speed_at(2000, 9000)
    assert choose(LARGE, None, large_installed=True, speed=slow).model == LARGE
    assert choose(SMALL, None, large_installed=True, speed=fast).model == SMALL
    assert "prism.completion.model" in choose(SMALL, None, large_installed=True).reason


def test_auto_follows_the_model_path_setting():
    choice = auto(speed_at(200, 800), model_path="/models/my.gguf")
    assert choice.model == "/models/my.gguf" and "prism.modelPath" in choice.reason


def test_auto_without_the_1_5b_installed_says_how_to_install_it():
    choice = auto(None, installed=False)
    assert choice.model == SMALL and not choice.measuring
    assert f"python -m prism_code.llm.models {LARGE}" in choice.reason


def test_auto_serves_with_the_0_5b_until_the_1_5b_is_measured():
    waiting = auto(None)
    assert waiting.model == SMALL and waiting.measuring
    failed = choose("auto", None, large_installed=True, error="bad file")
    assert failed.model == SMALL and not failed.measuring and "bad file" in failed.reason


# ---- with the real small model -------------------------------------------------------------


@pytest.mark.model
def test_a_measured_speed_is_kept_for_this_host_and_reused(tmp_path: Path):
    from prism_code.llm import LlamaSession

    cache = SpeedCache(tmp_path / "machine-speed")
    key = host_key(MODELS[SMALL].sha256, threads=1)
    opened: list[LlamaSession] = []

    def open_small() -> LlamaSession:
        opened.append(LlamaSession.open(SMALL, n_threads=1, n_ctx=512))
        return opened[-1]

    speed = measured_speed(cache, key, open_small)
    assert len(opened) == 1 and speed.threads == 1
    assert speed.prefill_tokens_per_s > 0 and speed.decode_ms_per_token > 0
    assert [p.name for p in cache.root.iterdir()] == [key.file_name()]

    def never() -> LlamaSession:
        raise AssertionError("a kept speed must not load the model again")

    assert measured_speed(SpeedCache(cache.root), key, never) == speed  # e.g. the next start
    assert cache.get(host_key(MODELS[SMALL].sha256, threads=2)) is None  # other threads: measure again
    assert cache.get(host_key(MODELS[LARGE].sha256, threads=1)) is None  # another model too


def _module(functions: int) -> str:
    return "\n\n".join(f'def scale_{i}(value, factor={i}):\n    """Scale a value by {i}."""\n'
                       f"    return value * factor + {i}\n" for i in range(functions))


@pytest.mark.model
def test_a_new_line_evaluates_what_the_policy_counts(tmp_path: Path, model_session):
    from prism_code.index import RepoIndex
    from prism_code.tasks.complete import Completer, CompletionSettings

    root = tmp_path / "repo"
    root.mkdir()
    text = _module(40)  # ~2,000 tokens: the suffix budget is filled, the prefix fits its own
    (root / "scale.py").write_text(text)
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        index.update()
        lines = text.split("\n")
        line = 48  # `    return value * factor + 9`, the cursor at its end; Enter opens line 49,
        # whose 0-based number is a multiple of MIDDLE_STEP_LINES: the costliest new line
        left = lines[line - 1]
        completer = Completer(index, model_session, CompletionSettings(retrieval=False, type_through=False))
        model_session.reset()
        completer.warm("scale.py", text, line, len(left) + 1)  # the user typed this line
        lines.insert(line, "    ")  # Enter: the editor indents the new line
        result = completer.complete("scale.py", "\n".join(lines), line + 1, 5)
    finally:
        index.close()
    moved = "\n".join(text.split("\n")[line - MIDDLE_STEP_LINES:line]) + "\n"  # the middle's lines, left
    assert moved.endswith(left + "\n")
    moved_tokens = len(model_session.tokenize_text(moved))
    budget = FimBudget()
    counted = new_line_prompt_tokens(budget) - MIDDLE_STEP_LINES * LEFT_LINE_TOKENS + moved_tokens
    # The count is an upper bound, and a close one: the suffix holds whole lines, and the
    # budget charges each line with its own newline, which the joined text shares with the
    # next line's indentation.
    assert 0.85 * counted <= result.encoded <= counted
    assert result.encoded < budget.prefix_tokens  # the lines above stay cached


def test_a_damaged_or_missing_speed_file_means_measuring_again(tmp_path: Path):
    cache = SpeedCache(tmp_path / "speeds")
    key = host_key("0" * 64, threads=2)
    cache.put(key, MachineSpeed(120.0, 40.0, 2))
    assert cache.get(key) == MachineSpeed(120.0, 40.0, 2)
    (cache.root / key.file_name()).write_text("{not json")
    assert cache.get(key) is None  # a damaged file measures again rather than failing
    shutil.rmtree(cache.root)
    assert cache.get(key) is None
