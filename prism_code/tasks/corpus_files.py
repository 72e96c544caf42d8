"""Find's lexical index on disk, so a new process answers without rebuilding it.

`FunctionCorpus` builds BM25 from every function's tokens: on a 750k-line repository that
is seconds of tokenizing plus loading the whole index (texts, parses, the graph) into
memory, paid again by every `prism-code find`. The corpus's finished parts are saved beside
the index database instead, under the store's generation token (replaced by every index
commit, so a copy written for another state of the index is never read):

- the two BM25 weight matrices (CSC: data, indices, indptr as .npy files, opened
  memory-mapped, so only the columns a query names are paged in),
- their vocabularies (token lists in term-id order),
- the rows, as arrays and separator-joined text rather than one JSON of objects (on
  sympy's 37k rows that JSON and its Fragment objects cost ~0.45 s of every CLI find):
  each fragment's path (an index into the file list), kind, lines and qualname, and the
  text keys of its source and card (dense search looks vectors up by them, read only then).
  A row's Fragment is made when a result shows it.

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
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from prism_code.config import IndexConfig
from prism_code.embeddings import text_key
from prism_code.fragments import Fragment, fragment_text
from prism_code.memory.notes_store import NotesStore
from prism_code.parse import PARSER_VERSION, language_for_path
from prism_code.parse.model import Definition
from prism_code.retrieval.dense import Embedder
from prism_code.retrieval.lexical import ColumnArrays, LexicalIndex
from prism_code.retrieval.tokenize import code_tokens
from prism_code.store.database import workspace_db_path
from prism_code.store.index_store import Store
from prism_code.tasks.find_function import CORPUS_VERSION, FunctionCorpus, FunctionSearch, doc_above
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.vector_files import load_vectors, save_vectors
from prism_code.workspace import diff_scan, resolve_workspace, scan

if TYPE_CHECKING:  # not imported by a find answered from the copy (see fragments.py)
    from prism_code.index import RepoIndex

log = logging.getLogger(__name__)

# Bumped whenever what is saved changes; how a corpus is built from the index is
# find_function.CORPUS_VERSION, saved too. A copy of another format or corpus version is
# never read (it is rebuilt on the next ordinary find).
FORMAT = 2
_DIR = "lexical"  # beside index.sqlite, one subdirectory per generation token
_MANIFEST = "manifest.json"  # written last: a directory without it is incomplete
_MATRICES = ("lexical", "names")
_ARRAYS = ("data", "indices", "indptr")
# Lists of strings are saved joined by a character none of them holds (checked on save):
# splitting a file is ten times faster than decoding a JSON list of the same strings.
_SEP = "\0"
_ROW_NUMBERS = "rows.numbers.npy"  # int32 (n, 4): path index, start line, end line, position
_ROW_KINDS = "rows.kinds.npy"  # int8 (n,): index into the manifest's kinds
_PATHS = "rows.paths.txt"  # the distinct files, in first-row order
_NAMES = "rows.names.txt"  # each row's qualname
_KEY_WIDTH = len(text_key(""))  # the text keys are hex digests of one width


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
    except (OSError, ValueError) as exc:  # a full disk, a read-only cache, an unsavable string
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
            _write_joined(staging / f"{name}.vocab.txt", _vocabulary_list(lexical))
            shapes[name] = list(weights.shape)
        kinds = _save_rows(staging, corpus.fragments)
        for which in ("code", "card"):
            keys = corpus.text_keys(which)
            if any(len(key) != _KEY_WIDTH for key in keys):
                raise ValueError("a text key of another width")
            _write_joined(staging / f"keys.{which}.txt", keys)
        manifest = {"format": FORMAT, "corpus_version": CORPUS_VERSION, "token": token, "shapes": shapes,
                    "kinds": kinds, "n_rows": len(corpus.fragments)}
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


def _write_joined(path: Path, texts: Sequence[str]) -> None:
    if any(_SEP in text for text in texts):
        raise ValueError(f"a string of {path.name} holds the separator")  # not saved; find still answers
    path.write_text(_SEP.join(texts), encoding="utf-8")


def _read_joined(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text.split(_SEP) if text else []


def _save_rows(directory: Path, fragments: Sequence[Fragment]) -> list[str]:
    """Write the rows' arrays and texts; the kinds, in the order the kind array indexes them."""
    paths: dict[str, int] = {}
    kinds: dict[str, int] = {}
    numbers = np.array([(paths.setdefault(f.path, len(paths)), f.start_line, f.end_line, f.position)
                        for f in fragments], dtype=np.int32).reshape(len(fragments), 4)
    kind_ids = np.array([kinds.setdefault(f.kind, len(kinds)) for f in fragments], dtype=np.int8)
    np.save(directory / _ROW_NUMBERS, numbers)
    np.save(directory / _ROW_KINDS, kind_ids)
    _write_joined(directory / _PATHS, list(paths))
    _write_joined(directory / _NAMES, [f.qualname for f in fragments])
    return list(kinds)


