"""One benchmark as `prism-code bench` sees it: a name, its options and a run that yields sections.

Every bench is a `Bench` in `prism_bench.registry.BENCHES`; `prism_bench.cli` builds one
subcommand per bench from it, prints each `Section` a run yields and, with `--write`, puts it
into its named section of the results file. The option helpers below are the options most
benches share, spelled once so they read the same everywhere.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from prism_code.cli_args import bounded_int, non_empty_path
from prism_code.config import THREADS_RANGE

DEFAULT_MODEL = "qwen2.5-coder-0.5b"


@dataclass(frozen=True)
class Section:
    """A run's result: markdown for the terminal, and the docs section `--write` replaces with it."""

    name: str
    body: str


@dataclass(frozen=True)
class Bench:
    """A benchmark: `add_arguments` declares its options, `run(args, command)` runs it and yields its
    sections as they finish (a run over several languages yields one per language, so an hour-long
    run shows and keeps each as it ends). `draws_chart`: with `--write` it also draws a chart, so
    matplotlib is checked before the run rather than at its end; a function of the arguments when
    only some runs draw one."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, str], Iterator[Section]]
    draws_chart: bool | Callable[[argparse.Namespace], bool] = False

    def charts(self, args: argparse.Namespace) -> bool:
        """Whether this run, written with --write, draws a chart."""
        return self.draws_chart(args) if callable(self.draws_chart) else self.draws_chart


def add_write(p: argparse.ArgumentParser) -> None:
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")


def add_threads(p: argparse.ArgumentParser, default: int = 2) -> None:
    p.add_argument("--threads", type=bounded_int(*THREADS_RANGE), default=default)


def add_cache_dir(p: argparse.ArgumentParser, what: str = "where haystacks and their indexes live") -> None:
    p.add_argument("--cache-dir", type=non_empty_path, help=what)


def image_path(args: argparse.Namespace, name: str) -> Path | None:
    """Where a chart goes: docs/images/NAME.png beside the results file, or nowhere without --write."""
    return args.write.parent / "images" / f"{name}.png" if args.write else None


def with_chart(body: str, args: argparse.Namespace, name: str, draw: Callable[[Path], Path], alt: str) -> str:
    """The body with its chart below it when --write is given: `draw(path)` writes the PNG and
    says where it went."""
    path = image_path(args, name)
    if path is None:
        return body
    return body + f"\n\n![{alt}](images/{draw(path).name})"


def mode_list(text: str) -> list[str]:
    """Modes given as one comma-separated argument."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    if not modes:
        raise argparse.ArgumentTypeError("name at least one mode")
    return modes


def chosen_modes(asked: list[str] | None, known: Mapping[str, object], default: list[str]) -> list[str]:
    """The modes a bench was asked for (its default when none), each one it knows."""
    modes = asked or default
    unknown = set(modes) - set(known)
    if unknown:
        raise ValueError(f"unknown modes {sorted(unknown)}; choose from {list(known)}")
    return modes
