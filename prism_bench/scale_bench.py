"""`prism-code bench scale`: a large repository as a new user meets it (issue #29).

Every step runs the way a user runs it, in its own process, against a fresh cache
directory, so each peak RSS is that process's own (`os.wait4` returns the child's
rusage; no other child's peak leaks in); a step that starts worker processes (a large
index parses and relates on every core) also reports the peak of their RSS summed with
its own, sampled from /proc:

1. `prism-code index --no-embeddings` from nothing: wall, CPU and peak RSS;
2. the index on disk (the database and the saved lexical copy);
3. `prism-code find --json` for three queries, each a cold process;
4. with `--embeddings`, `prism-code index` again: the vectors and their rate;
5. the language server on the same cache: first find with results after `initialize`,
   find p50 once the index has loaded, its RSS (prism_bench/scale_server.py).

The default repository is sympy 1.13.3's sdist from PyPI (746k lines, 1,560 files).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prism_bench import corpora
from prism_bench.lsp_subprocess import load_average
from prism_bench.scale_server import ServerRun, measure

SCALE_PACKAGE, SCALE_VERSION = "sympy", "1.13.3"
QUERIES = ("compute the determinant of a matrix", "solve a system of linear equations",
           "simplify a trigonometric expression")
# How often a step's process tree is sampled for its summed RSS.
RSS_SAMPLE_S = 0.25
CHILD_TIMEOUT_S = 3 * 3600.0  # embedding sympy takes a quarter of an hour on 2 cores


@dataclass(frozen=True)
class ChildRun:
    """One command-line process: its wall and CPU seconds, peak RSS and stdout."""

    wall_s: float
    user_s: float
    sys_s: float
    peak_rss_mib: float
    stdout: str
    tree_rss_mib: float = 0.0  # peak of the RSS summed over the process and its descendants


@dataclass
class ScaleRun:
    repo: str
    index: ChildRun
    summary: dict[str, object]  # `index --json`'s counts
    database_mib: float  # index.sqlite with its WAL
    saved_copy_mib: float  # the saved lexical index (and vector files) beside it
    finds: list[tuple[str, ChildRun]]
    server: ServerRun
    cold_server: ServerRun | None = None  # the server opening the folder with no index at all
    embed: ChildRun | None = None
    embedded: int = 0
    load: list[str] = field(default_factory=list)  # load average before and after


def run_child(argv: Sequence[str], env: dict[str, str]) -> ChildRun:
    """Run `argv` to its end; its own rusage, not the sum of every child this process had."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, env=env)
        tree_peak = 0
        try:
            while True:
                done, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if done:
                    break
                tree_peak = max(tree_peak, _tree_rss(proc.pid))
                time.sleep(RSS_SAMPLE_S)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{' '.join(argv[2:5])}... exited with {proc.returncode}:\n{tail}")
    # ru_maxrss is KiB on Linux (bytes on macOS, which this bench does not time).
    return ChildRun(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024, stdout, tree_peak / (1 << 20))


