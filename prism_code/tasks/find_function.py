"""Find a function by a natural-language description (the RepoQA task), retrieval strategy.

Independent score = fixed z-score fusion of BM25 over function source, MiniLM over the
source and MiniLM over the function card; then FragRel's relation-aware rerank
(Eq. 9-10) over the functions' related sets. Until embeddings exist the lexical score
answers alone, so search never waits for the embedding pass.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from prism_code.embeddings import VectorCache, card_text, text_key
from prism_code.fragments import (
    Fragment,
    file_unit_name,
    file_units,
    fragment_text,
    function_key,
    is_file_unit,
    is_function,
    type_fragments,
)
from prism_code.parse.model import Definition, ParsedFile
from prism_code.retrieval.dense import Embedder, cosine_scores
from prism_code.retrieval.fusion import SECTION_COMPONENTS, fuse, fusion_weights, reciprocal_rank_fusion
from prism_code.retrieval.lexical import LexicalIndex, TermNumbering
from prism_code.retrieval.markup import plain_text
from prism_code.retrieval.query_sections import split_sections
from prism_code.retrieval.tokenize import code_tokens, query_tokens
from prism_code.retrieval.type_units import skeleton
from prism_code.tasks import find_ranking
from prism_code.tasks.corpus_layout import Layout, Row, Rows, corpus_order
from prism_code.tasks.find_ranking import (
    Signals,
    file_coherence,
    file_diversified,
    file_text_lift,
    question_strength,
    ranking_signals,
)

if TYPE_CHECKING:  # the index (and through it the graph) is imported where it is used: see
    # fragments.py; a find from the saved lexical index never loads one
    import scipy.sparse as sp

    from prism_code.index import IndexSnapshot, RepoIndex

# FragRel helps completion context; on needle search it was measured neutral to harmful
# (docs/benchmarks.md), so find defaults to the vanilla retriever.
DEFAULT_FIND_ALPHA = 0.0

COMPONENTS = ("bm25", "bm25_name", "dense_code", "dense_card")

# What a FunctionCorpus is made of: bumped whenever its rows (which definitions become find
# units), their text or the BM25 matrices change, so a corpus saved by an earlier version
# (tasks/corpus_files.py) is rebuilt rather than read. 2: types as find units.
CORPUS_VERSION = 3

T = TypeVar("T")


def name_field(fragment: Fragment, definition: Definition | None, callees: Sequence[str]) -> list[str]:
    """BM25 tokens of what a function is called rather than what it does line by line: its
    qualified name, its signature's words (parameter names and types) and the names it calls.

    Scored apart from the body, so a one-sentence query that names the function's subject
    ("the encoding from the headers") is not drowned by a long body's many other words.
    """
    header = definition.signature if definition is not None else ""
    return code_tokens(" ".join([fragment.qualname, fragment.qualname, header, *callees]))


def doc_above(definition: Definition | None, text: str) -> str:
    """The definition's doc comment when it sits above the code rather than inside it (a Go,
    Rust or Java comment, not a Python docstring, which the code already holds)."""
    if definition is None or not definition.doc.strip():
        return ""
    first = definition.doc.strip().splitlines()[0].strip()
    return "" if first in text else definition.doc


def callees_by_caller(parsed: ParsedFile | None) -> dict[str, list[str]]:
    """qualname -> the names that function calls in this file, in order, repeats dropped."""
    out: dict[str, list[str]] = {}
    for call in parsed.calls if parsed is not None else []:
        if call.caller is not None:
            names = out.setdefault(call.caller, [])
            if call.name not in names:
                names.append(call.name)
    return out


def unit_text(index: RepoIndex | IndexSnapshot, path: str, qualname: str) -> str:
    """The source a find result stands for, as a model strategy reads it: a function's lines,
    or a type's skeleton (its lines without its methods' bodies, as it is searched); "" when
    the index no longer holds it."""
    fragment = index.fragments.get(function_key(path, qualname))
    if fragment is not None:
        return index.text(fragment)
    definition = index.definition(path, qualname)
    if definition is None:
        lines = index.lines.get(path)
        # A file that defines nothing is searched, and read, whole.
        return "\n".join(lines) if lines is not None and qualname == file_unit_name(path) else ""
    from prism_code.index import IndexSnapshot

    parsed = index.parsed if isinstance(index, IndexSnapshot) else index.graph.parsed
    return skeleton(index.lines.get(path, []), parsed.get(path), definition)


@dataclass
class FoundFunction:
    name: str
    qualname: str
    path: str
    start_line: int
    end_line: int
    score: float
    reason: str  # in words, for a person: "defines HTTPException; the body mentions 'route'"
    kind: str = "function"  # function, method or class
    scores: dict[str, float] = field(default_factory=dict)  # each component's score, and the signals' shift

    @property
    def key(self) -> str:
        """The key of the function's fragment in the index."""
        return function_key(self.path, self.qualname)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class FunctionCorpus:
    """The searchable form of the index's functions; rebuilt when the index changes.

    The corpus is kept per file (`_FileRows`: each file's rows of each kind, with their cards,
    tokens and term bags) and laid out as blocks of those rows (`Layout`). A rebuild after a
    one-file edit recomputes that file's rows (reusing the card, tokens and bags of every
    function of it whose text is the same, so BM25 is reassembled from bags, not re-tokenized)
    and splices them into the previous corpus's joined bags, rows, paths and names: a few
    concatenations, whatever the number of files (docs/decisions.md). The rows keep the order
    a corpus built from scratch has, so the ranking is the same. When no file changed at all
    (the relations phase of an update only moves related sets) everything is reused.
    """

    fragments: list[Fragment]
    _layout: Layout
    lexical: LexicalIndex
    vocabulary: TermNumbering
    names: LexicalIndex  # BM25 over `name_field`, with its own vocabulary
    name_vocabulary: TermNumbering
    _files: dict[str, _FileRows]

    def __init__(self, index: RepoIndex | IndexSnapshot, previous: FunctionCorpus | None = None) -> None:
        from prism_code.index import IndexSnapshot

        self.generation = index.generation
        parsed = index.parsed if isinstance(index, IndexSnapshot) else index.graph.parsed
        reuse = None if previous is None or previous.vocabulary_outgrown() else previous
        self.vocabulary = TermNumbering() if reuse is None else reuse.vocabulary
        self.name_vocabulary = TermNumbering() if reuse is None else reuse.name_vocabulary
        # Units (text) outlive a fresh vocabulary; rows (bags) are of the vocabulary they were made with.
        kept_units = {path: rows.units for path, rows in previous._files.items()} if previous is not None else {}
        kept_rows = reuse._files if reuse is not None else {}
        self._files = {}
        for path, units in _file_units(parsed, index.lines, index.fragments, kept_units).items():
            kept = kept_rows.get(path)
            if kept is None or kept.units is not units:
                kept = _FileRows.of(units, kept, self.vocabulary, self.name_vocabulary)
            self._files[path] = kept
        if reuse is not None and reuse._files.keys() == self._files.keys() and all(
                rows is reuse._files[path] for path, rows in self._files.items()):
            self._layout, self.fragments, self.lexical, self.names = \
                reuse._layout, reuse.fragments, reuse.lexical, reuse.names
            # The same rows: the same columns, paths, names and vector-cache keys (cached properties' values).
            self.__dict__.update({k: reuse.__dict__[k] for k in (*Layout.COLUMNS, "_text_keys")
                                  if k in reuse.__dict__})
        else:
            blocks = corpus_order(f.kinds for f in self._files.values())
            self._layout = Layout.of(blocks, reuse._layout if reuse else None)
            self.fragments = self._layout.spliced(lambda b: b.fragments, reuse.fragments if reuse else None)
            # The cached properties' values: every query reads them.
            self.__dict__["unit_paths"] = tuple(self._layout.spliced(lambda b: b.paths,
                                                                     reuse.unit_paths if reuse else None))
            self.__dict__["unit_names"] = tuple(self._layout.spliced(lambda b: b.qualnames,
                                                                     reuse.unit_names if reuse else None))
            self.lexical = LexicalIndex.from_run(self._layout.lexical, self.vocabulary)
            self.names = LexicalIndex.from_run(self._layout.names, self.name_vocabulary)
        # The index replaces its related-set mapping on update and never mutates a
        # published one, so keeping the reference keeps this generation's relations.
        self._related_rows = index.related

    # Whole columns are joined when first read (dense search, tests): a lexical find reads the
    # few rows it shows (`definition`, `row_tokens`), and joining five columns of every row cost
    # a rebuild after an edit a fifth of its time.
    @cached_property
    def code(self) -> list[str]:
        return self._layout.joined(lambda b: b.code)

    @cached_property
    def docs(self) -> list[str]:
        return self._layout.joined(lambda b: b.docs)

    @cached_property
    def definitions(self) -> list[Definition | None]:
        return self._layout.joined(lambda b: b.definitions)

    @cached_property
    def cards(self) -> list[str]:
        return self._layout.joined(lambda b: b.cards)

    @cached_property
    def tokens(self) -> list[list[str]]:
        return self._layout.joined(lambda b: b.tokens)

    def same_texts(self, other: FunctionCorpus) -> bool:
        """Whether `other` has the same rows with the same sources and cards (dense vectors read
        for one serve the other), compared file by file."""
        mine, theirs = self._layout.blocks, other._layout.blocks
        return len(mine) == len(theirs) and all(
            a is b or (a.code == b.code and a.cards == b.cards) for a, b in zip(mine, theirs))

    def text_keys(self, which: str) -> list[str]:
        """The vector-cache keys of every row's source (`code`) or card (`card`), hashed once."""
        keys = self.__dict__.setdefault("_text_keys", {})
        if which not in keys:
            keys[which] = [text_key(t) for t in (self.code if which == "code" else self.cards)]
        return list(keys[which])

    @cached_property
    def unit_paths(self) -> tuple[str, ...]:
        """Each row's file (the ranking signals read them on every query)."""
        return tuple(f.path for f in self.fragments)

    @cached_property
    def unit_names(self) -> tuple[str, ...]:
        """Each row's qualified name."""
        return tuple(f.qualname for f in self.fragments)

    def definition(self, i: int) -> Definition | None:
        rows, k = self._layout.row(i)
        return rows.definitions[k]

    def row_tokens(self, i: int) -> list[str]:
        """Row i's source tokens (a result's reason quotes them)."""
        rows, k = self._layout.row(i)
        return rows.tokens[k]

    def vocabulary_outgrown(self) -> bool:
        """True once edits have left the shared vocabulary mostly tokens no function
        has any more; the next corpus then starts a fresh one."""
        live = int(np.count_nonzero(np.diff(self.lexical.weights.indptr)))
        return len(self.vocabulary) > 2 * live + 10_000

    @cached_property
    def related(self) -> sp.csr_matrix:
        """FragRel related sets as an n x n matrix; built on first use, since the
        default find (alpha = 0) never needs it."""
        from prism_code.relations import related_matrix

        position = {f.key: i for i, f in enumerate(self.fragments)}
        return related_matrix(
            {i: [(position[k], w) for k, w in self._related_rows.get(f.key, []) if k in position]
             for i, f in enumerate(self.fragments)}, len(self.fragments))


