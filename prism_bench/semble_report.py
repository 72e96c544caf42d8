"""Markdown and the chart for `bench semble` and `bench coverage`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import fmean

from prism_bench.report import table
from prism_bench.semble_bench import RepoRun
from prism_bench.semble_coverage import STRICT_FACTOR, STRICT_SLACK, RepoCoverage
from prism_bench.semble_data import SembleRepo
from prism_bench.semble_scoring import category_means, group_means

# semble's ablation modes shown beside its published default: the BM25 ones are the
# fair reference for prism's lexical run.
ABLATIONS = ("semble-bm25", "unranked-bm25")
NOT_PARSED = "not parsed"


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.3f} ({part}/{whole})" if whole else "—"


def _mode_text(embeddings: bool) -> str:
    return ("hybrid: BM25 over definitions' bodies, names and doc comments fused with MiniLM over sources and cards"
            if embeddings else "lexical: BM25 over definitions' bodies, names and doc comments, no embeddings")


def semble_markdown(runs: Sequence[RepoRun], repos: dict[str, SembleRepo], command: str, embeddings: bool) -> str:
    """The bench's results: mean, per language, per category and per repository, each beside
    semble's published figure over the same repositories."""
    ours = {r.repo: r.ndcg10 for r in runs}
    per_file = {r.repo: r.ndcg10_per_file for r in runs}
    published = {r.repo: repos[r.repo].published.ndcg10 for r in runs}
    language_of = {r.repo: r.language for r in runs}
    ablation = {mode: {r.repo: repos[r.repo].published.ablations.get(mode, 0.0) for r in runs} for mode in ABLATIONS}
    parsed = [r for r in runs if r.parsed]
    queries = sum(len(r.queries) for r in runs)
    unreachable = sum(r.unreachable for r in runs)
    lines = [
        f"Command: `{command}`",
        "",
        f"semble's code-search benchmark ({len(runs)} repositories, {queries} queries), find's `retrieval` "
        f"strategy ({_mode_text(embeddings)}); its top 10 results (functions, classes, and files without "
        "definitions) scored with semble's NDCG@10 rule "
        "(/work/shared/benchmarks/semble/README.md). semble's figures are its published ones: its default "
        "hybrid search, and the ablations `semble-bm25` (BM25 through its ranking stack) and `unranked-bm25` "
        "(plain BM25 over its chunks). `prism 1/file` is a diagnostic, not what find returns: find's ranking "
        "with each file's later functions dropped, so ten distinct files are scored (most targets are whole "
        "files; a span target is then matched only by its file's first-ranked function).",
        "",
        f"**Mean over the {len(runs)} repositories: prism {fmean(ours.values()):.3f}, semble "
        f"{fmean(published.values()):.3f}** (semble-bm25 {fmean(ablation['semble-bm25'].values()):.3f}, "
        f"unranked-bm25 {fmean(ablation['unranked-bm25'].values()):.3f}); a repository whose language "
        "the parser lacks scores 0. prism 1/file: "
        f"{fmean(per_file.values()):.3f}.",
    ]
    if parsed and len(parsed) < len(runs):
        mine, theirs = fmean(ours[r.repo] for r in parsed), fmean(published[r.repo] for r in parsed)
        mine_per_file = fmean(per_file[r.repo] for r in parsed)
        plain = fmean(ablation["unranked-bm25"][r.repo] for r in parsed)
        lines += ["", f"Over the {len(parsed)} repositories in languages the parser knows: prism {mine:.3f} "
                      f"(1/file {mine_per_file:.3f}), semble {theirs:.3f} (unranked-bm25 {plain:.3f})."]
    lines += ["", f"Queries nothing indexed can answer (every target a span outside every indexed unit, a short "
                  f"file without definitions, or in an unparsed language): {unreachable} of {queries}."]
    lines += ["", _language_table(runs, ours, per_file, published, ablation, language_of)]
    lines += ["", _category_table(runs, repos)]
    lines += ["", _repo_table(runs, published, ablation)]
    return "\n".join(lines)


def _language_table(runs, ours, per_file, published, ablation, language_of) -> str:
    parsed_languages = {r.language for r in runs if r.parsed}
    prism_by, semble_by = group_means(ours, language_of), group_means(published, language_of)
    per_file_by = group_means(per_file, language_of)
    modes = {mode: group_means(values, language_of) for mode, values in ablation.items()}
    rows = []
    for language in sorted(prism_by):
        mine = [r for r in runs if r.language == language]
        rows.append([language if language in parsed_languages else f"{language} ({NOT_PARSED})",
                     len(mine), sum(len(r.queries) for r in mine), sum(r.unreachable for r in mine),
                     prism_by[language], per_file_by[language], semble_by[language],
                     *(modes[m][language] for m in ABLATIONS)])
    return table(["language", "repos", "queries", "unreachable", "prism", "prism 1/file", "semble", *ABLATIONS],
                 rows)


