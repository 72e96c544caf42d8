"""Every request gets an answer, even one pygls cannot read or will no longer serve.

pygls turns each message into lsprotocol types while json.loads reads it
(`structure_message` is the object hook). A request whose params do not fit (a hover
without params or a position, a negative line, a completion or executeCommand without
params) makes that raise: the message loop logs it, shows the user "Error in server",
and never answers, so the client waits for ever. A request after `shutdown` is dropped
with a log line, and a body that is not JSON also ends as that pop-up. JSON-RPC wants
an error reply to each request: InvalidParams (-32602) for params that do not fit,
InvalidRequest (-32600) for what is no request and for a request after shutdown,
ParseError (-32700, id null) for a body that is not JSON. A notification cannot be
answered: a bad one is logged and dropped. LSP also wants `exit` without `shutdown`
first to end the process with code 1.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from cattrs.errors import ClassValidationError
from cattrs.v import format_exception, transform_error
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method

from prism_code.lsp.cancellation import CancellableProtocol

log = logging.getLogger(__name__)

# What json.loads raises for a body that is not JSON (or not UTF-8).
UNPARSABLE = (json.JSONDecodeError, UnicodeDecodeError)


@dataclass(frozen=True)
class Unreadable:
    """A message pygls could not structure: the raw object and why."""

    data: dict[str, Any]
    error: BaseException


class CheckedProtocol(CancellableProtocol):
    # The process's exit code: 1 once `exit` came without `shutdown` before it.
    exit_code = 0

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            return Unreadable(data, exc.__cause__ or exc)

    def handle_message(self, message: Any) -> None:
        if isinstance(message, Unreadable):
            self._reject(message.data, _why(message.error))
        elif getattr(message, "jsonrpc", None) != self.VERSION:
            self._reject(message, None)
        elif self._shutdown and isinstance(message, RPCRequest):
            self._answer(message.id, JsonRpcInvalidRequest(
                f"the server has shut down: {message.method} is not served"))
        else:
            super().handle_message(message)

    def answer_unparsable(self, error: Exception) -> bool:
        """Answer a body json.loads refused with ParseError; False for any other error."""
        if not isinstance(error, UNPARSABLE):
            return False
        log.warning("a message that is not JSON: %s", error)
        self._answer(None, JsonRpcParseError(f"the message is not JSON: {error}"))
        return True

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        self.exit_code = 0 if self._shutdown else 1
        return (yield from super().lsp_exit(*args))

    def _reject(self, data: Any, why: str | None) -> None:
        """Answer a message that cannot be served, when it is a request (or nothing known)."""
        fields = data if isinstance(data, dict) else {}
        msg_id, method = fields.get("id"), fields.get("method")
        if "method" in fields and "id" not in fields or "method" not in fields and (
                "result" in fields or "error" in fields):
            log.warning("dropped a notification or response that does not fit: %s",
                        why or "not JSON-RPC 2.0")
            return
        request = (_valid_id(msg_id) and isinstance(method, str)
                   and fields.get("jsonrpc") == self.VERSION)
        if why is not None and request:
            log.warning("request %s %s: invalid params: %s", msg_id, method, why)
            self._answer(msg_id, JsonRpcInvalidParams(f"{method}: {why}"))
        else:
            log.warning("not a JSON-RPC 2.0 request: %s", why or type(data).__name__)
            self._answer(msg_id if _valid_id(msg_id) else None, JsonRpcInvalidRequest(
                f"not a JSON-RPC 2.0 request{': ' + why if why else ''}"))

    def _answer(self, msg_id: Any, error: JsonRpcException) -> None:
        if msg_id is None:
            # lsprotocol's ResponseErrorMessage leaves a None id out; JSON-RPC wants null.
            self._send_data({"jsonrpc": self.VERSION, "id": None,
                             "error": {"code": error.code, "message": error.message}})
        else:
            self._send_response(msg_id, error=error.to_response_error())


def _valid_id(msg_id: Any) -> bool:
    return isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool)


def _why(error: BaseException) -> str:
    if isinstance(error, ClassValidationError):
        return "; ".join(transform_error(error, format_exception=_field_error))
    return str(error) or type(error).__name__


def _field_error(error: BaseException, kind: type | None) -> str:
    # lsprotocol's range checks say what was wrong ("Position.line should be in range...").
    if type(error) is ValueError and str(error):
        return f"invalid value ({error})"
    return format_exception(error, kind)
