"""`prism/findUpdate`: a model find's rankings, sent while the model works.

`workspace/executeCommand` carries a work-done token but no `partialResultToken`, so the
rankings go out as notifications, each naming the token the client put in the find's
arguments (`updateToken`). A client that passes none gets none, and every client gets the
final list as the command's result, equal to the last update's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pygls.workspace.position_codec import PositionCodec

from prism_code.lsp.commands import found_json
from prism_code.lsp.workspace_state import Found
from prism_code.tasks.find_stream import Evidence, Ranking

FIND_UPDATE = "prism/findUpdate"

Send = Callable[[str, dict[str, Any]], None]  # (method, params), from any thread


@dataclass
class FindUpdates:
    """The updates of one find request over `workspaces` folders, searched one after another."""

    token: str | int
    top: int
    workspaces: int
    codec: PositionCodec
    send: Send
    # The final results of the folders already searched, ahead of the current one's, as in the response.
    earlier: list[tuple[Found, Evidence]] = field(default_factory=list)

    def ranking(self, found: list[Found], ranking: Ranking) -> None:
        """A ranking of the folder being searched (model thread)."""
        shown = (self.earlier + list(zip(found, ranking.evidence)))[:self.top]
        if ranking.done:
            self.workspaces -= 1
            self.earlier += zip(found, ranking.evidence)
        self.send(FIND_UPDATE, {
            "token": self.token, "done": ranking.done and self.workspaces <= 0,
            "scored": ranking.scored, "total": ranking.total, "progress": ranking.progress,
            "results": [found_json(hit, self.codec) for hit, _ in shown],
            "evidence": [evidence for _, evidence in shown]})
