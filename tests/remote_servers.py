"""Servers the remote-engine tests talk to: llama-cpp-python's own server on loopback with
the default 0.5B model, and a small recording server that answers what each test tells it
(for what a real server cannot be made to do on demand: fail, hang, answer garbage).

tests/conftest.py registers this module as a plugin, so its fixtures (`gguf`, `serve`,
`llama_server`) are there for every test.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from prism_code.llm import models

SERVER_EXTRAS = ("fastapi", "uvicorn", "sse_starlette", "pydantic_settings", "starlette_context")


@pytest.fixture(scope="module")
def gguf() -> Path:
    try:
        return models.ensure_model(models.DEFAULT_MODEL)
    except models.ModelNotInstalled as exc:
        pytest.skip(str(exc))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


Respond = Callable[[dict[str, Any]], tuple[int, bytes, float]]  # status, body, delay in s


class _Handler(BaseHTTPRequestHandler):
    server: Fake

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(Recorded(self.path, dict(self.headers), body))
        status, payload, delay = self.server.respond(body)
        if payload.startswith(b"data:"):  # server-sent events: send them, then stall
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            time.sleep(delay)
            return
        time.sleep(delay)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


class Fake(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, respond: Respond) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.respond = respond
        self.requests: list[Recorded] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture()
def serve() -> Iterator[Callable[[Respond], Fake]]:
    servers: list[Fake] = []

    def start(respond: Respond) -> Fake:
        server = Fake(respond)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def llama_server(gguf, tmp_path_factory) -> Iterator[str]:
    missing = [m for m in SERVER_EXTRAS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"llama-cpp-python's server extras are missing ({', '.join(missing)}): "
                    "pip install 'llama-cpp-python[server]==0.3.36'")
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "2048", "--n_threads", "1"],
            stdout=log_file, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not _answers(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.25)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _answers(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/v1/models")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


