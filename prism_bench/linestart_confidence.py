"""Issue #28's retrieval-confidence rule, measured on the line-start set from its kept outcomes.

The rule: write the first line with the retrieved windows and without them, and keep the
windows only where the model is more confident in the line it wrote with them: the mean
log-probability of the tokens it sampled for that line (the token that ends it included),
each under its own prompt, with the windows' mean ahead by at least a margin.

Where the product and the product without retrieval wrote the same first line the rule cannot
change the answer, so only the line starts where they differ are scored; those where exactly
one of the two is right decide the rule's EM and are scored first (`--confidence em` scores
only them, `--confidence all` every differing line, which ES needs). Each score is kept in a
JSONL file beside the bench's outcomes, so a rerun computes only what is not known yet.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from prism_bench.bootstrap import interval, paired_difference
from prism_bench.completion_modes import mode_key
from prism_bench.linestart import MODES, PLAIN, PRODUCT, PRODUCT_OFF, LinestartResult, Outcome
from prism_bench.linestart_data import DATA_FILE, PROJECTS, LinestartTask, default_cache_dir, materialise, set_digest
from prism_bench.task_runs import append_outcome
from prism_code.index import RepoIndex
from prism_code.llm import LlamaSession
from prism_code.tasks.complete import Completer, CompletionSettings
from prism_code.tasks.fim import finish_completion

# Margins tried on the tuning half (windows kept when their mean log-probability per token is
# at least this much above the line written without them); -inf is the product, +inf retrieval off.
MARGINS = (-math.inf, -1.0, -0.5, -0.3, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, math.inf)


@dataclass(frozen=True)
class Confidence:
    """The mean log-probability per sampled token of each prompt's first line at one line start."""

    task_id: str
    on: float  # with the retrieved windows (-inf: the model wrote nothing)
    off: float
    on_tokens: int
    off_tokens: int
    on_line: str  # the completions the scoring run wrote (checked against the kept outcomes)
    off_line: str


def _file(cache: Path, model: str) -> Path:
    key = hashlib.sha256(f"{model}\n{set_digest(DATA_FILE)}\n{mode_key(MODES[PRODUCT])}\n"
                         f"{mode_key(MODES[PRODUCT_OFF])}".encode()).hexdigest()[:16]
    return cache / "results" / f"confidence-{key}.jsonl"


def _load(path: Path) -> dict[str, Confidence]:
    known: dict[str, Confidence] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                fields = json.loads(line)
                known[fields["task_id"]] = Confidence(**fields)
            except (ValueError, TypeError, KeyError):
                continue
    return known


def to_score(result: LinestartResult, scope: str) -> list[LinestartTask]:
    """The line starts whose two first lines differ; with `scope` "em" only those where exactly one is right."""
    on, off = result.outcomes[PRODUCT], result.outcomes[PRODUCT_OFF]
    tasks = [t for t in result.tasks if t.kind == "indent" and on[t.task_id].completion != off[t.task_id].completion]
    deciding = [t for t in tasks if on[t.task_id].em != off[t.task_id].em]
    return deciding if scope == "em" else deciding + [t for t in tasks if t not in deciding]


def score(result: LinestartResult, scope: str, threads: int = 1) -> dict[str, Confidence]:
    """Each differing line start's confidences (kept ones read back, the rest computed)."""
    cache = default_cache_dir()
    path = _file(cache, result.model)
    known = _load(path)
    todo = [t for t in to_score(result, scope) if t.task_id not in known]
    if not todo:
        return known
    session = LlamaSession.open(result.model, n_threads=threads)
    try:
        for project in PROJECTS:
            tasks = [t for t in todo if t.project == project.package]
            if not tasks:
                continue
            root = materialise(project, cache)
            index = RepoIndex(root, cache_dir=cache / "indexes")
            try:
                index.update()
                completers = {m: Completer(index, session, _settings(m)) for m in (PRODUCT, PRODUCT_OFF)}
                for task in tasks:
                    text = task.blanked(root)
                    on = _first_line(session, completers[PRODUCT], task, text)
                    off = _first_line(session, completers[PRODUCT_OFF], task, text)
                    said = Confidence(task.task_id, on[0], off[0], on[1], off[1], on[2], off[2])
                    known[task.task_id] = said
                    append_outcome(path, said)
                    print(f"{task.task_id}: on {said.on:.3f} ({said.on_line!r}) off {said.off:.3f} "
                          f"({said.off_line!r})", flush=True)
            finally:
                index.close()
    finally:
        session.close()
    return known


def _settings(mode: str) -> CompletionSettings:
    settings = MODES[mode]
    assert isinstance(settings, CompletionSettings)
    return settings


