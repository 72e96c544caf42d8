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

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from prism_code.retrieval.tokenize import code_tokens

# The signals below are sized for questions and names ("how are routes registered",
# "HTTPException": semble's are 1-14 words). A longer query is a description of one function,
# read by its words: every signal is scaled by QUESTION_WORDS / its words. RepoQA's paragraphs
# (72+ words) lost a fifth of their first answers to the path words at full strength.
QUESTION_WORDS = 12

# A definition whose name the whole query spells, in any identifier style
# ("HTTPException", "http exception", "http_exception"): the user named the symbol, so the
# definition goes before every function that merely uses it. One best score lifts it to the top.
SYMBOL_MATCH_BOOST = 1.0
# The query spells the name letter for letter, case included ("Session" names the class
# `Session` more than the function `session`), on top of SYMBOL_MATCH_BOOST.
EXACT_SPELLING_BOOST = 0.3
# A symbol query is short: beyond this many words the query is a sentence, not a name.
SYMBOL_QUERY_MAX_WORDS = 4
# Among the definitions a symbol query names, the one in the file named after the symbol
# (MessagePackSerializer.cs, not MessagePackSerializer.Json.cs, for a partial class; engine.rb
# for Rails::Engine reopened elsewhere) gains this much more ...
SYMBOL_FILE_STEM_BOOST = 0.5
# ... and each enclosing name a definition has costs it this much (Ecto.Schema before
# Ecto.Repo.Schema for "Schema"). Both chosen on semble's tuning half (lexical, with a whole-file
# lift that was then not kept): 0.8608 -> 0.8631 at 0.5 / 0.1, symbol queries 0.953 -> 0.966,
# three queries up and none down (stem 0.1 / 0.3 alone: 0.8610 / 0.8613; nesting 0.05 / 0.1 /
# 0.2 alone: 0.8609 / 0.8618 / 0.8618; 0.3 / 0.2 together: 0.8623).
SYMBOL_NESTING_PENALTY = 0.1

# A sentence that names code by its qualified name ("absl::StrSplit and StrJoin for string
# splitting", "how std.fs.cwd opens the working directory"): a definition so named gains up to
# this share of the best score, in proportion to the part of the name its own qualified name and
# path spell (`std.fs.cwd` is fs.zig's `cwd` more than Io/Dir.zig's). Chosen on the tuning halves
# of semble's benchmark and the docstrings set together (lexical): semble 0.826 -> 0.828 at 0.5
# (0.831 at 1.0, which cost the docstrings one first answer of 70). Bare camelCase or snake_case
# names are left out: in a sentence describing one function they mostly name what it calls
# (docstrings tuning top-1 0.471 -> 0.443 with them).
MENTION_BOOST = 0.5

# Each query word found among a file's path words (file and folder names) lifts every function
# in that file: "routing" finds router.go's functions. Capped, so a path made of common words
# ("src/core/utils") cannot outrank what the bodies say.
PATH_WORD_BOOST = 0.1
PATH_WORD_BOOST_CAP = 0.3
# Besides, the share of the query's words the path carries, times this: "application boot
# process" is about application.rb, though only one of its three words is in the path. Chosen
# among 0.5 / 1.0 / 1.5 / 2.0 on semble's tuning half; 1.5 scored 0.003 more there (noise) and put
# `Shape.area` above `total_area` for "total area of all shapes" (decisions.md).
PATH_WORD_SHARE_BOOST = 1.0
# A query word matches a path word it begins or that begins it, from this many letters on
# ("dependency" and "dependencies", "route" and "router").
PATH_PREFIX_MIN = 4
# Or when the two share this many first letters: "validation" and Validate.java, "registration"
# and registry.go. Chosen among 5 / 6 / 7 on semble's tuning half (lexical 0.828 -> 0.831 /
# 0.832 / 0.832; commons-lang 0.759 -> 0.789), the docstrings tuning half unchanged at 6.
PATH_COMMON_PREFIX = 6

# File coherence: a file's best unit gains up to this share of the best score, in proportion to
# the part of the query's COHERENCE_POOL best candidates (above the pool's last) its file holds.
FILE_COHERENCE_BOOST = 0.3
COHERENCE_POOL = 50

