"""Typing into the shown suggestion: the next completion read off the last one, no model call.

Completion decodes greedily, so it is deterministic. When the user types text the last
suggestion begins with, and nothing else changed (same context, same lines, same suffix),
the model asked again would take the same tokens as before:

- the typed text the prompt now holds as tokens must be the very tokens the model chose;
- where the typed text ends inside a token, token healing constrains the next token to
  those consistent with it. That set is a subset of what was allowed before (the text to
  heal only grew), and it still holds the token chosen then, so that token still wins;
- after the healed text the model runs free, from the same state as before.

So the answer is the rest of the last suggestion, cut at the same stop string. It is not a
guess: `follow` returns None whenever the argument does not hold (different context, the
user typed something else, the last answer was cut at the token cap, a stop string the new
request would not see), and the model runs. (In floating point a near tie can still round
either way, as it can between two model runs whose batches were split differently; the
benchmark compares both paths on every task.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prism_code.llm.types import first_stop
from prism_code.tasks.fim import FimPrompt


@dataclass(frozen=True)
class Suggestion:
    """The last model answer, as the token path that produced it."""

    head: tuple[int, ...]  # prompt tokens before the cursor's line: context, earlier lines, suffix
    path: tuple[int, ...]  # after them: tokens the prompt forced, then every token the model chose
    forced: int  # how many of `path` the prompt forced
    heal: str  # the text the model's first tokens had to spell out (token healing)
    stop: tuple[str, ...]
    max_tokens: int
    stopped_by_string: bool  # False: the model ended the text itself


def remember(prompt: FimPrompt, generated: Sequence[int], finish: str, stop: Sequence[str],
             max_tokens: int) -> Suggestion | None:
    """What a later keystroke needs; None when the answer cannot be followed (cut at the cap, cancelled)."""
    if finish not in ("eos", "stop") or not generated:
        return None
    n = prompt.line_start
    return Suggestion(tuple(prompt.tokens[:n]), (*prompt.tokens[n:], *generated), len(prompt.tokens) - n,
                      prompt.heal, tuple(stop), max_tokens, finish == "stop")


def follow(last: Suggestion | None, prompt: FimPrompt, stop: Sequence[str], max_tokens: int,
           detokenize: Callable[[Sequence[int]], str]) -> str | None:
    """The model's text after the cursor for `prompt`, read off `last`; None when it cannot be proven."""
    if last is None or last.stop != tuple(stop) or last.max_tokens != max_tokens:
        return None
    n = prompt.line_start
    typed = tuple(prompt.tokens[n:])
    if (tuple(prompt.tokens[:n]) != last.head or not last.forced <= len(typed) < len(last.path)
            or last.path[:len(typed)] != typed):
        return None
    # What the last request still had to heal at this point must start the new text to heal,
    # so the new constraint admits a subset of the old one.
    chosen_so_far = detokenize(last.path[last.forced:len(typed)])
    if not prompt.heal.startswith(last.heal[len(chosen_so_far):]):
        return None
    rest = last.path[len(typed):]
    # Replay the healing loop of Completer._generate on the remembered tokens.
    healed, written = 0, ""
    while len(written) < len(prompt.heal):
        if healed == len(rest):
            return None
        healed += 1
        written = detokenize(rest[:healed])
        if not (written.startswith(prompt.heal) or prompt.heal.startswith(written)):
            return None
    text = detokenize(rest[healed:])
    cut = first_stop(text, list(stop))
    if cut is not None:
        text = text[:cut]
    elif last.stopped_by_string:
        return None  # the stop string fell inside what this request heals; it would read on
    return written[len(prompt.heal):] + text
