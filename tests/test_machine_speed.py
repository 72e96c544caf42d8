"""The machine-speed line every model benchmark prints beside its latencies, and the
measurement the completion model policy predicts from."""

import pytest

from prism_code.cancel import Cancelled
from prism_code.llm.machine_speed import measure


def test_measure_reads_real_speeds_and_leaves_the_cache_empty(model_session):
    model_session.prefill(model_session.tokenize_text("x = 1\n"))
    speed = measure(model_session, prefill_tokens=64, decode_tokens=4)
    assert speed.prefill_tokens_per_s > 0 and speed.decode_ms_per_token > 0
    assert speed.threads == model_session.n_threads
    assert model_session.tokens == []
    assert "tokens/s" in speed.sentence() and "ms/token" in speed.sentence()


def test_typing_interrupts_a_measurement_and_leaves_the_cache_empty(model_session):
    with pytest.raises(Cancelled):
        measure(model_session, prefill_tokens=64, decode_tokens=4, cancelled=lambda: True)
    assert model_session.tokens == []
