"""How likely the model finds a description once it has read a candidate function.

A 0.5B model asked to rate a candidate writes the same digit for nearly every one, and
the digit's probabilities follow the candidate's position in the prompt rather than the
candidate. Asked instead to describe the function, the probability it gives the user's
own description, token by token, does separate the function the description was written
for from its look-alikes: the description's details (argument names, what is returned,
edge cases) are cheap to predict only from the right body. This is a reranking signal
read from one forward pass per candidate; nothing is sampled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.index import RepoIndex
from prism_code.llm.backend import ScoringBackend
from prism_code.llm.types import GenerationStats
from prism_code.parse import language_for_path
from prism_code.parse.code_only import code_only as strip_prose
from prism_code.tasks.find_function import FoundFunction, unit_text

# Chosen on RepoQA needles 21-40 (0.5B): the needle's gain over a wrong first was 0.25-0.51
# nats/token, a wrong candidate's over a right first never above 0 (closest -0.03).
DEFAULT_MARGIN = 0.1
# A sentence (<= SHORT_QUERY_WORDS words): chosen on the docstrings benchmark's tuning split
# (`prism-code bench likelihood`), the code-only view at any margin from 0.3 to 1 tied and the
# largest, the closest to retrieval's order, was taken. Its per-token gains are larger and
# noisier than a long description's: a few words are cheap or dear after almost any body.
SHORT_QUERY_MARGIN = 1.0
DEFAULT_LINES = 30  # body lines read: the head of a function says what it does
DEFAULT_DESCRIPTION_TOKENS: int | None = None  # the description's head that is scored (None: all of it)

SYSTEM = "You describe in plain words what a function does."
ASK = "Describe what this function does."


@dataclass(frozen=True)
class Likelihood:
    mean_logprob: float  # per description token, in nats; higher = the description fits better
    stats: GenerationStats  # the call's token accounting (encoded/reused; nothing decoded)


@dataclass(frozen=True)
class Rerank:
    best: int | None  # the candidate to move above the first (index 0), or None to keep the order
    scores: list[float]  # mean log-prob per description token, per candidate
    stats: list[GenerationStats]


def body_text(index: RepoIndex, found: FoundFunction, key: str, max_lines: int, code_only: bool = False) -> str:
    """A candidate as the likelihood reads it: its name, place and first lines of source
    (with `code_only`, those lines without their comments and docstrings)."""
    head = f"### {key}\n# {found.path}:{found.start_line}\n"
    lines = unit_text(index, found.path, found.qualname).splitlines()
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"    # ... {len(lines) - max_lines} more lines"]
    body = "\n".join(lines)
    if code_only:
        body = strip_prose(body, language_for_path(found.path) or "")
    return head + body + "\n"


def describe_prompt(session: ScoringBackend, candidate_text: str) -> list[int]:
    """The chat prompt whose assistant turn the description is scored as."""
    return session.chatml([("system", SYSTEM), ("user", candidate_text + "\n" + ASK)])


def description_likelihood(session: ScoringBackend, candidate_text: str, description: str,
                           cancelled: CancelCheck | None = None,
                           max_tokens: int | None = None) -> Likelihood:
    """Mean log-probability of `description` (its first `max_tokens`) as the model's
    description of the candidate."""
    # A long description is scored on its head: it says what the function is for.
    limit = min(max_tokens or session.n_batch, session.n_batch)
    continuation = session.tokenize_text(description.strip())[:limit]
    if not continuation:
        raise ValueError("empty description")
    if cancelled is not None and cancelled():
        raise Cancelled("find cancelled")
    scored = session.continuation_logprobs(describe_prompt(session, candidate_text), continuation, cancelled)
    if scored.cancelled:
        raise Cancelled("find cancelled")
    # The description's last token is read, never evaluated: the call saw reused + encoded tokens.
    stats = GenerationStats(scored.reused + scored.encoded, scored.reused, scored.encoded, 0, scored.ms, 0.0, "stop")
    return Likelihood(sum(scored.logprobs) / len(scored.logprobs), stats)


def rank_by_likelihood(scores: Sequence[float], margin: float) -> int | None:
    """The candidate to move above retrieval's first (index 0), or None to keep retrieval's order.

    Retrieval's first stays unless another candidate makes the description more likely by
    at least `margin` nats per token: a small difference is noise (a body that repeats the
    description's words), and retrieval's ranking is the better prior then.
    """
    if len(scores) < 2:
        return None
    best = max(range(1, len(scores)), key=lambda i: scores[i])
    return best if scores[best] - scores[0] >= margin else None


def rerank(session: ScoringBackend, bodies: Sequence[str], description: str, margin: float,
           cancelled: CancelCheck | None = None, max_tokens: int | None = None,
           on_scored: Callable[[int, float], None] | None = None) -> Rerank:
    """Score the description after each body; which one, if any, clearly beats the first.

    `on_scored(i, mean_logprob)` follows each body: each takes seconds on a CPU.
    """
    scored = []
    for i, body in enumerate(bodies):
        scored.append(description_likelihood(session, body, description, cancelled, max_tokens))
        if on_scored is not None:
            on_scored(i, scored[-1].mean_logprob)
    scores = [s.mean_logprob for s in scored]
    return Rerank(rank_by_likelihood(scores, margin), scores, [s.stats for s in scored])
