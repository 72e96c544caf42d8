"""JSON over HTTP with the standard library, for the remote completion backend.

One request per call and no extra dependency; direct access to the socket lets a
watcher thread close the connection the moment a request is cancelled or its deadline
passes, even while the server is still evaluating the prompt and nothing is being read.
Responses are one JSON object, or one per server-sent event when the server streams.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Generator, Iterator
from typing import Any, Literal
from urllib.parse import urlsplit

from prism_code.cancel import CancelCheck

from .backend import BackendError

POLL_S = 0.02  # how often a request checks `cancelled()` and its deadline
MAX_ERROR_CHARS = 300


class RemoteError(BackendError):
    """A request to the remote server failed; the message names the URL and the reason."""

    def __init__(self, url: str, reason: str, status: int | None = None) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.status = status  # the HTTP status when the server answered with an error


class Endpoint:
    """Scheme, host and port of the server, and the connections to it."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RemoteError(url, "the remote URL must look like http://host:port or https://host:port")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        base = parts.path.rstrip("/")
        self.base_path = base[: -len("/v1")] if base.endswith("/v1") else base
        self.base_url = f"{parts.scheme}://{parts.netloc}{self.base_path}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)


class Watch:
    """Closes a request's socket when it is cancelled or its deadline passes.

    Shutting the socket down wakes a read blocked in another thread, so neither a slow
    prompt evaluation nor a server that never answers can hold the caller.
    """

    def __init__(self, sock: socket.socket, deadline: float, cancelled: CancelCheck | None) -> None:
        self.reason: Literal["cancelled", "timeout"] | None = None
        self._sock = sock
        self._deadline = deadline
        self._cancelled = cancelled
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="prism-remote-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(POLL_S):
            if self._cancelled is not None and self._cancelled():
                self.reason = "cancelled"
            elif time.monotonic() >= self._deadline:
                self.reason = "timeout"
            else:
                continue
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


class JsonHttpClient:
    """Requests to one server; every failure is a RemoteError naming the URL and the reason."""

    def __init__(self, url: str, connect_timeout: float, timeout: float, api_key: str | None) -> None:
        self.endpoint = Endpoint(url)
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.api_key = api_key

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def get_json(self, path: str) -> dict[str, Any]:
        chunks = list(self.send("GET", path, None, None))
        return chunks[0] if chunks else {}

    def send(self, method: str, path: str, payload: dict[str, Any] | None,
             cancelled: CancelCheck | None) -> Generator[dict[str, Any], None, None]:
        """The JSON objects of a response: one, or one per server-sent event when streaming."""
        url = self.endpoint.url(path)
        deadline = time.monotonic() + self.timeout
        conn = self.endpoint.connection(self.connect_timeout)
        watch: Watch | None = None
        try:
            try:
                conn.connect()
            except ConnectionRefusedError:
                raise RemoteError(url, "connection refused (is the server running?)") from None
            except TimeoutError:
                raise RemoteError(url, f"no connection within {self.connect_timeout:g} s") from None
            except socket.gaierror as exc:
                raise RemoteError(url, f"cannot resolve host {self.endpoint.host!r} ({exc.strerror})") from None
            except OSError as exc:
                raise RemoteError(url, f"cannot connect ({exc})") from None
            assert conn.sock is not None
            conn.sock.settimeout(self.timeout)
            watch = Watch(conn.sock, deadline, cancelled)
            raw: bytes | None = None  # the body of a plain (not streamed) answer
            try:
                data = json.dumps(payload).encode() if payload is not None else None
                conn.request(method, self.endpoint.base_path + path, body=data, headers=self.headers())
                response = conn.getresponse()
                if response.status >= 400:
                    raise RemoteError(url, f"HTTP {response.status}: {error_message(response.read())}",
                                      response.status)
                if "text/event-stream" in (response.getheader("Content-Type") or ""):
                    for event in events(response):
                        yield parse_json(url, event)
                else:
                    raw = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self._check(url, watch)
                if isinstance(exc, socket.timeout):
                    raise RemoteError(url, f"no answer within {self.timeout:g} s") from None
                raise RemoteError(url, f"connection failed ({type(exc).__name__}: {exc})") from None
            # A closed socket can also look like a short but complete answer.
            self._check(url, watch)
            if raw is not None:
                yield parse_json(url, raw)
        finally:
            if watch is not None:
                watch.stop()
            conn.close()

    def _check(self, url: str, watch: Watch) -> None:
        if watch.reason == "cancelled":
            raise RequestCancelled()
        if watch.reason == "timeout":
            raise RemoteError(url, f"no answer within {self.timeout:g} s")


class RequestCancelled(Exception):
    """The caller cancelled the request; what was received so far stands."""


def events(response: http.client.HTTPResponse) -> Iterator[bytes]:
    """The data of each server-sent event, up to "[DONE]"."""
    while True:
        line = response.readline()
        if not line.endswith(b"\n"):
            return  # the end, or a line cut short by a closed connection
        line = line.strip()
        if not line.startswith(b"data:"):
            continue  # comments, pings, event names
        data = line[5:].strip()
        if data == b"[DONE]":
            return
        yield data


def parse_json(url: str, raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        excerpt = raw[:80].decode("utf-8", errors="replace")
        raise RemoteError(url, f"malformed JSON in the response: {excerpt!r}") from None
    if not isinstance(value, dict):
        raise RemoteError(url, f"expected a JSON object, got {type(value).__name__}")
    return value


def error_message(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        err = value.get("error", value.get("detail", value))
        if isinstance(err, dict):
            err = err.get("message", err)
        text = err if isinstance(err, str) else json.dumps(err)
    text = " ".join(text.split())
    return text[:MAX_ERROR_CHARS] + ("..." if len(text) > MAX_ERROR_CHARS else "") or "(empty body)"
