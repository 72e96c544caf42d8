"""`prism-code bench find-server`: a model find through the language server, as the editor sees it.

The real server runs as a subprocess (`python -m prism_code.lsp`) on stdio with a fresh
cache and indexes one RepoQA Python haystack (embeddings included) once. Completions and
the notes pass are off and `prism.completion.model` is pinned to the 0.5B (so `auto` never
measures the 1.5B in a quiet moment): the model thread runs nothing but the finds. A pygls
client then asks `workspace/executeCommand prism.findFunction {description, top: 10,
strategy: "prism", updateToken}` for each query, the way VS Code's pick does (issue #16):

1. the time to the first `prism/findUpdate` (retrieval's list, sent from the model thread
   when the job starts; target 0.3 s), to the final answer, and the number of updates;
2. for a second copy of each query, `$/cancelRequest` right after its 2nd update (the first
   candidate the model scored), then the time until the model is idle (defined below;
   target 0.5 s);
3. the prompt tokens the model evaluated per query, from `prism.status`'s model counters.

"Model idle" follows tests/test_server_model_find.py: the cancelled request's response has
arrived AND its `prism-find/` work-done progress has ended (the server ends it in the model
job's `finally`, so the model thread is free from then on) AND a `prism.status` sent after
both is answered (the server serves on). As a check that the model thread really takes new
work, a probe is sent together with the cancel: the same find again, whose first update
(retrieval's list, computed on the model thread) can only arrive once the cancelled job has
let go; it is cancelled in turn at that first update. A completion request is not the probe:
its answer waits out the debounce (150-400 ms) and its own prefill, and turning completions
on adds warm-ups on the model thread that would compete with the finds.

Queries alternate between a needle's long description (> 40 words: the likelihood of the
description after each candidate's body) and its first sentence (<= 40 words: the signature
PMI path). A first find on another needle runs before them to load the model and write
PRISM's prefix state file; it is reported apart as the cold find.

The library never imports the server: it is driven only through the protocol.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from prism_bench.lsp_subprocess import BenchClient, load_average, running_server, shut_down
from prism_bench.repoqa_data import Haystack, Needle, is_needle
from prism_code.retrieval.fusion import SHORT_QUERY_WORDS

REPO = "psf/black"  # 28 files, 12.5k lines: a mid-sized RepoQA Python haystack
MODEL = "qwen2.5-coder-0.5b"
TOP = 10
FIRST_LIST_TARGET_S = 0.3  # issue #16
CANCEL_TARGET_S = 0.5  # issue #16
INDEX_TIMEOUT_S = 3600.0
FIND_TIMEOUT_S = 1800.0
STOP_TIMEOUT_S = 120.0
FIND_UPDATE = "prism/findUpdate"
FIND_PROGRESS = "prism-find/"


@dataclass(frozen=True)
class Query:
    needle: Needle
    form: str  # "long" (the description as written) or "sentence" (its first sentence)
    text: str

    @property
    def words(self) -> int:
        return len(self.text.split())

    @property
    def path(self) -> str:
        """Which evidence prism reads: the signature PMI for a sentence, bodies for a long text."""
        return "signature" if self.words <= SHORT_QUERY_WORDS else "long"

    @property
    def label(self) -> str:
        return f"`{self.needle.name}` {self.form}"


@dataclass
class FindRun:
    query: Query
    first_s: float | None  # sent -> first prism/findUpdate (retrieval's list)
    final_s: float  # sent -> the response
    updates: int
    evaluated: int | None  # prompt tokens the model evaluated (status counters' delta)
    reused: int | None  # prompt tokens kept from the KV cache or restored from state files
    decoded: int | None
    rank_first: int | None  # the needle's 1-based rank in retrieval's list (None: not in the top)
    rank_final: int | None


@dataclass
class CancelRun:
    query: Query
    at_update_s: float  # sent -> the 2nd update, when the cancel went out
    answered: bool  # the find answered before the cancel reached it
    response_s: float | None  # cancel -> the cancelled request's response
    stopped_s: float | None  # cancel -> its prism-find/ progress ended (the model job returned)
    idle_s: float | None  # cancel -> a prism.status sent after both is answered
    probe_s: float | None  # cancel -> the probe find's first update (the model thread took it)


@dataclass
class FindServer:
    repo: str
    version: str
    threads: int
    model: str = MODEL
    index_s: float = 0.0
    functions: int = 0
    cold: FindRun | None = None
    runs: list[FindRun] = field(default_factory=list)
    cancels: list[CancelRun] = field(default_factory=list)
    long_query_bodies: int = 0  # find_prism's setting when the run started: 0, every body is read
    prefill_tokens_per_s: float | None = None  # measured just before the server started
    decode_ms_per_token: float | None = None
    load: str = ""


# ---- pure parts ----------------------------------------------------------------------------


def first_sentence(description: str) -> str:
    """A RepoQA description's first sentence, without its "1. **Purpose**:" heading; cut to
    SHORT_QUERY_WORDS words when longer."""
    text = " ".join(description.split())
    text = re.sub(r"^\d+\.\s*", "", text)
    text = re.sub(r"^\*\*[^*]+\*\*\s*:?\s*", "", text)
    match = re.search(r"(?<=[.!?])\s", text)
    sentence = text[:match.start()] if match else text
    return " ".join(sentence.split()[:SHORT_QUERY_WORDS])


def pick_queries(needles: Sequence[Needle], n: int) -> tuple[Query, list[Query]]:
    """The cold find's query (the last needle's first sentence) and `n` queries over the
    other needles in order, each needle's long description and then its first sentence."""
    if len(needles) < 2:
        raise ValueError("the haystack needs two needles at least")
    warm, rest = needles[-1], needles[:-1]
    if not 1 <= n <= 2 * len(rest):
        raise ValueError(f"--queries must be from 1 to {2 * len(rest)} on this haystack")
    forms = [Query(needle, form, needle.description.strip() if form == "long"
                   else first_sentence(needle.description))
             for needle in rest for form in ("long", "sentence")]
    return Query(warm, "sentence", first_sentence(warm.description)), forms[:n]


