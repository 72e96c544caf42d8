"""Nothing leaves the machine when the embedder loads and runs (issue #13, bug 3).

onnxruntime's official wheels carry Microsoft's 1DS telemetry client in native code: on
import it writes a device id under $XDG_CACHE_HOME/Microsoft/ and, about 9 s later,
resolves mobile.events.data.microsoft.com and posts to it from a C++ thread. Python's
audit hooks never see that, so one fresh interpreter imports the embedder, embeds a text
and stays alive past that upload, and three things watch it from outside:

* a private HOME and XDG_CACHE_HOME, searched afterwards for anything Microsoft's;
* a trap proxy: HTTPS_PROXY and friends point at a listener of this test on 127.0.0.1,
  and libcurl (which the telemetry uses) goes there instead of out; any connection fails
  the test, and nothing reaches the real host while it runs;
* strace, when installed, for every AF_INET/AF_INET6 socket of any thread (CI: apt-get
  install -y strace); without it that one test skips, the others still run.

An audit hook in the child adds what Python code itself opens.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

# onnxruntime 1.32's first upload came 9.3 s after import; stay alive well past it.
LINGER_SECONDS = 13.0

_CHILD = textwrap.dedent(
    """
    import json, socket, sys, time

    seen = []
    INET = {int(socket.AF_INET), int(socket.AF_INET6)}

    def hook(event, args):
        if event == "socket.__new__":
            if args[1] in INET or args[1] == -1:
                seen.append([event, repr(args[1:])])
        elif event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
            if args[0].family in INET:
                seen.append([event, repr(args[1:])])
        elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"):
            seen.append([event, repr(args)])

    sys.addaudithook(hook)
    from prism_code.retrieval.dense import Embedder

    vectors = Embedder(threads=1).embed(["def add(a, b): return a + b"])
    assert vectors.shape == (1, 384), vectors.shape
    time.sleep(float(sys.argv[1]))
    print(json.dumps(seen))
    """
)


class _TrapProxy:
    """A listener on 127.0.0.1 that records (and drops) every connection it gets."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    self.requests.append(conn.recv(300))
                except OSError:
                    self.requests.append(b"(connected, sent nothing)")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


def _strace_works() -> str | None:
    """The strace path, or None when strace is missing or may not trace here."""
    path = shutil.which("strace")
    if path is None:
        return None
    probe = subprocess.run([path, "-f", "-o", os.devnull, "true"], capture_output=True, timeout=30)
    return path if probe.returncode == 0 else None


@pytest.fixture(scope="module")
def embedder_run(tmp_path_factory):
    """One fresh interpreter that imports the embedder, embeds once and lingers."""
    root = tmp_path_factory.mktemp("privacy")
    home = root / "home"
    (home / ".cache").mkdir(parents=True)
    trap = _TrapProxy()
    env = {
        k: v
        for k, v in os.environ.items()
        # The fix must not rely on the user's environment; proxy settings are ours.
        if k not in ("ORT_DISABLE_TELEMETRY", "NO_PROXY", "no_proxy")
    }
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        HTTPS_PROXY=trap.url,
        https_proxy=trap.url,
        HTTP_PROXY=trap.url,
        http_proxy=trap.url,
        ALL_PROXY=trap.url,
        all_proxy=trap.url,
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    script = root / "child.py"
    script.write_text(_CHILD)
    command = [sys.executable, str(script), str(LINGER_SECONDS)]
    strace = _strace_works()
    trace_file = root / "strace.txt"
    if strace is not None:
        command = [strace, "-f", "-qq", "-e", "trace=socket,connect,sendto,sendmsg,sendmmsg",
                   "-o", str(trace_file), *command]
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    finally:
        trap.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {
        "home": home,
        "audit": json.loads(proc.stdout.strip().splitlines()[-1]),
        "trap": trap.requests,
        "strace": trace_file.read_text() if strace is not None else None,
    }


def test_embedder_writes_no_telemetry_files(embedder_run):
    home = embedder_run["home"]
    microsoft = sorted(str(p.relative_to(home)) for p in home.rglob("*") if "Microsoft" in p.parts)
    assert microsoft == [], f"onnxruntime telemetry wrote under HOME: {microsoft}"


def test_embedder_sends_nothing_through_the_trap_proxy(embedder_run):
    requests = embedder_run["trap"]
    assert requests == [], f"a native HTTP client tried to go out: {requests}"


def test_embedder_opens_no_python_level_inet_socket(embedder_run):
    assert embedder_run["audit"] == []


def test_embedder_opens_no_inet_socket_in_any_thread(embedder_run):
    trace = embedder_run["strace"]
    if trace is None:
        pytest.skip("strace is not installed (or may not trace here): apt-get install -y strace")
    inet = [line for line in trace.splitlines() if "AF_INET" in line]
    assert inet == [], "sockets to the network:\n" + "\n".join(inet[:20])


def test_onnxruntime_imported_elsewhere_first_is_reported(monkeypatch, caplog):
    from prism_code.retrieval import dense

    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "1")
    dense._import_onnxruntime()  # (the variable is set, so this process sends nothing)
    # Another import of onnxruntime came first, with the user's variable off.
    monkeypatch.setattr(dense, "_ort_imported", False)
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "0")
    with caplog.at_level("WARNING", logger=dense.__name__):
        dense._import_onnxruntime()
    assert "ORT_DISABLE_TELEMETRY=1" in caplog.text
    assert os.environ["ORT_DISABLE_TELEMETRY"] == "1"
    caplog.clear()
    with caplog.at_level("WARNING", logger=dense.__name__):
        dense._import_onnxruntime()  # once is enough
    assert caplog.text == ""