# Whole-file lexical match: a file's best unit gains up to this share of the best score, in
# proportion to log(1 + the BM25 of all the file's units, summed). "Standard library type
# Serialize implementations" is impls.rs, where a hundred small impls each match a little and
# none much. Chosen among 0.15 / 0.3 / 0.5 / 0.7 / 1.0 / 1.5 on semble's tuning half (log beat
# the square root and no damping at 0.5; decisions.md).
FILE_TEXT_BOOST = 0.5
# With embeddings the lift gained nothing (semble, issue #27's 14 repositories: 0.843 without,
# 0.842 with) and cost one-sentence searches (docstrings tuning half MRR@10 0.575 -> 0.552):
# it serves the lexical ranking, the one find gives while the embeddings are computed.
FILE_TEXT_LIFT_WITH_EMBEDDINGS = False

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


def question_strength(query: str) -> float:
    """1 for a question or a name; less, in proportion, for a longer description."""
    return min(1.0, QUESTION_WORDS / max(1, len(query.split())))


@lru_cache(maxsize=1 << 16)
def squashed(text: str) -> str:
    """An identifier or phrase with case and separators dropped: every style of a name agrees."""
    return re.sub(r"[^0-9a-z]", "", text.lower())


@lru_cache(maxsize=1 << 16)
def is_auxiliary(path: str) -> bool:
    """True for a test, example, benchmark, generated or vendored file, judged by its path."""
    parts = path.replace("\\", "/").split("/")
    return any(p.lower() in AUXILIARY_FOLDERS for p in parts[:-1]) or bool(AUXILIARY_FILE.match(parts[-1]))


