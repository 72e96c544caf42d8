"""`prism-code bench callgraph`: the code graph's call edges against a reference resolver's (issue #26).

What an edge is. An edge is (caller, callee, line):

- a definition is identified by (path relative to the project root, 1-based first line of its
  `def`/`class`/function node, decorators and `export` excluded), so the two sides agree
  without matching qualnames; the module is (path, 0);
- caller: the innermost function or method enclosing the call; a call in a class body or at
  the top level is the module's;
- callee: the repository definition the called name resolves to, a function, a method, or a
  class for a constructor call (`C()`, `new C()`, TypeScript's `super(...)`). A call that
  resolves outside the project (stdlib, third-party, builtins) or to anything else (a
  parameter, a variable holding a lambda, an interface's method signature) is no edge; a call
  resolving to several definitions is one edge to each;
- line: the first line of the call's callee expression (prism's `CallSite.line`).

The reference. Python: for every call expression of the project's files (tree-sitter, prism's
grammar; `callgraph_sites.py`), `jedi.Script(code, path, project=jedi.Project(root))
.goto(line, column, follow_imports=True)` at the called name; results of type function or
class whose module is a project file and whose line starts a `def`/`class` there
(`callgraph_reference.py`). TypeScript: `callgraph_ts.mjs`, `getDefinitionAtPosition` of a
TypeScript language service over the project's files at the called name of every
CallExpression and NewExpression, kept when it lands on a function-like declaration of the
project. Both are cached per project, version, resolver version and rule version.

Prism: a fresh lexical index of the same files (`RepoIndex.update(relations=False)`), its
graph read by `callgraph_prism.prism_edges`.

Scores: precision = |prism & ref| / |prism|, recall = |prism & ref| / |ref|, over edges and
over function pairs (caller, callee) with lines ignored; per project and micro-averaged per
language, and by call shape (`callgraph_sites.SHAPES`, decided by the call site's text): a
shape's precision counts prism's edges of that shape, its recall the reference's.
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path

from prism_bench.callgraph_data import CallgraphProject, default_cache_dir, materialise, project_files, projects
from prism_bench.callgraph_prism import PrismEdges, index_and_read
from prism_bench.callgraph_reference import (
    Reference,
    ReferenceUnavailable,
    cached,
    python_cache_file,
    python_reference,
    typescript_cache_file,
    typescript_reference,
)
from prism_bench.callgraph_score import EMPTY, CallEdge, Score, edge_score, pair_score, shape_scores
from prism_bench.callgraph_sites import SHAPES, UNKNOWN_SHAPE, DefKey, project_modules, sites_of
from prism_bench.report import table
from prism_code.parse import parse_source

LANGUAGE_NAMES = {"python": "Python", "typescript": "TypeScript"}


@dataclass(frozen=True)
class ProjectResult:
    project: CallgraphProject
    version: str
    root: Path
    files: int
    lines: int
    reference: Reference
    prism: PrismEdges
    site_shapes: dict[tuple[str, int, str], str] = field(repr=False)
    # Definitions whose qualname their file defines more than once (`if sys.version_info: def f`
    # ... `else: def f`): one node in prism's graph, which carries the last one's line.
    merged: frozenset[DefKey] = field(default=frozenset(), repr=False)

    def shape_of(self, edge: CallEdge) -> str:
        return self.site_shapes.get((edge.caller[0], edge.line, edge.name), UNKNOWN_SHAPE)

    @property
    def edges(self) -> Score:
        return edge_score(self.prism.edges, self.reference.edges)

    @property
    def pairs(self) -> Score:
        return pair_score(self.prism.edges, self.reference.edges)

    @property
    def shapes(self) -> dict[str, Score]:
        return shape_scores(self.prism.edges, self.reference.edges, self.shape_of)

    def errors_at_merged(self) -> tuple[int, int, int, int]:
        """(false positives, of them touching a merged definition, misses, of them touching one)."""
        prism, reference = set(self.prism.edges), set(self.reference.edges)
        wrong, missed = prism - reference, reference - prism

        def merged(edges: set[CallEdge]) -> int:
            return sum(e.caller in self.merged or e.callee in self.merged for e in edges)
        return len(wrong), merged(wrong), len(missed), merged(missed)


@dataclass(frozen=True)
class CallgraphResult:
    projects: list[ProjectResult]
    skipped: list[str]  # why a language or project did not run


def _progress(message: str) -> None:
    print(f"callgraph: {message}", file=sys.stderr, flush=True)


def site_shapes(root: Path, files: list[str]) -> tuple[dict[tuple[str, int, str], str], int]:
    """(path, line, called name) -> shape for every call site, and the files' line count."""
    modules = project_modules([f for f in files if f.endswith(".py")])
    shapes: dict[tuple[str, int, str], str] = {}
    lines = 0
    for path in files:
        source = (root / path).read_bytes()
        lines += source.count(b"\n") + (0 if not source or source.endswith(b"\n") else 1)
        for site in sites_of(path, source, modules):
            shapes.setdefault((path, site.line, site.name), site.shape)
    return shapes, lines


