"""A short description, written out by the local model as the function it describes.

A sentence such as "Update the jar with cookies from another jar" shares few words with the
code it means, while the model's guess at that code (`def update_jar(cookie_jar, other):`
and a body) names things as code does. Searching with the guess as a second query and fusing
the two rankings by reciprocal rank (HyDE, Gao et al. 2022, applied to code search;
`retrieval.fusion.reciprocal_rank_fusion`) is measured in docs/benchmarks.md. The guess is never run or parsed as code:
it is text to search with.
"""

from __future__ import annotations

from collections.abc import Sequence

from prism_code.cancel import CancelCheck
from prism_code.llm.backend import CompletionBackend
from prism_code.llm.types import Generation
from prism_code.parse.languages import language_for_path

EXPANSION_TOKENS = 64  # a def line and a few lines of body

_LANGUAGE_NAMES = {"python": "Python", "javascript": "JavaScript", "typescript": "TypeScript",
                   "tsx": "TypeScript", "java": "Java", "go": "Go", "rust": "Rust", "c": "C", "cpp": "C++"}
_SYSTEM = "You are a {language} programmer. Answer with code only."
_ASK = ("Write the {language} function this describes: {description}\n"
        "Give its signature with parameters and a body of at most three lines.")


def language_name(paths: Sequence[str]) -> str:
    """The language most of `paths` are written in, as a person names it (Python by default)."""
    counts: dict[str, int] = {}
    for path in paths:
        language = language_for_path(path)
        if language is not None:
            counts[language] = counts.get(language, 0) + 1
    best = max(counts, key=lambda k: counts[k]) if counts else "python"
    return _LANGUAGE_NAMES.get(best, "Python")


def hypothetical_function(session: CompletionBackend, description: str, language: str = "Python",
                          cancelled: CancelCheck | None = None) -> tuple[str, Generation]:
    """The model's guess at the function `description` describes: (text to search with, generation)."""
    prompt = session.chatml([("system", _SYSTEM.format(language=language)),
                             ("user", _ASK.format(language=language, description=description.strip()))])
    # A closing fence ends the code; what a chat model adds after it is prose.
    generation = session.generate(prompt, max_tokens=EXPANSION_TOKENS, stop=["\n\n\n", "```\n"],
                                  cancelled=cancelled)
    return _without_fences(generation.text), generation


def _without_fences(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if not line.lstrip().startswith("```")]
    return "\n".join(lines).strip()
