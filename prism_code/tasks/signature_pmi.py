"""How much a description raises the model's belief in a candidate's signature (PMI).

A one-sentence description says what a function is for, and a function's signature is where
its author said the same thing in code: its name and its parameters. Asked to write a function
for the description, a code model gives each candidate's signature a probability; the
signature's probability after a request that says nothing is its prior (short, common headers
such as `def get(self, key)` are likely after any request). The difference,

    pmi = log P(signature | "write a function for: <description>") - log P(signature | "write a function")

per signature token, is high only where the description predicts this header better than
headers in general. The prior depends on the function alone, so it is computed once and kept.
Nothing is sampled: one forward pass over each signature's tokens.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.index import RepoIndex
from prism_code.llm.backend import ScoringBackend
from prism_code.llm.types import GenerationStats
from prism_code.parse import language_for_path
from prism_code.tasks.find_function import FoundFunction

LANGUAGE_NAMES = {
    "python": "Python", "javascript": "JavaScript", "typescript": "TypeScript", "tsx": "TypeScript",
    "java": "Java", "go": "Go", "rust": "Rust", "c": "C", "cpp": "C++",
}
# Nats per signature token the best candidate must gain over retrieval's first: chosen on the
# docstrings tuning split (`prism-code bench likelihood`; 0.3 and 0.5 tied, the larger is closer
# to retrieval's order).
SIGNATURE_MARGIN = 0.5
# The same rule when the candidates come from the sentence fused with the model's guess at its code:
# that list's first is right more often (`prism-code bench likelihood --expand`, tuning split: 1.0 and
# 1.5 tied at 0.629, the larger kept).
EXPANDED_SIGNATURE_MARGIN = 1.5
MAX_SIGNATURE_TOKENS = 96  # a header longer than this is scored on its head: the name comes first


@dataclass(frozen=True)
class Signature:
    language: str  # the parser's name: "python", "cpp", ...
    text: str  # the header up to the body, as the index holds it


def signature_of(index: RepoIndex, found: FoundFunction) -> Signature:
    """A found function's header as its file's parse has it (its bare name when the file is gone)."""
    definition = index.definition(found.path, found.qualname)
    return Signature(language_for_path(found.path) or "", definition.signature if definition else found.name)


@dataclass(frozen=True)
class SignatureScore:
    pmi: float  # mean nats per signature token that the description adds
    conditional: float  # mean log P(token | description)
    tokens: int


@dataclass(frozen=True)
class SignatureScores:
    scores: list[SignatureScore]
    calls: list[GenerationStats]  # one per forward pass (priors computed now included); nothing decoded

    @property
    def encoded(self) -> int:
        return sum(c.encoded for c in self.calls)

    @property
    def reused(self) -> int:
        return sum(c.reused for c in self.calls)


def _request(session: ScoringBackend, language: str, description: str | None) -> list[int]:
    name = LANGUAGE_NAMES.get(language, language)
    ask = f"Write a {name} function." if description is None else \
        f"Write a {name} function for this task: {description.strip()}"
    return session.chatml([("system", f"You write {name} code."), ("user", ask)]) + \
        session.tokenize_text(f"```{name.lower()}\n")


class SignaturePriors:
    """log P(signature | a request without a description), per model, kept for reuse."""

    def __init__(self, capacity: int = 50_000) -> None:
        self._capacity = capacity
        self._sums: OrderedDict[tuple[str, str, str], tuple[float, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sums)

    def get(self, model: str, signature: Signature) -> tuple[float, int] | None:
        key = (model, signature.language, signature.text)
        found = self._sums.get(key)
        if found is not None:
            self._sums.move_to_end(key)
        return found

    def put(self, model: str, signature: Signature, value: tuple[float, int]) -> None:
        self._sums[(model, signature.language, signature.text)] = value
        while len(self._sums) > self._capacity:
            self._sums.popitem(last=False)


# One per process: a prior depends on the model and the header only, so every query and
# workspace of a server shares them (bounded; ~100 bytes an entry).
SHARED_PRIORS = SignaturePriors()


def _logprob_sum(session: ScoringBackend, prompt: list[int], signature: list[int], cancelled: CancelCheck | None,
                 calls: list[GenerationStats]) -> tuple[float, int]:
    scored = session.continuation_logprobs(prompt, signature, cancelled)
    if scored.cancelled:
        raise Cancelled("find cancelled")
    calls.append(GenerationStats(scored.reused + scored.encoded, scored.reused, scored.encoded, 0, scored.ms, 0.0,
                                 "stop"))
    return sum(scored.logprobs), len(scored.logprobs)


def signature_scores(session: ScoringBackend, signatures: Sequence[Signature], description: str,
                     priors: SignaturePriors = SHARED_PRIORS, cancelled: CancelCheck | None = None,
                     on_scored: Callable[[int, float], None] | None = None) -> SignatureScores:
    """The description's PMI with each signature; `on_scored(i, pmi)` follows each one.

    Conditional scores come first, priors after, so each prompt's tokens stay cached across
    the candidates that follow it.
    """
    model = session.model_sha256
    calls: list[GenerationStats] = []
    token_lists = [session.tokenize_text(s.text)[:MAX_SIGNATURE_TOKENS] or session.tokenize_text(" ")
                   for s in signatures]
    # One request prompt per (language, with or without the description), built once.
    prompts: dict[tuple[str, bool], list[int]] = {}

    def request(language: str, described: bool) -> list[int]:
        if (language, described) not in prompts:
            prompts[language, described] = _request(session, language, description if described else None)
        return prompts[language, described]

    conditional = [_logprob_sum(session, request(s.language, True), tokens, cancelled, calls)
                   for s, tokens in zip(signatures, token_lists, strict=True)]
    out = []
    for i, (signature, tokens, (total, n)) in enumerate(zip(signatures, token_lists, conditional, strict=True)):
        prior = priors.get(model, signature)
        if prior is None:
            prior = _logprob_sum(session, request(signature.language, False), tokens, cancelled, calls)
            priors.put(model, signature, prior)
        out.append(SignatureScore((total - prior[0]) / max(1, n), total / max(1, n), n))
        if on_scored is not None:
            on_scored(i, out[-1].pmi)
    return SignatureScores(out, calls)
