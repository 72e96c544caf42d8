"""`prism-code bench repoqa|docstrings|callgraph|semble|...`: run a benchmark, print it, optionally write docs.

One subcommand per `Bench` of `prism_bench.registry.BENCHES`; the bench declares its options and
yields its sections, and this module prints each and, with --write, puts it into the results file.
"""

from __future__ import annotations

import argparse

from prism_bench.registry import BENCHES, bench_named
from prism_bench.report import command_line, write_section


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench", required=True)
    for bench in BENCHES:
        bench.add_arguments(sub.add_parser(bench.name, help=bench.help))


def run(args: argparse.Namespace) -> int:
    bench = bench_named(args.bench)
    if args.write and bench.charts(args):
        from prism_bench.charts import require_matplotlib

        require_matplotlib()  # a benchmark can run for an hour; its chart must not fail at the end
    for section in bench.run(args, command_line()):
        print(section.body)
        if args.write:
            write_section(args.write, section.name, section.body)
    return 0
