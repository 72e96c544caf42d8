"""The incremental PRISM loop (Algorithm 1, lines 1-5) over a list of chunks.

For each chunk: prompt (task, query, schema, memory, chunk) -> the model proposes
revisions, under a JSON grammar when asked -> each is validated and applied or
rejected -> next chunk. The final answer from the memory is the caller's (it differs
per task); this module returns the memory, what the pass cost, and the final prompt's
layout (`PassResult.final_prompt`) that keeps the pass's cached prefix.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prism_code.cancel import CancelCheck
from prism_code.llm.accounting import Accounting
from prism_code.llm.backend import keeps_kv_state
from prism_code.llm.json_grammar import json_layout_grammar
from prism_code.llm.state_cache import StateCache
from prism_code.llm.types import PrefillStats, common_prefix
from prism_code.memory.encoding import Encoding, PromptBuilder
from prism_code.memory.revisions import (
    OPS,
    Rejected,
    Revision,
    Target,
    apply_all,
    parse_revisions,
    revision_json_schema,
)

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar

    from prism_code.llm.backend import CompletionBackend

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepProgress:
    step: int  # 1-based
    total: int
    applied: int
    rejected: int


@dataclass
class StepResult:
    step: int
    text: str
    proposed: list[Revision]
    applied: list[Revision]
    rejected: list[Rejected]
    parse_errors: list[str]
    accounting: Accounting


@dataclass
class PassResult:
    memory: dict[str, Any]
    steps: list[StepResult] = field(default_factory=list)
    accounting: Accounting = field(default_factory=Accounting)
    rejected: list[Rejected] = field(default_factory=list)
    cancelled: bool = False
    builder: PromptBuilder | None = None  # the pass's prompt layout, for the final answer call

    @property
    def applied(self) -> int:
        return sum(len(s.applied) for s in self.steps)

    def final_prompt(self, instruction: str, reserve: int = 0) -> list[int]:
        """Tokens of the final answer call over this pass's memory; its task, schema, query and
        memory are the step prompts' own tokens, so the call starts from their cached prefix.
        ContextOverflow when they and `reserve` decoded tokens do not fit the window."""
        if self.builder is None:
            raise ValueError("this pass result has no prompt layout")
        return self.builder.final_prompt(self.memory, instruction, reserve).tokens


@dataclass(frozen=True)
class PassSettings:
    """How a pass prompts and constrains the model; the same for every chunk of the pass."""

    encoding: Encoding = Encoding.AMENDMENTS  # how the memory so far is shown (PRISM Table 3)
    allow_updates: bool = True  # False: revisions may only add
    grammar: bool = True  # constrain the answer to revisions under a JSON grammar
    typed_grammar: bool = True  # the grammar knows the schema's paths and value types
    # The grammar asks for at least `min_revisions` per chunk (for chunks known to matter)
    # and at most `max_revisions`.
    min_revisions: int = 0
    max_revisions: int = 6
    max_tokens: int = 384  # decoded per step at most
    temperature: float = 0.0


def run_pass(
    session: CompletionBackend,
    task: str,
    query: str,
    schema: type,
    chunks: Sequence[str],
    settings: PassSettings | None = None,
    *,
    memory: dict[str, Any] | None = None,
    targets: Sequence[Target] | Callable[[int, str], Sequence[Target]] | None = None,
    cancelled: CancelCheck | None = None,
    on_step: Callable[[StepProgress], None] | None = None,
    state_cache: StateCache | None = None,
    fit_chunk: Callable[[int, int], str] | None = None,
) -> PassResult:
    """Run PRISM over `chunks`; `memory` is the starting memory (default: empty).

    `targets` narrows the typed grammar to some places of the schema (for instance only
    the entries of one dict); revisions elsewhere cannot be written. It may be a function
    of (step index, chunk), e.g. the entries named after the functions a chunk defines:
    a small model then chooses among real keys instead of inventing them.
    `state_cache` keeps the KV state of the part before the query (task, rules, schema) on
    disk, so a pass after other model work (or a restart) does not evaluate it again.
    A step prompt always fits the window with the step's `max_tokens`: `fit_chunk(i, room)`
    gives step i's text in at most `room` tokens (the caller knows what to drop first);
    without it, or past it, a chunk too long loses its end.
    """
    settings = settings or PassSettings()
    encoding, allow_updates = Encoding(settings.encoding), settings.allow_updates
    base = copy.deepcopy(memory) if memory is not None else {}
    builder = PromptBuilder(session, task, query, schema, encoding, allow_updates, base=base)
    ops = OPS if allow_updates else ("add",)

    def constraint_for(places: Sequence[Target] | None) -> LlamaGrammar:
        return json_layout_grammar(revision_json_schema(
            schema, ops=ops, typed=settings.typed_grammar, targets=places,
            min_items=settings.min_revisions, max_items=settings.max_revisions))

    grammar = settings.grammar
    fixed = constraint_for(targets) if grammar and not callable(targets) else None
    result = PassResult(memory=copy.deepcopy(base), builder=builder)
    if state_cache is not None and chunks:
        written = _start_from_state(session, state_cache, builder.stable, cancelled)
        if written is not None:
            result.accounting.add(written)
    for i, chunk in enumerate(chunks):
        if cancelled is not None and cancelled():
            result.cancelled = True
            break
        constraint = fixed
        if grammar and callable(targets):
            places = targets(i, chunk)
            constraint = constraint_for(places) if places else None
        if fit_chunk is not None:
            chunk = fit_chunk(i, builder.chunk_room(result.memory, settings.max_tokens))
        prompt = builder.prompt(result.memory, chunk, reserve=settings.max_tokens)
        gen = session.generate(prompt.tokens, max_tokens=settings.max_tokens, grammar=constraint,
                               temperature=settings.temperature, cancelled=cancelled)
        step_cost = Accounting()
        step_cost.add(gen.stats)
        result.accounting.add(gen.stats)
        if gen.stats.finish_reason == "cancelled":
            result.cancelled = True
            break
        proposed, errors = parse_revisions(gen.text)
        applied, rejected = apply_all(result.memory, proposed, schema, allow_updates)
        builder.record([a.revision for a in applied])
        result.rejected += rejected
        for r in rejected:
            log.info("step %d: rejected %s %s: %s", i + 1, r.revision.op, r.revision.path, r.reason)
        result.steps.append(StepResult(i + 1, gen.text, proposed, [a.revision for a in applied], rejected,
                                       errors, step_cost))
        if on_step is not None:
            on_step(StepProgress(i + 1, len(chunks), len(applied), len(rejected)))
    return result


def _start_from_state(session: CompletionBackend, state_cache: StateCache, stable: list[int],
                      cancelled: CancelCheck | None) -> PrefillStats | None:
    """Bring the stable prefix into the cache from its state file; when there is none, evaluate
    it and write the file (those are the prefill's figures, returned so the pass counts them)."""
    if not keeps_kv_state(session):
        return None  # a remote engine keeps the prefix in its own prompt cache
    if common_prefix(session.tokens, stable) == len(stable):
        return None
    if state_cache.restore_longest_prefix(session, stable) == len(stable):
        return None
    stats = session.prefill(stable, cancelled=cancelled)
    if not stats.cancelled:
        state_cache.save_prefix(session, len(stable))
    return stats
