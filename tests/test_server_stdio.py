"""How the server reads its stdin pipe: a real `python -m server` process fed raw bytes,
split and joined the ways a client's writes and the pipe can cut them."""

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


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def status_request(request_id: int) -> bytes:
    return frame({"jsonrpc": "2.0", "id": request_id, "method": "workspace/executeCommand",
                  "params": {"command": "prism.status", "arguments": []}})


class RawServer:
    """The server process and the messages it has written, parsed by a reader thread."""

    def __init__(self, tmp_path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO),
                 "PRISM_CODE_CACHE_DIR": str(tmp_path / "cache")})
        self.answers: dict[int, dict] = {}
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
                self._arrived.notify_all()

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def answer(self, request_id: int) -> dict:
        with self._arrived:
            if not self._arrived.wait_for(lambda: request_id in self.answers, ANSWER_TIMEOUT_S):
                raise AssertionError(f"no answer to request {request_id}")
            return self.answers[request_id]

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
