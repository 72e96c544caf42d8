"""`prism-code bench semble` and `prism-code bench coverage` from parsed arguments."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prism_bench import semble_bench, semble_coverage, semble_data, semble_model, semble_report


def section_name(bench: str, args: argparse.Namespace) -> str:
    """The docs section a run writes: a run over a selection gets its own, so it never
    replaces the full run's."""
    name = bench
    if getattr(args, "split", "all") != "all":
        name += f"-{args.split}"
    if args.lang:
        name += f"-{args.lang}"
    if args.repos:
        name += f"-{len(args.repos)}repos"
    return name


def chart_name(args: argparse.Namespace) -> str:
    """docs/images/semble-ndcg.png is the run with embeddings (over the repositories given: its
    cost keeps it to a chosen few), semble-ndcg-lexical.png the run without; a split or a
    language gets its own."""
    name = "semble-ndcg" + ("-lexical" if args.no_embeddings else "")
    if args.split != "all":
        name += f"-{args.split}"
    return name + (f"-{args.lang}" if args.lang else "")


def run_semble(args: argparse.Namespace, command: str) -> tuple[str, str]:
    """(markdown, section) of `bench semble` or `bench coverage`."""
    every_repo = semble_data.load_repos(args.data_dir or semble_data.DEFAULT_DATA_DIR)
    repos = semble_data.select(every_repo, args.repos, args.lang, getattr(args, "split", "all"))
    cache_dir = args.cache_dir or semble_data.default_cache_dir()
    by_name = {r.name: r for r in every_repo}
    if args.bench == "coverage":
        results = semble_coverage.run(repos, cache_dir)
        section = section_name("semble-coverage", args)
        path = semble_coverage.write_json(results, cache_dir / "results" / f"{section}.json")
        print(f"per-target coverage: {path}", file=sys.stderr)
        return semble_report.coverage_markdown(results, command), section
    if getattr(args, "strategy", "retrieval") != "retrieval":
        return run_sampled(args, command, repos, cache_dir)
    embeddings = not args.no_embeddings
    runs = semble_bench.run(repos, every_repo, cache_dir, embeddings, args.top)
    path = semble_bench.write_json(runs, semble_bench.results_path(cache_dir, embeddings))
    print(f"per-query results: {path}", file=sys.stderr)
    body = semble_report.semble_markdown(runs, by_name, command, embeddings)
    section = section_name(f"semble-{'hybrid' if embeddings else 'lexical'}", args)
    if args.write:
        png = semble_report.semble_chart(runs, by_name, args.write.parent / "images" / f"{chart_name(args)}.png",
                                         embeddings)
        body += f"\n\n![semble NDCG@10 per language](images/{png.name})"
    return body, section


# Queries a model strategy runs unless --sample says otherwise (issue #27: "a 100-query sample").
DEFAULT_SAMPLE = 100


def run_sampled(args: argparse.Namespace, command: str, repos: list[semble_data.SembleRepo],
                cache_dir: Path) -> tuple[str, str]:
    """(markdown, section) of a model strategy on the seeded sample, beside retrieval."""
    size = args.sample or DEFAULT_SAMPLE
    sample = semble_model.sample_queries(repos, size)
    path = semble_model.outcomes_path(cache_dir, args.strategy, args.model)
    outcomes = semble_model.run(sample, cache_dir, args.strategy, args.model, args.threads, path)
    print(f"per-query outcomes: {path}", file=sys.stderr)
    body = semble_model.markdown(sample, outcomes, args.strategy, args.model, args.split, command)
    return body, section_name(f"semble-{args.strategy}-sample{size}", args)
