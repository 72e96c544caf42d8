"""`prism-code bench linestart`: completion at line starts on unseen code, against two baselines.

The task set is linestart_data's (six pinned PyPI projects, 240 cursors: half at a line's
indentation with nothing typed, a quarter mid-line, a quarter after a `.`). Every mode
completes the same blanked files; EM and ES compare the typed text plus the completion's
first line with the real line, stripped. Each mode is reported with its gain over both
baselines (baselines.py: the plain FIM floor and llama.vscode's ring-buffer prompt), paired
by task with 95% bootstrap intervals. Outcomes are kept per (mode, model, task) in JSONL
files under the bench cache, so a rerun, a new mode or the other half computes only what is
not known yet.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from prism_bench import baselines
from prism_bench.baselines import Baseline, Chunk
from prism_bench.bootstrap import interval, paired_difference
from prism_bench.completion_modes import mode_key
from prism_bench.linestart_data import (
    DATA_FILE,
    PROJECTS,
    LinestartTask,
    default_cache_dir,
    load_set,
    materialise,
    project_root,
    python_files,
    set_digest,
    split_of,
)
from prism_bench.repoeval_data import CURSOR_KINDS, edit_similarity, exact_match
from prism_bench.task_runs import (
    Identified,
    ModeRuns,
    TaskRun,
    append_outcome,
    column,
    em_chart,
    load_outcomes,
    spread,
    still_to_run,
)
from prism_code.index import RepoIndex
from prism_code.llm import LlamaSession
from prism_code.tasks.complete import Completer, CompletionSettings
from prism_code.tasks.fim import FimBudget, FimLayout, neighbour_lines, split_at_cursor

PRODUCT = "product"
PRODUCT_OFF = "product-noretrieval"
PLAIN = "plain"
PEER = "peer"
BASELINES = (PLAIN, PEER)
_PRODUCT = CompletionSettings(max_lines=1)  # the product's settings, scored on one line
_OFF = replace(_PRODUCT, retrieval=False)

Mode = CompletionSettings | Baseline
MODES: dict[str, Mode] = {
    PRODUCT: _PRODUCT,
    PRODUCT_OFF: _OFF,
    PLAIN: baselines.FLOOR,
    PEER: baselines.PEER,
    # Issue #28's candidate causes of the product's loss at a line start, one change at a time
    # against the product without retrieval (its prompt alone). No commas: --modes splits on them.
    "off: indentation typed and healed": replace(_OFF, layout=FimLayout(hold_indent=False)),
    "off: indentation typed unhealed": replace(_OFF, layout=FimLayout(hold_indent=False, heal=False)),
    "off: hole at the cursor": replace(_OFF, layout=FimLayout(typed_in_middle=False, heal=False)),
    "off: prefix 1500 tokens": replace(_OFF, budget=replace(_OFF.budget, prefix_tokens=1500)),
    "off: no repository markers": replace(_OFF, layout=FimLayout(repo_markers=False)),
    "off: the floor's budgets": replace(_OFF, budget=FimBudget(
        prefix_tokens=1500, prefix_lines=80, suffix_tokens=400, suffix_lines=24, align_head=False)),
    # The stop rule: a first line repeating the nearest line above or below is refused.
    "off: repeats refused": replace(_OFF, reject_repeats=True),
    "product: repeats refused": replace(_PRODUCT, reject_repeats=True),
    # The two candidates left for the product itself, with retrieval on: the plain prompt's
    # 1,500-token prefix instead of the product's 768, and the file without the repository
    # markers (<|repo_name|>, <|file_sep|>path) that the plain prompt also lacks.
    "product: prefix 1500 tokens": replace(_PRODUCT, budget=replace(_PRODUCT.budget, prefix_tokens=1500)),
    "product: no repository markers": replace(_PRODUCT, layout=FimLayout(repo_markers=False)),
    # The product's layout before the middle opened up to 8 lines above the cursor's line
    # (fim.MIDDLE_STEP_LINES): the hole started at the cursor's line.
    "product: middle opens at the cursor line": replace(_PRODUCT, layout=FimLayout(middle_step_lines=None)),
}
DEFAULT_MODES = (PRODUCT, PRODUCT_OFF, PLAIN, PEER)
# A mode that only refuses repeated lines answers as its base wherever the base's first line
# repeats no neighbour (greedy decoding of the same prompt): those answers are copied, and
# the model runs only where the rule fires.
DERIVED = {"off: repeats refused": PRODUCT_OFF, "product: repeats refused": PRODUCT}


@dataclass(frozen=True)
class Outcome:
    """One mode's answer to one task."""

    task_id: str
    completion: str  # what would be inserted at the cursor
    raw: str  # what the model wrote (baselines: their first line; the product: its answer)
    em: bool
    es: float
    prompt_tokens: int
    latency_ms: float


LinestartResult = ModeRuns[LinestartTask, Outcome]