class _StoredRows(Sequence[Fragment]):
    """The saved rows as a sequence of Fragments, each made when it is first read: a find
    reads the paths and names of all rows (as arrays) but the Fragments of a few."""

    def __init__(self, directory: Path, manifest: dict[str, Any]) -> None:
        n_rows = int(manifest["n_rows"])
        self._numbers = np.load(directory / _ROW_NUMBERS)
        self._kinds: list[str] = manifest["kinds"]
        self._kind_ids = np.load(directory / _ROW_KINDS)
        self._files = _read_joined(directory / _PATHS)
        self.names = tuple(_read_joined(directory / _NAMES))
        if self._numbers.shape != (n_rows, 4) or len(self._kind_ids) != n_rows or len(self.names) != n_rows:
            raise ValueError("the saved rows do not agree in number")
        files = self._files
        self.paths = tuple(files[i] for i in self._numbers[:, 0].tolist())
        self._made: dict[int, Fragment] = {}

    def __len__(self) -> int:
        return len(self.names)

    def _fragment(self, i: int) -> Fragment:
        made = self._made.get(i)
        if made is None:
            _, start, end, position = (int(v) for v in self._numbers[i])
            kind: Any = self._kinds[int(self._kind_ids[i])]
            made = self._made[i] = Fragment(self.paths[i], kind, start, end, self.names[i], position)
        return made

    @overload
    def __getitem__(self, i: int) -> Fragment: ...

    @overload
    def __getitem__(self, i: slice) -> list[Fragment]: ...

    def __getitem__(self, i: int | slice) -> Fragment | list[Fragment]:
        if isinstance(i, slice):
            return [self._fragment(j) for j in range(len(self))[i]]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return self._fragment(i % len(self))


def _drop_others(kept: Path) -> None:
    """Remove the copies of earlier index states (and staging left by a killed process)."""
    for other in kept.parent.iterdir():
        if other != kept:
            shutil.rmtree(other, ignore_errors=True)


def _matrix(directory: Path, name: str, shape: Sequence[int]) -> LexicalIndex:
    data, indices, indptr = (np.load(directory / f"{name}.{part}.npy", mmap_mode="r") for part in _ARRAYS)
    # Canonical as saved; scoring reads the memory-mapped arrays as they are (no scipy).
    weights = ColumnArrays(data, indices, indptr, (int(shape[0]), int(shape[1])))
    if len(indptr) != weights.shape[1] + 1 or len(data) != len(indices) or int(indptr[-1]) != len(data):
        raise ValueError(f"the saved {name} arrays do not fit their shape")
    tokens = _read_joined(directory / f"{name}.vocab.txt")
    if len(tokens) != weights.shape[1]:
        raise ValueError(f"the saved {name} vocabulary does not fit its matrix")
    return LexicalIndex(vocab=dict(zip(tokens, range(len(tokens)))), weights=weights)


class StoredCorpus(FunctionCorpus):
    """A corpus read from its saved files: the BM25 matrices and rows only. A row's
    definition and tokens (a result's kind and reason) are read from the store on demand;
    the per-row texts, cards and bags of a built corpus are not there."""

    def __init__(self, directory: Path, manifest: dict[str, Any], store: Store) -> None:
        self.generation = 0
        self.token: str = manifest["token"]  # the index state these files were saved for
        self.directory = directory
        rows = _StoredRows(directory, manifest)
        self.fragments = rows  # type: ignore[assignment]  # a Sequence: Fragments made on reading
        self.__dict__["unit_paths"], self.__dict__["unit_names"] = rows.paths, rows.names  # cached_property
        self._keys: dict[str, list[str]] = {}
        for which in ("code", "card"):  # read on demand, checked now by size: n keys of one width
            if (directory / f"keys.{which}.txt").stat().st_size != max(0, len(rows) * (_KEY_WIDTH + 1) - 1):
                raise ValueError(f"the saved {which} keys do not fit the rows")
        self.lexical = _matrix(directory, "lexical", manifest["shapes"]["lexical"])
        self.names = _matrix(directory, "names", manifest["shapes"]["names"])
        self._related_rows = {}
        self._store = store
        self._rows: dict[int, tuple[Definition | None, list[str]]] = {}
        self._lines: dict[str, list[str]] = {}

    def text_keys(self, which: str) -> list[str]:
        """Read when dense search looks its vectors up, not by a lexical find."""
        if which not in self._keys:
            self._keys[which] = _read_joined(self.directory / f"keys.{which}.txt")
        return list(self._keys[which])

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