def _category_table(runs: Sequence[RepoRun], repos: dict[str, SembleRepo]) -> str:
    ours = category_means({r.repo: r.by_category for r in runs})
    theirs = category_means({r.repo: repos[r.repo].published.by_category for r in runs})
    counts = {c: sum(1 for r in runs if c in r.by_category) for c in ours}
    return table(["category", "repos", "prism", "semble"],
                 [[c, counts[c], ours[c], theirs.get(c, 0.0)] for c in ours])


def _repo_table(runs, published, ablation) -> str:
    rows = [[r.repo, r.language if r.parsed else f"{r.language} ({NOT_PARSED})", r.split, len(r.queries),
             r.unreachable, r.ndcg10, r.ndcg10_per_file, published[r.repo], *(ablation[m][r.repo] for m in ABLATIONS),
             "—" if r.p50_ms is None else f"{r.p50_ms:.1f}"]
            for r in sorted(runs, key=lambda r: (r.language, r.repo))]
    return table(["repository", "language", "split", "queries", "unreachable", "prism", "prism 1/file", "semble",
                  *ABLATIONS, "p50 ms"], rows)


def semble_chart(runs: Sequence[RepoRun], repos: dict[str, SembleRepo], path: Path, embeddings: bool) -> Path:
    from prism_bench.charts import grouped_bars

    language_of = {r.repo: r.language for r in runs}
    ours = group_means({r.repo: r.ndcg10 for r in runs}, language_of)
    theirs = group_means({r.repo: repos[r.repo].published.ndcg10 for r in runs}, language_of)
    plain = group_means({r.repo: repos[r.repo].published.ablations.get("unranked-bm25", 0.0) for r in runs},
                        language_of)
    languages = sorted(ours)
    parsed = {r.language for r in runs if r.parsed}
    labels = [x if x in parsed else f"{x}\n({NOT_PARSED})" for x in languages]
    mode = "hybrid" if embeddings else "lexical, no embeddings"
    return grouped_bars(path, f"semble's benchmark ({len(runs)} repositories), NDCG@10: prism find ({mode}) "
                              "vs semble's published",
                        labels, {f"prism ({'hybrid' if embeddings else 'lexical'})": [ours[x] for x in languages],
                                    "semble (published)": [theirs[x] for x in languages],
                                    "semble unranked-bm25": [plain[x] for x in languages]},
                        "NDCG@10", figsize=(max(8.0, 0.75 * len(languages) + 2), 4.0), ymax=1.15)


def coverage_markdown(results: Sequence[RepoCoverage], command: str) -> str:
    """Per language and per repository: the span targets an indexed definition overlaps (and
    holds tightly), and the file targets the index parsed."""
    lines = [
        f"Command: `{command}`",
        "",
        "For each target of semble's benchmark that has a line span: is there an indexed definition "
        "(function, method or class; not the whole-file module, not a text window) whose lines overlap the "
        "span (`overlap`, semble's rule), and one that contains the span's first line and is at most "
        f"{STRICT_FACTOR}x the span + {STRICT_SLACK} lines long (`strict`)? For targets naming only a file: "
        "is the file parsed, and does it hold a function or method (what find returns)?",
        "",
        _coverage_table("language", _by_language(results)),
        "",
        _coverage_table("repository", [(r.repo if r.targets_parsed else f"{r.repo} ({NOT_PARSED})", [r])
                                       for r in sorted(results, key=lambda r: (r.language, r.repo))]),
    ]
    missed = [(r.repo, s) for r in results for s in r.spans if not s.strict]
    if missed:
        lines += ["", "Span targets not covered strictly (tightest definition holding the first line):", ""]
        lines += [f"* {repo} `{s.target}` ({s.query}): {'overlap' if s.overlap else 'no overlap'}; "
                  f"{s.best or 'no definition holds its first line'}" for repo, s in missed]
    empty = [(r.repo, path) for r in results for path in r.files_without_function]
    if empty:
        lines += ["", "File targets parsed without a function or method (find cannot return them):", ""]
        lines += [f"* {repo} `{path}`" for repo, path in empty]
    return "\n".join(lines)


def _by_language(results: Sequence[RepoCoverage]) -> list[tuple[str, list[RepoCoverage]]]:
    languages = sorted({r.language for r in results})
    groups = [(lang, [r for r in results if r.language == lang]) for lang in languages]
    return [(lang if any(r.targets_parsed for r in rs) else f"{lang} ({NOT_PARSED})", rs) for lang, rs in groups]


def _coverage_table(label: str, groups: Sequence[tuple[str, list[RepoCoverage]]]) -> str:
    rows = []
    for name, rs in groups:
        spans = [s for r in rs for s in r.spans]
        files = sum(r.file_targets for r in rs)
        rows.append([name, len(spans), _share(sum(s.overlap for s in spans), len(spans)),
                     _share(sum(s.strict for s in spans), len(spans)), files,
                     _share(sum(r.file_targets_parsed for r in rs), files),
                     _share(sum(r.file_targets_with_function for r in rs), files)])
    return table([label, "span targets", "overlap", "strict", "file targets", "file parsed", "file has a function"],
                 rows)