def summary(values: Sequence[float]) -> tuple[float, float] | None:
    """(p50, max) of the values; None when there are none."""
    return (statistics.median(values), max(values)) if values else None


def needle_rank(results: Sequence[dict[str, Any]], root: Path, needle: Needle) -> int | None:
    """The 1-based rank of the result that is the needle's function; None when none is."""
    target = (root / needle.path).resolve()
    for rank, result in enumerate(results, 1):
        where = Path(unquote(urlsplit(str(result.get("uri", ""))).path))
        lines = result.get("range") or {}
        start = (lines.get("start") or {}).get("line")
        if where == target and start is not None and is_needle(needle.path, start + 1, needle):
            return rank
    return None


def _seconds(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _rank(value: int | None) -> str:
    return "-" if value is None else str(value)


def _p50_max(values: Sequence[float], digits: int = 2) -> tuple[str, str]:
    found = summary(values)
    return ("-", "-") if found is None else (f"{found[0]:.{digits}f}", f"{found[1]:.{digits}f}")


def markdown(r: FindServer, command: str) -> str:
    from prism_bench.report import table

    rows = []
    for run, cancel in itertools.zip_longest(r.runs, r.cancels):
        query = (run or cancel).query
        rows.append([query.label, query.words, query.path,
                     _seconds(run.first_s) if run else "-", _seconds(run.final_s, 1) if run else "-",
                     run.updates if run else "-", "-" if run is None or run.evaluated is None else run.evaluated,
                     f"{_rank(run.rank_first)} -> {_rank(run.rank_final)}" if run else "-",
                     _seconds(cancel.at_update_s, 1) if cancel else "-",
                     ("answered first" if cancel.answered else _seconds(cancel.idle_s)) if cancel else "-",
                     _seconds(cancel.probe_s) if cancel else "-"])
    firsts = [run.first_s for run in r.runs if run.first_s is not None]
    finals = [run.final_s for run in r.runs]
    idles = [c.idle_s for c in r.cancels if c.idle_s is not None and not c.answered]
    stops = [c.stopped_s for c in r.cancels if c.stopped_s is not None and not c.answered]
    probes = [c.probe_s for c in r.cancels if c.probe_s is not None and not c.answered]
    responses = [c.response_s * 1000 for c in r.cancels if c.response_s is not None and not c.answered]
    by_path: dict[str, list[FindRun]] = {}
    for run in r.runs:
        by_path.setdefault(run.query.path, []).append(run)

    def tokens(runs: Sequence[FindRun]) -> str:
        evaluated = [run.evaluated for run in runs if run.evaluated is not None]
        return "-" if not evaluated else f"{statistics.median(evaluated):.0f}"

    summary_rows = [
        ["first update (retrieval's list), s", *_p50_max(firsts), f"<= {FIRST_LIST_TARGET_S}",
         f"{sum(v <= FIRST_LIST_TARGET_S for v in firsts)}/{len(firsts)}"],
        ["final answer, s", *_p50_max(finals, 1), "", ""],
        ["cancel -> model idle, s", *_p50_max(idles), f"<= {CANCEL_TARGET_S}",
         f"{sum(v <= CANCEL_TARGET_S for v in idles)}/{len(idles)}"],
        ["cancel -> model job ended (progress end), s", *_p50_max(stops), "", ""],
        ["cancel -> cancelled response, ms", *_p50_max(responses, 0), "", ""],
        ["cancel -> a new find's first update, s", *_p50_max(probes), "", ""],
    ]
    speed = ("" if r.prefill_tokens_per_s is None else
             f" The host prefilled {r.prefill_tokens_per_s:.0f} tokens/s and decoded "
             f"{r.decode_ms_per_token:.0f} ms/token with {r.model} on {r.threads} thread(s), measured "
             f"just before the server started.")
    cold = r.cold
    long_path = ("the description's likelihood after each body" if not r.long_query_bodies else
                 f"the signature PMI of every candidate, then the description's likelihood after the bodies "
                 f"of {r.long_query_bodies} (`long_query_bodies` {r.long_query_bodies})")
    lines = [
        f"Command: `{command}`",
        "",
        f"Repository {r.repo} {r.version} (RepoQA Python haystack, {r.functions} functions), indexed "
        f"from scratch with embeddings by `python -m prism_code.lsp` in {r.index_s:.0f} s; then "
        f"`prism.findFunction {{description, top: {TOP}, strategy: \"prism\", updateToken}}` through the "
        f"server on stdio for each query, completions and notes off (the model thread runs only the "
        f"finds), `prism.completion.model` {r.model}, `prism.threads` {r.threads}. Queries: RepoQA "
        f"needles' descriptions as written (> {SHORT_QUERY_WORDS} words: {long_path}) and their first "
        f"sentence (<= {SHORT_QUERY_WORDS} words: the signature PMI path). Load average {r.load} at the "
        f"end: other jobs shared the 2 cores, so the seconds are inflated accordingly; the token counts "
        f"do not depend on load.{speed}",
        "",
        "Model idle after a cancel: the cancelled request's response has arrived, its `prism-find/` "
        "work-done progress has ended (the server ends it when the model job returns, so the model "
        "thread is free), and a `prism.status` sent after both is answered. The cancel goes out "
        "right after the request's 2nd `prism/findUpdate` (the first candidate the model scored); "
        "with it goes the same find again as a probe, whose first update (computed on the model "
        "thread) shows when the thread takes new work.",
        "",
        table(["metric", "p50", "max", "target", "within"], summary_rows),
        "",
        table(["query", "words", "path", "first update s", "answer s", "updates", "tokens evaluated",
               "needle rank (list -> answer)", "cancelled at s", "cancel -> idle s", "cancel -> new find s"],
              rows),
        "",
        "Prompt tokens the model evaluated per query (p50, `prism.status` model counters): "
        + ", ".join(f"{path} {tokens(runs)} ({len(runs)} quer{'y' if len(runs) == 1 else 'ies'})"
                    for path, runs in sorted(by_path.items()))
        + "." + ("" if not r.runs or r.runs[0].reused is None else
                 " Kept from the KV cache or restored from state files besides: "
                 + ", ".join(str(run.reused) for run in r.runs) + "."),
    ]
    if cold is not None:
        lines += ["", f"Cold find before these ({cold.query.label}, on a server that had not loaded the "
                      f"model yet): first update {_seconds(cold.first_s)} s, answer {cold.final_s:.1f} s, "
                      f"{cold.updates} updates, {cold.evaluated if cold.evaluated is not None else '?'} "
                      "tokens evaluated."]
    return "\n".join(lines)


# ---- the client ----------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """pygls' params of a method it has no type for (named tuples) as JSON's dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    plain = _plain(value)
    return plain if isinstance(plain, dict) else dict(getattr(value, "__dict__", {}))


class _Client(BenchClient):
    """Records find updates and prism-find progress with their arrival times."""

    def __init__(self) -> None:
        super().__init__()
        self.updates: dict[str, list[tuple[float, dict[str, Any]]]] = {}
        self.begun: list[tuple[float, str]] = []  # prism-find/ progress tokens, in order
        self.ended: dict[str, float] = {}
        self.changed = asyncio.Event()

        @self.feature(FIND_UPDATE)
        def on_update(params: Any) -> None:
            update = _as_dict(params)
            self.updates.setdefault(str(update.get("token")), []).append((time.monotonic(), update))
            self.changed.set()

        @self.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            token, value = str(params.token), params.value
            if not token.startswith(FIND_PROGRESS):
                return
            kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
            if kind == "begin":
                self.begun.append((time.monotonic(), token))
            elif kind == "end":
                self.ended[token] = time.monotonic()
            self.changed.set()

    async def until(self, ready: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not ready():
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what}: nothing within {timeout_s:.0f} s; server said: "
                                   + " | ".join(self.messages[-5:]))
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
            except TimeoutError:
                pass

    async def status(self) -> dict[str, Any]:
        return _as_dict(await self.workspace_execute_command_async(
            types.ExecuteCommandParams(command="prism.status", arguments=[])))

    def find(self, query: Query, token: str) -> asyncio.Future[Any]:
        params = types.ExecuteCommandParams(command="prism.findFunction", arguments=[{
            "description": query.text, "top": TOP, "strategy": "prism", "updateToken": token}])
        return asyncio.ensure_future(self.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=token))

    def cancel(self, token: str) -> None:
        self.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=token))

    def job_of(self, token: str) -> str | None:
        """The prism-find/ progress of the find whose updates carry `token`: the last one begun
        before its first update (the model thread runs one job at a time)."""
        seen = self.updates.get(token)
        if not seen:
            return None
        begun = [name for at, name in self.begun if at <= seen[0][0]]
        return begun[-1] if begun else None


