"""The two prompts every completion benchmark measures the product against (issue #28).

**The floor** is the plainest fill-in-the-middle prompt a user could write by hand, exactly
as the issue spells it:

    <|fim_prefix|> the 80 lines above the cursor's line, then that line up to the cursor
                   (at most 1,500 tokens, cut from the start)
    <|fim_suffix|> the rest of the cursor's line, a newline and the 24 lines below
                   (at most 400 tokens, cut from the end)
    <|fim_middle|>

then 48 tokens greedy, of which the first line is the answer (`answer` stops decoding at
that line's end, which greedy decoding makes the same line). The benchmarks blank the
cursor's line from the cursor on, so "the rest of the cursor's line" is always empty there.
Whatever the model writes is kept as it is: its first line, even when that is empty.

**The peer** is what llama.vscode and llama.vim send llama-server's `/infill`: the same
prefix and suffix, preceded by "extra context", chunks of files the user opened or edited
lately (their ring buffer), laid out by llama-server's `format_infill` in Qwen's
repository-level format:

    <|repo_name|>myproject\\n <|file_sep|>path\\n chunk ... <|file_sep|>filename\\n <FIM part>

The literal `myproject` and `filename` are llama-server's own placeholders. Which chunks
the ring holds is simulated (`peer_chunks`): the editing history is the current file's
import neighbours opened last, after a seeded random choice of other files.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prism_code.llm.backend import CompletionBackend
from prism_code.tasks.fim import STOP_MARKERS, Tokenizer

# The floor's budgets, as the issue writes them.
FLOOR_PREFIX_LINES = 80
FLOOR_PREFIX_TOKENS = 1500
FLOOR_SUFFIX_LINES = 24
FLOOR_SUFFIX_TOKENS = 400
# Tokens decoded (greedy) for a baseline's answer; its first line is kept.
ANSWER_TOKENS = 48

# llama.vscode's defaults (src/configuration.ts): a ring of 16 chunks, chunk size 64 lines.
RING_CHUNKS = 16
RING_CHUNK_LINES = 64
# pickChunk: files under 3 lines give no chunk; a new chunk evicts those whose lines are
# this similar (Jaccard over the sets of lines).
MIN_CHUNK_LINES = 3
EVICT_SIMILARITY = 0.9
# llama-server keeps the last n_ctx - n_batch - 2 * n_predict tokens of the extra context
# (format_infill): with this project's 4,096-token context, llama-server's default batch of
# 2,048 and llama.vscode's n_predict of 128, that is 1,792 tokens, so the prompt fits.
PEER_CONTEXT = 4096
PEER_BATCH = 2048
PEER_PREDICT = 128
PEER_EXTRA_TOKENS = PEER_CONTEXT - PEER_BATCH - 2 * PEER_PREDICT
PEER_REPO_NAME = "myproject"
PEER_CURRENT_FILE = "filename"


@dataclass(frozen=True)
class Baseline:
    """A baseline mode of a benchmark; its repr keys the mode's kept outcomes."""

    name: str
    version: int = 1  # bump when the prompt changes, so old outcomes are not reused


FLOOR = Baseline("plain FIM floor (issue #28)")
PEER = Baseline("llama.vscode ring-buffer prompt")


@dataclass(frozen=True)
class Chunk:
    """One extra-context chunk: the file it came from and its lines, each ending in a newline."""

    path: str
    text: str


@dataclass(frozen=True)
class BaselineAnswer:
    completion: str  # the first line of what the model wrote
    raw: str  # what it wrote: the same first line (decoding stops at its end)
    prompt_tokens: int


def _last_lines(text: str, n: int) -> str:
    """The end of `text` from the start of its n-th last line (the last line counts, even empty)."""
    cut = len(text)
    for _ in range(n):
        cut = text.rfind("\n", 0, cut)
        if cut < 0:
            return text
    return text[cut + 1:]


def _first_lines(text: str, n: int) -> str:
    """The start of `text` up to and with the n-th newline (all of it when it has fewer)."""
    cut = -1
    for _ in range(n):
        cut = text.find("\n", cut + 1)
        if cut < 0:
            return text
    return text[:cut + 1]


def floor_texts(prefix: str, suffix: str) -> tuple[str, str]:
    """The floor's prefix and suffix text around a cursor (before the token budgets)."""
    head = _last_lines(prefix, FLOOR_PREFIX_LINES + 1)  # the cursor's line and the 80 above
    rest, newline, below = suffix.partition("\n")
    return head, rest + newline + _first_lines(below, FLOOR_SUFFIX_LINES)


def floor_prompt(tok: Tokenizer, prefix: str, suffix: str) -> list[int]:
    """The floor's tokens for the text before and after the cursor."""
    head, tail = floor_texts(prefix, suffix)
    head_tokens = tok.tokenize_text(head)[-FLOOR_PREFIX_TOKENS:]
    tail_tokens = tok.tokenize_text(tail)[:FLOOR_SUFFIX_TOKENS]
    return [tok.special_token("<|fim_prefix|>"), *head_tokens, tok.special_token("<|fim_suffix|>"),
            *tail_tokens, tok.special_token("<|fim_middle|>")]


