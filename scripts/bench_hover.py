"""Hover latency on a big open buffer, through a real `python -m prism_code.lsp` over stdio.

    .venv/bin/python scripts/bench_hover.py [--mb 5] [--repeat 3]

A copy of tests/fixtures/multilang is the workspace; big.py is opened with ~5 MB of
Python (this repository's prism_code/*.py repeated). It times hovers on the unchanged
buffer (first, then repeated), then after one-character edits sent as incremental
didChange. The server is left to finish indexing before each hover is timed, so the
figures are the hover's own. PYTHONPATH decides which tree's server runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class Client:
    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "prism_code.lsp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        cwd=cwd, env={**os.environ, "PRISM_CODE_CACHE_DIR":
                                                      str(cwd / "cache")})
        self.answers: dict[int, dict] = {}
        self.arrived = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.process.stdout
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length is None:
                return
            message = json.loads(out.read(length))
            if "id" in message and "method" not in message:
                with self.arrived:
                    self.answers[message["id"]] = message
                    self.arrived.notify_all()

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def request(self, method: str, params: dict) -> object:
        self.next_id += 1
        request_id = self.next_id
        self.send({"id": request_id, "method": method, "params": params})
        with self.arrived:
            if not self.arrived.wait_for(lambda: request_id in self.answers, 600):
                raise TimeoutError(method)
            return self.answers.pop(request_id).get("result")

    def idle(self) -> None:
        time.sleep(0.5)  # past the edit debounce
        while self.request("workspace/executeCommand",
                           {"command": "prism.status", "arguments": []})["state"] != "idle":
            time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-hover-"))
    root = tmp / "multilang"
    shutil.copytree(REPO / "tests" / "fixtures" / "multilang", root)
    chunk = "".join(p.read_text() for p in sorted((REPO / "prism_code").rglob("*.py")))
    text = chunk * int(args.mb * 1e6 // len(chunk) + 1)
    (root / "big.py").write_text("")
    lines = text.split("\n")
    row = next(i for i, line in enumerate(lines) if line.startswith("def "))
    position = {"line": row, "character": 5}
    uri = (root / "big.py").as_uri()
    client = Client(tmp)
    try:
        # No model at work meanwhile (completions, notes): the hovers have the CPU.
        client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                      "capabilities": {}, "initializationOptions": {
                                          "completion": {"enabled": False},
                                          "notes": {"enabled": False}}})
        client.send({"method": "initialized", "params": {}})
        client.idle()
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}})
        client.idle()
        print(f"{len(text.encode()) / 1e6:.1f} MB, {len(lines)} lines; hover on line {row + 1}: "
              f"{lines[row][:40]!r}")

        def hover(label: str) -> None:
            start = time.perf_counter()
            answer = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                           "position": position})
            ms = 1000 * (time.perf_counter() - start)
            found = answer["contents"]["value"].split("\n")[1] if answer else None
            print(f"{label:>24}: {ms:7.0f} ms  {found}")

        for i in range(args.repeat):
            hover("first" if i == 0 else "repeated")
        for edit in range(2):
            # A one-character edit near the end of the buffer, sent incrementally.
            end = len(lines) - 2
            client.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": 2 + edit},
                "contentChanges": [{"range": {"start": {"line": end, "character": 0},
                                              "end": {"line": end, "character": 0}},
                                    "text": "#"}]}})
            client.idle()
            for i in range(args.repeat):
                hover(f"after edit {edit + 1}" if i == 0 else "repeated")
        status = client.request("workspace/executeCommand",
                                {"command": "prism.status", "arguments": []})
        if "hoverBuffers" in status:
            print("hoverBuffers:", status["hoverBuffers"])
        client.request("shutdown", None)
        client.send({"method": "exit"})
        client.process.wait(60)
    finally:
        if client.process.poll() is None:
            client.process.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