@dataclass(frozen=True)
class _FileUnits:
    """What one file gives the corpus: its functions, its type units, its file unit, and each
    unit's searched text and doc comment above it. Kept from one corpus to the next while the
    file's parse and lines are the same objects (the index replaces both when the file
    changes), so a rebuild after a one-file edit recomputes one file, not the repository."""

    parsed: ParsedFile
    lines: list[str]
    functions: list[Fragment]  # sorted by key
    types: list[Fragment]  # sorted by key
    whole: Fragment | None  # the file's own unit when it defines nothing
    code: dict[str, str]  # unit key -> the text searched (a type's skeleton)
    docs: dict[str, str]  # unit key -> the doc comment above the definition ("" when none)

    @classmethod
    def of(cls, pf: ParsedFile, lines: list[str], functions: list[Fragment]) -> _FileUnits:
        types = type_fragments([pf], {f.key for f in functions})
        whole = next(iter(file_units([pf], {pf.path: lines})), None)
        definitions = _Definitions({pf.path: pf})
        code = {f.key: fragment_text(lines, f) for f in functions}
        for t in types:
            d = definitions.of(t)
            code[t.key] = skeleton(lines, pf, d) if d is not None else fragment_text(lines, t)
        if whole is not None:
            code[whole.key] = fragment_text(lines, whole)
        # A doc comment above a definition is outside its code: an edit of the comment alone
        # changes what is searched.
        docs = {key: doc_above(definitions.of(f), code[key])
                for f in [*functions, *types, *([whole] if whole is not None else [])] for key in [f.key]}
        return cls(pf, lines, functions, types, whole, code, docs)


