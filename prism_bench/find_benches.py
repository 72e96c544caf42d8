"""The find benchmarks as `prism-code bench` subcommands: repoqa, docstrings, fusion, likelihood,
find-server, callgraph, semble and coverage (each a `Bench`; `prism_bench.registry` lists them)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from prism_bench.bench import (
    DEFAULT_MODEL,
    Bench,
    Section,
    add_cache_dir,
    add_threads,
    add_write,
    chosen_modes,
    image_path,
    with_chart,
)
from prism_code.cli_args import bounded_int, non_empty_path

REPOQA_LANGUAGES = ["python", "cpp", "java", "typescript", "rust"]


def _repoqa_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", choices=["retrieval", "prism", "wim", "long-context"], default="retrieval")
    p.add_argument("--repos", nargs="*", help="only these repositories (owner/name)")
    p.add_argument("--lang", choices=[*REPOQA_LANGUAGES, "all"], default="python",
                   help="which needles (all = the four non-Python languages, one after another)")
    p.add_argument("--no-embeddings", action="store_true",
                   help="retrieval: index only; needles not located and BM25 ranks, no embedding model")
    p.add_argument("--model", default=DEFAULT_MODEL, help="model strategies: a registry name or GGUF path")
    add_threads(p)
    p.add_argument("--limit", type=bounded_int(1),
                   help="model strategies: only this many needles (round-robin over repos)")
    p.add_argument("--view", choices=["notes", "bodies"], help="prism: how candidates are shown")
    p.add_argument("--evidence", choices=["likelihood", "fit"],
                   help="prism: what may move a candidate above retrieval's first (default likelihood)")
    p.add_argument("--ablation", type=bounded_int(0), default=0, metavar="N",
                   help="prism: also run the four encodings (Table 3) on the first N needles")
    p.add_argument("--token-budget", type=bounded_int(1), help="long-context: code tokens in the prompt at most")
    p.add_argument("--remote", metavar="URL",
                   help="prism, long-context: run the model on this OpenAI-compatible server (docs/remote.md)")
    p.add_argument("--view-tokens", action="store_true",
                   help="prism: only count the candidate prompt tokens of each view (no model calls)")
    add_cache_dir(p)
    add_write(p)


def _run_repoqa(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import repoqa_data, repoqa_retrieval

    if args.lang != "python":
        yield from _repoqa_multi(args, command)
        return
    if args.no_embeddings:
        raise ValueError("--no-embeddings is for --lang cpp|java|typescript|rust|all")
    haystacks = repoqa_data.load_haystacks(cache_dir=args.cache_dir)
    if args.repos:
        haystacks = [h for h in haystacks if h.repo in args.repos]
    index_cache = (args.cache_dir or repoqa_data.default_cache_dir()) / "indexes"
    if args.strategy != "retrieval":
        yield _repoqa_strategy(args, haystacks, index_cache, command)
        return
    from prism_code.retrieval.dense import Embedder

    result = repoqa_retrieval.run(haystacks, index_cache, Embedder())
    body = with_chart(repoqa_retrieval.markdown(result, command), args, "repoqa-retrieval",
                      lambda path: repoqa_retrieval.chart(result, path), "RepoQA retrieval")
    yield Section("repoqa-retrieval", body)


def _repoqa_multi(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import repoqa_data, repoqa_retrieval

    languages = list(repoqa_data.MULTI_LANGUAGES) if args.lang == "all" else [args.lang]
    index_cache = (args.cache_dir or repoqa_data.default_cache_dir()) / "indexes"
    by_language = {}
    for language in languages:
        haystacks = repoqa_data.load_multi_haystacks(language, cache_dir=args.cache_dir)
        if args.repos:
            haystacks = [h for h in haystacks if h.repo in args.repos]
        by_language[language] = haystacks
    if args.strategy != "retrieval":
        for language, haystacks in by_language.items():
            yield _repoqa_strategy(args, haystacks, index_cache, command, language)
        return
    if args.no_embeddings:
        results = [repoqa_retrieval.run_lexical(h, index_cache, language) for language, h in by_language.items()]
        yield Section("repoqa-multi-lexical", repoqa_retrieval.lexical_markdown(results, command))
        return
    from prism_code.retrieval.dense import Embedder

    embedder = Embedder()
    body = "\n\n".join(
        repoqa_retrieval.markdown(repoqa_retrieval.run(h, index_cache, embedder, language), command)
        for language, h in by_language.items())
    yield Section(f"repoqa-multi-{args.lang}", body)


def _repoqa_strategy(args: argparse.Namespace, haystacks, index_cache: Path, command: str,
                     language: str = "python") -> Section:
    from prism_bench import repoqa_strategies

    if args.view_tokens:
        return Section("repoqa-prism-view-tokens", f"Command: `{command}`\n\n" + repoqa_strategies.view_tokens(
            haystacks, index_cache, args.model, args.limit))
    if args.strategy == "wim":
        from prism_bench import repoqa_wim

        wim = repoqa_wim.run_wim_bench(haystacks, index_cache, limit=args.limit or 20, model=args.model,
                                       threads=args.threads)
        return Section(f"repoqa-wim-{args.model}", repoqa_wim.markdown(wim, command))
    from prism_code.tasks.find_settings import LongContextSettings, PrismSettings

    prism, long_context = PrismSettings(), LongContextSettings()
    settings = repoqa_strategies.StrategySettings(
        PrismSettings(view=args.view or prism.view, evidence=args.evidence or prism.evidence),
        LongContextSettings(token_budget=args.token_budget or long_context.token_budget))
    result = repoqa_strategies.run(haystacks, index_cache, args.strategy, args.model, limit=args.limit,
                                   threads=args.threads, ablation=args.ablation, overlap=language != "python",
                                   remote=args.remote, settings=settings)
    suffix = (f"-{args.view}" if args.strategy == "prism" and args.view else "") + (
        f"-{args.evidence}" if args.strategy == "prism" and args.evidence else "") + (
        "-ablation" if args.ablation else "") + ("-remote" if args.remote else "")
    prefix = "repoqa" if language == "python" else f"repoqa-{language}"
    return Section(f"{prefix}-{args.strategy}-{args.model}{suffix}", repoqa_strategies.markdown(result, command))


def _docstrings_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", choices=["tune", "test", "all"], default="all")
    p.add_argument("--strategy", choices=["retrieval", "prism"], default="retrieval")
    p.add_argument("--limit", type=bounded_int(1), help="prism: only this many tasks (round-robin over projects)")
    p.add_argument("--expand", action="store_true",
                   help="retrieval alone against retrieval fused with the model's guess at the code")
    add_threads(p)
    p.add_argument("--model", default=DEFAULT_MODEL, help="prism: a registry name or GGUF path")
    add_cache_dir(p)
    add_write(p)


def _run_docstrings(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import docstrings_report

    body, section = docstrings_report.run_cli(args, command)
    yield Section(section, body)


def _fusion_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--languages", nargs="*", choices=REPOQA_LANGUAGES, default=list(REPOQA_LANGUAGES),
                   help="RepoQA needles to report on")
    p.add_argument("--long", action="store_true",
                   help="the long-description weights instead: chosen on a tuning half of repoqa-multi's "
                        "repositories, reported on the other half, RepoQA Python and docstrings test")
    add_write(p)


def _run_fusion(args: argparse.Namespace, command: str) -> Iterator[Section]:
    if args.long:
        from prism_bench import long_fusion_tuning

        yield Section("find-fusion-long", long_fusion_tuning.run_cli(command, image_path(args, "find-fusion-long")))
        return
    from prism_bench import fusion_tuning

    yield Section("find-fusion", fusion_tuning.run_cli(args.languages, command, image_path(args, "find-fusion")))


def _likelihood_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=bounded_int(1), default=16, help="queries per docstrings split")
    p.add_argument("--repoqa-limit", type=bounded_int(0), default=12,
                   help="needles of RepoQA Python and of each --langs language (0: none)")
    p.add_argument("--langs", nargs="*", default=[], choices=REPOQA_LANGUAGES[1:],
                   help="repoqa-multi languages to report too")
    p.add_argument("--views", nargs="*", help="views to score (default: all); choose from "
                   "'as written', 'code only', 'signature PMI', 'signature PMI, then 3 bodies'")
    p.add_argument("--expand", action="store_true",
                   help="also score the docstring splits on the sentence fused with the model's guess at its code, "
                        "and choose the margin on those tuning rows")
    p.add_argument("--model", default=DEFAULT_MODEL)
    add_threads(p)
    add_write(p)


def _run_likelihood(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import likelihood_tuning

    views = chosen_modes(args.views, dict.fromkeys(likelihood_tuning.VIEWS), list(likelihood_tuning.VIEWS))
    body = likelihood_tuning.run_cli(args.limit, args.repoqa_limit, args.langs, args.model, args.threads, views,
                                     command, image_path(args, f"find-rerank-{args.model}"), args.expand)
    # The signature view alone is its own section: the bodies' runs cost hours and stay.
    section = (f"find-signature-pmi-expanded-{args.model}" if args.expand
               else f"find-signature-pmi-{args.model}" if views == [likelihood_tuning.SIGNATURE_PMI]
               else f"find-staged-{args.model}-{args.repoqa_limit or 'all'}" if likelihood_tuning.STAGED in views
               else f"find-likelihood-{args.model}")
    yield Section(section, body)


def _find_server_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queries", type=bounded_int(1), default=6,
                   help="queries: needles' long descriptions and their first sentences, alternately")
    p.add_argument("--repo", default="psf/black", help="the RepoQA Python haystack (owner/name)")
    add_threads(p)
    add_write(p)


def _run_find_server(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import find_server

    yield Section("find-server", find_server.markdown(find_server.run(args.queries, args.threads, args.repo), command))


def _callgraph_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lang", choices=["python", "typescript", "all"], default="all")
    p.add_argument("--projects", choices=["main", "heldout"], default="main",
                   help="heldout: tomlkit, wtforms and marshmallow (Python), umami and axios (TypeScript, "
                        "JavaScript), which no choice was made on")
    p.add_argument("--limit-projects", type=bounded_int(1), metavar="N",
                   help="only the first N projects of each language")
    p.add_argument("--examples", type=bounded_int(0), default=0, metavar="N",
                   help="also print N of prism's wrong and missed edges per shape and project (stderr)")
    add_cache_dir(p, "where projects and their reference edges are cached")
    add_write(p)


def _run_callgraph(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import callgraph

    graph_result = callgraph.run(args.projects, args.lang, args.limit_projects, args.cache_dir)
    if args.examples:
        print(callgraph.examples(graph_result, args.examples), file=sys.stderr)
    yield Section(callgraph.section_name(args.projects, args.lang, args.limit_projects),
                  callgraph.markdown(graph_result, command))


def _semble_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repos", type=lambda v: [n for n in v.split(",") if n], help="only these (a,b,c)")
    p.add_argument("--lang", help="only this language's repositories (semble's names: python, cpp, ...)")
    p.add_argument("--data-dir", type=non_empty_path, help="the semble data (default: /work/shared/benchmarks/semble)")
    add_cache_dir(p, "where archives are unpacked, indexes and results live")
    add_write(p)


def _semble_arguments(p: argparse.ArgumentParser) -> None:
    _semble_selection(p)
    p.add_argument("--split", choices=["tune", "test", "all"], default="all",
                   help="alternate repositories within each language in name order (the first is tune)")
    p.add_argument("--no-embeddings", action="store_true", help="lexical ranking only: no embedding model")
    p.add_argument("--top", type=bounded_int(1), default=10, help="results taken per query (NDCG scores 10)")
    p.add_argument("--strategy", choices=["retrieval", "prism", "wim"], default="retrieval",
                   help="find's strategy; a model strategy runs on a sample, beside retrieval on the same queries")
    p.add_argument("--sample", type=bounded_int(1),
                   help="model strategies: a seeded sample of this many queries of the split, spread across "
                        "repositories (default 100); finished queries are kept and a rerun resumes")
    p.add_argument("--model", default="qwen2.5-coder-0.5b", help="model strategies: the model")
    add_threads(p, default=1)


def _run_semble(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench.semble_cli import run_semble

    body, section = run_semble(args, command)
    yield Section(section, body)


REPOQA = Bench("repoqa", "RepoQA Python needles (8 repositories from PyPI)", _repoqa_arguments, _run_repoqa,
               draws_chart=True)
DOCSTRINGS = Bench("docstrings", "find by a removed docstring's first paragraph (6 projects from PyPI)",
                   _docstrings_arguments, _run_docstrings)
FUSION = Bench("fusion", "choose find's fusion weights on the docstrings tuning split, "
                         "report them on its test split and on RepoQA in every language",
               _fusion_arguments, _run_fusion, draws_chart=True)
LIKELIHOOD = Bench("likelihood", "the model rerank's view and margin, chosen on the docstrings tuning "
                                 "split, reported on its test split and RepoQA",
                   _likelihood_arguments, _run_likelihood, draws_chart=True)
FIND_SERVER = Bench("find-server", "model find through the language server: its first update, "
                                   "answer, cancel-to-idle and tokens (issue #16)",
                    _find_server_arguments, _run_find_server)
CALLGRAPH = Bench("callgraph", "the code graph's call edges against jedi's and the TypeScript "
                               "language service's (6 PyPI projects, 2 RepoQA haystacks)",
                  _callgraph_arguments, _run_callgraph)
def _semble_chart(args: argparse.Namespace) -> bool:
    """Only retrieval's run draws the per-language chart; a model strategy's sample writes tables."""
    return bool(args.strategy == "retrieval")


SEMBLE = Bench("semble", "semble's code-search benchmark: NDCG@10 on 42 repositories in 19 languages "
                         "beside semble's published figures", _semble_arguments, _run_semble,
               draws_chart=_semble_chart)
COVERAGE = Bench("coverage", "semble's span targets: is there an indexed definition where they are",
                 _semble_selection, _run_semble)
