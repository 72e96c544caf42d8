"""Log-probabilities of a prompt's own tokens from an OpenAI-compatible completions server.

The likelihood rerank scores a continuation it did not sample. Servers offer this in two
ways: `echo` + `logprobs` (the OpenAI completions API; vLLM and llama-cpp-python's server
answer it, llama.cpp's C++ `llama-server` refuses `echo`), and vLLM's own
`prompt_logprobs`, which returns one entry per prompt token keyed by token id. Which one
a server has is found out once, by asking; one that has neither gets a clear error.

Each mode is a request body and a reader of its reply; the reader returns the last
`n` prompt positions' log-probabilities and never trusts a reply it cannot line up with
the tokens asked about.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

Mode = Literal["echo", "prompt_logprobs"]
MODES: tuple[Mode, ...] = ("echo", "prompt_logprobs")


# Asked once before echo is trusted: a prompt no model ends at once, so a server that
# follows OpenAI's echo lists its tokens and then exactly one generated token.
PROBE = "1, 2, 3, 4, 5, 6, 7,"


class NotSupported(ValueError):
    """The server answered, but without the prompt's log-probabilities in this mode."""


def request(mode: Mode) -> dict[str, Any]:
    """The fields that ask for prompt log-probabilities (with one token generated: servers
    read max_tokens 0 as "no limit" or refuse it)."""
    if mode == "echo":
        return {"echo": True, "logprobs": 0, "max_tokens": 1}
    return {"prompt_logprobs": 0, "max_tokens": 1}


def read(mode: Mode, reply: dict[str, Any], prompt_len: int, continuation: Sequence[int],
         continuation_text: str) -> list[float]:
    """The log-probability of each continuation token (the prompt's last tokens) in `reply`."""
    choices = reply.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    if mode == "echo":
        return _read_echo(choice, reply.get("usage"), prompt_len, len(continuation), continuation_text)
    return _read_prompt_logprobs(choice, continuation)


def _read_echo(choice: dict[str, Any], usage: Any, prompt_len: int, n: int, text: str) -> list[float]:
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        raise NotSupported("no logprobs in the reply")
    tokens, values = logprobs.get("tokens"), logprobs.get("token_logprobs")
    if not isinstance(tokens, list) or not isinstance(values, list) or len(tokens) != len(values):
        raise NotSupported("no token logprobs in the reply")
    counts = usage if isinstance(usage, dict) else {}
    prompt_n, generated = counts.get("prompt_tokens"), counts.get("completion_tokens")
    if isinstance(prompt_n, int) and isinstance(generated, int):
        # OpenAI's echo lists every prompt token and then the generated one (check_probe).
        if len(tokens) != prompt_n + generated:
            raise NotSupported(f"the echoed log-probabilities do not line up with the prompt ({len(tokens)} "
                               f"entries for {prompt_n} prompt and {generated} generated tokens)")
        end = prompt_n
    else:
        end = len(tokens) - 1
    if end < n + 1:
        raise NotSupported("the reply does not echo the prompt")
    # Text prompts are tokenized by the server: its last n prompt tokens must spell the
    # continuation, or the numbers belong to other tokens. A character split over two
    # tokens spells as nothing per token, so then the prompt's length (a BOS added or not) decides.
    spelled = "".join(str(t) for t in tokens[end - n:end])
    if spelled != text and end not in (prompt_len, prompt_len + 1):
        raise ValueError(f"the server read the prompt as {end} tokens, not {prompt_len}: "
                         "its vocabulary is not the local one")
    return [_number(v) for v in values[end - n:end]]


def check_probe(reply: dict[str, Any]) -> None:
    """NotSupported unless the reply to PROBE (echo mode) lists the prompt and one generated token.

    llama-cpp-python's server lists the prompt only and reads each token's number off its
    own position's logits, which belong to the next token: its numbers must not be used.
    """
    choices = reply.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    logprobs = choice.get("logprobs")
    tokens = logprobs.get("tokens") if isinstance(logprobs, dict) else None
    usage = reply.get("usage")
    prompt_n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    generated = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if not isinstance(tokens, list) or not isinstance(prompt_n, int) or generated != 1:
        raise NotSupported("the reply to a probe holds no echoed tokens and token counts")
    if len(tokens) != prompt_n + 1:
        raise NotSupported(f"the echoed log-probabilities do not line up with the prompt ({len(tokens)} "
                           f"entries for {prompt_n} prompt tokens and 1 generated)")


def _read_prompt_logprobs(choice: dict[str, Any], continuation: Sequence[int]) -> list[float]:
    entries = choice.get("prompt_logprobs")
    if not isinstance(entries, list) or len(entries) < len(continuation) + 1:
        raise NotSupported("no prompt_logprobs in the reply")
    out = []
    for entry, token in zip(entries[-len(continuation):], continuation):
        item = entry.get(str(token)) if isinstance(entry, dict) else None
        value = item.get("logprob") if isinstance(item, dict) else item
        out.append(_number(value))
    return out


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise NotSupported(f"a prompt token's log-probability is {value!r}")
    return float(value)
