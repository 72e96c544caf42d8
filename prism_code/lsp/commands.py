"""The `prism.*` commands' arguments and results, checked and shaped for the wire."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.workspace.position_codec import PositionCodec

from prism_code.config import MAX_FIND_TOP
from prism_code.lsp.completion_context import UsedContext
from prism_code.lsp.locations import lines_range, path_uri
from prism_code.lsp.settings import FIND_STRATEGIES
from prism_code.lsp.workspace_state import Found
from prism_code.retrieval.windows import parse_label
from prism_code.tasks.find_events import Strategy
from prism_code.tasks.find_request import FindRequest, as_strategy, description_text

FIND_FUNCTION = "prism.findFunction"
REINDEX = "prism.reindex"
STATUS = "prism.status"
PAUSE_INDEXING = "prism.pauseIndexing"
RESUME_INDEXING = "prism.resumeIndexing"
COMPLETION_CONTEXT = "prism.completionContext"

MAX_TOP = MAX_FIND_TOP  # the same bound as `prism-code find --top`

# The text of a workspace file's line as indexed: (root, path, 1-based line) -> text.
LineText = Callable[[Path, str, int], str]


@dataclass(frozen=True)
class FindArgs:
    description: str
    top: int
    strategy: Strategy
    # Set by a client that follows a model strategy's rankings (prism/findUpdate carries it).
    update_token: str | int | None = None

    def request(self, alpha: float) -> FindRequest:
        """The find these arguments ask for, with the server's FragRel weight."""
        return FindRequest(self.description, self.strategy, self.top, alpha=alpha)


def find_args(arguments: Sequence[Any], default_strategy: Strategy) -> FindArgs:
    """The one argument object of prism.findFunction, or InvalidParams saying what is wrong."""
    usage = ('prism.findFunction takes one object argument: {"description": str, '
             '"top": int = 10, "strategy": str, "updateToken": str | int}')
    if len(arguments) != 1 or not isinstance(arguments[0], Mapping):
        raise JsonRpcInvalidParams(f"{usage}; got {len(arguments)} argument(s)"
                                   + ("" if len(arguments) != 1 else
                                      f" of type {type(arguments[0]).__name__}"))
    given = arguments[0]
    unknown = sorted(set(given) - {"description", "top", "strategy", "updateToken"})
    if unknown:
        raise JsonRpcInvalidParams(f"{usage}; unknown field(s): {', '.join(unknown)}")
    description = given.get("description")
    empty = f"{usage}; \"description\" must be a non-empty string"
    if not isinstance(description, str):
        raise JsonRpcInvalidParams(empty)
    try:
        # The normalization `prism-code find` applies too (a NUL, a lone surrogate, spaces).
        description = description_text(description)
    except ValueError:
        raise JsonRpcInvalidParams(empty) from None
    top = given.get("top", 10)
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= MAX_TOP:
        raise JsonRpcInvalidParams(f"\"top\" must be an integer from 1 to {MAX_TOP}, got {top!r}")
    given_strategy = given.get("strategy", default_strategy)
    strategy = as_strategy(given_strategy)
    if strategy is None:
        raise JsonRpcInvalidParams(f"unknown strategy {given_strategy!r}; available: "
                                   f"{', '.join(FIND_STRATEGIES)}")
    token = given.get("updateToken")
    if token is not None and (isinstance(token, bool) or not isinstance(token, (str, int))):
        raise JsonRpcInvalidParams(f'"updateToken" must be a string or an integer, got {token!r}')
    return FindArgs(description, top, strategy, token)


def no_args(command: str, arguments: Sequence[Any]) -> None:
    # VS Code passes nothing; some clients pass one empty object.
    if arguments and list(arguments) != [{}]:
        raise JsonRpcInvalidParams(f"{command} takes no arguments, got {list(arguments)!r}")


def overall_notes_state(states: Sequence[str | None]) -> str:
    """One notes state for several workspaces: the one most worth showing."""
    for state in ("writing", "waiting", "failed", "paused", "no model", "off", "done"):
        if state in states:
            return state
    return "done"


def found_json(found: Found, codec: PositionCodec) -> dict[str, Any]:
    f = found.function
    return {
        "name": f.name,
        "qualname": f.qualname,
        "uri": path_uri(found.root / f.path),
        "range": _range_json(lines_range(codec, f.start_line, f.end_line, found.last_line)),
        "score": f.score,
        "reason": f.reason,
        "kind": f.kind,
        "scores": f.scores,
        "fromSavedIndex": found.from_saved,
        "fromPartialIndex": found.from_partial,
    }


def context_args(arguments: Sequence[Any]) -> str | None:
    """The document of prism.completionContext (`{"uri": str}`), or None: the last served."""
    if not arguments or list(arguments) == [{}]:
        return None
    given = arguments[0]
    if (len(arguments) != 1 or not isinstance(given, Mapping) or set(given) != {"uri"}
            or not isinstance(given["uri"], str)):
        raise JsonRpcInvalidParams(f'{COMPLETION_CONTEXT} takes no argument or one object '
                                   f'{{"uri": str}}, got {list(arguments)!r}')
    return given["uri"]


def context_json(used: UsedContext | None, codec: PositionCodec,
                 line_text: LineText) -> dict[str, Any]:
    """`{"uri", "context": [labels], "fragments": [{"label", "path", "uri", "range"}]}` in
    prompt order; a range covers the fragment's whole lines. No suggestion: a null uri."""
    if used is None:
        return {"uri": None, "context": [], "fragments": []}
    fragments = []
    for label in used.labels:
        parsed = parse_label(label)
        if parsed is None:
            continue
        path, first, last = parsed
        fragments.append({
            "label": label, "path": path, "uri": path_uri(used.root / path),
            "range": _range_json(lines_range(codec, first, last, line_text(used.root, path, last)))})
    return {"uri": used.uri, "context": list(used.labels), "fragments": fragments}


def _range_json(r: types.Range) -> dict[str, Any]:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}