def _first_line(session: LlamaSession, completer: Completer, task: LinestartTask, text: str) -> tuple[float, int, str]:
    """(mean log-probability per sampled token, tokens, completion) of the product's answer in
    this completer's setting. The bench rebuilds the product's request step by step (its own
    private steps) to read which tokens the model sampled, then scores them under the prompt it
    just evaluated (only those tokens are evaluated again)."""
    shape = completer._shape(text, task.line, task.col)
    prompt = completer._prompt(task.path, shape.prefix, shape.suffix, completer._retrieve(task.path, shape.prefix))
    if prompt.heal:
        raise ValueError(f"{task.task_id}: a line start should heal nothing, got {prompt.heal!r}")
    said = session.generate(prompt.tokens, max_tokens=shape.max_tokens, stop=shape.stop)
    line = finish_completion(said.text, shape.suffix, 1, prompt.held_indent, completer.settings.trim_repeated_suffix)
    if not said.tokens:
        return -math.inf, 0, line
    scored = session.continuation_logprobs(prompt.tokens, said.tokens)
    return statistics.mean(scored.logprobs), len(said.tokens), line


# ---- the rule, and its report ---------------------------------------------------------------


def chosen(result: LinestartResult, confidences: dict[str, Confidence], margin: float) -> dict[str, Outcome | None]:
    """Task id -> the rule's outcome at `margin` (None where it depends on a confidence not scored)."""
    on, off = result.outcomes[PRODUCT], result.outcomes[PRODUCT_OFF]
    picked: dict[str, Outcome | None] = {}
    for task in result.tasks:
        a, b = on[task.task_id], off[task.task_id]
        said = confidences.get(task.task_id)
        if a.completion == b.completion or margin == -math.inf:
            picked[task.task_id] = a
        elif margin == math.inf:
            picked[task.task_id] = b
        elif said is None:
            picked[task.task_id] = None
        else:
            picked[task.task_id] = a if said.on >= said.off + margin else b
    return picked


def _em(result: LinestartResult, picked: dict[str, Outcome | None]) -> list[float] | None:
    """The rule's EM by task (a line start not scored counts when both prompts are equally right),
    None while a line start that decides EM is not scored."""
    on, off = result.outcomes[PRODUCT], result.outcomes[PRODUCT_OFF]
    values = []
    for t in result.tasks:
        said = picked[t.task_id]
        if said is None and on[t.task_id].em != off[t.task_id].em:
            return None
        values.append(float((said or on[t.task_id]).em))
    return values


def _es(picked: dict[str, Outcome | None], tasks: Sequence[LinestartTask]) -> list[float] | None:
    values = [picked[t.task_id] for t in tasks]
    return None if any(v is None for v in values) else [v.es for v in values if v is not None]


def markdown(result: LinestartResult, confidences: dict[str, Confidence], margin: float | None) -> str:
    """EM (and ES when every differing line was scored) at each margin, and the chosen one's gains."""
    from prism_bench.report import table

    on, off = result.outcomes[PRODUCT], result.outcomes[PRODUCT_OFF]
    differing = to_score(result, "all")
    deciding = to_score(result, "em")
    scored = [t for t in differing if t.task_id in confidences]
    agree = [t for t in scored if (confidences[t.task_id].on_line, confidences[t.task_id].off_line)
             == (on[t.task_id].completion, off[t.task_id].completion)]
    rows = []
    for m in MARGINS:
        picked = chosen(result, confidences, m)
        es = _es(picked, result.tasks)
        fired = sum(1 for t in differing if picked[t.task_id] is not None and picked[t.task_id] is off[t.task_id])
        em = _em(result, picked)
        rows.append([_margin(m), f"{statistics.mean(em):.3f}" if em is not None else "-",
                     f"{statistics.mean(es):.3f}" if es is not None else "-",
                     str(fired) if all(picked[t.task_id] is not None for t in differing) else "-"])
    lines = [f"{len(result.tasks)} line starts; the two first lines differ at {len(differing)}, exactly one is "
             f"right at {len(deciding)}; scored {len(scored)} (their lines as kept: {len(agree)} of {len(scored)}).",
             "", table(["margin (nats/token)", "EM", "ES", "windows left out"], rows)]
    em = _em(result, chosen(result, confidences, margin)) if margin is not None else None
    if margin is not None and em is not None:
        bases = [(PRODUCT_OFF, "retrieval off"), (PRODUCT, "the product"), (PLAIN, "plain")]
        gains = [f"over {label} {paired_difference(em, [float(o[t.task_id].em) for t in result.tasks]).signed()}"
                 for mode, label in bases if mode in result.outcomes
                 for o in [result.outcomes[mode]]]
        lines += ["", f"At the margin chosen on the tuning half ({_margin(margin)}): EM {interval(em)}; "
                  f"paired gains {', '.join(gains)}."]
    deciding_rows = [[f"`{t.task_id}`", "on" if on[t.task_id].em else "off",
                      *((f"{confidences[t.task_id].on:.3f}", f"{confidences[t.task_id].off:.3f}")
                        if t.task_id in confidences else ("-", "-"))] for t in deciding]
    lines += ["", "The line starts that decide EM (which prompt was right, each first line's mean log-probability):",
              "", table(["task", "right", "with windows", "without"], deciding_rows)]
    return "\n".join(lines)


def _margin(m: float) -> str:
    return "-inf (the product)" if m == -math.inf else "+inf (retrieval off)" if m == math.inf else f"{m:+.2f}"
