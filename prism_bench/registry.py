"""Every benchmark `prism-code bench` runs, in the order its --help lists them."""

from __future__ import annotations

from prism_bench.bench import Bench
from prism_bench.completion_benches import BLOCKS, COMPLETION, LINESTART, REPOEVAL
from prism_bench.find_benches import CALLGRAPH, COVERAGE, DOCSTRINGS, FIND_SERVER, FUSION, LIKELIHOOD, REPOQA, SEMBLE
from prism_bench.speed_benches import HOVER, INDEX, KEYSTROKE_PROFILE, NOTES, SCALE, SERVER

BENCHES: tuple[Bench, ...] = (REPOQA, DOCSTRINGS, FUSION, LIKELIHOOD, REPOEVAL, COMPLETION, LINESTART, BLOCKS,
                              NOTES, SERVER, FIND_SERVER, CALLGRAPH, SEMBLE, COVERAGE, INDEX, SCALE, HOVER,
                              KEYSTROKE_PROFILE)


def bench_named(name: str) -> Bench:
    return next(b for b in BENCHES if b.name == name)
