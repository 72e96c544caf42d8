"""The two memory encodings of PRISM Sec. 3.3, laid out as token lists.

A step prompt is (task, schema, query, memory, chunk), stable parts first, so only the
memory's changed tail and the new chunk are evaluated again. The task and the schema are
the same for every query of a task, so they lead (a new query re-encodes from its query
on); the final answer call replaces the chunk with its own instruction, so it re-encodes
only that instruction:

- in-place: the memory JSON rendered whole after every step; the cache holds up to the
  first token that changed;
- amendments: the memory the pass started from, then one line per revision applied
  since; an applied revision only appends tokens, so everything before it stays a
  cached prefix, at the price of a longer memory when updates repeat paths.

Every part is tokenized on its own and the lists are concatenated, so a part's tokens
never depend on what follows it. Repository and user text goes through tokenize_text
(control-token spellings stay text); only the ChatML markers are control tokens.

A step prompt never exceeds the model's window less the tokens the step may decode: a
chunk longer than the room left is cut at its end (`chunk_room` tells a caller that room,
so it can drop its least important text itself first).
"""

from __future__ import annotations

import json
import logging
import typing
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from prism_code.llm.types import ContextOverflow
from prism_code.memory.revisions import Revision
from prism_code.memory.schema import fields_of, format_path, optional_inner, schema_source, walk_templates

if TYPE_CHECKING:
    from prism_code.llm.backend import CompletionBackend

log = logging.getLogger(__name__)


# str and Enum, not StrEnum: str() of a member stays "Encoding.IN_PLACE" as before.
class Encoding(str, Enum):  # noqa: UP042
    IN_PLACE = "in-place"
    AMENDMENTS = "amendments"


def render_memory(memory: dict[str, Any]) -> str:
    # One line, insertion order: an add lands at the end of its object, so the text
    # before it does not move.
    return json.dumps(memory, ensure_ascii=False)


def _skeleton(t: Any, name: str) -> Any:
    inner = optional_inner(t)
    t = inner if inner is not None else t
    if t is str:
        return f"<{name}>"
    if t is bool:
        return True
    if t in (int, float):
        return 1
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is list:
        return [_skeleton(args[0], name)]
    if origin is dict:
        return {"<key>": _skeleton(args[1], name)}
    return {k: _skeleton(v, k) for k, v in fields_of(t).items()}


def example_revision(schema: type) -> Revision:
    """An add at the schema's first dict entry (else its first field), values as <placeholders>."""
    templates = list(walk_templates(schema, max_depth=2))
    template, t = next(((p, t) for p, t in templates if None in p), templates[0])
    path = format_path(tuple("<key>" if s is None else s for s in template))
    return Revision(path, "add", _skeleton(t, str(template[-1] or "value")))


def format_rules(allow_updates: bool, encoding: Encoding, schema: type) -> str:
    ops = ('"add" creates a path that is not in the memory yet; "update" replaces the value '
           "at a path that is already there." if allow_updates else
           '"op" is always "add": it creates a path that is not in the memory yet. Never '
           "repeat a path that exists.")
    memory = ("[MEMORY] holds the memory as it stood at the start; the lines under "
              "[AMENDMENTS] are revisions applied since, and a later line wins over an "
              "earlier one for the same path." if encoding is Encoding.AMENDMENTS else
              "[MEMORY] holds the current memory as JSON.")
    return (
        "The input arrives in parts. [TEXT] is the next part; the memory already holds what "
        "the earlier parts said. Propose revisions that put into the memory what [TEXT] says "
        "about [QUERY]; do not repeat what the memory holds. The memory follows the "
        "dataclasses in [SCHEMA]. " + memory + "\n"
        "Answer with a JSON list of revisions, each "
        '{"path": ..., "op": ..., "value": ...}. A path starts at $ and names each field or '
        "dict key in single quotes, e.g. $.'field'.'key'. " + ops + " The value must have the "
        "type the schema gives for that path.\n"
        "Example: [" + example_revision(schema).line() + "]"
    )


TEXT_MARK = "\n[TEXT]\n"  # what stands between the memory and a step's chunk


@dataclass
class Prompt:
    tokens: list[int]
    memory_start: int  # offset of the first memory token
    memory_end: int  # offset just past the memory (where the chunk begins)


