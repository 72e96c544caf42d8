"""Find's lexical index on disk, so a new process answers without rebuilding it.

`FunctionCorpus` builds BM25 from every function's tokens: on a 750k-line repository that
is seconds of tokenizing plus loading the whole index (texts, parses, the graph) into
memory, paid again by every `prism-code find`. The corpus's finished parts are saved beside
the index database instead, under the store's generation token (replaced by every index
commit, so a copy written for another state of the index is never read):

- the two BM25 weight matrices (CSC: data, indices, indptr as .npy files, opened
  memory-mapped, so only the columns a query names are paged in),
- their vocabularies (token lists in term-id order),
- the rows: each fragment's path, kind, lines and qualname, and the text keys of its
  source and card (dense search looks vectors up by them).

A process whose workspace scan finds nothing changed since that token opens these files
and ranks with the very same arrays a fresh build makes (`StoredCorpus`), reading a
result's definition and tokens from the store for the few rows it shows. Anything else
(a changed file, pending relation work, model notes, FragRel, a model strategy) takes the
ordinary path, which loads the index, builds the corpus and saves it for the next process.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from prism_code.config import IndexConfig
from prism_code.fragments import Fragment, fragment_text
from prism_code.index import RepoIndex
from prism_code.memory.notes_store import NotesStore
from prism_code.parse import PARSER_VERSION, language_for_path
from prism_code.parse.model import Definition
from prism_code.retrieval.dense import Embedder
from prism_code.retrieval.lexical import LexicalIndex
from prism_code.retrieval.tokenize import code_tokens
from prism_code.store.database import workspace_db_path
from prism_code.store.index_store import Store
from prism_code.tasks.find_function import CORPUS_VERSION, FunctionCorpus, FunctionSearch, doc_above
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.vector_files import load_vectors, save_vectors
from prism_code.workspace import diff_scan, resolve_workspace, scan

log = logging.getLogger(__name__)

# Bumped whenever what is saved changes; how a corpus is built from the index is
# find_function.CORPUS_VERSION, saved too. A copy of another format or corpus version is
# never read (it is rebuilt on the next ordinary find).
FORMAT = 1
_DIR = "lexical"  # beside index.sqlite, one subdirectory per generation token
_MANIFEST = "manifest.json"  # written last: a directory without it is incomplete
_MATRICES = ("lexical", "names")
_ARRAYS = ("data", "indices", "indptr")


def corpus_dir(db_path: Path, token: str) -> Path:
    return db_path.parent / _DIR / token


def _vocabulary_list(index: LexicalIndex) -> list[str]:
    """The index's tokens by column. A shared Vocabulary may hold tokens added after this
    index was built (columns it does not have): they are left out."""
    n_vocab = index.weights.shape[1]
    tokens = [""] * n_vocab
    for token, column in index.vocab.items():
        if column < n_vocab:
            tokens[column] = token
    return tokens


def save_corpus(index: RepoIndex, corpus: FunctionCorpus) -> Path | None:
    """Save `corpus` for the index state it was built from; None when it was not built from
    the state the store holds now (another commit came in between) or the store has none."""
    token = index.store_token
    if not token or corpus.generation != index.generation:
        return None
    target = corpus_dir(index.store.path, token)
    if (target / _MANIFEST).is_file():
        return target
    try:
        return _save(corpus, token, target)
    except OSError as exc:  # a full disk or a read-only cache: find still answered
        log.warning("could not save the lexical index for the next find: %s", exc)
        return None


def save_current(index: RepoIndex) -> Path | None:
    """Build and save the corpus of the index's current state, unless it is saved already
    (`prism-code index` calls this, so the first find after it is answered at once too)."""
    token = index.store_token
    if token and (corpus_dir(index.store.path, token) / _MANIFEST).is_file():
        return corpus_dir(index.store.path, token)
    return save_corpus(index, FunctionCorpus(index.snapshot()))


def _save(corpus: FunctionCorpus, token: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{token}."))
    try:
        shapes = {}
        for name in _MATRICES:
            lexical: LexicalIndex = getattr(corpus, name)
            weights = lexical.weights
            for part in _ARRAYS:
                np.save(staging / f"{name}.{part}.npy", getattr(weights, part))
            (staging / f"{name}.vocab.json").write_text(json.dumps(_vocabulary_list(lexical)))
            shapes[name] = list(weights.shape)
        rows = [[f.path, f.kind, f.start_line, f.end_line, f.qualname, f.position] for f in corpus.fragments]
        manifest = {"format": FORMAT, "corpus_version": CORPUS_VERSION, "token": token, "shapes": shapes,
                    "rows": rows, "code_keys": corpus.text_keys("code"), "card_keys": corpus.text_keys("card")}
        (staging / _MANIFEST).write_text(json.dumps(manifest))
        try:
            os.replace(staging, target)
        except OSError:  # another process saved the same state first
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _drop_others(target)
    log.info("saved the lexical index of index state %s for the next find", token)
    return target


def _drop_others(kept: Path) -> None:
    """Remove the copies of earlier index states (and staging left by a killed process)."""
    for other in kept.parent.iterdir():
        if other != kept:
            shutil.rmtree(other, ignore_errors=True)


def _matrix(directory: Path, name: str, shape: Sequence[int]) -> LexicalIndex:
    data, indices, indptr = (np.load(directory / f"{name}.{part}.npy", mmap_mode="r") for part in _ARRAYS)
    # Canonical as saved: scipy takes the memory-mapped arrays as they are, without copying.
    weights = sp.csc_matrix((data, indices, indptr), shape=(int(shape[0]), int(shape[1])), copy=False)
    weights.has_canonical_format = True
    tokens = json.loads((directory / f"{name}.vocab.json").read_text())
    return LexicalIndex(vocab=dict(zip(tokens, range(len(tokens)))), weights=weights)


class StoredCorpus(FunctionCorpus):
    """A corpus read from its saved files: the BM25 matrices and rows only. A row's
    definition and tokens (a result's kind and reason) are read from the store on demand;
    the per-row texts, cards and bags of a built corpus are not there."""

    def __init__(self, directory: Path, manifest: dict[str, Any], store: Store) -> None:
        self.generation = 0
        self.token: str = manifest["token"]  # the index state these files were saved for
        self.directory = directory
        self.fragments = [Fragment(path, kind, start, end, qualname, position)
                          for path, kind, start, end, qualname, position in manifest["rows"]]
        self._keys: dict[str, list[str]] = {"code": manifest["code_keys"], "card": manifest["card_keys"]}
        self.lexical = _matrix(directory, "lexical", manifest["shapes"]["lexical"])
        self.names = _matrix(directory, "names", manifest["shapes"]["names"])
        self._related_rows = {}
        self._store = store
        self._rows: dict[int, tuple[Definition | None, list[str]]] = {}
        self._lines: dict[str, list[str]] = {}

    def text_keys(self, which: str) -> list[str]:
        return self._keys[which]

    def _row(self, i: int) -> tuple[Definition | None, list[str]]:
        if i not in self._rows:
            fragment = self.fragments[i]
            lines, definitions = self._store.file_text_and_definitions(fragment.path)
            self._lines[fragment.path] = lines
            definition = next((d for d in definitions if d.qualname == fragment.qualname), None)
            text = fragment_text(lines, fragment)
            self._rows[i] = (definition, code_tokens(f"{text}\n{doc_above(definition, text)}"))
        return self._rows[i]

    def definition(self, i: int) -> Definition | None:
        return self._row(i)[0]

    def row_tokens(self, i: int) -> list[str]:
        return self._row(i)[1]

    def line(self, path: str, number: int) -> str:
        """The stored text of line `number` (1-based) of a file a result was read from."""
        lines = self._lines.get(path)
        if lines is None:
            lines = self._lines[path] = self._store.file_text_and_definitions(path)[0]
        return lines[number - 1] if 0 < number <= len(lines) else ""


def load_corpus(store: Store, token: str) -> StoredCorpus | None:
    """The saved corpus of index state `token`, or None if there is none (or it is of
    another format, or unreadable: the caller builds one instead)."""
    directory = corpus_dir(store.path, token)
    try:
        manifest = json.loads((directory / _MANIFEST).read_text())
        if (manifest.get("format"), manifest.get("corpus_version"), manifest.get("token")) \
                != (FORMAT, CORPUS_VERSION, token):
            log.info("the saved lexical index %s is of another version: building it again", directory)
            shutil.rmtree(directory, ignore_errors=True)  # so the next save writes it anew
            return None
        return StoredCorpus(directory, manifest, store)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.warning("the saved lexical index %s is unreadable (%s); building it again", directory, exc)
            shutil.rmtree(directory, ignore_errors=True)  # so the next save writes it anew
        return None


class StoredSearch(FunctionSearch):
    """Retrieval find over a saved corpus, without a RepoIndex (see the module docstring);
    ranks exactly as FunctionSearch over the index it was saved from."""

    def __init__(self, store: Store, corpus: StoredCorpus, embedder: Embedder | None) -> None:
        self.store = store
        self.embedder = embedder
        self._notes = {}
        self._stored = corpus
        self._vectors = {}
        self._pending_notes = {}
        self._missing_seen = {}

    @property
    def corpus(self) -> FunctionCorpus:
        return self._stored

    def vectors(self, which: str) -> np.ndarray | None:
        """Memory-mapped from the copy's directory once a find has saved them there (see
        tasks/vector_files.py); else read from the store, and saved when all are there."""
        if self.embedder is None or which in self._vectors:
            return super().vectors(which)
        stored, model = self._stored, self.embedder.model_id
        matrix = load_vectors(stored.directory, model, which, len(stored.fragments))
        if matrix is not None:
            self._vectors[which] = matrix
            return matrix
        matrix = super().vectors(which)
        if matrix is not None:
            save_vectors(stored.directory, model, which, matrix)
        return matrix


def _unchanged(store: Store, root: Path, config: IndexConfig) -> bool:
    """True if an index update would change nothing: same parser, no relation work owed,
    and a scan that finds every file as stored (no file added, changed, removed or touched)."""
    if store.meta("parser_version") != str(PARSER_VERSION) or any(store.dirty()):
        return False
    states = store.file_states()
    result = scan(root, config.exclude, config.max_file_bytes,
                  is_source=lambda p: language_for_path(p) is not None, known=states,
                  trusted=config.trusted, max_files=config.max_files)
    diff = diff_scan(states, result.files, root)
    return not (diff.added or diff.changed or diff.removed or diff.touched)


def answerable(request: FindRequest) -> bool:
    """Whether the saved copy can rank this find: plain retrieval only (FragRel reads the
    relations, a model strategy or an expansion the model, none of which are saved)."""
    return request.strategy == "retrieval" and request.alpha == 0 and request.expansion is None


def current_corpus(store: Store, root: Path, config: IndexConfig) -> StoredCorpus | None:
    """The saved corpus, if it is proven to be what an index update would build now: saved
    for the store's current token, no file changed since, no model notes. Call inside
    `store.reading()`, so no commit lands between the proof and its use."""
    token = store.generation()
    corpus = load_corpus(store, token) if token and _unchanged(store, root, config) else None
    if corpus is not None and _has_notes(store.path):
        return None  # model notes change the cards dense search reads
    return corpus


@contextmanager
def saved_search(root: Path | str, config: IndexConfig, cache_dir: Path | None,
                 request: FindRequest, embedder: Embedder | None) -> Iterator[StoredSearch | None]:
    """A search over the saved corpus when the index needs no update and one is saved for
    its current state; else None (the caller opens the index). The store is read in one
    transaction, so another process's commit cannot land between the check and the answer."""
    if not answerable(request):
        yield None
        return
    db_path = workspace_db_path(resolve_workspace(root), cache_dir)
    if not db_path.is_file():
        yield None
        return
    store = Store(db_path)
    try:
        with store.reading():
            corpus = current_corpus(store, resolve_workspace(root), config)
            if corpus is None:
                yield None
            else:
                log.info("answering from the saved lexical index of index state %s", corpus.token)
                yield StoredSearch(store, corpus, embedder)
    finally:
        store.close()


def _has_notes(db_path: Path) -> bool:
    with NotesStore(db_path) as notes:
        return notes.count() > 0