@lru_cache(maxsize=1 << 16)
def path_words(path: str) -> frozenset[str]:
    """The words of a path's folder and file names, extension dropped (cached: every query
    reads them for every file)."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return frozenset(code_tokens(stem.replace("/", " ")))


def matched_path_words(terms: set[str], words: frozenset[str]) -> list[str]:
    """The query words a path carries, a word also matching a path word it begins or that
    begins it ("dependency" and "dependencies", "route" and "router") from PATH_PREFIX_MIN
    letters on, or one sharing its first PATH_COMMON_PREFIX letters ("validation", "validate")."""
    return sorted(t for t in terms if t in words or any(loosely_matches(t, w) for w in words))


@lru_cache(maxsize=1 << 18)
def loosely_matches(term: str, word: str) -> bool:
    """Whether a query word names a path word by its beginning (the rules above; cached: every
    query compares its words with every file's)."""
    if min(len(term), len(word)) >= PATH_PREFIX_MIN and (word.startswith(term) or term.startswith(word)):
        return True
    return len(os.path.commonprefix([term, word])) >= PATH_COMMON_PREFIX


@dataclass
class Signals:
    """Why a function moved, for the reason a person reads; `shift` is what was added."""

    defines: str = ""  # the symbol the query spells: the definition's own name
    mentioned: str = ""  # a name the sentence mentions that this definition has
    path_matches: list[str] = field(default_factory=list)
    auxiliary: bool = False
    shift: float = 0.0


@dataclass
class RankingSignals:
    """The signals of every function for one query; `shift` is added to the fused scores. A
    result's `Signals` is made when asked for (`of`): most functions are never shown."""

    shift: np.ndarray
    paths: Sequence[str]
    path_matches: dict[str, list[str]]  # path -> the query words its path carries (paths with some only)
    auxiliary: dict[str, bool]  # the paths ranked down as test, example or vendored code, each True
    names: dict[int, tuple[str, str]]  # function -> (the symbol it defines, the name it is mentioned by)

    def of(self, i: int) -> Signals | None:
        path = self.paths[i]
        defines, mentioned = self.names.get(i, ("", ""))
        matched, auxiliary = self.path_matches.get(path, []), self.auxiliary.get(path, False)
        if not (self.shift[i] or defines or matched or auxiliary):
            return None
        return Signals(defines, mentioned, matched, auxiliary, float(self.shift[i]))

    def pinned(self) -> frozenset[int]:
        """The definitions the query names."""
        return frozenset(i for i, (defines, _) in self.names.items() if defines)


# Separators of a qualified name as people type it in any language: `Rails::Engine`,
# `self->field`, `App\\Http\\Kernel`, `client.Session`.
QUALIFIER = re.compile(r"::|->|\\|\.")


def spelled_parts(query: str) -> tuple[str, ...]:
    """The squashed parts of a symbol query ("Rails::Engine" -> ("rails", "engine"), "http
    exception" -> ("httpexception",)); () when the query is a sentence, not a name."""
    if not 0 < len(query.split()) <= SYMBOL_QUERY_MAX_WORDS:
        return ()
    parts = tuple(squashed(p) for p in QUALIFIER.split(query.strip()))
    return parts if all(parts) else (squashed(query),)


def spelled_symbol(qualname: str, spelled: tuple[str, ...]) -> str:
    """The definition's own name when the spelled query names it ("http exception" names
    `HTTPException`, "Rails::Engine" names `Rails.Engine`, and `requests.Session` names
    `Session`, whose qualified name in its file has no module part: the longest end of the
    query that ends the qualified name counts); "" when it does not."""
    names = qualname.split(".")
    for length in range(min(len(spelled), len(names)), 0, -1):
        if all(squashed(a) == b for a, b in zip(names[-length:], spelled[-length:])):
            return names[-1]
    return ""


# A qualified name inside a sentence: `Rails::Engine`, `std.fs.cwd`, `res.send`, `self->buf`.
QUALIFIED_NAME = re.compile(r"[A-Za-z_]\w*(?:(?:::|->|\.)[A-Za-z_]\w*)+")
# Shorter last parts are prose ("e.g.", "i.e.") or too common to mean one definition.
MENTION_MIN_LETTERS = 3


def mentioned_names(query: str) -> tuple[tuple[str, ...], ...]:
    """The qualified names a sentence mentions, each as its squashed parts ("how std.fs.cwd opens"
    -> (("std", "fs", "cwd"),)); () for a query of SYMBOL_QUERY_MAX_WORDS words or fewer, which
    `spelled_parts` reads whole."""
    if len(query.split()) <= SYMBOL_QUERY_MAX_WORDS:
        return ()
    found: dict[tuple[str, ...], None] = {}
    for match in QUALIFIED_NAME.finditer(query):
        parts = tuple(p for p in (squashed(part) for part in QUALIFIER.split(match.group())) if p)
        if len(parts) >= 2 and len(parts[-1]) >= MENTION_MIN_LETTERS:
            found[parts] = None
    return tuple(found)


@lru_cache(maxsize=1 << 16)
def _path_chain(path: str) -> frozenset[str]:
    """A file's folder names and stem, squashed: where a qualified name's module parts live."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return frozenset(squashed(part) for part in stem.split("/"))


def mention_share(qualname: str, path: str, mentions: tuple[tuple[str, ...], ...]) -> float:
    """The largest share of a mentioned name that this definition spells (its own name must be
    the mention's last part; each earlier part counts when its qualified name or path has it)."""
    names = qualname.split(".")
    own = squashed(names[-1])
    best = 0.0
    for parts in mentions:
        if parts[-1] != own:
            continue
        chain = _path_chain(path) | {squashed(n) for n in names[:-1]}
        best = max(best, (1 + sum(p in chain for p in parts[:-1])) / len(parts))
    return best


@dataclass(frozen=True)
class FileWords:
    """What the path signals read of a corpus's files: worked out once per list of files, which
    an edit inside a file leaves as it was."""

    files: list[str]  # each file once, in the order of its first unit
    position: dict[str, int]  # a file -> its place in `files`
    words: frozenset[str]  # every path word
    by_initial: dict[str, tuple[str, ...]]  # the path words by their first letter
    holders: dict[str, tuple[int, ...]]  # a path word -> the files (positions) whose path has it
    auxiliary: dict[str, bool]  # the auxiliary files (test, example, vendored...), each True
    auxiliary_mask: np.ndarray  # bool, per file

    @classmethod
    def of(cls, files: tuple[str, ...]) -> FileWords:
        holders: dict[str, list[int]] = {}
        for k, path in enumerate(files):
            for word in path_words(path):
                holders.setdefault(word, []).append(k)
        by_initial: dict[str, list[str]] = {}
        for word in sorted(holders):
            by_initial.setdefault(word[:1], []).append(word)
        mask = np.fromiter(map(is_auxiliary, files), dtype=bool, count=len(files))
        return cls(list(files), {path: k for k, path in enumerate(files)}, frozenset(holders),
                   {i: tuple(w) for i, w in by_initial.items()}, {w: tuple(k) for w, k in holders.items()},
                   {files[k]: True for k in np.flatnonzero(mask)}, mask)


@lru_cache(maxsize=8)
def file_words(files: tuple[str, ...]) -> FileWords:
    return FileWords.of(files)


@lru_cache(maxsize=8)
def file_table(paths: tuple[str, ...]) -> tuple[FileWords, np.ndarray]:
    """The corpus's files and each unit's file's position among them (once per corpus: every
    query reads them)."""
    table = file_words(tuple(dict.fromkeys(paths)))
    return table, np.fromiter(map(table.position.__getitem__, paths), dtype=np.int64, count=len(paths))


def file_positions(paths: tuple[str, ...]) -> tuple[list[str], np.ndarray, frozenset[str]]:
    """(each file once, each unit's file's position among them, every path word)."""
    table, ids = file_table(paths)
    return table.files, ids, table.words


@lru_cache(maxsize=1 << 16)
def _file_stem(path: str) -> str:
    """A file's name without its extension, squashed (`MessagePackSerializer.cs` ->
    "messagepackserializer"; `MessagePackSerializer.Json.cs` keeps its ".Json")."""
    name = path.rsplit("/", 1)[-1]
    return squashed(name.rsplit(".", 1)[0] if "." in name else name)


@lru_cache(maxsize=1 << 16)
def own_name(qualname: str) -> str:
    """A definition's own name, squashed: what a spelled or mentioned name must equal."""
    return squashed(qualname.rsplit(".", 1)[-1])


def ranking_signals(query: str, qualnames: Sequence[str], paths: Sequence[str], scale: float) -> RankingSignals:
    """Each function's shift for `query` (`qualnames`: each function's dotted name in its file,
    `paths`: its file), in units of `scale`, the query's best fused score. Path signals are
    worked out once per file; names only for the functions whose own name the query spells."""
    terms = set(code_tokens(query))
    spelled = spelled_parts(query)
    mentions = mentioned_names(query) if MENTION_BOOST else ()
    mentioned_last = {parts[-1] for parts in mentions}
    exact = QUALIFIER.split(query.strip())[-1]
    keep_auxiliary = bool(terms & ASKS_FOR_AUXILIARY)
    table, ids = file_table(tuple(paths))
    files = table.files
    # The files whose path words each query word names (only path words with its first letter
    # can match it): worked out per word, never per file, since most files match none.
    matched: dict[int, list[str]] = {}
    for t in sorted(terms):
        named = [w for w in table.by_initial.get(t[:1], ()) if w == t or loosely_matches(t, w)]
        for k in sorted(set().union(*(table.holders[w] for w in named))):
            matched.setdefault(k, []).append(t)
    path_matches = {files[k]: words for k, words in matched.items()}
    auxiliary = {} if keep_auxiliary else table.auxiliary
    by_path = np.zeros(len(files), dtype=np.float64)  # a path matching no word adds nothing
    for k, words in matched.items():
        by_path[k] = _path_value(len(words), len(terms))
    penalty = np.where(table.auxiliary_mask, AUXILIARY_PATH_PENALTY, 0.0) if not keep_auxiliary \
        else np.zeros(len(files), dtype=np.float64)
    value = by_path[ids]
    names: dict[int, tuple[str, str]] = {}
    wanted = ({spelled[-1]} if spelled else set()) | mentioned_last
    if wanted:
        for i, qualname in enumerate(qualnames):
            if own_name(qualname) not in wanted:
                continue
            defines = spelled_symbol(qualname, spelled) if spelled else ""
            if defines:
                value[i] += SYMBOL_MATCH_BOOST + (EXACT_SPELLING_BOOST if defines == exact else 0.0)
                value[i] += SYMBOL_FILE_STEM_BOOST if _file_stem(paths[i]) == spelled[-1] else 0.0
                value[i] -= SYMBOL_NESTING_PENALTY * qualname.count(".")
            share = mention_share(qualname, paths[i], mentions) if mentions else 0.0
            value[i] += MENTION_BOOST * share
            if defines or share:
                names[i] = (defines, qualname.rsplit(".", 1)[-1] if share else "")
    value -= penalty[ids]
    return RankingSignals((value * scale).astype(np.float32), paths, path_matches, auxiliary, names)


def _path_value(matched: int, terms: int) -> float:
    value = min(PATH_WORD_BOOST_CAP, PATH_WORD_BOOST * matched)
    if terms and PATH_WORD_SHARE_BOOST:
        value += PATH_WORD_SHARE_BOOST * matched / terms
    return value


# A file's k-th unit in the list is ranked as if its score were lower by this share of the best
# score times (k - 1), so one file's many hits do not fill the list, yet a second function of a
# file that matches far better than other files' firsts keeps its place. Chosen on the tuning
# halves of semble's benchmark and the docstrings set together: strict grouping (every file's
# first before any second) scored semble 0.826 and put the described function in find's ten
# for 0.729 of the sentences; 0.2 scored 0.826 and 0.771; none, 0.819 and 0.800 (decisions.md).
FILE_REPEAT_PENALTY = 0.2


def file_diversified(order: Sequence[int], scores: np.ndarray, paths: Sequence[str], top: int,
                     pinned: frozenset[int], scale: float) -> list[tuple[int, float]]:
    """The first `top` of `order`, each with the score it ranks by: a file's later units give
    up FILE_REPEAT_PENALTY of the best score for each unit of their file ranked before them; a
    pinned unit (a definition the query names) gives up nothing."""
    seen: dict[str, int] = {}
    adjusted: list[tuple[float, int, int]] = []
    for rank, i in enumerate(order):
        k = seen.get(paths[i], 0)
        seen[paths[i]] = k + 1
        penalty = 0.0 if i in pinned else FILE_REPEAT_PENALTY * scale * k
        adjusted.append((float(scores[i]) - penalty, rank, int(i)))
    adjusted.sort(key=lambda item: (-item[0], item[1]))
    return [(i, score) for score, _, i in adjusted[:top]]


def file_coherence(scores: np.ndarray, paths: Sequence[str], scale: float) -> np.ndarray:
    """A lift for each file's best unit in proportion to how much of the query's best
    candidates its file holds: a file whose several functions all match is more likely the
    answer to an architecture question than a file with one stray hit."""
    shift = np.zeros_like(scores)
    if not FILE_COHERENCE_BOOST or scores.size == 0:
        return shift
    pool = np.argsort(-scores, kind="stable")[:COHERENCE_POOL]
    floor = float(scores[pool[-1]])
    totals: dict[str, float] = {}
    best: dict[str, int] = {}
    for i in pool:
        path = paths[int(i)]
        totals[path] = totals.get(path, 0.0) + float(scores[i]) - floor
        best.setdefault(path, int(i))
    top_total = max(totals.values())
    if top_total <= 0:
        return shift
    for path, i in best.items():
        shift[i] = FILE_COHERENCE_BOOST * scale * totals[path] / top_total
    return shift


def file_text_lift(scores: np.ndarray, lexical: np.ndarray, paths: Sequence[str], scale: float) -> np.ndarray:
    """A lift for each file's best unit in proportion to how much of the whole file matches the
    query's words: the BM25 of every unit of the file, summed, on a log scale (a long file
    matches a little everywhere)."""
    shift = np.zeros_like(scores)
    if not FILE_TEXT_BOOST or scores.size == 0:
        return shift
    files, ids, _ = file_positions(tuple(paths))
    totals = np.bincount(ids, weights=np.maximum(lexical, 0.0), minlength=len(files))
    totals = np.log1p(totals)
    top = float(totals.max())
    if top <= 0:
        return shift
    order = np.argsort(-scores, kind="stable")
    _, first = np.unique(ids[order], return_index=True)
    best_units = order[first]
    shift[best_units] = FILE_TEXT_BOOST * scale * totals[ids[best_units]] / top
    return shift
