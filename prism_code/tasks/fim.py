"""Qwen2.5-Coder repository-level fill-in-the-middle prompts, built as token lists.

Layout (what changes least comes first, so consecutive requests share a cached prefix):

    <|repo_name|>name \\n <|file_sep|>path \\n text ...   (retrieved windows)
    <|file_sep|>current/path \\n
    <|fim_prefix|>lines above<|fim_suffix|>suffix<|fim_middle|>cursor's line up to the cursor

The hole starts at the beginning of the cursor's line, and what is typed on that line
stands as the start of the model's middle. It is the same fill-in-the-middle request
(training picks middles at any character), but a keystroke now only appends to the
prompt: the suffix, which the cursor does not move while typing, stays in the KV cache
instead of being evaluated again after every typed character (~250 tokens, >1 s on
this machine's CPU with the 0.5B model; docs/benchmarks.md).

Repository and user text is tokenized with special tokens disabled; only the markers are
control tokens.

When the cursor sits in the indentation of an otherwise empty line, the middle starts
empty and the model writes the indentation itself. Qwen's
tokenizer joins the last indentation space to the word after it (" if", " return"), so a
prompt that ends in a bare run of spaces asks for a token boundary the model never saw
in training, and it often answered with what follows the suffix instead of the line
(tests/test_fim.py holds such a case). The indentation the model writes is removed
again by `finish_completion`, since the editor already has it.
"""

from __future__ import annotations

import re
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

# Markers the model may emit to end the middle part (or start a new file): never shown.
STOP_MARKERS = ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>",
                "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|im_end|>")

_BLOCK_OPENER = re.compile(r"(:|\{|\(|\[|=>|->|\bdo)\s*(#.*|//.*)?$")


@dataclass(frozen=True)
class FimBudget:
    context_tokens: int = 1024  # retrieved windows
    prefix_tokens: int = 768
    # Everything after the cursor is evaluated again on each keystroke, but the model reads
    # the end of the suffix as the end of the file: cut at 64 tokens it often ended on the
    # next `def` header and the model wrote that function's body instead of the hole
    # (RepoEval-style tasks, docs/benchmarks.md). 256 costs ~1 s more per keystroke cold.
    suffix_tokens: int = 256
    # Line caps on top of the token budgets (None: the budget alone decides).
    prefix_lines: int | None = None
    suffix_lines: int | None = None
    # Start the lines above on a multiple of HEAD_STEP_LINES (KV reuse when moving down).
    align_head: bool = True


# The product's middle opens on the last line whose number is a multiple of 8, not at the
# cursor's line. Enter then appends the finished line to the middle instead of moving it into
# the prefix, which shifted the suffix after it (~250 tokens evaluated again: the first
# suggestion after Enter took 3.8 s p50 on the slow host, 265 ms with this). The 0.5B also
# writes the line start better when its middle has begun: 14 of 49 right against 5 on the
# tuning half's line starts (docs/benchmarks.md, "Line starts on unseen code"). 8 was chosen
# for latency alone (a boundary is crossed once in 8 lines), before any EM was measured.
MIDDLE_STEP_LINES = 8


@dataclass(frozen=True)
class FimLayout:
    """What surrounds the file's own text in the prompt.

    The product's layout names the repository and the file (Qwen2.5-Coder's repository-level
    format) and opens the hole up to MIDDLE_STEP_LINES lines above the cursor; the plain layout is the textbook
    `<|fim_prefix|>prefix<|fim_suffix|>suffix<|fim_middle|>` with the hole at the cursor.
    """

    repo_markers: bool = True  # <|repo_name|> and <|file_sep|>path before the file
    # True: the cursor line's typed text opens the middle (what a keystroke appends to);
    # False: it ends the prefix, and the hole starts at the cursor.
    typed_in_middle: bool = True
    heal: bool = True  # token healing of the last typed token (typed_in_middle only)
    # True: a cursor in the indentation of an otherwise empty line leaves that indentation
    # out and the model writes it (module doc); False: it is typed text like any other,
    # opening the middle, its last token healed.
    hold_indent: bool = True
    # With typed_in_middle, the middle also opens with the lines between the last multiple of
    # this many lines and the cursor's line (MIDDLE_STEP_LINES); None: the hole starts at the
    # cursor's line.
    middle_step_lines: int | None = MIDDLE_STEP_LINES