def peer_prompt(tok: Tokenizer, prefix: str, suffix: str, chunks: Sequence[Chunk]) -> list[int]:
    """llama-server's /infill prompt: the ring's chunks (oldest first), then the floor's FIM part.

    As in `format_infill`, the extra context is cut from its start to PEER_EXTRA_TOKENS,
    even inside a chunk or before the repository marker.
    """
    file_sep = tok.special_token("<|file_sep|>")
    extra = [tok.special_token("<|repo_name|>"), *tok.tokenize_text(PEER_REPO_NAME + "\n")]
    for chunk in chunks:
        extra += [file_sep, *tok.tokenize_text(chunk.path + "\n"), *tok.tokenize_text(chunk.text)]
    extra += [file_sep, *tok.tokenize_text(PEER_CURRENT_FILE + "\n")]
    return [*extra[-PEER_EXTRA_TOKENS:], *floor_prompt(tok, prefix, suffix)]


def answer(session: CompletionBackend, tokens: list[int]) -> BaselineAnswer:
    """Up to ANSWER_TOKENS tokens greedy, the first line kept.

    Decoding stops at the first newline: greedy decoding writes the same tokens up to it
    either way, so the first line is the one the 48 tokens would hold, and the slow host
    does not spend ~5 s a task on lines nobody scores. An answer that starts with a newline
    is an empty first line, kept as such.
    """
    out = session.generate(tokens, max_tokens=ANSWER_TOKENS, stop=[*STOP_MARKERS, "\n"])
    return BaselineAnswer(out.text, out.text, len(tokens))


# ---- the peer's simulated editing history --------------------------------------------------


def _jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    union = set(a) | set(b)
    return len(set(a) & set(b)) / len(union) if union else 1.0


def _chunk_of(lines: list[str], rng: random.Random) -> list[str]:
    """The chunk llama.vscode picks when a file is entered with the cursor at a random line.

    pickChunkAroundCursor takes the 64 lines around the cursor (65 with it); pickChunk keeps
    a window of fewer than 63 lines whole and takes a random half-size (32-line) slice of a
    longer one.
    """
    half = RING_CHUNK_LINES // 2
    cursor = rng.randrange(len(lines))
    window = lines[max(0, cursor - half):min(cursor + half, len(lines) - 1) + 1]
    if len(window) + 1 < RING_CHUNK_LINES:
        return window
    start = rng.randrange(max(0, len(window) - half + 1))
    return window[start:start + half]


def peer_chunks(path: str, files: Mapping[str, list[str]], neighbours: Mapping[str, set[str]],
                seed: str) -> list[Chunk]:
    """The ring buffer, oldest chunk first, of a user editing `path` (a seeded simulation).

    The history opens every other file of the repository in a seeded random order, the
    files `path` imports or is imported by last (so they are the most recent), and each
    opened file adds the chunk around a random cursor line (`_chunk_of`). As llama.vscode
    does, a chunk evicts earlier ones it nearly repeats, files under 3 lines add none, and
    the ring keeps the newest RING_CHUNKS. `files` maps each path to its lines; seeding by
    the file, not the task, gives every cursor in one file the same history (as in one
    editing session), and the same chunks from one run to the next.
    """
    rng = random.Random(f"{seed}/{path}")
    related = sorted(neighbours.get(path, set()) & files.keys() - {path})
    others = sorted(files.keys() - set(related) - {path})
    rng.shuffle(related)
    rng.shuffle(others)
    ring: list[tuple[str, list[str]]] = []
    for opened in others + related:
        lines = files[opened]
        if len(lines) < MIN_CHUNK_LINES:
            continue
        chunk = _chunk_of(lines, rng)
        if len(chunk) < MIN_CHUNK_LINES:
            continue
        ring = [(p, c) for p, c in ring if _jaccard(c, chunk) <= EVICT_SIMILARITY]
        ring.append((opened, chunk))
        ring = ring[-RING_CHUNKS:]
    return [Chunk(p, "\n".join(c) + "\n") for p, c in ring]


def import_neighbours(root: Path, paths: Sequence[str]) -> dict[str, set[str]]:
    """For each Python file, the files of the repository it imports or that import it."""
    from prism_code.graph import CodeGraph
    from prism_code.parse.extract import extract
    from prism_code.parse.languages import parser

    parsed = [extract(p, "python", source, parser("python").parse(source))
              for p in paths if (source := (root / p).read_bytes())]
    graph = CodeGraph()
    graph.update(parsed)
    links: dict[str, set[str]] = {p: set() for p in paths}
    for pf in parsed:
        for imp in pf.imports:
            for target in graph.resolver.resolve(imp, pf.path, "python"):
                if target != pf.path and target in links:
                    links[pf.path].add(target)
                    links[target].add(pf.path)
    return links