def _tokens(status: dict[str, Any]) -> dict[str, int] | None:
    counters = (status.get("model") or {}).get("tokens")
    return counters if isinstance(counters, dict) else None


def _delta(before: dict[str, int] | None, after: dict[str, int] | None, key: str) -> int | None:
    if before is None and after is not None:
        return int(after.get(key, 0))
    if before is None or after is None:
        return None
    return int(after.get(key, 0)) - int(before.get(key, 0))


_ids = itertools.count(1)


async def _full_find(client: _Client, query: Query, root: Path) -> FindRun:
    token = f"find-{next(_ids)}"
    before = _tokens(await client.status())
    sent = time.monotonic()
    answer = await asyncio.wait_for(client.find(query, token), FIND_TIMEOUT_S)
    answered = time.monotonic()
    job = client.job_of(token)
    if job is not None:  # the progress ends just after the response: wait, so the next request is clean
        await client.until(lambda: job in client.ended, STOP_TIMEOUT_S, "the find's progress end")
    after = _tokens(await client.status())
    updates = client.updates.get(token, [])
    results = answer if isinstance(answer, list) else []
    return FindRun(query, updates[0][0] - sent if updates else None, answered - sent, len(updates),
                   _delta(before, after, "encoded"),
                   None if after is None else sum(_delta(before, after, k) or 0 for k in ("reused", "restored")),
                   _delta(before, after, "decoded"),
                   needle_rank(updates[0][1].get("results") or [], root, query.needle) if updates else None,
                   needle_rank([_as_dict(r) for r in results], root, query.needle))


