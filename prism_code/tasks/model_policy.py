"""Which model completes: `auto` takes the 1.5B where this host runs it fast enough.

The 1.5B writes better lines (issue #17: EM 0.40 against 0.233 for the 0.5B on the same
60 unseen lines, plain prompt) but runs about half as fast, and a suggestion that arrives
after the user typed on is worth nothing. So `auto` predicts, from the host's
measured prefill and decode speed of the 1.5B, what the completion prompt would cost:
a warm keystroke and the first completion on a new line. It takes the 1.5B only when
both stay within the limits, and the 0.5B otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prism_code.llm.machine_speed import MachineSpeed
from prism_code.llm.models import DEFAULT_MODEL, MODELS
from prism_code.tasks.fim import MIDDLE_STEP_LINES, FimBudget

AUTO = "auto"
SMALL = DEFAULT_MODEL  # qwen2.5-coder-0.5b
LARGE = "qwen2.5-coder-1.5b"
# What the setting accepts: `auto` or a registry model forced for completion.
CHOICES = (AUTO, *MODELS)

# Issue #17 item 4's limits for the 1.5B.
KEYSTROKE_P50_LIMIT_MS = 500.0
NEW_LINE_LIMIT_MS = 2000.0

# A keystroke appends to the cached prompt: docs/benchmarks.md, RepoEval section,
# "2 prompt tokens evaluated per keystroke" (p50 and p95).
KEYSTROKE_PROMPT_TOKENS = 2
# docs/benchmarks.md, RepoEval section: "decoded tokens p50 9" for a single-line completion
# (healed tokens included); a first completion on a new line writes a line the same way.
DECODED_TOKENS_P50 = 9
# A line that leaves the middle for the prefix is evaluated again: a non-blank line of this
# repository's Python is 11 tokens at the median (13,587 lines, Qwen2.5's tokenizer, which
# both models share; p95 25).
LEFT_LINE_TOKENS = 11
# <|fim_suffix|> and <|fim_middle|>, around the suffix (tasks/fim.py's layout).
SUFFIX_MARKERS = 2


def new_line_prompt_tokens(budget: FimBudget) -> int:
    """Tokens the costliest first completion on a new line evaluates again.

    Enter usually appends the finished line to the middle (1-2 tokens, tasks/fim.py). Once
    in MIDDLE_STEP_LINES lines the new line opens the middle anew: the lines that opened it
    move into the prefix, and after them the suffix (up to the budget's `suffix_tokens` in
    the middle of a file) and its two markers are evaluated again. `auto` charges that line,
    as a wait the user meets every few lines. tests/test_model_policy.py checks the count
    against the real Completer: a close upper bound, as the suffix's whole lines rarely fill
    the budget exactly.
    """
    return MIDDLE_STEP_LINES * LEFT_LINE_TOKENS + SUFFIX_MARKERS + budget.suffix_tokens


def evaluate_ms(speed: MachineSpeed, tokens: int) -> float:
    """What evaluating `tokens` prompt tokens costs in one batch.

    A batch reads every weight once, as a decoded token does, so on a CPU a batch of a few
    tokens costs about one decode step; a long one runs at the measured prefill rate.
    """
    return max(1000.0 * tokens / speed.prefill_tokens_per_s, speed.decode_ms_per_token)


@dataclass(frozen=True)
class Prediction:
    keystroke_ms: float  # warm, p50: a keystroke's tokens evaluated, a line decoded
    new_line_ms: float  # the first completion after moving to a new line

    @property
    def fits(self) -> bool:
        return (self.keystroke_ms <= KEYSTROKE_P50_LIMIT_MS
                and self.new_line_ms <= NEW_LINE_LIMIT_MS)

    def to_json(self) -> dict[str, float]:
        return {"keystrokeP50Ms": self.keystroke_ms, "newLineMs": self.new_line_ms}


def predict(speed: MachineSpeed, budget: FimBudget | None = None) -> Prediction:
    # Rounded to 0.1 ms: a figure for people, compared with the limits as shown.
    decode = DECODED_TOKENS_P50 * speed.decode_ms_per_token
    keystroke = evaluate_ms(speed, KEYSTROKE_PROMPT_TOKENS) + decode
    new_line = evaluate_ms(speed, new_line_prompt_tokens(budget or FimBudget())) + decode
    return Prediction(round(keystroke, 1), round(new_line, 1))


@dataclass(frozen=True)
class ModelChoice:
    model: str  # what the server loads: a registry name, or prism.modelPath's name or file
    reason: str  # one sentence for the status
    setting: str = AUTO
    speed: MachineSpeed | None = None  # the 1.5B's, as measured on this host
    prediction: Prediction | None = None
    measuring: bool = False  # auto waits for the 1.5B's speed; the 0.5B serves meanwhile

    def to_json(self) -> dict[str, Any]:
        speed = self.speed
        return {
            "setting": self.setting, "model": self.model, "reason": self.reason,
            "measuring": self.measuring,
            "speed": None if speed is None else {
                "model": LARGE, "threads": speed.threads,
                "prefillTokensPerS": round(speed.prefill_tokens_per_s, 1),
                "decodeMsPerToken": round(speed.decode_ms_per_token, 1)},
            "predicted": None if self.prediction is None else self.prediction.to_json(),
            "limits": {"keystrokeP50Ms": KEYSTROKE_P50_LIMIT_MS, "newLineMs": NEW_LINE_LIMIT_MS},
        }


def forced(setting: str, model_path: str | None) -> ModelChoice | None:
    """The choice a setting makes by itself; None when auto needs the 1.5B's speed."""
    if setting != AUTO:
        return ModelChoice(setting, f"prism.completion.model is {setting}", setting)
    if model_path:
        return ModelChoice(model_path, f"auto follows prism.modelPath, which names {model_path}")
    return None


def choose(setting: str, model_path: str | None, *, large_installed: bool,
           speed: MachineSpeed | None = None, error: str | None = None,
           budget: FimBudget | None = None) -> ModelChoice:
    """The completion model the settings and the 1.5B's measured speed on this host imply.

    `speed` None means not measured yet (the 0.5B serves until it is), unless `error`
    says why it cannot be.
    """
    given = forced(setting, model_path)
    if given is not None:
        return given
    if not large_installed:
        return ModelChoice(SMALL, f"auto: {LARGE} is not installed "
                                  f"(python -m prism_code.llm.models {LARGE} installs it)")
    if speed is None:
        if error is not None:
            return ModelChoice(SMALL, f"auto: {LARGE} could not be measured ({error})")
        return ModelChoice(SMALL, f"auto: measuring {LARGE} on this host; {SMALL} serves until then",
                           measuring=True)
    prediction = predict(speed, budget)
    figures = (f"{LARGE} predicted {prediction.keystroke_ms:.0f} ms a keystroke (p50, limit "
               f"{KEYSTROKE_P50_LIMIT_MS:.0f}) and {prediction.new_line_ms:.0f} ms on a new line "
               f"(limit {NEW_LINE_LIMIT_MS:.0f}) at prefill {speed.prefill_tokens_per_s:.0f} tokens/s, "
               f"decode {speed.decode_ms_per_token:.0f} ms/token ({speed.threads} threads)")
    if prediction.fits:
        return ModelChoice(LARGE, f"auto: {figures}", speed=speed, prediction=prediction)
    return ModelChoice(SMALL, f"auto: {figures}: too slow here", speed=speed, prediction=prediction)
