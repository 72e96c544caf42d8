"""Indexing speed on a real repository: full index, embeddings, one-file edits, queries.

An edit is timed as the user meets it: the first phase of the update (files, graph,
fragments), then the first search after it (which rebuilds the lexical corpus), whose sum
is the time until search sees the edit; the relation phase, which runs after that in the
background, is timed on its own.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
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
    edit_ms: list[float]  # update phase 1: files, definitions, graph, fragments published
    edit_search_ms: list[float]  # the first search after the edit (corpus rebuilt)
    edit_relations_ms: list[float]  # update phase 2: relations near the edit
    edit_relations_rows: list[int]  # related sets phase 2 rewrote
    query_lexical_ms: list[float]
    query_dense_ms: list[float]
    peak_rss_lexical_mib: float
    peak_rss_mib: float
    load: tuple[float, float]  # 1-minute load average before and after: the machine is shared


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def run(source: Path, edits: int = 20, embeddings: bool = True) -> IndexSpeed:
    load_before = os.getloadavg()[0]
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
        edit_ms, edit_search_ms, edit_relations_ms, edit_relations_rows = [], [], [], []
        for n in range(edits):
            path = repo / rng.choice(paths)
            path.write_text(path.read_text(encoding="utf-8", errors="replace")
                            + f"\n\ndef bench_added_{n}(value):\n    return value + {n}\n")
            t = time.perf_counter()
            index.update(relations=False)
            edit_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            found = search.search(f"bench added {n} value", top=50, alpha=0.0)
            edit_search_ms.append((time.perf_counter() - t) * 1000)
            if not any(f.name == f"bench_added_{n}" for f in found):
                raise RuntimeError(f"search does not see the function added to {path}")
            t = time.perf_counter()
            edit_relations_rows.append(index.finish_relations())
            edit_relations_ms.append((time.perf_counter() - t) * 1000)
        index.close()
        return IndexSpeed(
            files=summary.files, lines=summary.lines, functions=summary.functions,
            fragments=summary.fragments, lexical_s=lexical_s, embeddings_s=embeddings_s,
            embedded=embedded, edit_ms=edit_ms, edit_search_ms=edit_search_ms,
            edit_relations_ms=edit_relations_ms, edit_relations_rows=edit_relations_rows,
            query_lexical_ms=query_lexical,
            query_dense_ms=query_dense, peak_rss_lexical_mib=rss_lexical,
            peak_rss_mib=_peak_rss_mib(), load=(load_before, os.getloadavg()[0]))


def _p50_p95(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"{statistics.median(values):.0f} / {_percentile(values, 0.95):.0f} ms"


def markdown(r: IndexSpeed, name: str, command: str) -> str:
    from prism_bench.report import table

    seen = [a + b for a, b in zip(r.edit_ms, r.edit_search_ms)]
    rows = [
        ["repository", f"{name}: {r.files} files, {r.lines} lines, {r.functions} functions, {r.fragments} fragments"],
        ["full lexical index (scan, parse, graph, fragments, relations, store)",
         f"{r.lexical_s:.2f} s ({r.lines / r.lexical_s:,.0f} lines/s)"],
        ["embeddings (function source + card)",
         f"{r.embeddings_s:.1f} s for {r.embedded} texts" if r.embedded else "not measured (--no-embeddings)"],
        ["one-file edit: update until search and completion see it (files, graph, fragments), p50 / p95",
         _p50_p95(r.edit_ms)],
        ["one-file edit: first search after it (lexical corpus rebuilt), p50 / p95", _p50_p95(r.edit_search_ms)],
        ["one-file edit: time until search sees the edit (the two above), p50 / p95", _p50_p95(seen)],
        ["one-file edit: relations near it, in the background afterwards, p50 / p95", _p50_p95(r.edit_relations_ms)
         + (f" ({statistics.median(r.edit_relations_rows):.0f} / {_percentile(r.edit_relations_rows, 0.95):.0f}"
            " related sets rewritten)" if r.edit_relations_rows else "")],
        ["find query, lexical only, p50", f"{statistics.median(r.query_lexical_ms):.1f} ms"],
        ["find query, with embeddings, p50",
         f"{statistics.median(r.query_dense_ms):.1f} ms" if r.query_dense_ms else "n/a"],
        ["peak RSS after lexical index / after embeddings",
         f"{r.peak_rss_lexical_mib:.0f} MiB / " + (f"{r.peak_rss_mib:.0f} MiB" if r.embedded else "n/a")],
    ]
    return (f"Command: `{command}`\n\n" + table(["measure", "result"], rows)
            + f"\n\nLoad average (1 min) {r.load[0]:.2f} before, {r.load[1]:.2f} after, on 2 cores.")
