"""The server applying the completion model policy: the 0.5B serves while the 1.5B is
measured once, on the model thread, when the editor is quiet; the result is kept."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from prism_code.cancel import Cancelled
from prism_code.llm.machine_speed import MachineSpeed
from prism_code.lsp import completion_model
from prism_code.lsp.completion_model import CompletionModel
from prism_code.lsp.model_host import ModelHost
from prism_code.lsp.model_scheduler import ModelScheduler

pytestmark = pytest.mark.asyncio

FAST = MachineSpeed(prefill_tokens_per_s=400.0, decode_ms_per_token=30.0, threads=2)
SLOW = MachineSpeed(prefill_tokens_per_s=40.0, decode_ms_per_token=75.0, threads=2)


@pytest.fixture(autouse=True)
def installed_large_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(completion_model, "is_installed", lambda name: True)
    monkeypatch.setattr(completion_model, "RETRY_S", 0.01)


def measuring(monkeypatch: pytest.MonkeyPatch, *outcomes: MachineSpeed | Exception) -> list[int]:
    """Each measurement in turn gives the next outcome and keeps a speed as the library does."""
    calls: list[int] = []

    def measured_speed(cache, key, open_session, cancelled=None):
        outcome = outcomes[len(calls)]
        calls.append(key.threads)
        if isinstance(outcome, Exception):
            raise outcome
        cache.put(key, outcome)
        return outcome
    monkeypatch.setattr(completion_model, "measured_speed", measured_speed)
    return calls


async def settled(chooser: CompletionModel, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while chooser.choice.measuring and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


async def serve(tmp_path: Path, speeds: list[MachineSpeed | Exception], monkeypatch: pytest.MonkeyPatch):
    loop = asyncio.get_running_loop()
    scheduler = ModelScheduler(ModelHost(lambda message: None), lambda: False)
    chooser = CompletionModel(loop, scheduler, lambda: False, quiet_s=0.0)
    calls = measuring(monkeypatch, *speeds)
    model = chooser.configure("auto", None, 2, tmp_path / "machine-speed")
    scheduler.configure(model, 2, tmp_path / "kv-states")
    return scheduler, chooser, calls, model


async def test_the_0_5b_serves_until_the_1_5b_is_measured_then_the_1_5b_where_it_is_fast(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    scheduler, chooser, calls, first = await serve(tmp_path, [FAST], monkeypatch)
    try:
        assert first == "qwen2.5-coder-0.5b" and chooser.choice.measuring
        await settled(chooser)
        assert calls == [2]
        assert chooser.choice.model == scheduler.host.config.name == "qwen2.5-coder-1.5b"
        assert chooser.choice.to_json()["predicted"]["keystrokeP50Ms"] == 300
        # The next start reads the kept speed: no measurement, the 1.5B at once.
        again = CompletionModel(asyncio.get_running_loop(), scheduler, lambda: False, quiet_s=0.0)
        assert again.configure("auto", None, 2, tmp_path / "machine-speed") == "qwen2.5-coder-1.5b"
        assert not again.choice.measuring and calls == [2]
    finally:
        chooser.close()
        await scheduler.aclose()


async def test_a_slow_host_keeps_the_0_5b_and_an_interrupted_measurement_runs_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    scheduler, chooser, calls, _ = await serve(tmp_path, [Cancelled("typing"), SLOW], monkeypatch)
    try:
        await settled(chooser)
        assert len(calls) == 2
        assert chooser.choice.model == scheduler.host.config.name == "qwen2.5-coder-0.5b"
        assert "too slow here" in chooser.choice.reason
    finally:
        chooser.close()
        await scheduler.aclose()


async def test_a_model_named_in_the_settings_ends_the_wait_for_a_measurement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    scheduler, chooser, calls, _ = await serve(tmp_path, [FAST], monkeypatch)
    try:
        named = chooser.configure("qwen2.5-coder-0.5b", None, 2, tmp_path / "machine-speed")
        scheduler.configure(named, 2, tmp_path / "kv-states")
        await asyncio.sleep(0.2)
        assert calls == []  # nothing left to measure
        assert chooser.choice.reason == "prism.completion.model is qwen2.5-coder-0.5b"
    finally:
        chooser.close()
        await scheduler.aclose()


async def test_settings_changed_while_measuring_win_over_its_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    scheduler, chooser, _, _ = await serve(tmp_path, [], monkeypatch)

    def measured_speed(cache, key, open_session, cancelled=None):
        # The user names the 0.5B while the 1.5B is being measured.
        scheduler.configure(chooser.configure("qwen2.5-coder-0.5b", None, 2, tmp_path / "machine-speed"),
                            2, 8, tmp_path / "kv-states")
        return FAST
    monkeypatch.setattr(completion_model, "measured_speed", measured_speed)
    try:
        await asyncio.sleep(0.3)
        assert chooser.choice.model == scheduler.host.config.name == "qwen2.5-coder-0.5b"
        assert chooser.choice.reason == "prism.completion.model is qwen2.5-coder-0.5b"
    finally:
        chooser.close()
        await scheduler.aclose()