async def _cancelled_find(client: _Client, query: Query) -> CancelRun:
    token, probe = f"find-{next(_ids)}", f"probe-{next(_ids)}"
    sent = time.monotonic()
    request = client.find(query, token)
    await client.until(lambda: len(client.updates.get(token, [])) >= 2 or request.done(), FIND_TIMEOUT_S,
                       "the 2nd update")
    if request.done():  # answered before a 2nd update: nothing left to cancel
        await request
        return CancelRun(query, time.monotonic() - sent, True, None, None, None, None)
    client.cancel(token)
    cancelled = time.monotonic()
    probing = client.find(query, probe)
    job = client.job_of(token)
    answered = False
    try:
        await asyncio.wait_for(request, STOP_TIMEOUT_S)
        answered = True  # the answer was on its way when the cancel arrived
    except JsonRpcRequestCancelled:
        pass
    response_at = time.monotonic()
    await client.until(lambda: job is None or job in client.ended, STOP_TIMEOUT_S, "the cancelled job's end")
    stopped_at = client.ended.get(job, time.monotonic()) if job is not None else None
    await client.status()
    idle_at = time.monotonic()
    # The probe's first update: the model thread took the next job.
    await client.until(lambda: bool(client.updates.get(probe)) or probing.done(), FIND_TIMEOUT_S,
                       "the probe's first update")
    probe_at = client.updates[probe][0][0] if client.updates.get(probe) else None
    client.cancel(probe)
    try:
        await asyncio.wait_for(probing, STOP_TIMEOUT_S)
    except JsonRpcRequestCancelled:
        pass
    probe_job = client.job_of(probe)
    await client.until(lambda: probe_job is None or probe_job in client.ended, STOP_TIMEOUT_S,
                       "the probe's end")
    return CancelRun(query, client.updates[token][1][0] - sent, answered, response_at - cancelled,
                     None if stopped_at is None else stopped_at - cancelled, idle_at - cancelled,
                     None if probe_at is None else probe_at - cancelled)


