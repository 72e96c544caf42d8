"""Which retrieved fragments a suggestion was written from, so the user can look at them.

A completion's result names its context by window labels (`path:first-last`, relative to
its workspace). The server keeps the labels of each open document's last suggestion, and
of the last suggestion served anywhere; commands.context_json turns them into locations.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the completion library loads llama.cpp: typing only
    from prism_code.tasks.complete import CompletionResult


@dataclass(frozen=True)
class UsedContext:
    uri: str  # the document the suggestion was for
    root: Path  # its workspace, which the labels are relative to
    labels: tuple[str, ...]  # in prompt order (windows kept from the last prompt keep their place)


class ContextLog:
    """The context of each document's last suggestion (event loop only)."""

    def __init__(self) -> None:
        self._by_uri: dict[str, UsedContext] = {}
        self.last: UsedContext | None = None

    def observe(self, uri: str, root: Path, result: CompletionResult) -> None:
        # A blank answer shows nothing: the last suggestion the user saw is the one before.
        if not result.completion.strip():
            return
        self.last = self._by_uri[uri] = UsedContext(uri, root, tuple(result.context))

    def forget(self, uri: str) -> None:
        """A closed document; the last suggestion served stays known to the status."""
        self._by_uri.pop(uri, None)

    def of(self, uri: str | None) -> UsedContext | None:
        """The document's last suggestion's context; without a document, the last served."""
        return self.last if uri is None else self._by_uri.get(uri)


    def status(self) -> dict[str, Any]:
        """The last suggestion served, for the server's status."""
        last = self.last
        return {"context": list(last.labels) if last else [], "contextUri": last.uri if last else None}
