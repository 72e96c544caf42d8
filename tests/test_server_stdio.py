"""How the server reads its stdin pipe: a real `python -m prism_code.lsp` process fed raw bytes,
split and joined the ways a client's writes and the pipe can cut them, and malformed
the ways a faulty client sends them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ANSWER_TIMEOUT_S = 60
# An error reply takes milliseconds: a request left unanswered fails after this long.
ERROR_TIMEOUT_S = 20


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def status_request(request_id: int | str) -> bytes:
    return frame({"jsonrpc": "2.0", "id": request_id, "method": "workspace/executeCommand",
                  "params": {"command": "prism.status", "arguments": []}})


class RawServer:
    """The server process and the messages it has written, parsed by a reader thread."""

    def __init__(self, tmp_path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "prism_code.lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO),
                 "PRISM_CODE_CACHE_DIR": str(tmp_path / "cache")})
        self.answers: dict[int | str | None, dict] = {}
        self.notifications: list[dict] = []  # and requests: whatever the server sent
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length is None:
                return
            message = json.loads(out.read(length))
            with self._arrived:
                if "id" in message and "method" not in message:
                    self.answers[message["id"]] = message
                else:
                    self.notifications.append(message)
                self._arrived.notify_all()

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def answer(self, request_id: int | str | None, timeout: float = ANSWER_TIMEOUT_S) -> dict:
        with self._arrived:
            if not self._arrived.wait_for(lambda: request_id in self.answers, timeout):
                raise AssertionError(f"no answer to request {request_id}")
            return self.answers[request_id]

    def error(self, request_id: int | str | None) -> dict:
        """The error a request was answered with."""
        answer = self.answer(request_id, ERROR_TIMEOUT_S)
        assert "result" not in answer, answer
        return answer["error"]

    def shown(self) -> list[dict]:
        """What the server showed the user, once it answered a request sent after the rest."""
        self.send(status_request("sentinel"))
        self.answer("sentinel")
        return [m for m in self.notifications if m.get("method") == "window/showMessage"]

    def initialize(self) -> None:
        # No workspace folder: nothing is indexed, the requests below only need the protocol.
        self.send(frame({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"processId": os.getpid(), "rootUri": None,
                                    "capabilities": {}}}))
        assert "result" in self.answer(0)
        self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


@pytest.fixture
def server(tmp_path: Path):
    raw = RawServer(tmp_path)
    raw.initialize()
    yield raw
    raw.close()


def test_messages_cut_anywhere_or_sent_together_are_all_answered(server: RawServer):
    # Two requests in one write, then one trickled a few bytes at a time.
    server.send(status_request(1) + status_request(2))
    trickled = status_request(3)
    for start in range(0, len(trickled), 7):
        server.send(trickled[start:start + 7])
        time.sleep(0.001)
    for request_id in (1, 2, 3):
        assert server.answer(request_id)["result"]["state"] == "no workspace"


def test_an_overlong_header_line_is_skipped_and_serving_goes_on(server: RawServer):
    server.send(b"X-Padding: " + b"x" * 200_000 + b"\r\n")
    server.send(status_request(4))
    assert server.answer(4)["result"]["state"] == "no workspace"


def test_the_server_ends_when_the_client_closes_stdin_mid_message(server: RawServer):
    server.send(status_request(5)[:-5])
    assert server.process.stdin is not None
    server.process.stdin.close()
    assert server.process.wait(ANSWER_TIMEOUT_S) == 0


HOVERED = {"textDocument": {"uri": "file:///nowhere/a.py"}}


@pytest.mark.parametrize("message, code", [
    ({"method": "textDocument/hover"}, -32602),
    ({"method": "textDocument/hover", "params": HOVERED}, -32602),
    ({"method": "textDocument/hover",
      "params": {**HOVERED, "position": {"line": -1, "character": 0}}}, -32602),
    ({"method": "textDocument/hover",
      "params": {**HOVERED, "position": {"line": 0, "character": -3}}}, -32602),
    ({"method": "textDocument/completion"}, -32602),
    ({"method": "workspace/executeCommand"}, -32602),
    ({"method": "workspace/executeCommand", "params": {"arguments": []}}, -32602),
    ({"method": "prism/unknown", "jsonrpc": "1.0"}, -32600),
], ids=["hover-no-params", "hover-no-position", "hover-negative-line",
        "hover-negative-character", "completion-no-params", "command-no-params",
        "command-no-name", "not-json-rpc-2"])
def test_a_request_whose_params_do_not_fit_is_answered_with_an_error(server: RawServer,
                                                                     message: dict, code: int):
    server.send(frame({"jsonrpc": "2.0", "id": 7, **message}))
    error = server.error(7)
    assert error["code"] == code
    assert message["method"] in error["message"] or code == -32600
    # An error reply, not an "Error in server" pop-up, and serving goes on.
    assert server.shown() == []


def test_a_body_that_is_not_json_is_answered_with_a_parse_error(server: RawServer):
    body = b'{"jsonrpc": "2.0", "id": 8, "method": "textDocument/hover", "params": {'
    server.send(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert server.error(None)["code"] == -32700
    assert 8 not in server.answers
    assert server.shown() == []


def test_requests_after_shutdown_are_refused_and_exit_ends_the_process_with_0(server: RawServer):
    server.send(frame({"jsonrpc": "2.0", "id": 9, "method": "shutdown"}))
    assert server.answer(9)["result"] is None
    server.send(status_request(10))
    server.send(frame({"jsonrpc": "2.0", "id": 11, "method": "textDocument/hover",
                       "params": {**HOVERED, "position": {"line": 0, "character": 0}}}))
    assert server.error(10)["code"] == -32600
    assert server.error(11)["code"] == -32600
    server.send(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert server.process.wait(ANSWER_TIMEOUT_S) == 0


def test_exit_without_shutdown_ends_the_process_with_1(server: RawServer):
    server.send(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert server.process.wait(ANSWER_TIMEOUT_S) == 1