def score(task: LinestartTask, completion: str) -> tuple[bool, float]:
    """EM and ES of the typed text plus the completion against the real line, both stripped."""
    line = task.typed + completion
    return exact_match(line, task.expected), edit_similarity(line, task.expected)


def _results_file(cache: Path, model: str, mode: str) -> Path:
    key = hashlib.sha256(f"{model}\n{set_digest(DATA_FILE)}\n{mode_key(MODES[mode])}".encode()).hexdigest()[:16]
    return cache / "results" / f"{key}.jsonl"


def run(model: str, modes: Sequence[str], split: str = "tune", limit: int | None = None,
        threads: int = 1, compute: bool = True, kinds: Sequence[str] = CURSOR_KINDS) -> LinestartResult:
    """Complete every task of `split` ("tune", "test" or "all") and `kinds` in each mode not already known.

    With `compute` False nothing runs: the result holds the tasks every mode has answered.
    """
    cache = default_cache_dir()
    tasks = spread([t for t in load_set() if (split == "all" or split_of(t) == split) and t.kind in kinds], limit)
    result = LinestartResult(model, split, tasks)
    files = {mode: _results_file(cache, model, mode) for mode in modes}
    result.outcomes = {mode: load_outcomes(files[mode], Outcome) for mode in modes}
    for mode in modes:
        if mode in DERIVED:
            _copy_unrepeated(tasks, result.outcomes[mode], files[mode],
                             load_outcomes(_results_file(cache, model, DERIVED[mode]), Outcome))
    pending = still_to_run(result, modes, compute)
    if not pending:
        return result
    with TaskRun(model, threads, result.outcomes, files, "completions", len(pending)) as job:
        result.speed = job.speed
        for project in PROJECTS:
            todo = [(t, m) for t, m in pending if t.project == project.package]
            if not todo:
                continue
            with _Project(materialise(project, cache), cache, job.session) as runner:
                # Mode by mode, each in file order: consecutive prompts share their start in the KV cache.
                for mode in [m for m in modes if any(pm == m for _, pm in todo)]:
                    for task in sorted((t for t, m in todo if m == mode), key=lambda t: (t.path, t.line)):
                        job.keep(mode, runner.complete(task, mode))
    return result


def _copy_unrepeated(tasks: Sequence[LinestartTask], known: dict[str, Outcome], file: Path,
                     base: dict[str, Outcome]) -> None:
    """Copy the base mode's outcome to a repeat-refusing mode wherever the rule would not fire."""
    roots = {p.package: project_root(p) for p in PROJECTS}
    for task in tasks:
        said = base.get(task.task_id)
        if task.task_id in known or said is None:
            continue
        if task.kind == "indent":
            neighbours = neighbour_lines(*split_at_cursor(task.blanked(roots[task.project]), task.line, task.col))
            if said.completion.strip() in neighbours:
                continue  # the rule fires: the model runs
        known[task.task_id] = said
        append_outcome(file, said)


class _Project:
    """One project's completers and the peer's editing histories, built when first needed."""

    def __init__(self, root: Path, cache: Path, session: LlamaSession) -> None:
        self.root = root
        self.cache = cache
        self.session = session
        self._index: RepoIndex | None = None
        self._completers: dict[str, Completer] = {}
        self._files: dict[str, list[str]] | None = None
        self._neighbours: dict[str, set[str]] = {}

    def __enter__(self) -> _Project:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._index is not None:
            self._index.close()

    def complete(self, task: LinestartTask, mode: str) -> Outcome:
        text = task.blanked(self.root)
        started = time.perf_counter()
        settings = MODES[mode]
        if isinstance(settings, Baseline):
            prefix, suffix = split_at_cursor(text, task.line, task.col)
            tokens = (baselines.floor_prompt(self.session, prefix, suffix) if settings == baselines.FLOOR
                      else baselines.peer_prompt(self.session, prefix, suffix, self.chunks(task.path)))
            said = baselines.answer(self.session, tokens)
            completion, raw, prompt_tokens = said.completion, said.raw, said.prompt_tokens
        else:
            answer = self.completer(mode, settings).complete(task.path, text, task.line, task.col)
            completion, raw, prompt_tokens = answer.completion, answer.completion, answer.prompt_tokens
        em, es = score(task, completion)
        return Outcome(task.task_id, completion, raw, em, es, prompt_tokens,
                       round((time.perf_counter() - started) * 1000, 1))

    def completer(self, mode: str, settings: CompletionSettings) -> Completer:
        if mode not in self._completers:
            if self._index is None:
                self._index = RepoIndex(self.root, cache_dir=self.cache / "indexes")
                self._index.update()
            self._completers[mode] = Completer(self._index, self.session, settings)
        return self._completers[mode]

    def chunks(self, path: str) -> list[Chunk]:
        """The peer's ring buffer while `path` is edited (the same for every cursor in it)."""
        if self._files is None:
            paths = python_files(self.root)
            self._files = {p: (self.root / p).read_bytes().decode("utf-8", errors="replace").split("\n")
                           for p in paths}
            self._neighbours = baselines.import_neighbours(self.root, paths)
        return baselines.peer_chunks(path, self._files, self._neighbours, seed=self.root.name)