def _file_units(parsed: Mapping[str, ParsedFile], lines: Mapping[str, list[str]],
                fragments: Mapping[str, Fragment], previous: Mapping[str, _FileUnits]) -> dict[str, _FileUnits]:
    """Every parsed file's units, kept from `previous` where the file's parse and lines are the
    same objects. A file's function fragments are looked up by its function definitions' keys,
    as the index makes them (fragments.file_fragments): work in proportion to the file."""
    out = {}
    for path, pf in parsed.items():
        text = lines.get(path, [])
        kept = previous.get(path)
        if kept is None or kept.parsed is not pf or kept.lines is not text:
            keys = sorted({function_key(path, d.qualname) for d in pf.definitions if is_function(d)})
            kept = _FileUnits.of(pf, text, [fragments[k] for k in keys if k in fragments])
        out[path] = kept
    return out


@dataclass(frozen=True)
class _FileRows:
    """One file's rows, made with the corpus's vocabularies; kept while its units are."""

    units: _FileUnits
    kinds: tuple[Rows, Rows, Rows]  # functions, types, the file unit: the corpus's three blocks

    @classmethod
    def of(cls, units: _FileUnits, previous: _FileRows | None, vocabulary: TermNumbering,
           name_vocabulary: TermNumbering) -> _FileRows:
        """The file's rows, each unit whose text and doc comment are as in `previous` reusing
        its row (made with the same vocabularies)."""
        known: dict[str, Row] = {}
        for rows in previous.kinds if previous is not None else ():
            known.update(zip((f.key for f in rows.fragments), rows.rows()))
        pf = units.parsed
        definitions = _Definitions({pf.path: pf})
        callees: dict[str, list[str]] | None = None

        def row(f: Fragment) -> Row:
            nonlocal callees
            text, doc = units.code[f.key], units.docs[f.key]
            reused = known.get(f.key)
            if reused is not None and reused[0] == text and reused[1] == doc:
                return reused
            definition = definitions.of(f)
            # The doc comment above a definition is searched twice: with the body, and
            # beside the name, as the summary of what the function is for (decisions.md).
            tokens = code_tokens(f"{text}\n{doc}")
            if callees is None:
                callees = callees_by_caller(pf)
            named = name_field(f, definition, callees.get(f.qualname, [])) + code_tokens(doc)
            return (text, doc, definition, card_text(f, definition), tokens, vocabulary.bag(tokens),
                    name_vocabulary.bag(named))

        whole = [units.whole] if units.whole is not None else []
        functions, types = units.functions, units.types
        return cls(units, (Rows.of(functions, [f.key for f in functions], [row(f) for f in functions]),
                           Rows.of(types, [f.key for f in types], [row(f) for f in types]),
                           Rows.of(whole, [f.path for f in whole], [row(f) for f in whole])))


