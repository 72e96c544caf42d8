"""What the server tells the user about a failing remote engine: each way a real request
fails (a stub stands in for the broken server) has its kind, and each kind is told once."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp")

from remote_servers import free_port

from prism_code.llm.remote import RemoteError, RemoteSession, RemoteSettings
from prism_code.lsp.remote_status import RemoteStatus, failure_kind

pytestmark = pytest.mark.model

PLAIN = json.dumps({"choices": [{"text": " x", "index": 0, "finish_reason": "length"}]}).encode()


def failure(url: str, score: bool = False, timeout: float = 5.0) -> RemoteError:
    with RemoteSession(RemoteSettings(url=url, timeout=timeout)) as session:
        prompt = session.chatml([("user", "def add(a, b):")])
        with pytest.raises(RemoteError) as err:
            if score:
                session.continuation_logprobs(prompt, session.tokenize_text("Adds."))
            else:
                session.generate(prompt, max_tokens=4)
        return err.value


def test_each_way_a_request_fails_has_its_kind(gguf, serve):
    cases = {
        "unreachable": failure(f"http://127.0.0.1:{free_port()}"),
        "timeout": failure(serve(lambda body: (200, PLAIN, 30.0)).url, timeout=0.5),
        "server-error": failure(serve(lambda body: (502, b"<html>bad gateway</html>", 0.0)).url),
        "refused": failure(serve(lambda body: (401, b'{"error": "invalid api key"}', 0.0)).url),
        "malformed": failure(serve(lambda body: (200, b"<html>a login page</html>", 0.0)).url),
        "no-logprobs": failure(serve(lambda body: (200, PLAIN, 0.0)).url, score=True),
    }
    assert {kind: failure_kind(exc) for kind, exc in cases.items()} == {kind: kind for kind in cases}


def test_a_kind_is_told_once_until_the_engine_answers_again(gguf):
    status = RemoteStatus()
    status.reset("http://gpu-host:8080")
    down = failure(f"http://127.0.0.1:{free_port()}")
    told = status.failed(down, "completion")
    assert told is not None and "unreachable" in told and "Completions stay empty" in told
    assert status.failed(down, "completion") is None
    assert status.to_json()["state"] == "failing" and status.to_json()["failures"] == 2
    status.succeeded()
    assert status.to_json()["state"] == "ok" and status.to_json()["error"] is None
    assert status.failed(down, "find") is not None  # told again after a success
