"""The completion benchmarks as `prism-code bench` subcommands: repoeval, completion, linestart and
blocks (each a `Bench`; `prism_bench.registry` lists them)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from prism_bench.bench import (
    DEFAULT_MODEL,
    Bench,
    Section,
    add_threads,
    add_write,
    chosen_modes,
    mode_list,
    with_chart,
)
from prism_code.cli_args import bounded_int

CURSOR_KINDS = ("indent", "mid", "dot")


def _add_model_and_split(p: argparse.ArgumentParser, split: str) -> None:
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--split", choices=("tune", "test", "all"), default=split)


def _add_limit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=bounded_int(1), help="only this many tasks, spread over the split")


def _add_known_only(p: argparse.ArgumentParser) -> None:
    p.add_argument("--known-only", action="store_true",
                   help="run nothing: report the tasks every mode has already answered")


def _repoeval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--per-project", type=bounded_int(1), default=5,
                   help="line-level and API-level tasks per project (each)")
    p.add_argument("--modes", nargs="*", help="subset of the modes (default: all)")
    add_threads(p)
    add_write(p)


def _run_repoeval(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import repoeval

    modes = chosen_modes(args.modes, repoeval.MODES, list(repoeval.MODES))
    evaluation = repoeval.run(args.model, args.per_project, modes, threads=args.threads)
    body = with_chart(repoeval.markdown(evaluation, command), args, f"repoeval-{args.model}",
                      lambda path: repoeval.chart(evaluation, path), f"RepoEval {args.model}")
    yield Section(f"repoeval-{args.model}", body)


def _completion_arguments(p: argparse.ArgumentParser) -> None:
    _add_model_and_split(p, "tune")
    p.add_argument("--modes", nargs="*", help="modes to run (default: floor, product off and on)")
    _add_limit(p)
    _add_known_only(p)
    p.add_argument("--against-model", metavar="MODEL",
                   help="also compare each mode with this model's kept outcomes, paired by task")
    add_threads(p)
    add_write(p)


def _run_completion(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import completion_gain, completion_modes

    modes = chosen_modes(args.modes, completion_modes.MODES, list(completion_modes.DEFAULT_MODES))
    gain = completion_gain.run(args.model, modes, args.split, args.threads, args.limit,
                               compute=not args.known_only)
    body = completion_gain.markdown(gain, command)
    if args.against_model:
        other = completion_gain.run(args.against_model, modes, args.split, args.threads, args.limit,
                                    compute=False)
        body += "\n\n" + completion_gain.model_comparison(gain, other)
    section = f"completion-{args.split}-{args.model}"
    body = with_chart(body, args, section, lambda path: completion_gain.chart(gain, path),
                      "Completion EM by mode and cursor")
    yield Section(section, body)


def _linestart_arguments(p: argparse.ArgumentParser) -> None:
    _add_model_and_split(p, "tune")
    p.add_argument("--modes", type=mode_list, metavar="A,B,...",
                   help="comma-separated modes (default: product,product-noretrieval,plain,peer)")
    _add_limit(p)
    _add_known_only(p)
    p.add_argument("--kinds", type=mode_list, metavar="K,...", default=list(CURSOR_KINDS),
                   help="only these cursor kinds (indent, mid, dot)")
    p.add_argument("--profile", action="store_true",
                   help="also count what each mode wrote at the line starts (right, empty, the next line, ...)")
    p.add_argument("--diff", type=mode_list, metavar="A,B",
                   help="also list the line starts where one of two modes is right and the other wrong")
    p.add_argument("--confidence", choices=("em", "all"),
                   help="also measure the retrieval-confidence rule (issue #28): score the line starts where "
                        "product and product-noretrieval differ, only those that decide EM (em) or all")
    p.add_argument("--margin", type=float, metavar="NATS",
                   help="with --confidence: the rule's margin chosen on the tuning half, reported with intervals")
    p.add_argument("--tag", metavar="WORD",
                   help="append to the section's name (a partial run beside a complete one: it keeps both)")
    p.add_argument("--after-enter", action="store_true",
                   help="instead: time the product's first suggestion after Enter at the split's line starts "
                        "(--limit of them, default 30), the line above completed first as the last keystroke")
    add_threads(p, default=1)
    add_write(p)


def _run_linestart(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import linestart

    if args.after_enter:
        from prism_bench import linestart_latency

        mode = chosen_modes(args.modes, linestart.MODES, [linestart.PRODUCT])[0]
        latency = linestart_latency.run(args.model, args.split, args.limit or 30, args.threads, mode)
        yield Section(f"linestart-after-enter-{args.split}-{args.model}-{args.threads}t"
                      + ("" if mode == linestart.PRODUCT else "-" + "-".join(mode.replace(":", "").split())),
                      linestart_latency.markdown(latency, command))
        return
    modes = chosen_modes(args.modes, linestart.MODES, list(linestart.DEFAULT_MODES))
    if args.diff and (len(args.diff) != 2 or not set(args.diff) <= set(modes)):
        raise ValueError("--diff takes two of the modes run, e.g. --diff product,plain")
    if not set(args.kinds) <= set(CURSOR_KINDS):
        raise ValueError(f"unknown cursor kinds {args.kinds}; choose from indent, mid, dot")
    lines = linestart.run(args.model, modes, args.split, args.limit, args.threads,
                          compute=not args.known_only, kinds=args.kinds)
    body = linestart.markdown(lines, command)
    if args.profile:
        from prism_bench import linestart_diagnosis

        body += "\n\n" + linestart_diagnosis.markdown(lines)
    if args.diff:
        body += "\n\n" + linestart.disagreements(lines, *args.diff)
    if args.confidence:
        from prism_bench import linestart_confidence

        if not {linestart.PRODUCT, linestart.PRODUCT_OFF} <= set(modes):
            raise ValueError("--confidence needs the modes product and product-noretrieval")
        said = linestart_confidence.score(lines, args.confidence, args.threads)
        body += "\n\n" + linestart_confidence.markdown(lines, said, args.margin)
    section = f"linestart-{args.split}-{args.model}" + (
        "" if len(args.kinds) == len(CURSOR_KINDS) else "-" + "-".join(args.kinds)) + (
        f"-{args.tag}" if args.tag else "")
    body = with_chart(body, args, section, lambda path: linestart.chart(lines, path),
                      "Line-start completion EM by mode and cursor")
    yield Section(section, body)


def _blocks_arguments(p: argparse.ArgumentParser) -> None:
    _add_model_and_split(p, "all")
    p.add_argument("--modes", nargs="*", help="retrieval off / retrieval on (default: both)")
    _add_limit(p)
    add_threads(p)
    add_write(p)


def _run_blocks(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import block_completion

    modes = chosen_modes(args.modes, block_completion.MODES, list(block_completion.MODES))
    blocks = block_completion.run(args.model, modes, args.split, args.limit, args.threads)
    yield Section(f"completion-blocks-{args.model}", block_completion.markdown(blocks, command))


REPOEVAL = Bench("repoeval", "RepoEval-style line/API completion (6 projects from PyPI)", _repoeval_arguments,
                 _run_repoeval, draws_chart=True)
COMPLETION = Bench("completion", "completion against a plain FIM floor: 240 tasks, intervals, cursors",
                   _completion_arguments, _run_completion, draws_chart=True)
LINESTART = Bench("linestart", "completion at line starts on six unseen PyPI projects, "
                               "against the plain FIM floor and llama.vscode's prompt (issue #28)",
                  _linestart_arguments, _run_linestart, draws_chart=True)
BLOCKS = Bench("blocks", "block completion under a def header, scored line by line", _blocks_arguments,
               _run_blocks)
