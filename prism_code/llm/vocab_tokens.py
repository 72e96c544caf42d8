"""The token methods every backend answers from its model's vocabulary, written once.

Local and remote sessions tokenize on this side with the same vocabulary (a loaded model,
or a vocab-only load of the GGUF file), so they answer these the same way. Importing this
module loads no native library: the vocabulary is built by the session that mixes it in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prism_code.llm.vocab import ModelVocabulary


class VocabularyTokens:
    """Tokenizing, control tokens, chat prompts and detokenizing, by the session's `vocabulary`."""

    vocabulary: ModelVocabulary

    def tokenize_text(self, text: str, special: bool = False) -> list[int]:
        return self.vocabulary.tokenize_text(text, special)

    def special_token(self, name: str) -> int:
        return self.vocabulary.special_token(name)

    def has_special_token(self, name: str) -> bool:
        return self.vocabulary.has_special_token(name)

    def prompt_start(self) -> list[int]:
        return self.vocabulary.prompt_start()

    def chatml(self, messages: Iterable[tuple[str, str]], add_generation_prompt: bool = True) -> list[int]:
        return self.vocabulary.chatml(messages, add_generation_prompt)

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self.vocabulary.detokenize(tokens)