def merged_definitions(root: Path, files: list[str]) -> frozenset[DefKey]:
    """Definitions sharing their qualname with another in the same file, as prism parses them."""
    merged: set[DefKey] = set()
    for path in files:
        parsed = parse_source(path, (root / path).read_bytes())
        if parsed is None:
            continue
        counts = Counter(d.qualname for d in parsed.definitions)
        merged.update((path, d.start_line) for d in parsed.definitions if counts[d.qualname] > 1)
    return frozenset(merged)


def run_project(project: CallgraphProject, cache_dir: Path) -> ProjectResult:
    root, version = materialise(project, cache_dir)
    files = project_files(root, project.language)
    label = f"{project.name} {version}"
    _progress(f"{label}: {len(files)} files under {root}")
    if project.language == "python":
        reference = cached(python_cache_file(cache_dir, project.name, version),
                           lambda: python_reference(root, files, label))
    else:
        reference = cached(typescript_cache_file(cache_dir, project.name, version),
                           lambda: typescript_reference(root, files))
    _progress(f"{label}: {reference.tool}: {len(reference.edges)} edges from {reference.calls} calls in "
              f"{reference.seconds:.0f} s{' (cached)' if reference.cached else ''}")
    prism = index_and_read(root)
    _progress(f"{label}: prism ({prism.source}): {len(prism.edges)} edges, index {prism.index_seconds:.1f} s")
    shapes, lines = site_shapes(root, files)
    return ProjectResult(project, version, root, len(files), lines, reference, prism, shapes,
                         merged_definitions(root, files))


def run(which: str = "main", language: str = "all", limit_projects: int | None = None,
        cache_dir: Path | None = None) -> CallgraphResult:
    """Every project of the set in the language(s); `limit_projects` keeps the first N of each language."""
    cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    chosen = projects(which, language)
    if limit_projects is not None:
        per_language: Counter[str] = Counter()
        kept = []
        for project in chosen:
            if per_language[project.language] < limit_projects:
                kept.append(project)
                per_language[project.language] += 1
        chosen = kept
    results, skipped = [], []
    for project in chosen:
        try:
            results.append(run_project(project, cache_dir))
        except ReferenceUnavailable as exc:
            message = f"{project.name} skipped: {exc}"
            _progress(message)
            skipped.append(message)
    return CallgraphResult(results, skipped)


# ---- report ---------------------------------------------------------------------------------


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _total(scores: list[Score]) -> Score:
    return reduce(lambda a, b: a + b, scores, EMPTY)


def _project_row(name: str, results: list[ProjectResult]) -> list[object]:
    edges = _total([r.edges for r in results])
    pairs = _total([r.pairs for r in results])
    seconds = sum(r.reference.seconds for r in results)
    cached_mark = "*" if any(r.reference.cached for r in results) else ""
    return [name, sum(r.files for r in results), f"{sum(r.lines for r in results):,}",
            f"{sum(r.reference.calls for r in results):,}", f"{edges.reference:,}", f"{edges.prism:,}",
            _ratio(edges.precision), _ratio(edges.recall), _ratio(pairs.precision), _ratio(pairs.recall),
            f"{seconds:.0f}{cached_mark}", f"{sum(r.prism.index_seconds for r in results):.1f}"]


