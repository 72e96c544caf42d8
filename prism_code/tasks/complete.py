"""Repository-aware completion: FragRel-ranked windows + fill-in-the-middle (RepoEval task).

The query is the lines before the cursor (RepoCoder); with `iterations=2` the first
draft is appended to the query and retrieval runs again (RepoCoder's iteration). The
stable part of the prompt (repository name, retrieved windows, current path) is kept in
the model's KV cache across keystrokes and saved to a state file, so the first request
after a restart does not pay for it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from prism_code.index import RepoIndex
from prism_code.llm.runtime import LlamaSession, common_prefix
from prism_code.llm.state_cache import StateCache
from prism_code.retrieval.windows import RetrievedWindow, WindowRetriever
from prism_code.tasks.fim import (STOP_MARKERS, FimBudget, FimPrompt, build_prompt,
                                  finish_completion, split_at_cursor, wants_block)

# FragRel's paper uses alpha = 0.5 for RepoEval; docs/benchmarks.md has our measurement.
DEFAULT_COMPLETION_ALPHA = 0.5


@dataclass
class CompletionSettings:
    retrieval: bool = True
    alpha: float = DEFAULT_COMPLETION_ALPHA
    top_k: int = 10
    query_lines: int = 20  # RepoCoder's window size
    iterations: int = 1  # 2 = retrieve again with the first draft
    max_lines: int = 8  # when the cursor opens a block; otherwise one line
    line_tokens: int = 48
    block_tokens: int = 160
    budget: FimBudget = field(default_factory=FimBudget)
    # Saving a state file costs ~25 ms per 1,000 tokens; below this a cold prefill is as cheap.
    min_state_tokens: int = 256


@dataclass
class CompletionResult:
    completion: str
    latency_ms: float
    context: list[str]
    prompt_tokens: int = 0
    reused: int = 0
    encoded: int = 0
    decoded: int = 0
    restored: int = 0

    def to_json(self) -> dict:
        return asdict(self)


class Completer:
    def __init__(self, index: RepoIndex, session: LlamaSession,
                 settings: CompletionSettings | None = None,
                 state_cache: StateCache | None = None) -> None:
        self.index = index
        self.session = session
        self.settings = settings or CompletionSettings()
        self.state_cache = state_cache
        self.retriever = WindowRetriever(index)

    def _retrieve(self, path: str, prefix: str, draft: str = "") -> list[RetrievedWindow]:
        if not self.settings.retrieval:
            return []
        # Whole lines only: the retrieved context then stays put while a line is typed.
        lines = prefix.split("\n")[:-1][-self.settings.query_lines:]
        query = "\n".join(lines + ([draft] if draft else []))
        if not query.strip():
            return []
        return self.retriever.retrieve(query, path, self.settings.top_k, self.settings.alpha)

    def _prompt(self, path: str, prefix: str, suffix: str, windows: list[RetrievedWindow]) -> FimPrompt:
        return build_prompt(self.session, self.index.root.name, path, prefix, suffix,
                            [(w.label, w.text) for w in windows], self.settings.budget)

    def _ensure_stable(self, stable: list[int]) -> int:
        """Bring the stable prefix into the KV cache, from a state file when one exists."""
        if self.state_cache is None or len(stable) < self.settings.min_state_tokens:
            return 0
        if common_prefix(self.session.tokens, stable) == len(stable):
            return 0
        restored = self.state_cache.restore_longest_prefix(self.session, stable)
        if restored < len(stable):
            self.session.prefill(stable)
            self.state_cache.save_prefix(self.session, len(stable))
        return restored

    def warm(self, path: str, text: str, line: int, col: int) -> int:
        """Evaluate the prompt for this cursor without generating; returns tokens evaluated."""
        prefix, suffix = split_at_cursor(text, line, col)
        prompt = self._prompt(path, prefix, suffix, self._retrieve(path, prefix))
        self._ensure_stable(prompt.stable)
        return self.session.prefill(prompt.tokens).encoded

    def complete(self, path: str, text: str, line: int, col: int,
                 cancelled: Callable[[], bool] | None = None) -> CompletionResult:
        started = time.perf_counter()
        prefix, suffix = split_at_cursor(text, line, col)
        block = wants_block(prefix)
        max_lines = self.settings.max_lines if block else 1
        max_tokens = self.settings.block_tokens if block else self.settings.line_tokens
        stop = list(STOP_MARKERS) + ([] if block else ["\n"])
        windows = self._retrieve(path, prefix)
        prompt = self._prompt(path, prefix, suffix, windows)
        restored = self._ensure_stable(prompt.stable)
        generation = self.session.generate(prompt.tokens, max_tokens=max_tokens, stop=stop,
                                           cancelled=cancelled)
        for _ in range(self.settings.iterations - 1):
            windows = self._retrieve(path, prefix, draft=generation.text)
            prompt = self._prompt(path, prefix, suffix, windows)
            generation = self.session.generate(prompt.tokens, max_tokens=max_tokens, stop=stop,
                                               cancelled=cancelled)
        stats = generation.stats
        return CompletionResult(
            completion=finish_completion(generation.text, suffix, max_lines),
            latency_ms=round((time.perf_counter() - started) * 1000, 1),
            context=prompt.context, prompt_tokens=len(prompt.tokens), reused=stats.reused,
            encoded=stats.encoded, decoded=stats.decoded, restored=restored)