@dataclass
class PromptBuilder:
    """Builds the step prompts of one pass and keeps the amendment lines applied so far."""

    session: CompletionBackend
    task: str
    query: str
    schema: type
    encoding: Encoding = Encoding.AMENDMENTS
    allow_updates: bool = True
    base: dict[str, Any] = field(default_factory=dict)  # the memory the pass starts from
    _stable: list[int] = field(default_factory=list, init=False)
    _head: list[int] = field(default_factory=list, init=False)
    _base_tokens: list[int] = field(default_factory=list, init=False)
    _amendments: list[int] = field(default_factory=list, init=False)
    _tail: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        s = self.session
        start, end = s.special_token("<|im_start|>"), s.special_token("<|im_end|>")
        newline = s.tokenize_text("\n")
        system = self.task.strip() + "\n\n" + format_rules(self.allow_updates, self.encoding, self.schema)
        self._stable = (s.prompt_start() + [start] + s.tokenize_text("system\n" + system) + [end] + newline
                        + [start] + s.tokenize_text("user\n")
                        + s.tokenize_text("[SCHEMA]\n" + schema_source(self.schema) + "\n"))
        self._head = (self._stable
                      + s.tokenize_text("[QUERY]\n" + self.query.strip() + "\n\n")
                      + s.tokenize_text("[MEMORY]\n"))
        if self.encoding is Encoding.AMENDMENTS:
            self._base_tokens = s.tokenize_text(render_memory(self.base) + "\n\n[AMENDMENTS]\n")
        self._tail = [end] + newline + [start] + s.tokenize_text("assistant\n")

    @property
    def stable(self) -> list[int]:
        """Task, rules and schema: the same for every query of a task, so worth a state file."""
        return list(self._stable)

    @property
    def head(self) -> list[int]:
        """Task, query and schema: the same for every step of the pass."""
        return list(self._head)

    def record(self, applied: list[Revision]) -> None:
        """Note revisions that were applied (only the amendments encoding shows them)."""
        if self.encoding is Encoding.AMENDMENTS:
            for revision in applied:
                self._amendments += self.session.tokenize_text(revision.line() + "\n")

    def memory_tokens(self, memory: dict[str, Any]) -> list[int]:
        if self.encoding is Encoding.AMENDMENTS:
            return self._base_tokens + self._amendments
        return self.session.tokenize_text(render_memory(memory) + "\n")

    def prompt(self, memory: dict[str, Any], chunk: str, reserve: int = 0) -> Prompt:
        """The step prompt; `memory` is the current memory (in-place renders it). With the
        `reserve` tokens the step decodes it fits the window: a longer chunk loses its end."""
        return self._with(memory, TEXT_MARK + chunk, reserve, cut=True)

    def chunk_room(self, memory: dict[str, Any], reserve: int) -> int:
        """Tokens a chunk may take so that its step prompt and `reserve` decoded tokens fit the window."""
        fixed = len(self._head) + len(self.memory_tokens(memory)) + len(self.session.tokenize_text(TEXT_MARK))
        return self.session.n_ctx - reserve - fixed - len(self._tail)

    def final_prompt(self, memory: dict[str, Any], instruction: str, reserve: int = 0) -> Prompt:
        """The final answer prompt (Algorithm 1, line 6): the step prompt's task, schema,
        query and memory unchanged, then `instruction` where a chunk would be. Built on the
        same tokens, it reuses the last step's cached prefix up to the end of the memory."""
        return self._with(memory, "\n[ANSWER]\n" + instruction.strip(), reserve, cut=False)

    def _with(self, memory: dict[str, Any], after_memory: str, reserve: int, cut: bool) -> Prompt:
        mem = self.memory_tokens(memory)
        after = self.session.tokenize_text(after_memory)
        room = self.session.n_ctx - reserve - len(self._head) - len(mem) - len(self._tail)
        if len(after) > room:
            # A chunk's head is worth reading; an instruction cut short is not, nor is a prompt
            # whose query and memory leave no room for a chunk's first tokens.
            marker = len(self.session.tokenize_text(TEXT_MARK))
            if not cut or room <= marker:
                raise ContextOverflow(f"prompt of {len(self._head) + len(mem) + len(after) + len(self._tail)} "
                                      f"tokens (and {reserve} to decode) does not fit the context of "
                                      f"{self.session.n_ctx}")
            log.info("step text of %d tokens cut to the %d the window leaves", len(after), room)
            after = after[:room]
        tokens = self._head + mem + after + self._tail
        return Prompt(tokens, len(self._head), len(self._head) + len(mem))