def _indexed(status: dict[str, Any]) -> bool:
    embeddings = status.get("embeddings") or {}
    return (status.get("state") == "idle" and bool(embeddings.get("total"))
            and embeddings.get("done") == embeddings.get("total"))


async def _measure(haystack: Haystack, cold: Query, queries: list[Query], threads: int,
                   cache: Path, result: FindServer) -> FindServer:
    client = _Client()
    root = haystack.root.resolve()
    async with running_server(client, cache) as server:
        await client.initialize_async(types.InitializeParams(
            process_id=os.getpid(), root_uri=root.as_uri(),
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True)),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options={"cacheDir": str(cache / "index"), "threads": threads,
                                    "completion": {"enabled": False, "model": MODEL},
                                    "notes": {"enabled": False}}))
        started = time.monotonic()
        client.initialized(types.InitializedParams())
        status: dict[str, Any] = {}
        while not _indexed(status):
            if time.monotonic() - started > INDEX_TIMEOUT_S:
                raise TimeoutError(f"indexing {root} took over {INDEX_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.5)
            status = await client.status()
        result.index_s, result.functions = time.monotonic() - started, int(status.get("functions", 0))
        result.cold = await _full_find(client, cold, root)
        for query in queries:
            result.runs.append(await _full_find(client, query, root))
            print(f"{query.label}: first update {_seconds(result.runs[-1].first_s)} s, answer "
                  f"{result.runs[-1].final_s:.1f} s", file=sys.stderr)
            result.cancels.append(await _cancelled_find(client, query))
            print(f"{query.label} cancelled: idle after {_seconds(result.cancels[-1].idle_s)} s",
                  file=sys.stderr)
        result.load = load_average()
        await shut_down(client, server)
    return result


def _machine_speed(result: FindServer) -> None:
    """The host's prefill and decode speed with the model the server will use (a few seconds)."""
    from prism_bench.machine_speed import measure
    from prism_code.llm.runtime import LlamaSession

    session = LlamaSession.open(result.model, n_threads=result.threads)
    try:
        speed = measure(session)
    finally:
        session.close()
    result.prefill_tokens_per_s, result.decode_ms_per_token = speed.prefill_tokens_per_s, speed.decode_ms_per_token


def run(queries: int = 6, threads: int = 2, repo: str = REPO, cache_dir: Path | None = None) -> FindServer:
    """Index one RepoQA haystack in a real server, then time `queries` model finds and as many
    cancelled ones through it."""
    from prism_bench import repoqa_data

    specs = [s for s in repoqa_data.load_needles() if s.repo == repo]
    if not specs:
        raise ValueError(f"{repo} is not a RepoQA Python haystack with a PyPI substitute")
    spec = specs[0]
    haystack = Haystack(spec.repo, spec.package, spec.version, repoqa_data.materialise(spec, cache_dir),
                        spec.needles)
    cold, chosen = pick_queries(haystack.needles, queries)
    from prism_code.tasks.find_settings import LONG_QUERY_BODIES

    result = FindServer(haystack.repo, haystack.version, threads, long_query_bodies=LONG_QUERY_BODIES)
    _machine_speed(result)
    with tempfile.TemporaryDirectory(prefix="prism-bench-find-server-") as tmp:
        return asyncio.run(_measure(haystack, cold, chosen, threads, Path(tmp), result))