PLAIN_LAYOUT = FimLayout(repo_markers=False, typed_in_middle=False, heal=False)


@dataclass(frozen=True)
class FimPrompt:
    stable: list[int]  # repository name, retrieved context and the current path
    tokens: list[int]  # stable + the prefix/suffix part
    context: list[str]  # labels of the windows that fit the budget
    line_start: int  # where the text typed on the cursor's line begins: what a keystroke leaves cached
    # Indentation typed before the cursor but left out of the prompt (see module doc);
    # None when the cursor's line has code before the cursor and the prompt ends there.
    held_indent: str | None = None
    # The text of the last typed token, left out of the prompt: the model writes it again
    # under a grammar, so its first token may run past the cursor (token healing, below).
    heal: str = ""


class Tokenizer(Protocol):
    """What prompt building needs from a model session."""

    def tokenize_text(self, text: str) -> list[int]: ...

    def special_token(self, name: str) -> int: ...

    def detokenize(self, tokens: Sequence[int]) -> str: ...


class TokenCache:
    """A Tokenizer that remembers the tokens of the texts it tokenized (least recently used go first).

    A keystroke's prompt is built from the same lines, suffix and windows as the last one's;
    tokenizing them again (~130 calls, 14 of the 17 ms a keystroke spent outside the model on a
    busy core) gave the same tokens, as tokenizing is a function of the text. Only
    `tokenize_text` is cached.
    """

    def __init__(self, tok: Tokenizer, max_texts: int = 4096, max_chars: int = 1 << 21) -> None:
        self._tok = tok
        self._max_texts = max_texts
        self._max_chars = max_chars
        self._chars = 0
        self._tokens: OrderedDict[str, array[int]] = OrderedDict()

    def tokenize_text(self, text: str) -> list[int]:
        known = self._tokens.get(text)
        if known is not None:
            self._tokens.move_to_end(text)
            return known.tolist()
        tokens = self._tok.tokenize_text(text)
        if len(text) <= self._max_chars // 4:
            self._tokens[text] = array("i", tokens)
            self._chars += len(text)
            while len(self._tokens) > self._max_texts or self._chars > self._max_chars:
                old, _ = self._tokens.popitem(last=False)
                self._chars -= len(old)
        return tokens

    def special_token(self, name: str) -> int:
        return self._tok.special_token(name)

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self._tok.detokenize(tokens)


