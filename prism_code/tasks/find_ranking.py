"""Ranking signals find adds on top of the fused retrieval score, and the order it returns.

What people ask ("HTTPException", "how are routes registered") is answered by a definition
whose name the query spells, by a file whose name carries the query's words, and by code
rather than its tests. Each signal is an additive shift measured in units of the query's best
fused score, so it means the same on a 500-function repository as on a 50,000-function one
(the fused score is a sum of z-scores, whose size grows with the corpus).

Measured with `prism-code bench semble --split tune --no-embeddings` (semble's benchmark,
NDCG@10 over the tuning half of the repositories); docs/decisions.md has the figures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from prism_code.retrieval.tokenize import code_tokens

# A definition whose name the whole query spells, in any identifier style
# ("HTTPException", "http exception", "http_exception"): the user named the symbol, so the
# definition goes before every function that merely uses it. One best score lifts it to the top.
SYMBOL_MATCH_BOOST = 1.0
# A symbol query is short: beyond this many words the query is a sentence, not a name.
SYMBOL_QUERY_MAX_WORDS = 4

# Each query word found among a file's path words (file and folder names) lifts every function
# in that file: "routing" finds router.go's functions. Capped, so a path made of common words
# ("src/core/utils") cannot outrank what the bodies say.
PATH_WORD_BOOST = 0.1
PATH_WORD_BOOST_CAP = 0.3

# Tests, examples, benchmarks, generated and vendored code mention what they exercise as often
# as the code that defines it; down-weighted unless the query asks for them.
AUXILIARY_PATH_PENALTY = 0.3

AUXILIARY_FOLDERS = frozenset({
    "test", "tests", "testing", "__tests__", "testdata", "test_data", "spec", "specs", "fixtures",
    "example", "examples", "_examples", "sample", "samples", "demo", "demos",
    "bench", "benches", "benchmark", "benchmarks",
    "vendor", "vendored", "third_party", "thirdparty", "node_modules", "generated", "gen",
})
AUXILIARY_FILE = re.compile(
    r"(^test_.*|.*_test\.[a-z]+|.*\.(test|spec)\.[a-z]+|.*_spec\.[a-z]+|.*Tests?\.(java|kt|cs|swift|scala)"
    r"|.*_pb2\.py|.*\.pb\.go|.*_generated\.[a-z]+|.*\.generated\.[a-z]+|.*\.min\.js)$")
# Query words that ask for the auxiliary code itself: then it is not down-weighted.
ASKS_FOR_AUXILIARY = frozenset({
    "test", "tests", "testing", "spec", "specs", "example", "examples", "benchmark", "benchmarks",
    "bench", "fixture", "fixtures", "mock", "mocks", "vendor", "vendored", "generated", "demo",
})


def squashed(text: str) -> str:
    """An identifier or phrase with case and separators dropped: every style of a name agrees."""
    return re.sub(r"[^0-9a-z]", "", text.lower())


def is_auxiliary(path: str) -> bool:
    """True for a test, example, benchmark, generated or vendored file, judged by its path."""
    parts = path.replace("\\", "/").split("/")
    return any(p.lower() in AUXILIARY_FOLDERS for p in parts[:-1]) or bool(AUXILIARY_FILE.match(parts[-1]))


def path_words(path: str) -> set[str]:
    """The words of a path's folder and file names, extension dropped."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return set(code_tokens(stem.replace("/", " ")))


@dataclass
class Signals:
    """Why a function moved, for the reason a person reads; `shift` is what was added."""

    defines: str = ""  # the symbol the query spells: the function's name or its owner type's
    path_matches: list[str] = field(default_factory=list)
    auxiliary: bool = False
    shift: float = 0.0


@dataclass
class RankingSignals:
    """The signals of every function for one query; `shift` is added to the fused scores."""

    shift: np.ndarray
    signals: dict[int, Signals]


def spelled_symbol(qualname: str, spelled: str) -> str:
    """The part of `qualname` ("HTTPException.__init__") that `spelled` (a squashed query) names:
    the function itself or the type that owns it, whose methods stand for it (classes are not
    results of their own); "" when none."""
    return next((part for part in reversed(qualname.split(".")) if squashed(part) == spelled), "")


def ranking_signals(query: str, qualnames: Sequence[str], paths: Sequence[str], scale: float) -> RankingSignals:
    """Each function's shift for `query` (`qualnames`: each function's dotted name in its file,
    `paths`: its file), in units of `scale`, the query's best fused score."""
    n = len(qualnames)
    shift = np.zeros(n, dtype=np.float32)
    signals: dict[int, Signals] = {}
    terms = set(code_tokens(query))
    spelled = squashed(query) if 0 < len(query.split()) <= SYMBOL_QUERY_MAX_WORDS else ""
    keep_auxiliary = bool(terms & ASKS_FOR_AUXILIARY)
    by_path: dict[str, tuple[list[str], bool]] = {}
    for path in set(paths):
        matched = sorted(terms & path_words(path))
        by_path[path] = (matched, not keep_auxiliary and is_auxiliary(path))
    for i, (qualname, path) in enumerate(zip(qualnames, paths)):
        matched, auxiliary = by_path[path]
        defines = spelled_symbol(qualname, spelled) if spelled else ""
        value = min(PATH_WORD_BOOST_CAP, PATH_WORD_BOOST * len(matched))
        value += SYMBOL_MATCH_BOOST if defines else 0.0
        value -= AUXILIARY_PATH_PENALTY if auxiliary else 0.0
        if value or defines or matched or auxiliary:
            shift[i] = value * scale
            signals[i] = Signals(defines, matched, auxiliary, value * scale)
    return RankingSignals(shift, signals)


def file_grouped(order: Sequence[int], paths: Sequence[str], top: int) -> list[int]:
    """The first `top` of `order` with each file's best function before any file's second:
    several hits in one file then cannot crowd the list (on semble's benchmark find's top 10
    held only 3-6 distinct files), and a file's later functions follow the other files' best."""
    firsts: list[int] = []
    later: list[int] = []
    seen: set[str] = set()
    for i in order:
        if paths[i] in seen:
            later.append(i)
        else:
            seen.add(paths[i])
            firsts.append(i)
            if len(firsts) == top:
                break
    return (firsts + later)[:top]
