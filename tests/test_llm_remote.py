"""RemoteSession against llama-cpp-python's own server on loopback, and against a small
recording server for what a real server cannot be made to do (fail, hang, report timings).

All tests need the default model's GGUF: the client tokenizes with its vocabulary.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp")

from remote_servers import free_port

from prism_code.index import RepoIndex
from prism_code.llm.remote import RemoteError, RemoteSession, RemoteSettings
from prism_code.llm.runtime import json_grammar
from prism_code.tasks.complete import Completer
from prism_code.tasks.fim import STOP_MARKERS, FimBudget, build_prompt

pytestmark = pytest.mark.model

FIXTURE = Path(__file__).parent / "fixtures" / "calcrepo"
MARKERS = ("<|repo_name|>", "<|file_sep|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")
# Code that spells a control token: it must reach the model as plain text.
TRICKY_PREFIX = 'MARKER = "<|fim_prefix|>"\n\n\ndef add(a, b):\n    return '


def fim_prompt(session, prefix: str = "def add(a, b):\n    return ") -> list[int]:
    return build_prompt(session, "demo", "demo/ops.py", prefix, "\n", [], FimBudget()).tokens


def llama_server_reply(body: dict[str, Any]) -> tuple[int, bytes, float]:
    """What llama.cpp's llama-server answers, timings included."""
    n = len(body["prompt"])
    reply = {"choices": [{"text": " a + b\n", "index": 0, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": n, "completion_tokens": 4},
             "timings": {"cache_n": 5, "prompt_n": n - 5, "prompt_ms": 12.5,
                         "predicted_n": 4, "predicted_ms": 30.0}}
    return 200, json.dumps(reply).encode(), 0.0


# --- requests, errors, cancellation (recording server) -----------------------------------


def test_token_ids_are_sent_and_control_tokens_in_code_stay_text(gguf, serve):
    fake = serve(llama_server_reply)
    with RemoteSession(RemoteSettings(url=fake.url + "/v1/")) as session:
        prompt = fim_prompt(session, TRICKY_PREFIX)
        grammar = json_grammar({"type": "object", "properties": {"n": {"type": "integer"}}})
        g = session.generate(prompt, max_tokens=16, stop=["\n"], grammar=grammar)

        sent = fake.requests[-1]
        assert sent.path == "/v1/completions"
        assert sent.body["prompt"] == prompt
        marker_ids = {session.special_token(m): m for m in (*MARKERS, *STOP_MARKERS)}
        assert [marker_ids[t] for t in sent.body["prompt"] if t in marker_ids] == list(MARKERS)
        assert sent.body["prompt"].count(session.special_token("<|fim_prefix|>")) == 1
        assert {k: sent.body[k] for k in ("max_tokens", "temperature", "stop", "stream", "cache_prompt")} == {
            "max_tokens": 16, "temperature": 0.0, "stop": ["\n"], "stream": False, "cache_prompt": True}
        assert sent.body["grammar"] == grammar._grammar
        assert "Authorization" not in sent.headers

        assert g.text == " a + b"  # cut at the stop string
        assert (g.stats.reused, g.stats.encoded, g.stats.decoded) == (5, len(prompt) - 5, 4)
        assert (g.stats.prefill_ms, g.stats.decode_ms, g.stats.finish_reason) == (12.5, 30.0, "stop")
        assert session.prompt_format == "tokens" and session.last_call.reported == "timings"
        assert session.tokens == prompt
        session.truncate(3)
        assert session.tokens == prompt[:3]
        assert session.counters.reused == 5


def test_api_key_is_sent_and_never_shown(gguf, serve, monkeypatch, caplog):
    monkeypatch.setenv("PRISM_CODE_API_KEY", "sk-very-secret")
    fake = serve(lambda body: (500, b'{"error": {"message": "model exploded", "type": "server_error"}}', 0.0))
    caplog.set_level(logging.DEBUG)
    with RemoteSession(RemoteSettings(url=fake.url, prompt_format="tokens")) as session:
        with pytest.raises(RemoteError) as err:
            session.generate(fim_prompt(session), max_tokens=4)
        assert str(err.value) == f"{fake.url}/v1/completions: HTTP 500: model exploded"
        assert fake.requests[-1].headers["Authorization"] == "Bearer sk-very-secret"
        assert "sk-very-secret" not in caplog.text + repr(session.settings) + repr(err.value)


def test_malformed_json_is_a_remote_error(gguf, serve):
    fake = serve(lambda body: (200, b"<html>gateway says hi</html>", 0.0))
    with RemoteSession(RemoteSettings(url=fake.url)) as session:
        with pytest.raises(RemoteError, match="malformed JSON in the response"):
            session.generate(fim_prompt(session), max_tokens=4)


def test_connection_refused_fails_fast(gguf):
    url = f"http://127.0.0.1:{free_port()}"
    with RemoteSession(RemoteSettings(url=url)) as session:
        t0 = time.perf_counter()
        with pytest.raises(RemoteError, match="connection refused") as err:
            session.generate(fim_prompt(session), max_tokens=4)
        assert time.perf_counter() - t0 < 1.0
        assert err.value.url == url + "/v1/completions"


def test_a_server_that_never_answers_times_out(gguf, serve):
    fake = serve(lambda body: (200, b"{}", 30.0))
    with RemoteSession(RemoteSettings(url=fake.url, timeout=0.5)) as session:
        t0 = time.perf_counter()
        with pytest.raises(RemoteError, match=r"no answer within 0.5 s"):
            session.generate(fim_prompt(session), max_tokens=4)
        assert time.perf_counter() - t0 < 2.0


def test_cancelling_closes_the_connection_at_once(gguf, serve):
    fake = serve(lambda body: (200, b"{}", 30.0))
    with RemoteSession(RemoteSettings(url=fake.url)) as session:
        t0 = time.perf_counter()
        g = session.generate(fim_prompt(session), max_tokens=4, cancelled=lambda: time.perf_counter() - t0 > 0.3)
        assert g.stats.finish_reason == "cancelled" and g.text == ""
        assert time.perf_counter() - t0 < 1.5


def test_cancelling_a_stream_keeps_the_text_received(gguf, serve):
    events = b"".join(b"data: " + json.dumps({"choices": [{"text": t, "index": 0, "finish_reason": None}]}).encode()
                      + b"\n\n" for t in (" a", " +"))
    fake = serve(lambda body: (200, events, 30.0))
    with RemoteSession(RemoteSettings(url=fake.url, stream=True)) as session:
        t0 = time.perf_counter()
        g = session.generate(fim_prompt(session), max_tokens=8, cancelled=lambda: time.perf_counter() - t0 > 0.3)
        assert (g.text, g.stats.finish_reason) == (" a +", "cancelled")
        assert fake.requests[-1].body["stream"] is True
        assert time.perf_counter() - t0 < 1.5


# --- llama-cpp-python's server (llama_cpp.server) ----------------------------------------


@pytest.fixture(scope="module")
def remote(llama_server) -> Iterator[RemoteSession]:
    session = RemoteSession(RemoteSettings(url=llama_server, prompt_format="text", n_ctx=2048))
    yield session
    session.close()


def test_llama_cpp_server_takes_text_only_and_answers_as_the_local_session(llama_server, model_session,
                                                                           caplog):
    stop = [*STOP_MARKERS, "\n"]
    with RemoteSession(RemoteSettings(url=llama_server)) as remote:
        prompt = fim_prompt(remote)
        with caplog.at_level(logging.WARNING, logger="prism_code.llm.remote"):
            got = remote.generate(prompt, max_tokens=16, stop=stop)
        # llama_cpp.server validates `prompt` as a string: the first request falls back once.
        assert remote.prompt_format == "text"
        assert "does not accept token-id prompts" in caplog.text
        assert remote.last_call.server_prompt_tokens == len(prompt)  # the text reads back as these tokens
        local = model_session.generate(prompt, max_tokens=16, stop=stop)
        assert got.text == local.text
        assert got.text.strip() == "a + b"
        # The server reports no cache figures; the estimate is the prefix shared with the last prompt.
        again = remote.generate(prompt, max_tokens=16, stop=stop)
        assert remote.last_call.reported == "estimate" and again.stats.reused == len(prompt)
    with RemoteSession(RemoteSettings(url=llama_server, prompt_format="text", stream=True)) as streaming:
        assert streaming.generate(prompt, max_tokens=16, stop=stop).text == got.text


def test_text_prompts_break_control_tokens_spelled_in_code(remote, monkeypatch):
    sent: list[dict] = []
    post = remote._post_completion
    monkeypatch.setattr(remote, "_post_completion",
                        lambda payload, cancelled: (sent.append(payload), post(payload, cancelled))[1])
    prompt = fim_prompt(remote, TRICKY_PREFIX)
    remote.generate(prompt, max_tokens=8, stop=["\n"])
    text = sent[-1]["prompt"]
    assert isinstance(text, str) and '"<\u200b|fim_prefix|>"' in text
    read_back = remote.tokenize_text(text, special=True)  # what the server makes of it
    assert read_back.count(remote.special_token("<|fim_prefix|>")) == 1
    assert remote.last_call.server_prompt_tokens == len(read_back)


def test_completer_end_to_end(remote, tmp_path):
    root = tmp_path / "calcrepo"
    shutil.copytree(FIXTURE, root)
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        index.update()
        text = (root / "calc/net.py").read_text()
        lines = text.rstrip("\n").split("\n")
        result = Completer(index, remote).complete("calc/net.py", text, len(lines), len(lines[-1]) + 1)
    finally:
        index.close()
    assert "calc/settings.py:1-3" in result.context
    assert "HANDSHAKE_GRACE_PERIOD_MS" in result.completion  # spelled only in settings.py
    assert "\n" not in result.completion