class _Definitions:
    """Each file's definitions by qualified name, built on first use of the file."""

    def __init__(self, parsed: Mapping[str, ParsedFile]) -> None:
        self._parsed = parsed
        self._by_path: dict[str, dict[str, Definition]] = {}

    def of(self, fragment: Fragment) -> Definition | None:
        by_name = self._by_path.get(fragment.path)
        if by_name is None:
            parsed = self._parsed.get(fragment.path)
            by_name = {}
            for d in parsed.definitions if parsed is not None else []:
                by_name.setdefault(d.qualname, d)  # the first, as RepoIndex.definition answers
            self._by_path[fragment.path] = by_name
        return by_name.get(fragment.qualname)


class FunctionSearch:
    """Find over one index. `notes` maps a function's fragment key to its model-written
    memory note: once a note card (card + note) is embedded it stands in for the plain
    card, and until then the plain card answers, so dense search never waits for notes."""

    def __init__(self, index: RepoIndex, embedder: Embedder | None = None,
                 notes: Mapping[str, str] | None = None) -> None:
        self.index = index
        self.store = index.store
        self.embedder = embedder
        self._notes: Mapping[str, str] = dict(notes or {})
        self._corpus: FunctionCorpus | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self._pending_notes: dict[int, str] = {}  # row -> note card not embedded yet
        self._missing_seen: dict[str, float] = {}  # which -> when vectors were last found missing

    @property
    def corpus(self) -> FunctionCorpus:
        if self._corpus is None or self._corpus.generation != self.index.generation:
            previous = self._corpus
            # Built from a snapshot: readers of the index need not wait for this.
            self._corpus = FunctionCorpus(self.index.snapshot(), previous)
            if previous is None or not self._corpus.same_texts(previous):
                self._vectors, self._missing_seen = {}, {}
        return self._corpus

    def set_notes(self, notes: Mapping[str, str]) -> None:
        """Replace the model notes (fragment key -> note text) the cards are read with."""
        notes = dict(notes)
        if notes != self._notes:
            self._notes = notes
            self._vectors.pop("card", None)

    def vectors_stored(self) -> None:
        """Vectors were just stored (an embedding pass ended): the next find looks for them."""
        self._missing_seen = {}

    def note_cards(self) -> list[str]:
        """The card text, note included, of every function that has a model note."""
        corpus = self.corpus
        return [card_text(f, d, self._notes[f.key]) for f, d in zip(corpus.fragments, corpus.definitions)
                if self._notes.get(f.key)]

    def embedding_texts(self) -> list[str]:
        """Every text dense search reads: sources, cards and note cards, without repeats."""
        corpus = self.corpus
        return list(dict.fromkeys(corpus.code + corpus.cards + self.note_cards()))

    def vectors(self, which: str) -> np.ndarray | None:
        """The source or card vectors of every function, or None until all are embedded."""
        if self.embedder is None:
            return None
        cache = VectorCache(self.store, self.embedder)
        if which not in self._vectors:
            corpus = self.corpus
            if time.monotonic() - self._missing_seen.get(which, -DENSE_RECHECK_S) < DENSE_RECHECK_S:
                return None
            matrix = cache.matrix_by_keys(corpus.text_keys(which))
            if matrix is None:
                self._missing_seen[which] = time.monotonic()
                return None
            self._vectors[which] = matrix
            if which == "card" and self._notes:
                self._pending_notes = {
                    i: card_text(f, d, self._notes[f.key])
                    for i, (f, d) in enumerate(zip(corpus.fragments, corpus.definitions))
                    if self._notes.get(f.key)}
        if which == "card" and self._pending_notes:
            matrix = self._vectors["card"]
            found = cache.available(list(self._pending_notes.values()))
            for i, text in list(self._pending_notes.items()):
                if text in found:
                    matrix[i] = found[text]
                    del self._pending_notes[i]
        return self._vectors[which]

    def component_scores(self, query: str, sections: bool = False) -> dict[str, np.ndarray]:
        """Each component's score of every function; with `sections`, a structured description
        (purpose, input, output, procedure) also gets its section components."""
        corpus = self.corpus
        terms = query_tokens(query)
        scores = {"bm25": corpus.lexical.scores(terms), "bm25_name": corpus.names.scores(terms)}
        code, cards = self.vectors("code"), self.vectors("card")
        if code is not None and cards is not None and self.embedder is not None:
            parts = split_sections(query) if sections else None
            texts = [query] if parts is None else [query, parts.purpose or query, parts.procedure or query]
            # One batch: the sections cost the embedder one call, not three.
            vectors = self.embedder.embed([plain_text(t) for t in texts])
            scores["dense_code"] = cosine_scores(code, vectors[0])
            scores["dense_card"] = cosine_scores(cards, vectors[0])
            if parts is not None:
                scores["dense_card_purpose"] = cosine_scores(cards, vectors[1])
                scores["dense_code_procedure"] = cosine_scores(code, vectors[2])
        return scores

    def scores(self, query: str, alpha: float = DEFAULT_FIND_ALPHA,
               components: tuple[str, ...] = COMPONENTS + SECTION_COMPONENTS,
               ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        weights = fusion_weights(len(query.split()))
        # Section scores cost two more embeddings: computed only when a weight uses them.
        parts = self.component_scores(query, sections=any(weights[c] for c in SECTION_COMPONENTS
                                                          if c in components))
        used = [(parts[c], weights[c]) for c in components if c in parts and weights[c]]
        if not used:
            used = [(parts["bm25"], 1.0)]
        independent = fuse(used)
        if alpha == 0:
            return independent, parts
        from prism_code.retrieval.fragrel import relation_aware_scores

        return relation_aware_scores(independent, self.corpus.related, alpha), parts

    def search(self, query: str, top: int = 10, alpha: float = DEFAULT_FIND_ALPHA,
               expansion: str | None = None) -> list[FoundFunction]:
        """The `top` functions for `query`; with `expansion` (the model's guess at the code,
        tasks/query_expansion.py) the two rankings fused by reciprocal rank."""
        if not query.strip():
            raise ValueError("the description is empty")
        corpus = self.corpus
        if not corpus.fragments:
            return []
        final, parts = self.scores(query, alpha)
        if expansion and expansion.strip():
            final = reciprocal_rank_fusion([final, self.scores(expansion, alpha)[0]])
        corpus_paths, names = corpus.unit_paths, corpus.unit_names
        best = float(final.max())
        # The signals serve questions; a paragraph describing one function is read by its words.
        scale = (abs(best) if best else 1.0) * question_strength(query)
        signals = ranking_signals(query, names, corpus_paths, scale)
        final = final + signals.shift
        final = final + file_coherence(final, corpus_paths, scale)
        if "dense_code" not in parts or find_ranking.FILE_TEXT_LIFT_WITH_EMBEDDINGS:
            final = final + file_text_lift(final, parts["bm25"], corpus_paths, scale)
        # Enough candidates that `top` distinct files are found among them.
        pool = np.argsort(-final, kind="stable")[:top * FILE_GROUP_POOL]
        # A definition the query names keeps its place even behind another hit of its file.
        pinned = signals.pinned()
        order = file_diversified([int(i) for i in pool], final, corpus_paths, top, pinned, scale)
        terms = set(query_tokens(query))
        return [self._result(i, score, parts, terms, signals.of(i)) for i, score in order]

    def _result(self, i: int, score: float, parts: dict[str, np.ndarray], terms: set[str],
                signals: Signals | None) -> FoundFunction:
        corpus = self.corpus
        fragment = corpus.fragments[i]
        definition = corpus.definition(i)
        scores = {name: round(float(values[i]), 4) for name, values in parts.items()}
        if signals is not None:
            scores["signals"] = round(signals.shift, 4)
        return FoundFunction(
            name=fragment.qualname.rsplit(".", 1)[-1], qualname=fragment.qualname,
            path=fragment.path, start_line=fragment.start_line, end_line=fragment.end_line,
            score=round(score, 4),
            reason=readable_reason(fragment, terms, corpus.row_tokens(i), signals, "dense_code" in parts),
            kind=definition.kind if definition is not None else "file" if is_file_unit(fragment) else "function",
            scores=scores)


# While vectors are being computed, a find searches lexically and looks again for a complete
# set at most this often: counting 70,000 stored vectors costs about a second on a large
# repository (sympy: find p50 1,090 ms while embedding), which a query should not pay each time.
DENSE_RECHECK_S = 5.0

# How many candidates per result are read when grouping by file: 5 x top held 10 distinct files
# for every query of semble's benchmark where the corpus has that many files.
FILE_GROUP_POOL = 5
# At most this many words are quoted in a reason, so it stays one line.
REASON_WORDS = 4


def readable_reason(fragment: Fragment, terms: set[str], tokens: Sequence[str], signals: Signals | None,
                    dense: bool) -> str:
    """Why this function is listed, in words a person reads (`dense`: embeddings scored it too)."""
    parts: list[str] = []
    name_words = set(code_tokens(fragment.qualname))
    if signals is not None and signals.defines:
        parts.append(f"defines {signals.defines}")
    elif signals is not None and signals.mentioned:
        parts.append(f"defines {signals.mentioned}, which the query names")
    elif named := sorted(terms & name_words)[:REASON_WORDS]:
        parts.append("the name says " + ", ".join(f"'{w}'" for w in named))
    if signals is not None and signals.path_matches:
        parts.append("the file's path matches " + ", ".join(f"'{w}'" for w in signals.path_matches[:REASON_WORDS]))
    body = sorted((terms & set(tokens)) - name_words)[:REASON_WORDS]
    if body:
        parts.append("the body mentions " + ", ".join(f"'{w}'" for w in body))
    if signals is not None and signals.auxiliary:
        parts.append("ranked down as test, example or vendored code")
    if not parts:
        return "close in meaning to the query" if dense else "shares no word with the query"
    return "; ".join(parts)
