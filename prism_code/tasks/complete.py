"""Repository-aware completion: FragRel-ranked windows + fill-in-the-middle (RepoEval task).

The query is the lines before the cursor (RepoCoder); with `iterations=2` the first
draft is appended to the query and retrieval runs again (RepoCoder's iteration).

Latency comes from what the model must evaluate again. The prompt keeps what changes
least first; retrieved windows that are still relevant keep their place from one
request to the next ("sticky" context), so a new line rarely invalidates the cached
context; and `checkpoint()` saves the KV state up to the cursor's line to a state file,
so the first request after a restart evaluates about as little as a keystroke does.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from prism_code.cancel import CancelCheck
from prism_code.index import RepoIndex
from prism_code.llm.backend import CompletionBackend, keeps_kv_state
from prism_code.llm.gbnf import line_not_starting_with
from prism_code.llm.state_cache import StateCache
from prism_code.llm.types import Generation, GenerationStats, common_prefix
from prism_code.retrieval.windows import RetrievedWindow, WindowRetriever
from prism_code.tasks.fim import (
    STOP_MARKERS,
    FimBudget,
    FimLayout,
    FimPrompt,
    TokenCache,
    build_prompt,
    finish_completion,
    neighbour_lines,
    split_at_cursor,
    wants_block,
)
from prism_code.tasks.typed_through import Suggestion, follow, remember

log = logging.getLogger(__name__)

# FragRel's paper uses alpha = 0.5 for RepoEval; docs/benchmarks.md has our measurement.
DEFAULT_COMPLETION_ALPHA = 0.5
# Retrieved windows offered to the prompt (the budget keeps what fits); retrieval ranks twice as
# many so a window still among them keeps its place from one keystroke to the next. Set with the
# first completion and never tuned: no bench varies it.
TOP_K = 10
QUERY_LINES = 20  # the retrieval query: the whole lines before the cursor, RepoCoder's window size
# Tokens decoded at most for a one-line completion: room for a long line, since decoding stops at
# its newline. Set with the first completion and never tuned (the block budget, block_tokens, is).
LINE_TOKENS = 48


@dataclass
class CompletionSettings:
    retrieval: bool = True
    alpha: float = DEFAULT_COMPLETION_ALPHA
    iterations: int = 1  # 2 = retrieve again with the first draft
    # When the cursor opens a block (otherwise one line): `bench blocks` (tuning half, 0.5B) found the
    # first 3 lines all right in 2 of 20 bodies and lines 4-5 added 1 body each.
    max_lines: int = 3
    block_tokens: int = 72
    budget: FimBudget = field(default_factory=FimBudget)
    layout: FimLayout = field(default_factory=FimLayout)
    # Cut the end of a line that re-types the text after the cursor (fim.finish_completion).
    trim_repeated_suffix: bool = True
    # Saving a state file costs ~25 ms per 1,000 tokens; below this a cold prefill is as cheap.
    min_state_tokens: int = 256
    # Typing what the last suggestion begins with is answered from it, without the model
    # (typed_through.py); off, every keystroke runs the model (the benchmark's model path).
    type_through: bool = True
    # At a line start, a first line that repeats the nearest line above or below
    # (fim.neighbour_lines) is refused, and the model writes its best other line under a grammar
    # that forbids it (issue #28's stop rules). Off until it wins on the line-start set.
    reject_repeats: bool = False


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
    typed_through: bool = False  # read off the last suggestion: the user typed its beginning

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Completer:
    def __init__(self, index: RepoIndex, session: CompletionBackend,
                 settings: CompletionSettings | None = None,
                 state_cache: StateCache | None = None,
                 retriever: WindowRetriever | None = None) -> None:
        self.index = index
        self.session = session
        self.settings = settings or CompletionSettings()
        self.state_cache = state_cache
        self.retriever = retriever or WindowRetriever(index)
        self._last_context: list[RetrievedWindow] = []
        self._last_prompt: FimPrompt | None = None
        self._suggestion: Suggestion | None = None
        self._prepared: tuple[tuple[str, str, int, int], _Shape, FimPrompt] | None = None
        # A remote server's tokens are this side's tokenization of its text, not the path
        # the model took, so only a local session's answers can be followed.
        self._exact_tokens = session.exact_tokens
        # A keystroke's prompt repeats the last one's lines, suffix and windows: their tokens are kept.
        self._tokens = TokenCache(session)
        # The last retrieval: its query is whole lines, so typing in a line asks it again.
        self._ranked: tuple[tuple[str, str, int, float, int], list[RetrievedWindow]] | None = None

    def _retrieve(self, path: str, prefix: str, draft: str = "") -> list[RetrievedWindow]:
        if not self.settings.retrieval:
            return []
        # Whole lines only: the retrieved context then stays put while a line is typed.
        lines = prefix.split("\n")[:-1][-QUERY_LINES:]
        query = "\n".join(lines + ([draft] if draft else []))
        if not query.strip():
            return []
        k = TOP_K
        # The same question of the same index gets the same answer (the retriever rebuilds
        # itself on a new index generation too).
        key = (query, path, 2 * k, self.settings.alpha, self.retriever.index.generation)
        if self._ranked is not None and self._ranked[0] == key:
            ranked = self._ranked[1]
        else:
            ranked = self.retriever.retrieve(query, path, 2 * k, self.settings.alpha)
            self._ranked = (key, ranked)
        # Windows from the previous request that still rank in the top 2k keep their place
        # (and their cached tokens); the best new ones fill the rest.
        still = {w.label for w in ranked}
        kept = [w for w in self._last_context if w.label in still and w.fragment.path != path][:k]
        labels = {w.label for w in kept}
        chosen = kept + [w for w in ranked[:k] if w.label not in labels][:k - len(kept)]
        self._last_context = chosen
        return chosen

    def _prompt(self, path: str, prefix: str, suffix: str, windows: list[RetrievedWindow]) -> FimPrompt:
        prompt = build_prompt(self._tokens, self.index.root.name, path, prefix, suffix,
                              [(w.label, w.text) for w in windows], self.settings.budget,
                              self.settings.layout)
        self._last_prompt = prompt
        return prompt

    def _restore(self, prompt: FimPrompt) -> int:
        """Load a saved state when it covers more of the prompt than the live cache does."""
        # A state cache comes with a local session only (a remote server keeps its own cache).
        if self.state_cache is None or not keeps_kv_state(self.session):
            return 0
        if common_prefix(self.session.tokens, prompt.tokens) >= prompt.line_start:
            return 0
        return self.state_cache.restore_longest_prefix(self.session, prompt.tokens)

    def _generate(self, prompt: FimPrompt, max_tokens: int, stop: list[str],
                  cancelled: CancelCheck | None) -> tuple[str, GenerationStats]:
        """The model's text after the cursor; with `prompt.heal`, the typed text the prompt
        left out is written first, a token at a time under a grammar, then cut off again."""
        self._suggestion = None
        healed: list[int] = []
        steps = []
        written = ""
        while len(written) < len(prompt.heal):
            step = self._heal([*prompt.tokens, *healed], prompt.heal[len(written):], cancelled)
            steps.append(step.stats)
            if not step.tokens:
                return "", _merged(steps)  # cancelled, or the model chose to end
            healed += step.tokens
            written = self.session.detokenize(healed)
            if not (written.startswith(prompt.heal) or prompt.heal.startswith(written)):
                log.warning("token healing wrote %r for %r; no completion", written, prompt.heal)
                return "", _merged(steps)
        rest = self.session.generate([*prompt.tokens, *healed], max_tokens=max_tokens - len(healed),
                                     stop=stop, cancelled=cancelled)
        steps.append(rest.stats)
        if self._exact_tokens:
            self._suggestion = remember(prompt, [*healed, *rest.tokens], rest.stats.finish_reason, stop, max_tokens)
        return written[len(prompt.heal):] + rest.text, _merged(steps)

    def _unrepeated(self, prompt: FimPrompt, shape: _Shape, text: str, stats: GenerationStats,
                    cancelled: CancelCheck | None) -> tuple[str, GenerationStats]:
        """`text`, or when its first line writes a neighbouring line again, the model's best line
        that does not (the prompt is cached: only the new line is decoded)."""
        first = finish_completion(text, shape.suffix, 1, prompt.held_indent, False).strip()
        neighbours = neighbour_lines(shape.prefix, shape.suffix)
        if not first or first not in neighbours:
            return text, stats
        again = self.session.generate(prompt.tokens, max_tokens=shape.max_tokens, stop=shape.stop,
                                      grammar=line_not_starting_with(neighbours), cancelled=cancelled)
        self._suggestion = None  # typing into it would run the model without the grammar
        return again.text, _merged([stats, again.stats])

    def _heal(self, tokens: list[int], text: str, cancelled: CancelCheck | None) -> Generation:
        """One token that begins with `text` or is a beginning of it (token healing)."""
        return self.session.heal(tokens, text, cancelled)

    def checkpoint(self) -> bool:
        """Save the KV state up to the cursor's line of the last request (idle time, exit)."""
        prompt = self._last_prompt
        n = prompt.line_start if prompt else 0
        if (self.state_cache is None or not keeps_kv_state(self.session) or prompt is None
                or n < self.settings.min_state_tokens or common_prefix(self.session.tokens, prompt.tokens[:n]) < n):
            return False
        return self.state_cache.save_prefix(self.session, n) is not None

    def warm(self, path: str, text: str, line: int, col: int,
             cancelled: CancelCheck | None = None) -> int:
        """Evaluate the prompt for this cursor without generating; returns tokens evaluated.

        `cancelled` lets a keystroke's completion take the model from a warm-up mid-prefill.
        """
        prefix, suffix = split_at_cursor(text, line, col)
        prompt = self._prompt(path, prefix, suffix, self._retrieve(path, prefix))
        self._restore(prompt)
        encoded = self.session.prefill(prompt.tokens, cancelled=cancelled).encoded
        if not (cancelled is not None and cancelled()):
            self.session.prepare_heal()  # built once, here rather than at the first keystroke
        return encoded

    def follow(self, path: str, text: str, line: int, col: int) -> CompletionResult | None:
        """The answer read off the last suggestion when the user typed what it begins with, else None.

        No model call: the server answers these at once, without a debounce.
        """
        started = time.perf_counter()
        shape = self._shape(text, line, col)
        prompt = self._prompt(path, shape.prefix, shape.suffix, self._retrieve(path, shape.prefix))
        followed = self._followed(prompt, shape, started)
        # A miss goes on to `complete` with the same request: keep what was built for it.
        self._prepared = None if followed is not None else ((path, text, line, col), shape, prompt)
        return followed

    def complete(self, path: str, text: str, line: int, col: int,
                 cancelled: CancelCheck | None = None) -> CompletionResult:
        started = time.perf_counter()
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared[0] == (path, text, line, col):
            shape, prompt = prepared[1], prepared[2]
        else:
            shape = self._shape(text, line, col)
            prompt = self._prompt(path, shape.prefix, shape.suffix, self._retrieve(path, shape.prefix))
            followed = self._followed(prompt, shape, started)
            if followed is not None:
                return followed
        restored = self._restore(prompt)
        text, stats = self._generate(prompt, shape.max_tokens, shape.stop, cancelled)
        for _ in range(self.settings.iterations - 1):
            windows = self._retrieve(path, shape.prefix, draft=text)
            prompt = self._prompt(path, shape.prefix, shape.suffix, windows)
            text, stats = self._generate(prompt, shape.max_tokens, shape.stop, cancelled)
        if self.settings.reject_repeats and shape.max_lines == 1 and prompt.held_indent is not None:
            text, stats = self._unrepeated(prompt, shape, text, stats, cancelled)
        return CompletionResult(
            completion=finish_completion(text, shape.suffix, shape.max_lines, prompt.held_indent,
                                         self.settings.trim_repeated_suffix),
            latency_ms=round((time.perf_counter() - started) * 1000, 1),
            context=prompt.context, prompt_tokens=len(prompt.tokens), reused=stats.reused,
            encoded=stats.encoded, decoded=stats.decoded, restored=restored)

    def _followed(self, prompt: FimPrompt, shape: _Shape, started: float) -> CompletionResult | None:
        if not self.settings.type_through or self.settings.iterations != 1:
            return None  # RepoCoder's second retrieval reads the draft, which typing changes
        known = follow(self._suggestion, prompt, shape.stop, shape.max_tokens, self.session.detokenize)
        if known is None:
            return None
        return CompletionResult(
            completion=finish_completion(known, shape.suffix, shape.max_lines, prompt.held_indent,
                                         self.settings.trim_repeated_suffix),
            latency_ms=round((time.perf_counter() - started) * 1000, 1), context=prompt.context,
            prompt_tokens=len(prompt.tokens), typed_through=True)

    def _shape(self, text: str, line: int, col: int) -> _Shape:
        prefix, suffix = split_at_cursor(text, line, col)
        block = self.settings.max_lines > 1 and wants_block(prefix)
        return _Shape(prefix, suffix, self.settings.max_lines if block else 1,
                      self.settings.block_tokens if block else LINE_TOKENS,
                      [*STOP_MARKERS, *([] if block else ["\n"])])


@dataclass(frozen=True)
class _Shape:
    """What a request asks for: the text around the cursor and how much to write."""

    prefix: str
    suffix: str
    max_lines: int  # one line, unless the cursor opens a block
    max_tokens: int
    stop: list[str]


def _merged(steps: list[GenerationStats]) -> GenerationStats:
    """One request's figures from its model calls: reuse as the first call found the cache."""
    first, last = steps[0], steps[-1]
    return GenerationStats(first.prompt_tokens, first.reused, sum(s.encoded for s in steps),
                           sum(s.decoded for s in steps), sum(s.prefill_ms for s in steps),
                           sum(s.decode_ms for s in steps), last.finish_reason)
