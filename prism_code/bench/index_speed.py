"""Indexing speed on a real repository: full index, embeddings, one-file edits, queries."""

from __future__ import annotations

import random
import resource
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from prism_code.embeddings import VectorCache
from prism_code.index import RepoIndex
from prism_code.retrieval.dense import Embedder
from prism_code.tasks.find_function import FunctionSearch

QUERIES = [
    "parse the command line arguments",
    "compute the mean of a tensor along a dimension",
    "load a dataset from disk and cache it",
    "convert a sparse adjacency matrix to an edge index",
    "raise an error when the input shape is invalid",
]


@dataclass
class IndexSpeed:
    files: int
    lines: int
    functions: int
    fragments: int
    lexical_s: float
    embeddings_s: float
    embedded: int
    edit_ms: list[float]
    query_lexical_ms: list[float]
    query_dense_ms: list[float]
    peak_rss_lexical_mib: float
    peak_rss_mib: float


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def run(source: Path, edits: int = 20, embeddings: bool = True) -> IndexSpeed:
    with tempfile.TemporaryDirectory(prefix="prism-bench-") as tmp:
        repo = Path(tmp) / source.name
        # Edits happen on a copy: the benchmarked repository is never modified.
        shutil.copytree(source, repo, symlinks=True)
        index = RepoIndex(repo, cache_dir=Path(tmp) / "cache")
        started = time.perf_counter()
        summary = index.update()
        lexical_s = time.perf_counter() - started
        rss_lexical = _peak_rss_mib()

        search = FunctionSearch(index, None)
        search.search(QUERIES[0])
        query_lexical = []
        for q in QUERIES * 4:
            t = time.perf_counter()
            search.search(q)
            query_lexical.append((time.perf_counter() - t) * 1000)

        embedder = Embedder()
        embedded, embeddings_s, query_dense = 0, 0.0, []
        if embeddings:
            started = time.perf_counter()
            corpus = search.corpus
            embedded = VectorCache(index.store, embedder).fill(corpus.code + corpus.cards)
            embeddings_s = time.perf_counter() - started
            dense = FunctionSearch(index, embedder)
            dense.search(QUERIES[0])
            for q in QUERIES * 4:
                t = time.perf_counter()
                dense.search(q)
                query_dense.append((time.perf_counter() - t) * 1000)

        rng = random.Random(7)
        paths = sorted(index.lines)
        edit_ms = []
        for n in range(edits):
            path = repo / rng.choice(paths)
            path.write_text(path.read_text(encoding="utf-8", errors="replace")
                            + f"\n\ndef bench_added_{n}(value):\n    return value + {n}\n")
            t = time.perf_counter()
            index.update()
            edit_ms.append((time.perf_counter() - t) * 1000)
        index.close()
        return IndexSpeed(
            files=summary.files, lines=summary.lines, functions=summary.functions,
            fragments=summary.fragments, lexical_s=lexical_s, embeddings_s=embeddings_s,
            embedded=embedded, edit_ms=edit_ms, query_lexical_ms=query_lexical,
            query_dense_ms=query_dense, peak_rss_lexical_mib=rss_lexical,
            peak_rss_mib=_peak_rss_mib())


def markdown(r: IndexSpeed, name: str, command: str) -> str:
    from prism_code.bench.report import table

    rows = [
        ["repository", f"{name}: {r.files} files, {r.lines} lines, {r.functions} functions, {r.fragments} fragments"],
        ["full lexical index (scan, parse, graph, fragments, relations, store)", f"{r.lexical_s:.2f} s ({r.lines / r.lexical_s:,.0f} lines/s)"],
        ["embeddings (function source + card)", f"{r.embeddings_s:.1f} s for {r.embedded} texts"],
        ["incremental update after editing one file, p50 / p95", f"{statistics.median(r.edit_ms):.0f} / {_percentile(r.edit_ms, 0.95):.0f} ms"],
        ["find query, lexical only, p50", f"{statistics.median(r.query_lexical_ms):.1f} ms"],
        ["find query, with embeddings, p50", f"{statistics.median(r.query_dense_ms):.1f} ms" if r.query_dense_ms else "n/a"],
        ["peak RSS after lexical index / after embeddings", f"{r.peak_rss_lexical_mib:.0f} / {r.peak_rss_mib:.0f} MiB"],
    ]
    return f"Command: `{command}`\n\n" + table(["measure", "result"], rows)
