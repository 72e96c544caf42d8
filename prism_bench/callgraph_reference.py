"""Reference call edges: jedi for Python, the TypeScript language service for TypeScript.

Both take minutes on a mid-sized project, so a project's reference is cached on disk, keyed by
project, version, the resolver's version and REFERENCE_RULES.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prism_bench.callgraph_score import CallEdge
from prism_bench.callgraph_sites import project_modules, python_definition_lines, python_sites

log = logging.getLogger(__name__)

# Bump when the rules of what a reference edge is change: every cached reference is recomputed.
REFERENCE_RULES = 2
# The node script and where it looks for `typescript`: the checkout's node_modules (npm ci).
TS_SCRIPT = Path(__file__).resolve().parent / "callgraph_ts.mjs"
TYPESCRIPT_DIR = Path(__file__).resolve().parents[1] / "node_modules" / "typescript"
# The language service over a 100-file project takes about a minute; a hung one must not hang the bench.
TS_TIMEOUT_S = 1800
# How many files jedi reads between two progress lines.
PROGRESS_EVERY = 10


class ReferenceUnavailable(RuntimeError):
    """The resolver cannot run here (node or typescript missing)."""


@dataclass(frozen=True)
class Reference:
    tool: str  # "jedi 0.19.2", "typescript 5.9.3"
    edges: list[CallEdge]
    calls: int  # call sites the resolver was asked about
    resolved: int  # of those, sites that gave at least one edge
    seconds: float  # the resolver's time when the reference was computed
    # TypeScript: sites whose every definition is a signature without a body (an interface's or
    # abstract method, a `declare`d function): no edge, though a call may dispatch to an override.
    signature_calls: int = 0
    cached: bool = False

    def to_json(self) -> dict[str, object]:
        return {"tool": self.tool, "calls": self.calls, "resolved": self.resolved, "seconds": self.seconds,
                "signature_calls": self.signature_calls, "edges": [edge.to_json() for edge in sorted(self.edges)]}

    @classmethod
    def from_json(cls, data: dict, cached: bool) -> Reference:
        return cls(data["tool"], [CallEdge.from_json(row) for row in data["edges"]], int(data["calls"]),
                   int(data["resolved"]), float(data["seconds"]), int(data.get("signature_calls", 0)), cached)


def cached(cache_file: Path, compute: Callable[[], Reference]) -> Reference:
    """The reference stored at `cache_file`, else computed and stored there."""
    if cache_file.is_file():
        return Reference.from_json(json.loads(cache_file.read_text(encoding="utf-8")), cached=True)
    reference = compute()
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    partial = cache_file.with_name(cache_file.name + ".tmp")
    partial.write_text(json.dumps(reference.to_json()) + "\n", encoding="utf-8")
    os.replace(partial, cache_file)
    return reference


def _progress(message: str) -> None:
    print(f"callgraph: {message}", file=sys.stderr, flush=True)


# ---- Python: jedi ---------------------------------------------------------------------------


def jedi_version() -> str:
    import jedi

    return str(jedi.__version__)


def python_reference(root: Path, files: list[str], label: str = "") -> Reference:
    """jedi's edges: for every call site, `goto(follow_imports=True)` on the called name, kept
    when it lands on a function or class that starts a `def`/`class` line of a listed file."""
    import jedi

    root = root.resolve()
    listed = set(files)
    modules = project_modules(files)
    project = jedi.Project(root)
    definition_lines = {path: python_definition_lines(path, (root / path).read_bytes()) for path in files}
    edges: set[CallEdge] = set()
    calls = resolved = 0
    started = time.perf_counter()
    for done, path in enumerate(files):
        if done % PROGRESS_EVERY == 0:
            _progress(f"{label} jedi: file {done + 1}/{len(files)}, {len(edges)} edges so far")
        source = (root / path).read_bytes()
        script = jedi.Script(source.decode("utf-8", "replace"), path=root / path, project=project)
        for site in python_sites(path, source, modules):
            calls += 1
            try:
                names = script.goto(site.name_line, site.name_column, follow_imports=True)
            except Exception as exc:  # noqa: BLE001 - jedi fails on some odd code; that site has no edge
                log.info("%s:%d: jedi goto failed: %s", path, site.name_line, exc)
                continue
            found = False
            for name in names:
                if name.type not in ("function", "class") or name.module_path is None or name.line is None:
                    continue
                try:
                    target = Path(name.module_path).resolve().relative_to(root).as_posix()
                except ValueError:
                    continue  # outside the project: stdlib, third-party
                if target in listed and name.line in definition_lines[target]:
                    edges.add(CallEdge(site.caller, (target, name.line), site.line, site.name))
                    found = True
            resolved += found
    return Reference(f"jedi {jedi_version()}", sorted(edges), calls, resolved, time.perf_counter() - started)


def python_cache_file(cache_dir: Path, name: str, version: str) -> Path:
    return cache_dir / "reference" / f"{name}-{version}-jedi{jedi_version()}-r{REFERENCE_RULES}.json"


# ---- TypeScript: the language service -------------------------------------------------------


def typescript_version(typescript_dir: Path = TYPESCRIPT_DIR) -> str:
    """The installed typescript's version; ReferenceUnavailable when node or it is missing."""
    if shutil.which("node") is None:
        raise ReferenceUnavailable("node is not on PATH: the TypeScript reference needs it")
    manifest = typescript_dir / "package.json"
    if not manifest.is_file():
        raise ReferenceUnavailable(f"no typescript at {typescript_dir}: run `npm ci` in the checkout")
    return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])


def typescript_reference(root: Path, files: list[str], typescript_dir: Path = TYPESCRIPT_DIR) -> Reference:
    """The language service's edges (prism_bench/callgraph_ts.mjs says which)."""
    typescript_version(typescript_dir)
    node = shutil.which("node")
    assert node is not None
    started = time.perf_counter()
    proc = subprocess.run([node, str(TS_SCRIPT), str(typescript_dir), str(root)],
                          input=json.dumps({"files": files}), capture_output=True, text=True,
                          timeout=TS_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"callgraph_ts.mjs failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    for line in proc.stderr.splitlines():
        log.warning("%s", line)
    data = json.loads(proc.stdout)
    return Reference(f"typescript {data['typescript']}", sorted(CallEdge.from_json(row) for row in data["edges"]),
                     int(data["calls"]), int(data["resolved"]), time.perf_counter() - started,
                     int(data["signatureCalls"]))


def typescript_cache_file(cache_dir: Path, name: str, version: str) -> Path:
    return cache_dir / "reference" / f"{name}-{version}-typescript{typescript_version()}-r{REFERENCE_RULES}.json"
