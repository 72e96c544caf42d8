"""Token-level prompt building shared by the local and the remote backend.

Repository and user text is tokenized with special tokens disabled, so control tokens
written in someone's code stay text; only markers asked for by name are control tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import llama_cpp


class ModelVocabulary:
    """A model's tokenizer vocabulary, from a loaded model or a vocab-only load of a GGUF file."""

    def __init__(self, llm: llama_cpp.Llama, name: str) -> None:
        self._llm = llm
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._name = name
        self._specials: dict[str, int] = {}

    def tokenize_text(self, text: str, special: bool = False) -> list[int]:
        """Tokens of user or repository text; control-token spellings in it stay plain text."""
        return self._llm.tokenize(text.encode("utf-8", errors="replace"), add_bos=False, special=special)

    def special_token(self, name: str) -> int:
        """The id of a control token such as "<|fim_prefix|>"; KeyError if there is none."""
        if name not in self._specials:
            ids = self.tokenize_text(name, special=True)
            if len(ids) != 1 or ids == self.tokenize_text(name):
                raise KeyError(f"{name!r} is not a special token of {self._name}")
            self._specials[name] = ids[0]
        return self._specials[name]

    def has_special_token(self, name: str) -> bool:
        try:
            self.special_token(name)
        except KeyError:
            return False
        return True

    def prompt_start(self) -> list[int]:
        """BOS if this model expects one (Qwen does not), so prompt builders stay model-agnostic."""
        if llama_cpp.llama_vocab_get_add_bos(self._vocab):
            return [llama_cpp.llama_vocab_bos(self._vocab)]
        return []

    def chatml(self, messages: Iterable[tuple[str, str]], add_generation_prompt: bool = True) -> list[int]:
        """A ChatML prompt (Qwen's chat format): markers as control tokens, content as text."""
        start, end = self.special_token("<|im_start|>"), self.special_token("<|im_end|>")
        out = self.prompt_start()
        for role, content in messages:
            out += [start, *self.tokenize_text(f"{role}\n{content}"), end, *self.tokenize_text("\n")]
        if add_generation_prompt:
            out += [start, *self.tokenize_text("assistant\n")]
        return out

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self._llm.detokenize(list(tokens)).decode("utf-8", errors="replace")

    def is_eog(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def is_control(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_control(self._vocab, token))