def _tree_rss(root: int) -> int:
    """Bytes resident in `root` and every process below it, now."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "prism_code.cli", *args]


def _mib(paths: Sequence[Path]) -> float:
    return sum(p.stat().st_size for p in paths if p.is_file()) / (1 << 20)


def disk_use(cache: Path) -> tuple[float, float]:
    """MiB of the index databases (with WAL) and of everything else beside them."""
    files = [p for p in cache.rglob("*") if p.is_file()]
    database = [p for p in files if p.name.startswith("index.sqlite")]
    rest = [p for p in files if p.parent.name != "workspaces" and p not in database
            and any(part == "lexical" for part in p.parts)]
    return _mib(database), _mib(rest)


def run(repo: Path, embeddings: bool = False, queries: Sequence[str] = QUERIES) -> ScaleRun:
    repo = repo.resolve()
    load = [load_average()]
    with tempfile.TemporaryDirectory(prefix="prism-scale-") as scratch:
        cache = Path(scratch) / "cache"
        env = {**os.environ, "PRISM_CODE_CACHE_DIR": str(cache)}
        index = run_child(_cli("index", str(repo), "--no-embeddings", "--json"), env)
        summary = json.loads(index.stdout.strip().splitlines()[-1])
        database_mib, saved_mib = disk_use(cache)
        finds = [(q, run_child(_cli("find", str(repo), q, "--json"), env)) for q in queries]
        embed, embedded = None, 0
        if embeddings:
            embed = run_child(_cli("index", str(repo), "--json"), env)
            embedded = int(json.loads(embed.stdout.strip().splitlines()[-1])["embedded"])
        server = asyncio.run(measure(repo, cache, queries))
        cold_server = asyncio.run(measure(repo, Path(scratch) / "cold-cache", queries))
        load.append(load_average())
    return ScaleRun(str(repo), index, summary, database_mib, saved_mib, finds, server, cold_server, embed, embedded,
                    load)


def materialise_sdist(package: str = SCALE_PACKAGE, version: str = SCALE_VERSION,
                      cache_dir: Path | None = None) -> Path:
    """The unpacked sdist of `package==version` under the bench cache (fetched once)."""
    cache_dir = corpora.default_cache_dir() if cache_dir is None else cache_dir
    dest = cache_dir / f"{package}-{version}-sdist"
    marker = dest.with_name(dest.name + corpora.MARKER_SUFFIX)
    if marker.is_file() and dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.tmp-") as tmp:
        download = Path(tmp) / "download"
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                               "--disable-pip-version-check", "--no-input", "--quiet", "-d", str(download),
                               f"{package}=={version}"], capture_output=True, text=True, timeout=1800)
        archives = sorted(download.glob("*.tar.gz")) if download.is_dir() else []
        if proc.returncode != 0 or len(archives) != 1:
            raise corpora.DownloadError(f"pip download {package}=={version} (sdist) failed:\n"
                                        f"{(proc.stderr + proc.stdout)[-2000:]}", network=False)
        staging = Path(tmp) / "tree"
        with tarfile.open(archives[0]) as tar:
            tar.extractall(staging, filter="data")  # refuses links and paths that leave staging
        tops = list(staging.iterdir())
        tree = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging
        if dest.exists():
            shutil.rmtree(dest)
        tree.rename(dest)
        marker.write_text(json.dumps({"package": package, "version": version, "artifact": archives[0].name}) + "\n")
    return dest


def _s(run: ChildRun) -> str:
    return f"{run.wall_s:.1f} s wall ({run.user_s:.1f} s user + {run.sys_s:.1f} s sys)"


def markdown(r: ScaleRun, command: str) -> str:
    s = r.summary
    lines = [
        f"Command: `{command}`",
        "",
        f"Repository {Path(r.repo).name}: {s.get('files')} files, {s.get('lines')} lines, "
        f"{s.get('functions')} functions, {s.get('fragments')} fragments ({s.get('skipped')} files skipped). "
        "Each command-line step is its own process on a fresh cache directory (peak RSS from `wait4`); "
        f"load average {r.load[0]} before, {r.load[-1]} after.",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| `index --no-embeddings`, cold | {_s(r.index)}, peak RSS {r.index.peak_rss_mib:.0f} MiB "
        f"(with its worker processes, summed: {r.index.tree_rss_mib:.0f} MiB) |",
        f"| index on disk | database {r.database_mib:.1f} MiB, saved lexical copy {r.saved_copy_mib:.1f} MiB |",
    ]
    for query, find in r.finds:
        lines.append(f"| CLI `find` cold, \"{query}\" | {_s(find)}, peak RSS {find.peak_rss_mib:.0f} MiB |")
    if r.embed is not None:
        rate = r.embedded / r.embed.wall_s if r.embed.wall_s else 0.0
        lines.append(f"| `index` (embeddings) | {r.embedded} vectors in {_s(r.embed)}: {rate:.1f} vectors/s, "
                     f"peak RSS {r.embed.peak_rss_mib:.0f} MiB |")
    v = r.server
    lines += [
        f"| server: `initialize` answered | {v.initialize_s:.2f} s |",
        f"| server: first find answered | {v.first_answer_s:.2f} s after sending `initialize` |",
        f"| server: first find with results | {v.first_results_s:.2f} s ({v.empty_answers} empty answers before; "
        f"{'from the saved lexical index' if v.first_from_saved else 'from the loaded index'}; "
        f"top 3 {', '.join(v.first_top)}) |",
        f"| server: RSS at that answer | {v.rss_first_results_mib:.0f} MiB |",
        f"| server: index loaded (state `{v.state_loaded}`) | {v.loaded_s:.1f} s |",
        f"| server: find p50 / max once loaded ({len(v.find_ms)} finds) | {v.find_p50_ms:.1f} / "
        f"{max(v.find_ms, default=0.0):.1f} ms |",
        f"| server: RSS at the end / peak | {v.rss_end_mib:.0f} / {v.rss_peak_mib:.0f} MiB |",
    ]
    if (c := r.cold_server) is not None:
        source = ("from the files parsed so far" if c.first_from_partial else
                  "from the saved lexical index" if c.first_from_saved else "from the published index")
        lines += [
            f"| server, folder never indexed: first find with results | {c.first_results_s:.2f} s after sending "
            f"`initialize` ({c.empty_answers} empty answers before, the first at {c.first_answer_s:.2f} s; "
            f"{source}; top 3 {', '.join(c.first_top)}) |",
            f"| server, folder never indexed: index published (state `{c.state_loaded}`) | {c.loaded_s:.1f} s; "
            f"find p50 / max after {c.find_p50_ms:.1f} / {max(c.find_ms, default=0.0):.1f} ms; "
            f"RSS peak {c.rss_peak_mib:.0f} MiB |",
        ]
    return "\n".join(lines)
