"""RemoteSession.continuation_logprobs: prompt log-probabilities from a completions server.

No server here has them and answers correctly (vLLM needs a GPU; llama.cpp's llama-server
refuses `echo`; llama-cpp-python's server misreads them, see test_remote_tasks.py), so
recording servers answer in the two documented formats, with a number per token id that
the test can check lands on the right token. They also fail the ways a server does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("llama_cpp")

from prism_code.llm.remote import RemoteError, RemoteSession, RemoteSettings

pytestmark = pytest.mark.model


def value_of(token: int) -> float:
    """The log-probability the recording servers give a token: different for neighbours."""
    return -((token % 13) + 1) / 4


def openai_echo(body: dict[str, Any]) -> tuple[int, bytes, float]:
    """OpenAI's completions with echo: every prompt token (the first without a number),
    then the generated one."""
    prompt = body["prompt"]
    if not body.get("echo"):
        return 400, b'{"error": {"message": "this server scores only with echo"}}', 0.0
    values = [None] + [value_of(t) for t in prompt[1:]] + [-0.1]
    reply = {"choices": [{"text": "x", "index": 0, "finish_reason": "length",
                          "logprobs": {"tokens": [f"<{t}>" for t in prompt] + ["x"],
                                       "token_logprobs": values, "top_logprobs": None}}],
             "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1}}
    return 200, json.dumps(reply).encode(), 0.0


def vllm_prompt_logprobs(body: dict[str, Any]) -> tuple[int, bytes, float]:
    """vLLM's `prompt_logprobs`: one entry per prompt token, keyed by token id; echo refused."""
    prompt = body["prompt"]
    if body.get("echo"):
        return 400, b'{"object": "error", "message": "echo is not supported here", "code": 400}', 0.0
    if "prompt_logprobs" not in body:
        return 200, b'{"choices": [{"text": "x", "index": 0, "finish_reason": "length"}]}', 0.0
    entries = [None] + [{str(t): {"logprob": value_of(t), "rank": 1, "decoded_token": "?"}} for t in prompt[1:]]
    reply = {"choices": [{"text": "x", "index": 0, "finish_reason": "length", "prompt_logprobs": entries}],
             "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1}}
    return 200, json.dumps(reply).encode(), 0.0


def plain_completions(body: dict[str, Any]) -> tuple[int, bytes, float]:
    """A server that ignores both kinds of fields and just completes."""
    reply = {"choices": [{"text": " x", "index": 0, "finish_reason": "length"}],
             "usage": {"prompt_tokens": len(body["prompt"]), "completion_tokens": 1}}
    return 200, json.dumps(reply).encode(), 0.0


def scoring_input(session: RemoteSession) -> tuple[list[int], list[int]]:
    prefix = session.chatml([("system", "You describe code."), ("user", "def add(a, b):\n    return a + b")])
    return prefix, session.tokenize_text("Adds two numbers.")


@pytest.mark.parametrize("respond, mode", [(openai_echo, "echo"), (vllm_prompt_logprobs, "prompt_logprobs")])
def test_each_format_gives_the_numbers_of_the_continuation_tokens(gguf, serve, respond, mode):
    fake = serve(respond)
    with RemoteSession(RemoteSettings(url=fake.url)) as session:
        prefix, continuation = scoring_input(session)
        scored = session.continuation_logprobs(prefix, continuation)
        assert scored.logprobs == [value_of(t) for t in continuation]
        assert not scored.cancelled and session.tokens == prefix + continuation
        asked = len(fake.requests)
        again = session.continuation_logprobs(prefix, continuation)
        assert again.logprobs == scored.logprobs
        # The way the server scores is found once: the second call is one request in that mode.
        assert len(fake.requests) == asked + 1
        last = fake.requests[-1].body
        assert (last.get("echo"), "prompt_logprobs" in last) == ((True, False) if mode == "echo" else (None, True))
        assert last["max_tokens"] == 1 and last["temperature"] == 0.0


def test_a_server_without_prompt_logprobs_is_told_apart_once(gguf, serve):
    fake = serve(plain_completions)
    with RemoteSession(RemoteSettings(url=fake.url)) as session:
        prefix, continuation = scoring_input(session)
        with pytest.raises(RemoteError, match="returns no log-probabilities of prompt tokens") as err:
            session.continuation_logprobs(prefix, continuation)
        assert "echo:" in str(err.value) and "prompt_logprobs:" in str(err.value)
        asked = len(fake.requests)
        with pytest.raises(RemoteError, match="returns no log-probabilities"):
            session.continuation_logprobs(prefix, continuation)
        assert len(fake.requests) == asked  # known by now: no request


def test_a_failing_server_is_a_server_error_not_a_missing_feature(gguf, serve):
    fake = serve(lambda body: (503, b'{"error": {"message": "overloaded"}}', 0.0))
    with RemoteSession(RemoteSettings(url=fake.url)) as session:
        prefix, continuation = scoring_input(session)
        with pytest.raises(RemoteError, match="HTTP 503: overloaded"):
            session.continuation_logprobs(prefix, continuation)