# ---- report -------------------------------------------------------------------------------


def _mean(result: LinestartResult, mode: str, metric: str, tasks: Sequence[LinestartTask]) -> str:
    return f"{statistics.mean(column(result, mode, metric, tasks)):.3f}" if tasks else "-"


def _gain(result: LinestartResult, mode: str, base: str, metric: str, tasks: Sequence[LinestartTask]) -> str:
    if mode == base or base not in result.outcomes or not tasks:
        return "-"
    return paired_difference(column(result, mode, metric, tasks), column(result, base, metric, tasks)).signed()


def markdown(result: LinestartResult, command: str) -> str:
    from prism_bench.report import table

    tasks = result.tasks
    modes = list(result.outcomes)
    by_kind = {k: [t for t in tasks if t.kind == k] for k in CURSOR_KINDS}
    projects = sorted({t.project for t in tasks}, key=[p.package for p in PROJECTS].index)
    rows = [[mode, str(interval(column(result, mode, "em", tasks))), str(interval(column(result, mode, "es", tasks))),
             *(_mean(result, mode, "em", by_kind[k]) for k in CURSOR_KINDS),
             *(_mean(result, mode, "es", by_kind[k]) for k in CURSOR_KINDS),
             f"{statistics.median(column(result, mode, 'prompt_tokens', tasks)):.0f}"] for mode in modes]
    header = ["mode", "EM [95% CI]", "ES [95% CI]", *(f"EM {k}" for k in CURSOR_KINDS),
              *(f"ES {k}" for k in CURSOR_KINDS), "prompt tokens p50"]
    gains = [[mode, *(_gain(result, mode, base, metric, subset)
                      for base in BASELINES for metric in ("em", "es")
                      for subset in (tasks, by_kind["indent"]))] for mode in modes]
    gain_header = ["mode", *(f"{metric.upper()} over {base}{where}" for base in BASELINES for metric in ("em", "es")
                             for where in ("", ", line starts"))]
    counts = ", ".join(f"{len(v)} {k}" for k, v in by_kind.items())
    return "\n".join([
        f"Command: `{command}`",
        "",
        f"Model {result.model}; {len(tasks)} tasks ({result.split} half of the line-start set: "
        f"{', '.join(projects)}; cursors: {counts}); one line, greedy. EM and ES compare the typed text "
        "plus the completion's first line with the real line, stripped; intervals are 95% bootstrap over "
        "tasks. `plain` is the issue's plain FIM prompt, `peer` llama.vscode's prompt with its ring "
        "buffer of recently opened files (prism_bench/baselines.py).",
        "",
        table(header, rows),
        "",
        "Gains over the two baselines, paired by task (all cursors, and the line starts alone):",
        "",
        table(gain_header, gains),
        *(["", result.speed.sentence()] if result.speed else []),
    ])


def disagreements(result: LinestartResult, a: str, b: str, kind: str = "indent", show: int = 12) -> str:
    """Where `a` and `b` differ on tasks of `kind`: counts, and what each wrote where one was right."""
    tasks = [t for t in result.tasks if t.kind == kind]
    ka, kb = result.outcomes[a], result.outcomes[b]
    only_a = [t for t in tasks if ka[t.task_id].em and not kb[t.task_id].em]
    only_b = [t for t in tasks if kb[t.task_id].em and not ka[t.task_id].em]
    both = sum(ka[t.task_id].em and kb[t.task_id].em for t in tasks)
    lines = [f"{kind} tasks ({len(tasks)}): both right {both}, only {a} {len(only_a)}, only {b} {len(only_b)}, "
             f"neither {len(tasks) - both - len(only_a) - len(only_b)}.", ""]
    for title, picked in ((f"right with {a} only", only_a), (f"right with {b} only", only_b)):
        lines.append(f"{title}:")
        for t in picked[:show]:
            lines.append(f"- `{t.task_id}` {t.path}:{t.line} want `{t.expected.strip()}`; "
                         f"{a} `{ka[t.task_id].completion}`; {b} `{kb[t.task_id].completion}`")
        lines.append("")
    return "\n".join(lines).rstrip()


def chart(result: LinestartResult, path: Path) -> Path:
    """EM per mode, overall and by where the cursor sits."""
    groups: dict[str, list[Identified]] = {"all": list(result.tasks)}
    groups.update({k: [t for t in result.tasks if t.kind == k] for k in CURSOR_KINDS})
    return em_chart(result, path, f"Line-start completion EM, {result.model}, {result.split} tasks", groups)
