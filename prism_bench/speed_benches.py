"""The speed benchmarks as `prism-code bench` subcommands: notes, server, index, scale, hover
and keystroke-profile (each a `Bench`; `prism_bench.registry` lists them)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from prism_bench.bench import DEFAULT_MODEL, Bench, Section, add_threads, add_write
from prism_code.cli_args import bounded_int, non_empty_path

DEFAULT_CORPUS = "default: torch-geometric 2.5.1 from PyPI, ~93k lines"


def _notes_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=non_empty_path, nargs="?",
                   help="repository (default: marshmallow 3.21.1 from PyPI, the RepoQA haystack)")
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--limit", type=bounded_int(1), default=40, help="notes to write for the steady rate")
    add_threads(p)
    add_write(p)


def _run_notes(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import notes_speed, repoqa_data

    path = args.path or next(h.root for h in repoqa_data.load_haystacks() if h.package == "marshmallow")
    speed = notes_speed.run(path, model=args.model, limit=args.limit, threads=args.threads)
    yield Section(f"notes-{args.model}", notes_speed.markdown(speed, command))


def _server_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=non_empty_path, nargs="?", help=f"repository to index ({DEFAULT_CORPUS})")
    p.add_argument("--notes-file", type=non_empty_path, metavar="FILE",
                   help="then turn notes on, open this file (relative to PATH) and time its notes")
    add_write(p)


def _run_server(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import corpora, server_latency

    latency = server_latency.run(args.path or corpora.materialise_corpus(), notes_file=args.notes_file)
    yield Section("server-latency", server_latency.markdown(latency, command))


def _index_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=non_empty_path, nargs="?", help=f"repository to index ({DEFAULT_CORPUS})")
    p.add_argument("--edits", type=bounded_int(0), default=20, help="one-file edits to time")
    p.add_argument("--no-embeddings", action="store_true")
    add_write(p)


def _run_index(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import corpora, index_speed

    path = args.path or corpora.materialise_corpus()
    indexing = index_speed.run(path, edits=args.edits, embeddings=not args.no_embeddings)
    yield Section("index-speed", index_speed.markdown(indexing, path.name, command))


def _hover_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mb", type=float, default=5.0, help="size of the open buffer hovered, in MB")
    p.add_argument("--repeat", type=bounded_int(1), default=3, help="hovers timed at each stage")
    add_write(p)


def _run_hover(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import hover_speed

    yield Section("hover-speed", hover_speed.markdown(hover_speed.run(args.mb, args.repeat), command))


def _keystroke_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", type=bounded_int(1), default=20, help="RepoEval tasks whose keystroke is profiled")
    p.add_argument("--model", default=DEFAULT_MODEL)
    add_threads(p, default=1)
    p.add_argument("--cprofile", type=non_empty_path, metavar="FILE",
                   help="write a cProfile of the keystrokes on the new path here")
    add_write(p)


def _run_keystroke(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import keystroke_profile

    profile = keystroke_profile.run(args.tasks, args.model, args.threads, args.cprofile)
    yield Section(f"keystroke-profile-{args.model}", keystroke_profile.markdown(profile, command))


def _scale_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", type=non_empty_path,
                   help="source tree to measure (default: sympy 1.13.3's sdist from PyPI, ~746k lines)")
    p.add_argument("--embeddings", action="store_true",
                   help="also time `prism-code index` with embeddings (a quarter of an hour on sympy)")
    add_write(p)


def _run_scale(args: argparse.Namespace, command: str) -> Iterator[Section]:
    from prism_bench import scale_bench

    repo = args.repo or scale_bench.materialise_sdist()
    result = scale_bench.run(repo, embeddings=args.embeddings)
    yield Section("scale", scale_bench.markdown(result, command))


NOTES = Bench("notes", "function notes written by the local model per minute", _notes_arguments, _run_notes)
SERVER = Bench("server", "language server: requests blocked while it indexes, RSS", _server_arguments, _run_server)
INDEX = Bench("index", "indexing speed on a repository", _index_arguments, _run_index)
HOVER = Bench("hover", "hover latency on a big open buffer, before and after edits", _hover_arguments, _run_hover)
KEYSTROKE_PROFILE = Bench("keystroke-profile", "a warm keystroke's completion time by phase, with and without "
                          "the shortcuts", _keystroke_arguments, _run_keystroke)
SCALE = Bench("scale", "a large repository: index time and RSS, disk, CLI find cold, the server's first find",
              _scale_arguments, _run_scale)
