"""`prism-code bench repoqa|docstrings|callgraph|semble|...`: run a benchmark, print it, optionally write docs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from prism_bench.report import command_line, write_section
from prism_code.cli_args import bounded_int, non_empty_path
from prism_code.config import THREADS_RANGE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    threads = bounded_int(*THREADS_RANGE)
    sub = parser.add_subparsers(dest="bench", required=True)
    p = sub.add_parser("repoqa", help="RepoQA Python needles (8 repositories from PyPI)")
    p.add_argument("--strategy", choices=["retrieval", "prism", "wim", "long-context"], default="retrieval")
    p.add_argument("--repos", nargs="*", help="only these repositories (owner/name)")
    p.add_argument("--lang", choices=["python", "cpp", "java", "typescript", "rust", "all"], default="python",
                   help="which needles (all = the four non-Python languages, one after another)")
    p.add_argument("--no-embeddings", action="store_true",
                   help="retrieval: index only; needles not located and BM25 ranks, no embedding model")
    p.add_argument("--model", default="qwen2.5-coder-0.5b", help="model strategies: a registry name or GGUF path")
    p.add_argument("--threads", type=threads, default=2)
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
    p.add_argument("--cache-dir", type=non_empty_path, help="where haystacks and their indexes live")
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("docstrings", help="find by a removed docstring's first paragraph (6 projects from PyPI)")
    p.add_argument("--split", choices=["tune", "test", "all"], default="all")
    p.add_argument("--strategy", choices=["retrieval", "prism"], default="retrieval")
    p.add_argument("--limit", type=bounded_int(1), help="prism: only this many tasks (round-robin over projects)")
    p.add_argument("--expand", action="store_true",
                   help="retrieval alone against retrieval fused with the model's guess at the code")
    p.add_argument("--threads", type=threads, default=2)
    p.add_argument("--model", default="qwen2.5-coder-0.5b", help="prism: a registry name or GGUF path")
    p.add_argument("--cache-dir", type=non_empty_path, help="where haystacks and their indexes live")
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("fusion", help="choose find's fusion weights on the docstrings tuning split, "
                                      "report them on its test split and on RepoQA in every language")
    p.add_argument("--languages", nargs="*", choices=["python", "cpp", "java", "typescript", "rust"],
                   default=["python", "cpp", "java", "typescript", "rust"], help="RepoQA needles to report on")
    p.add_argument("--long", action="store_true",
                   help="the long-description weights instead: chosen on a tuning half of repoqa-multi's "
                        "repositories, reported on the other half, RepoQA Python and docstrings test")
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("likelihood", help="the model rerank's view and margin, chosen on the docstrings tuning "
                                          "split, reported on its test split and RepoQA")
    p.add_argument("--limit", type=bounded_int(1), default=16, help="queries per docstrings split")
    p.add_argument("--repoqa-limit", type=bounded_int(0), default=12,
                   help="needles of RepoQA Python and of each --langs language (0: none)")
    p.add_argument("--langs", nargs="*", default=[], choices=["cpp", "java", "typescript", "rust"],
                   help="repoqa-multi languages to report too")
    p.add_argument("--views", nargs="*", help="views to score (default: all); choose from "
                   "'as written', 'code only', 'signature PMI', 'signature PMI, then 3 bodies'")
    p.add_argument("--expand", action="store_true",
                   help="also score the docstring splits on the sentence fused with the model's guess at its code, "
                        "and choose the margin on those tuning rows")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--threads", type=threads, default=2)
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("repoeval", help="RepoEval-style line/API completion (6 projects from PyPI)")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--per-project", type=bounded_int(1), default=5,
                   help="line-level and API-level tasks per project (each)")
    p.add_argument("--modes", nargs="*", help="subset of the modes (default: all)")
    p.add_argument("--threads", type=threads, default=2)
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("completion", help="completion against a plain FIM floor: 240 tasks, intervals, cursors")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--split", choices=("tune", "test", "all"), default="tune")
    p.add_argument("--modes", nargs="*", help="modes to run (default: floor, product off and on)")
    p.add_argument("--limit", type=bounded_int(1), help="only this many tasks, spread over the split")
    p.add_argument("--known-only", action="store_true",
                   help="run nothing: report the tasks every mode has already answered")
    p.add_argument("--against-model", metavar="MODEL",
                   help="also compare each mode with this model's kept outcomes, paired by task")
    p.add_argument("--threads", type=threads, default=2)
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("linestart", help="completion at line starts on six unseen PyPI projects, "
                                         "against the plain FIM floor and llama.vscode's prompt (issue #28)")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--split", choices=("tune", "test", "all"), default="tune")
    p.add_argument("--modes", type=_mode_list, metavar="A,B,...",
                   help="comma-separated modes (default: product,product-noretrieval,plain,peer)")
    p.add_argument("--limit", type=bounded_int(1), help="only this many tasks, spread over the split")
    p.add_argument("--known-only", action="store_true",
                   help="run nothing: report the tasks every mode has already answered")
    p.add_argument("--kinds", type=_mode_list, metavar="K,...", default=["indent", "mid", "dot"],
                   help="only these cursor kinds (indent, mid, dot)")
    p.add_argument("--profile", action="store_true",
                   help="also count what each mode wrote at the line starts (right, empty, the next line, ...)")
    p.add_argument("--diff", type=_mode_list, metavar="A,B",
                   help="also list the line starts where one of two modes is right and the other wrong")
    p.add_argument("--tag", metavar="WORD",
                   help="append to the section's name (a partial run beside a complete one: it keeps both)")
    p.add_argument("--threads", type=threads, default=1)
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("blocks", help="block completion under a def header, scored line by line")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--split", choices=("tune", "test", "all"), default="all")
    p.add_argument("--modes", nargs="*", help="retrieval off / retrieval on (default: both)")
    p.add_argument("--limit", type=bounded_int(1), help="only this many tasks, spread over the split")
    p.add_argument("--threads", type=threads, default=2)
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("notes", help="function notes written by the local model per minute")
    p.add_argument("path", type=non_empty_path, nargs="?",
                   help="repository (default: marshmallow 3.21.1 from PyPI, the RepoQA haystack)")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--limit", type=bounded_int(1), default=40, help="notes to write for the steady rate")
    p.add_argument("--threads", type=threads, default=2)
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("server", help="language server: requests blocked while it indexes, RSS")
    p.add_argument("path", type=non_empty_path, nargs="?",
                   help="repository to index (default: torch-geometric 2.5.1 from PyPI, ~93k lines)")
    p.add_argument("--notes-file", type=non_empty_path, metavar="FILE",
                   help="then turn notes on, open this file (relative to PATH) and time its notes")
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("find-server", help="model find through the language server: its first update, "
                                           "answer, cancel-to-idle and tokens (issue #16)")
    p.add_argument("--queries", type=bounded_int(1), default=6,
                   help="queries: needles' long descriptions and their first sentences, alternately")
    p.add_argument("--repo", default="psf/black", help="the RepoQA Python haystack (owner/name)")
    p.add_argument("--threads", type=threads, default=2)
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("callgraph", help="the code graph's call edges against jedi's and the TypeScript "
                                         "language service's (6 PyPI projects, 2 RepoQA haystacks)")
    p.add_argument("--lang", choices=["python", "typescript", "all"], default="all")
    p.add_argument("--projects", choices=["main", "heldout"], default="main",
                   help="heldout: tomlkit, wtforms and marshmallow (Python), umami and axios (TypeScript, "
                        "JavaScript), which no choice was made on")
    p.add_argument("--limit-projects", type=bounded_int(1), metavar="N",
                   help="only the first N projects of each language")
    p.add_argument("--examples", type=bounded_int(0), default=0, metavar="N",
                   help="also print N of prism's wrong and missed edges per shape and project (stderr)")
    p.add_argument("--cache-dir", type=non_empty_path, help="where projects and their reference edges are cached")
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")
    p = sub.add_parser("semble", help="semble's code-search benchmark: NDCG@10 on 42 repositories in 19 languages "
                                      "beside semble's published figures")
    _semble_selection(p)
    p.add_argument("--split", choices=["tune", "test", "all"], default="all",
                   help="alternate repositories within each language in name order (the first is tune)")
    p.add_argument("--no-embeddings", action="store_true", help="lexical ranking only: no embedding model")
    p.add_argument("--top", type=bounded_int(1), default=10, help="results taken per query (NDCG scores 10)")
    p = sub.add_parser("coverage", help="semble's span targets: is there an indexed definition where they are")
    _semble_selection(p)
    p = sub.add_parser("index", help="indexing speed on a repository")
    p.add_argument("path", type=non_empty_path, nargs="?",
                   help="repository to index (default: torch-geometric 2.5.1 from PyPI, ~93k lines)")
    p.add_argument("--edits", type=bounded_int(0), default=20, help="one-file edits to time")
    p.add_argument("--no-embeddings", action="store_true")
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")


def _semble_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repos", type=lambda v: [n for n in v.split(",") if n], help="only these (a,b,c)")
    p.add_argument("--lang", help="only this language's repositories (semble's names: python, cpp, ...)")
    p.add_argument("--data-dir", type=non_empty_path, help="the semble data (default: /work/shared/benchmarks/semble)")
    p.add_argument("--cache-dir", type=non_empty_path, help="where archives are unpacked, indexes and results live")
    p.add_argument("--write", type=non_empty_path, metavar="MARKDOWN", help="update this results file")


def run(args: argparse.Namespace) -> int:
    command = command_line()
    if args.write and args.bench != "callgraph":  # callgraph draws no chart
        from prism_bench.charts import require_matplotlib

        require_matplotlib()  # a benchmark can run for an hour; its chart must not fail at the end
    if args.bench == "repoqa":
        from prism_bench import repoqa_data, repoqa_retrieval
        from prism_code.retrieval.dense import Embedder

        if args.lang != "python":
            return _repoqa_multi(args, command)
        if args.no_embeddings:
            raise ValueError("--no-embeddings is for --lang cpp|java|typescript|rust|all")
        haystacks = repoqa_data.load_haystacks(cache_dir=args.cache_dir)
        if args.repos:
            haystacks = [h for h in haystacks if h.repo in args.repos]
        index_cache = (args.cache_dir or repoqa_data.default_cache_dir()) / "indexes"
        if args.strategy != "retrieval":
            return _repoqa_strategy(args, haystacks, index_cache, command)
        result = repoqa_retrieval.run(haystacks, index_cache, Embedder())
        body = repoqa_retrieval.markdown(result, command)
        section = "repoqa-retrieval"
        if args.write:
            png = repoqa_retrieval.chart(result, args.write.parent / "images" / "repoqa-retrieval.png")
            body += f"\n\n![RepoQA retrieval](images/{png.name})"
    elif args.bench == "docstrings":
        from prism_bench import docstrings_report

        body, section = docstrings_report.run_cli(args, command)
    elif args.bench == "fusion" and args.long:
        from prism_bench import long_fusion_tuning

        chart_path = args.write.parent / "images" / "find-fusion-long.png" if args.write else None
        body, section = long_fusion_tuning.run_cli(command, chart_path), "find-fusion-long"
    elif args.bench == "fusion":
        from prism_bench import fusion_tuning

        chart_path = args.write.parent / "images" / "find-fusion.png" if args.write else None
        body, section = fusion_tuning.run_cli(args.languages, command, chart_path), "find-fusion"
    elif args.bench == "likelihood":
        from prism_bench import likelihood_tuning

        views = chosen_modes(args.views, dict.fromkeys(likelihood_tuning.VIEWS), list(likelihood_tuning.VIEWS))
        chart_path = args.write.parent / "images" / f"find-rerank-{args.model}.png" if args.write else None
        body = likelihood_tuning.run_cli(args.limit, args.repoqa_limit, args.langs, args.model, args.threads, views,
                                         command, chart_path, args.expand)
        # The signature view alone is its own section: the bodies' runs cost hours and stay.
        section = (f"find-signature-pmi-expanded-{args.model}" if args.expand
                   else f"find-signature-pmi-{args.model}" if views == [likelihood_tuning.SIGNATURE_PMI]
                   else f"find-staged-{args.model}-{args.repoqa_limit or 'all'}" if likelihood_tuning.STAGED in views
                   else f"find-likelihood-{args.model}")
    elif args.bench == "repoeval":
        from prism_bench import repoeval

        modes = chosen_modes(args.modes, repoeval.MODES, list(repoeval.MODES))
        evaluation = repoeval.run(args.model, args.per_project, modes, threads=args.threads)
        body = repoeval.markdown(evaluation, command)
        section = f"repoeval-{args.model}"
        if args.write:
            png = repoeval.chart(evaluation, args.write.parent / "images" / f"repoeval-{args.model}.png")
            body += f"\n\n![RepoEval {args.model}](images/{png.name})"
    elif args.bench == "completion":
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
        if args.write:
            png = completion_gain.chart(gain, args.write.parent / "images" / f"{section}.png")
            body += f"\n\n![Completion EM by mode and cursor]({'images/' + png.name})"
    elif args.bench == "linestart":
        from prism_bench import linestart

        modes = chosen_modes(args.modes, linestart.MODES, list(linestart.DEFAULT_MODES))
        if args.diff and (len(args.diff) != 2 or not set(args.diff) <= set(modes)):
            raise ValueError("--diff takes two of the modes run, e.g. --diff product,plain")
        if not set(args.kinds) <= {"indent", "mid", "dot"}:
            raise ValueError(f"unknown cursor kinds {args.kinds}; choose from indent, mid, dot")
        lines = linestart.run(args.model, modes, args.split, args.limit, args.threads,
                              compute=not args.known_only, kinds=args.kinds)
        body = linestart.markdown(lines, command)
        if args.profile:
            from prism_bench import linestart_diagnosis

            body += "\n\n" + linestart_diagnosis.markdown(lines)
        if args.diff:
            body += "\n\n" + linestart.disagreements(lines, *args.diff)
        section = f"linestart-{args.split}-{args.model}" + (
            "" if len(args.kinds) == 3 else "-" + "-".join(args.kinds)) + (f"-{args.tag}" if args.tag else "")
        if args.write:
            png = linestart.chart(lines, args.write.parent / "images" / f"{section}.png")
            body += f"\n\n![Line-start completion EM by mode and cursor](images/{png.name})"
    elif args.bench == "blocks":
        from prism_bench import block_completion

        modes = chosen_modes(args.modes, block_completion.MODES, list(block_completion.MODES))
        blocks = block_completion.run(args.model, modes, args.split, args.limit, args.threads)
        body = block_completion.markdown(blocks, command)
        section = f"completion-blocks-{args.model}"
    elif args.bench == "notes":
        from prism_bench import notes_speed, repoqa_data

        path = args.path or next(h.root for h in repoqa_data.load_haystacks()
                                 if h.package == "marshmallow")
        speed = notes_speed.run(path, model=args.model, limit=args.limit, threads=args.threads)
        body = notes_speed.markdown(speed, command)
        section = f"notes-{args.model}"
    elif args.bench == "server":
        from prism_bench import corpora, server_latency

        latency = server_latency.run(args.path or corpora.materialise_corpus(),
                                     notes_file=args.notes_file)
        body = server_latency.markdown(latency, command)
        section = "server-latency"
    elif args.bench == "callgraph":
        from prism_bench import callgraph

        graph_result = callgraph.run(args.projects, args.lang, args.limit_projects, args.cache_dir)
        if args.examples:
            print(callgraph.examples(graph_result, args.examples), file=sys.stderr)
        body = callgraph.markdown(graph_result, command)
        section = callgraph.section_name(args.projects, args.lang, args.limit_projects)
    elif args.bench in ("semble", "coverage"):
        from prism_bench.semble_cli import run_semble

        body, section = run_semble(args, command)
    elif args.bench == "find-server":
        from prism_bench import find_server

        body = find_server.markdown(find_server.run(args.queries, args.threads, args.repo), command)
        section = "find-server"
    else:
        from prism_bench import corpora, index_speed

        path = args.path or corpora.materialise_corpus()
        indexing = index_speed.run(path, edits=args.edits, embeddings=not args.no_embeddings)
        body = index_speed.markdown(indexing, path.name, command)
        section = "index-speed"
    print(body)
    if args.write:
        write_section(args.write, section, body)
    return 0


def _repoqa_multi(args: argparse.Namespace, command: str) -> int:
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
            _repoqa_strategy(args, haystacks, index_cache, command, language)
        return 0
    if args.no_embeddings:
        results = [repoqa_retrieval.run_lexical(h, index_cache, language) for language, h in by_language.items()]
        body = repoqa_retrieval.lexical_markdown(results, command)
        section = "repoqa-multi-lexical"
    else:
        from prism_code.retrieval.dense import Embedder

        embedder = Embedder()
        body = "\n\n".join(
            repoqa_retrieval.markdown(repoqa_retrieval.run(h, index_cache, embedder, language), command)
            for language, h in by_language.items())
        section = f"repoqa-multi-{args.lang}"
    print(body)
    if args.write:
        write_section(args.write, section, body)
    return 0


def _repoqa_strategy(args: argparse.Namespace, haystacks, index_cache: Path, command: str,
                     language: str = "python") -> int:
    from prism_bench import repoqa_strategies

    if args.view_tokens:
        body = f"Command: `{command}`\n\n" + repoqa_strategies.view_tokens(haystacks, index_cache, args.model,
                                                                          args.limit)
        print(body)
        if args.write:
            write_section(args.write, "repoqa-prism-view-tokens", body)
        return 0
    if args.strategy == "wim":
        from prism_bench import repoqa_wim

        wim = repoqa_wim.run_wim_bench(haystacks, index_cache, limit=args.limit or 20, model=args.model,
                                       threads=args.threads)
        body = repoqa_wim.markdown(wim, command)
        print(body)
        if args.write:
            write_section(args.write, f"repoqa-wim-{args.model}", body)
        return 0
    options = {}
    if args.strategy == "prism" and args.view:
        options["view"] = args.view
    if args.strategy == "prism" and args.evidence:
        options["evidence"] = args.evidence
    if args.strategy == "long-context" and args.token_budget:
        options["token_budget"] = args.token_budget
    result = repoqa_strategies.run(haystacks, index_cache, args.strategy, args.model, limit=args.limit,
                                   threads=args.threads, ablation=args.ablation, overlap=language != "python",
                                   remote=args.remote, **options)
    body = repoqa_strategies.markdown(result, command)
    print(body)
    if args.write:
        suffix = (f"-{args.view}" if args.strategy == "prism" and args.view else "") + (
            f"-{args.evidence}" if args.strategy == "prism" and args.evidence else "") + (
            "-ablation" if args.ablation else "") + ("-remote" if args.remote else "")
        prefix = "repoqa" if language == "python" else f"repoqa-{language}"
        write_section(args.write, f"{prefix}-{args.strategy}-{args.model}{suffix}", body)
    return 0


def _mode_list(text: str) -> list[str]:
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