def _shape_table(results: list[ProjectResult]) -> str:
    by_shape: dict[str, Score] = {}
    for result in results:
        for shape, score in result.shapes.items():
            by_shape[shape] = by_shape.get(shape, EMPTY) + score
    rows = []
    for shape in (*SHAPES, UNKNOWN_SHAPE):
        score = by_shape.get(shape, EMPTY)
        if shape == UNKNOWN_SHAPE and not (score.prism or score.reference):
            continue
        label = SHAPES.get(shape, "site not found by tree-sitter")
        rows.append([label, f"{score.prism:,}", _ratio(score.precision), f"{score.reference:,}", _ratio(score.recall)])
    return table(["call shape", "prism edges", "precision", "reference edges", "recall"], rows)


def markdown(result: CallgraphResult, command: str) -> str:
    out = [f"Command: `{command}`", ""]
    if not result.projects:
        return "\n".join([*out, "No project ran.", *[f"- {s}" for s in result.skipped]])
    tools = sorted({r.reference.tool for r in result.projects})
    sources = sorted({r.prism.source for r in result.projects})
    out.append(f"Reference: {', '.join(tools)}; prism's edges from the graph's {', '.join(sources)}. "
               "An edge is (caller, callee, call line); pairs ignore the line (definitions in "
               "prism_bench/callgraph.py). Reference seconds marked * were measured when the cached "
               "reference was computed.")
    out.append("")
    rows = []
    by_language: dict[str, list[ProjectResult]] = {}
    for r in result.projects:
        by_language.setdefault(r.project.language, []).append(r)
        rows.append(_project_row(f"{r.project.name} {r.version}", [r]))
    for language, results in by_language.items():
        rows.append(_project_row(f"**{LANGUAGE_NAMES[language]} (micro)**", results))
    if len(by_language) > 1:
        rows.append(_project_row("**all (micro)**", result.projects))
    out.append(table(["project", "files", "lines", "calls asked", "reference edges", "prism edges", "precision",
                      "recall", "pair precision", "pair recall", "reference s", "prism index s"], rows))
    for language, results in by_language.items():
        out += ["", f"By call shape, {LANGUAGE_NAMES[language]}:", "", _shape_table(results), "", _notes(results)]
    if result.skipped:
        out += ["", *[f"- {s}" for s in result.skipped]]
    return "\n".join(out)


def _notes(results: list[ProjectResult]) -> str:
    wrong, wrong_merged, missed, missed_merged = (sum(counts) for counts in
                                                  zip(*(r.errors_at_merged() for r in results)))
    notes = [f"Of prism's {wrong:,} edges the reference lacks, {wrong_merged:,} touch a definition whose "
             f"qualname its file defines twice (one graph node); of the {missed:,} reference edges prism "
             f"lacks, {missed_merged:,} do."]
    signatures = sum(r.reference.signature_calls for r in results)
    if signatures:
        notes.append(f"{signatures:,} calls landed only on signatures without a body (interface or abstract "
                     "methods): no reference edge, though they may dispatch to an override.")
    return " ".join(notes)


def _source_line(root: Path, key: DefKey | tuple[str, int]) -> str:
    path, line = key
    if line < 1:
        return "(module)"
    lines = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
    return lines[line - 1].strip()[:100] if line <= len(lines) else ""


def examples(result: CallgraphResult, per_shape: int, seed: int = 0) -> str:
    """A few of prism's wrong and missed edges per shape and project, with their source lines."""
    rng = random.Random(seed)
    out = []
    for r in result.projects:
        prism, reference = set(r.prism.edges), set(r.reference.edges)
        for title, edges in (("prism only", prism - reference), ("reference only", reference - prism)):
            for shape in (*SHAPES, UNKNOWN_SHAPE):
                chosen = sorted(e for e in edges if r.shape_of(e) == shape)
                if not chosen:
                    continue
                out.append(f"{r.project.name}, {title}, {shape}: {len(chosen)}")
                for e in sorted(rng.sample(chosen, min(per_shape, len(chosen)))):
                    out.append(f"  {e.caller[0]}:{e.line}  {_source_line(r.root, (e.caller[0], e.line))}")
                    out.append(f"    -> {e.callee[0]}:{e.callee[1]}  {_source_line(r.root, e.callee)}")
    return "\n".join(out)


def section_name(which: str, language: str, limit_projects: int | None) -> str:
    suffix = f"-first{limit_projects}" if limit_projects is not None else ""
    return f"callgraph-{which}-{language}{suffix}"
