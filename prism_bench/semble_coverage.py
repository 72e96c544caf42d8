"""`prism-code bench coverage`: does the index hold a definition where semble's answers are?

For every target of semble's benchmark with a line span: is there an indexed definition
(function, method or class; not the file's module, not a text window) whose lines overlap
the span (semble's overlap rule), and, stricter, one that contains the span's first line
and is at most STRICT_FACTOR times the span plus STRICT_SLACK lines long? For targets that
name only a file: is the file parsed, and does it hold a function find can return?
Only parsing is needed: the index is built without embeddings (the same index `bench
semble` uses, so either bench reuses the other's).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from prism_bench.semble_data import SembleRepo, Target, materialise
from prism_bench.semble_scoring import lines_overlap
from prism_code.index import RepoIndex
from prism_code.parse import Definition, ParsedFile, language_for_path

# A definition "is" the target when it starts at or before the target's first line and is
# not much longer: four times the span covers a class or function annotated by its head and
# a few lines, and the 10-line slack lets a one-line target sit in a short function.
STRICT_FACTOR = 4
STRICT_SLACK = 10


@dataclass
class SpanCoverage:
    query: str
    target: str  # path:start-end as annotated
    file_parsed: bool
    overlap: bool  # some definition overlaps the span
    strict: bool  # some definition holds the first line and is not much longer than the span
    best: str = ""  # the tightest definition holding the first line: "qualname start-end"


@dataclass
class RepoCoverage:
    repo: str
    language: str
    parsed_files: int = 0  # files the index parsed (a language prism knows)
    spans: list[SpanCoverage] = field(default_factory=list)
    file_targets: int = 0
    file_targets_parsed: int = 0
    file_targets_with_function: int = 0  # find ranks functions: such a file can be returned
    unparsed_files: list[str] = field(default_factory=list)  # file targets the index did not parse
    files_without_function: list[str] = field(default_factory=list)  # parsed file targets find cannot return

    @property
    def targets_parsed(self) -> bool:
        """Whether the index parsed any file the annotations name: a repository where it parsed
        none (its language unknown to the parser, or only stray files of other languages
        parsed) is marked "not parsed"."""
        return self.file_targets_parsed > 0 or any(s.file_parsed for s in self.spans)

    @property
    def overlap_share(self) -> float | None:
        return sum(s.overlap for s in self.spans) / len(self.spans) if self.spans else None

    @property
    def strict_share(self) -> float | None:
        return sum(s.strict for s in self.spans) / len(self.spans) if self.spans else None


def targets_parsed(repo: SembleRepo, parsed_paths: set[str] | dict[str, ParsedFile]) -> bool:
    """Whether any file the repository's annotations name is among the parsed paths."""
    return any(repo.relative_target(t) in parsed_paths for q in repo.queries for t in q.targets)


def is_parsable(root: Path) -> bool:
    """Whether any file under `root` is in a language the parser knows (else there is
    nothing to index for find, and nothing to parse)."""
    return any(p.is_file() and language_for_path(p.name) for p in root.rglob("*"))


def open_index(repo: SembleRepo, cache_dir: Path) -> RepoIndex:
    """The repository's index, brought up to date (no embeddings); the caller closes it."""
    root = materialise(repo, cache_dir)
    index = RepoIndex(root, cache_dir=cache_dir / "indexes")
    try:
        index.update()
    except BaseException:
        index.close()
        raise
    return index


def span_lines(target: Target) -> int:
    assert target.start_line is not None and target.end_line is not None
    return target.end_line - target.start_line + 1


def span_coverage(query: str, target: Target, parsed: ParsedFile | None) -> SpanCoverage:
    assert target.start_line is not None and target.end_line is not None
    definitions: list[Definition] = parsed.definitions if parsed else []
    overlap = any(lines_overlap(d.start_line, d.end_line, target.start_line, target.end_line)
                  for d in definitions)
    holding = sorted((d for d in definitions if d.start_line <= target.start_line <= d.end_line),
                     key=lambda d: d.end_line - d.start_line)
    limit = STRICT_FACTOR * span_lines(target) + STRICT_SLACK
    strict = any(d.end_line - d.start_line + 1 <= limit for d in holding)
    best = f"{holding[0].qualname} {holding[0].start_line}-{holding[0].end_line}" if holding else ""
    return SpanCoverage(query, target.label(), parsed is not None, overlap, strict, best)


def repo_coverage(repo: SembleRepo, parsed: dict[str, ParsedFile]) -> RepoCoverage:
    """Coverage of `repo`'s targets by the parses of its indexed files (path -> parse)."""
    result = RepoCoverage(repo.name, repo.language, parsed_files=len(parsed))
    seen_files: set[str] = set()
    for query in repo.queries:
        for target in query.targets:
            pf = parsed.get(repo.relative_target(target))
            if target.has_span:
                result.spans.append(span_coverage(query.text, target, pf))
                continue
            result.file_targets += 1
            result.file_targets_parsed += pf is not None
            has_function = pf is not None and any(d.kind != "class" for d in pf.definitions)
            result.file_targets_with_function += has_function
            if not has_function and target.path not in seen_files:
                seen_files.add(target.path)
                (result.unparsed_files if pf is None else result.files_without_function).append(target.path)
    return result


def run(repos: list[SembleRepo], cache_dir: Path) -> list[RepoCoverage]:
    results = []
    for n, repo in enumerate(repos, 1):
        print(f"[coverage {n}/{len(repos)}] {repo.name} ({repo.language})", file=sys.stderr, flush=True)
        root = materialise(repo, cache_dir)
        if not is_parsable(root):
            results.append(repo_coverage(repo, {}))
            continue
        index = open_index(repo, cache_dir)
        try:
            results.append(repo_coverage(repo, dict(index.snapshot().parsed)))
        finally:
            index.close()
    return results


def write_json(results: list[RepoCoverage], path: Path) -> Path:
    """Every span target's coverage, uncovered ones listed apart, per repository."""
    data = {r.repo: {**asdict(r),
                     "uncovered": [f"{s.target} ({s.query})" for s in r.spans if not s.overlap],
                     "uncovered_strict": [f"{s.target} ({s.query})" for s in r.spans if not s.strict]}
            for r in results}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path
