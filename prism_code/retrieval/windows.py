"""Cross-file context for completion: 20-line windows ranked by BM25 + FragRel (RepoCoder).

The query is the code right before the cursor; candidates are the windows of every
other file; FragRel's relation-aware score (Eq. 9-10) lifts windows whose related
windows also match, which is the structural context the paper reports gains from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from prism_code.fragments import Fragment
from prism_code.index import RepoIndex
from prism_code.relations import related_matrix
from prism_code.retrieval.fragrel import relation_aware_scores
from prism_code.retrieval.lexical import LexicalIndex
from prism_code.retrieval.tokenize import code_tokens

# RetrievedWindow.label: greedy, so a colon in the path stays in the path.
_LABEL = re.compile(r"(.+):([0-9]+)-([0-9]+)", re.DOTALL)


@dataclass(frozen=True)
class RetrievedWindow:
    fragment: Fragment
    text: str
    score: float

    @property
    def label(self) -> str:
        return f"{self.fragment.path}:{self.fragment.start_line}-{self.fragment.end_line}"


def parse_label(label: str) -> tuple[str, int, int] | None:
    """(path, first line, last line) of a window's label, 1-based; None for any other text.

    Completion results carry labels only; an editor showing the context needs the lines back.
    A path may hold a colon itself: the lines follow the last one.
    """
    found = _LABEL.fullmatch(label)
    if found is None or not 0 < int(found[2]) <= int(found[3]):
        return None
    return found[1], int(found[2]), int(found[3])


class WindowRetriever:
    """BM25 over the index's windows, rebuilt lazily when the index changes."""

    def __init__(self, index: RepoIndex) -> None:
        self.index = index
        self._generation = -1
        self._windows: list[Fragment] = []
        self._texts: list[str] = []
        self._lexical: LexicalIndex | None = None
        self._related: sp.csr_matrix | None = None

    def _refresh(self) -> None:
        if self._generation == self.index.generation and self._lexical is not None:
            return
        generation = self.index.generation
        windows = self.index.windows()
        texts = [self.index.text(w) for w in windows]
        position = {w.key: i for i, w in enumerate(windows)}
        related = {i: [(position[k], wt) for k, wt in self.index.related.get(w.key, []) if k in position]
                   for i, w in enumerate(windows)}
        self._windows, self._texts = windows, texts
        self._lexical = LexicalIndex.build([code_tokens(t) for t in texts])
        self._related = related_matrix(related, len(windows))
        self._generation = generation

    def retrieve(self, query: str, exclude_path: str, top_k: int = 10,
                 alpha: float = 0.0) -> list[RetrievedWindow]:
        """The top windows outside `exclude_path` (its text is in the prompt already)."""
        self._refresh()
        assert self._lexical is not None
        if not self._windows:
            return []
        independent = self._lexical.scores(code_tokens(query)).astype(np.float64)
        assert self._related is not None  # built with _lexical
        scores = relation_aware_scores(independent, self._related, alpha)
        own = np.array([w.path == exclude_path for w in self._windows])
        scores[own] = -np.inf
        # A window with no word in common with the query is noise, whatever its neighbours.
        scores[independent <= 0] = -np.inf
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [RetrievedWindow(self._windows[i], self._texts[i], float(scores[i]))
                for i in order if np.isfinite(scores[i])]