def split_at_cursor(text: str, line: int, col: int) -> tuple[str, str]:
    """Prefix and suffix of a buffer around a 1-based (line, col) cursor."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines) + 1:
        raise ValueError(f"line {line} is outside the file (1..{len(lines)})")
    current = lines[line - 1] if line <= len(lines) else ""
    if not 1 <= col <= len(current) + 1:
        raise ValueError(f"column {col} is outside line {line} (1..{len(current) + 1})")
    prefix = "\n".join(lines[:line - 1] + [current[:col - 1]])
    suffix = "\n".join([current[col - 1:]] + lines[line:])
    return prefix, suffix


def wants_block(prefix: str) -> bool:
    """True when the cursor sits on an empty line right after a line that opens a block."""
    head, _, current = prefix.rpartition("\n")
    if current.strip():
        return False
    previous = next((ln for ln in reversed(head.split("\n")) if ln.strip()), "")
    return bool(_BLOCK_OPENER.search(previous.rstrip()))


# The lines above the cursor start on a multiple of this many lines, so that moving down
# a line appends to the cached prompt instead of sliding its start (which would make the
# model evaluate the whole prefix again, ~768 tokens) in 15 of 16 moves.
HEAD_STEP_LINES = 16


def _tail_lines(tokenize: Callable[[str], list[int]], text: str, budget: int,
                max_lines: int | None = None, align: bool = True) -> list[int]:
    """Tokens of the last whole lines of `text` that fit (the line at the cursor always),
    starting at a line number that is a multiple of HEAD_STEP_LINES when some are left out
    and `align` is set. `max_lines` counts the lines before the last (the cursor's) one."""
    lines = text.split("\n")
    first = len(lines) - 1
    lowest = 0 if max_lines is None else max(0, first - max_lines)
    used = len(tokenize(lines[first] + "\n"))
    while first > lowest:
        cost = len(tokenize(lines[first - 1] + "\n"))
        if used + cost > budget:
            break
        first -= 1
        used += cost
    anchored = -(-first // HEAD_STEP_LINES) * HEAD_STEP_LINES
    if align and 0 < first and len(lines) - anchored >= (len(lines) - first) // 2:  # long lines: no anchor
        first = anchored
    return tokenize("\n".join(lines[first:]))


def _head_lines(tokenize: Callable[[str], list[int]], text: str, budget: int,
                max_lines: int | None = None) -> list[int]:
    """Tokens of the first whole lines of `text` that fit; `max_lines` counts the lines after
    the first (the rest of the cursor's line)."""
    lines = text.split("\n")
    if max_lines is not None:
        lines = lines[:max_lines + 1]
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = len(tokenize(line + "\n"))
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    return tokenize("\n".join(kept)) if kept else []


def build_prompt(tok: Tokenizer, repo_name: str, path: str, prefix: str, suffix: str,
                 context: Sequence[tuple[str, str]], budget: FimBudget,
                 layout: FimLayout = FimLayout()) -> FimPrompt:
    """`context` holds (label, text) of retrieved windows, best first."""
    file_sep = tok.special_token("<|file_sep|>")
    markers = layout.repo_markers or bool(context)  # retrieved files need their separators
    stable = [tok.special_token("<|repo_name|>"), *tok.tokenize_text(repo_name + "\n")] if markers else []
    chosen: list[tuple[str, list[int]]] = []
    used = 0
    for label, text in context:
        body = [file_sep, *tok.tokenize_text(f"{label.rsplit(':', 1)[0]}\n{text}\n")]
        if used + len(body) > budget.context_tokens:
            continue
        chosen.append((label, body))
        used += len(body)
    # Stable order (by location, not by score) keeps the cached prefix valid when the
    # same windows come back in a different rank after the next keystroke.
    chosen.sort(key=lambda item: item[0])
    for _, body in chosen:
        stable += body
    if markers:
        stable += [file_sep, *tok.tokenize_text(path + "\n")]
    if not layout.typed_in_middle:
        return _prompt_with_hole_at_cursor(tok, stable, chosen, prefix, suffix, budget)
    # The cursor's line is tokenized on its own so that typing in it never changes the
    # tokens of the lines above, which stay in the KV cache.
    earlier, newline, current = prefix.rpartition("\n")
    kept, opening = _middle_opening(earlier, layout.middle_step_lines) if newline else (None, "")
    head = _tail_lines(tok.tokenize_text, kept + "\n", budget.prefix_tokens,
                       budget.prefix_lines, budget.align_head) if kept is not None else []
    tokens = [*stable, tok.special_token("<|fim_prefix|>"), *head,
              tok.special_token("<|fim_suffix|>"),
              *_head_lines(tok.tokenize_text, suffix, budget.suffix_tokens, budget.suffix_lines),
              tok.special_token("<|fim_middle|>")]
    # The lines that open the middle are tokenized apart from the cursor's line, as the lines
    # above are, so typing on the cursor's line leaves them cached.
    tokens += tok.tokenize_text(opening) if opening else []
    line_start = len(tokens)
    held = None if current.strip() or not layout.hold_indent else current
    heal = ""
    if held is None:
        typed, heal = _heal(tok, current) if layout.heal else (tok.tokenize_text(current), "")
        tokens += typed
    return FimPrompt(stable=stable, tokens=tokens, context=[label for label, _ in chosen],
                     line_start=line_start, held_indent=held, heal=heal)


def _middle_opening(earlier: str, step: int | None) -> tuple[str | None, str]:
    """(the lines above that stay in the prefix, None when none do; the lines that open the
    middle, ending in a newline) for a cursor on the line after `earlier`'s last: the middle
    opens on the last line number that is a multiple of `step` (the cursor's own line when
    it is one)."""
    if step is None:
        return earlier, ""
    lines = earlier.split("\n")
    cursor_index = len(lines)  # 0-based line of the cursor
    anchor = cursor_index - cursor_index % step
    if anchor >= cursor_index:
        return earlier, ""
    kept = "\n".join(lines[:anchor]) if anchor else None
    return kept, "\n".join(lines[anchor:]) + "\n"


def _prompt_with_hole_at_cursor(tok: Tokenizer, stable: list[int], chosen: list[tuple[str, list[int]]],
                                prefix: str, suffix: str, budget: FimBudget) -> FimPrompt:
    """The textbook layout: the prefix runs up to the cursor, the middle starts empty."""
    head = _tail_lines(tok.tokenize_text, prefix, budget.prefix_tokens, budget.prefix_lines, budget.align_head)
    tokens = [*stable, tok.special_token("<|fim_prefix|>"), *head,
              tok.special_token("<|fim_suffix|>"),
              *_head_lines(tok.tokenize_text, suffix, budget.suffix_tokens, budget.suffix_lines),
              tok.special_token("<|fim_middle|>")]
    return FimPrompt(stable=stable, tokens=tokens, context=[label for label, _ in chosen],
                     line_start=len(tokens))


def _heal(tok: Tokenizer, typed: str) -> tuple[list[int], str]:
    """Tokens of the typed text without its last token, and that token's text.

    The cursor usually cuts a word: "        r" ends in the token " r", which the model
    saw followed by "eturn" almost never, because " return" is one token. Left out and
    written again under a grammar that starts the output with " r", the model can choose
    " return" (the token-healing trick of Microsoft's guidance library).
    """
    ids = tok.tokenize_text(typed)
    kept = tok.detokenize(ids[:-1])
    if not typed.startswith(kept) or len(kept) == len(typed):
        return ids, ""  # a token that does not end on a character boundary: no healing
    return ids[:-1], typed[len(kept):]


_CLOSERS = set(")]}>\"'`;,")


def _repeated_tail(out: str, rest_of_line: str) -> int:
    """Length of the end of `out` that re-types the start of the text after the cursor.

    Only the whole rest of the line, or a run of closing brackets and quotes, counts:
    "max" ending in the "x" that follows the cursor is a coincidence, ")" is a repeat.
    """
    for k in range(len(rest_of_line), 0, -1):
        piece = rest_of_line[:k]
        if out.endswith(piece) and (k == len(rest_of_line) or set(piece) <= _CLOSERS):
            return k
    return 0


def _drop_held_indent(text: str, held: str) -> str:
    """The model's middle without the indentation the editor already holds before the cursor.

    Blank lines the model writes first are dropped too: the cursor's line is where the
    code goes. A first line indented differently from what was typed loses all its
    leading space, as an insertion at the cursor cannot take any back.
    """
    lines = text.split("\n")
    while len(lines) > 1 and not lines[0].strip():
        lines.pop(0)
    first = lines[0]
    lines[0] = first[len(held):] if first.startswith(held) else first.lstrip(" \t")
    return "\n".join(lines)


def neighbour_lines(prefix: str, suffix: str) -> list[str]:
    """The nearest non-blank line above the cursor's line and below it, stripped (those there are).

    At a line start a 0.5B model often writes one of them again instead of the missing line:
    the line below when it reads the hole as empty, the line above as a repeat. Real code
    seldom does either (bench linestart: the line is the next one in 0 and the previous one
    in 2 of the 120 line starts).
    """
    above = next((ln.strip() for ln in reversed(prefix.split("\n")[:-1]) if ln.strip()), "")
    below = next((ln.strip() for ln in suffix.split("\n")[1:] if ln.strip()), "")
    return [ln for ln in dict.fromkeys((above, below)) if ln]


def finish_completion(text: str, suffix: str, max_lines: int, held_indent: str | None = None,
                      trim_repeated_suffix: bool = True) -> str:
    """Cut the model's middle to what the editor should insert.

    `held_indent` is the indentation before the cursor that the prompt left out for the
    model to write (FimPrompt.held_indent); None when the prompt ended at the cursor.
    """
    if held_indent is not None:
        text = _drop_held_indent(text, held_indent)
    if max_lines <= 1:
        out = text.split("\n", 1)[0].rstrip()
        rest_of_line = suffix.split("\n", 1)[0].strip()
        if rest_of_line and trim_repeated_suffix:
            out = out[:len(out) - _repeated_tail(out, rest_of_line)]
        return out
    return "\n".join(text.split("\n")[:max_lines]).rstrip()
