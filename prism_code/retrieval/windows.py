"""Cross-file context for completion: 20-line windows ranked by BM25 + FragRel (RepoCoder).

The query is the code right before the cursor; candidates are the windows of every
other file; FragRel's relation-aware score (Eq. 9-10) lifts windows whose related
windows also match, which is the structural context the paper reports gains from.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from prism_code.fragments import Fragment
from prism_code.index import RepoIndex
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
    """BM25 over the index's windows, rebuilt lazily when the index changes.

    An index update (in the editor: each pause in typing) makes the next request rebuild it
    on the model's thread: ~0.2-0.5 s for 2,000-5,000 windows on a busy core, a third of it
    splitting every window's text into code tokens and another building the relation matrix
    through a dict of lists. The code tokens stay known by text, so a rebuild splits only the
    windows that changed, and the matrix is built from its arrays at once: the same index.
    """

    def __init__(self, index: RepoIndex) -> None:
        self.index = index
        self._generation = -1
        self._windows: list[Fragment] = []
        self._texts: list[str] = []
        self._lexical: LexicalIndex | None = None
        self._related: sp.csr_matrix | None = None
        self._code_tokens: dict[str, list[str]] = {}

    def _refresh(self) -> None:
        if self._generation == self.index.generation and self._lexical is not None:
            return
        generation = self.index.generation
        windows = self.index.windows()
        texts = [self.index.text(w) for w in windows]
        known = self._code_tokens
        # Interned, the kept lists hold one copy of each distinct word (~6 MiB for 5,000 windows).
        self._code_tokens = {t: known[t] if t in known else list(map(sys.intern, code_tokens(t))) for t in texts}
        position = {w.key: i for i, w in enumerate(windows)}
        # related_matrix's arrays, in its order, without the dict in between.
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        related = self.index.related
        for i, w in enumerate(windows):
            for k, wt in related.get(w.key, ()):
                j = position.get(k)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
                    vals.append(wt)
        self._windows, self._texts = windows, texts
        self._lexical = LexicalIndex.build([self._code_tokens[t] for t in texts])
        self._related = sp.csr_matrix((vals, (rows, cols)), shape=(len(windows), len(windows)))
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
