"""`prism-code bench repoqa|index`: run a benchmark, print it, optionally write docs."""

from __future__ import annotations

import argparse
from pathlib import Path

from prism_code.bench.report import command_line, write_section


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench", required=True)
    p = sub.add_parser("repoqa", help="RepoQA Python needles (8 repositories from PyPI)")
    p.add_argument("--strategy", choices=["retrieval"], default="retrieval")
    p.add_argument("--repos", nargs="*", help="only these repositories (owner/name)")
    p.add_argument("--cache-dir", type=Path, help="where haystacks and their indexes live")
    p.add_argument("--write", type=Path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("repoeval", help="RepoEval-style line/API completion (6 projects from PyPI)")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--per-project", type=int, default=5,
                   help="line-level and API-level tasks per project (each)")
    p.add_argument("--modes", nargs="*", help="subset of the modes (default: all)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--write", type=Path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("index", help="indexing speed on a repository")
    p.add_argument("path", type=Path, nargs="?",
                   help="repository to index (default: torch-geometric 2.5.1 from PyPI, ~93k lines)")
    p.add_argument("--edits", type=int, default=20, help="one-file edits to time")
    p.add_argument("--no-embeddings", action="store_true")
    p.add_argument("--write", type=Path, metavar="MARKDOWN", help="update this results file")


def run(args: argparse.Namespace) -> int:
    command = command_line()
    if args.bench == "repoqa":
        from prism_code.bench import repoqa_data, repoqa_retrieval
        from prism_code.retrieval.dense import Embedder

        haystacks = repoqa_data.load_haystacks(cache_dir=args.cache_dir)
        if args.repos:
            haystacks = [h for h in haystacks if h.repo in args.repos]
        index_cache = (args.cache_dir or repoqa_data.default_cache_dir()) / "indexes"
        result = repoqa_retrieval.run(haystacks, index_cache, Embedder())
        body = repoqa_retrieval.markdown(result, command)
        section = "repoqa-retrieval"
        if args.write:
            png = repoqa_retrieval.chart(result, args.write.parent / "images" / "repoqa-retrieval.png")
            body += f"\n\n![RepoQA retrieval](images/{png.name})"
    elif args.bench == "repoeval":
        from prism_code.bench import repoeval

        modes = args.modes or list(repoeval.MODES)
        unknown = set(modes) - set(repoeval.MODES)
        if unknown:
            raise ValueError(f"unknown modes {sorted(unknown)}; choose from {list(repoeval.MODES)}")
        result = repoeval.run(args.model, args.per_project, modes, threads=args.threads)
        body = repoeval.markdown(result, command)
        section = f"repoeval-{args.model}"
        if args.write:
            png = repoeval.chart(result, args.write.parent / "images" / f"repoeval-{args.model}.png")
            body += f"\n\n![RepoEval {args.model}](images/{png.name})"
    else:
        from prism_code.bench import corpora, index_speed

        path = args.path or corpora.materialise_corpus()
        result = index_speed.run(path, edits=args.edits, embeddings=not args.no_embeddings)
        body = index_speed.markdown(result, path.name, command)
        section = "index-speed"
    print(body)
    if args.write:
        write_section(args.write, section, body)
    return 0
