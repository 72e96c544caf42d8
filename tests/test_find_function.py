"""Find's search corpus follows edits incrementally and gives what a cold build gives."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from prism_code.index import RepoIndex
from prism_code.retrieval.tokenize import query_tokens
from prism_code.tasks.find_function import FunctionCorpus, FunctionSearch

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture()
def index(tmp_path: Path):
    root = tmp_path / "multilang"
    shutil.copytree(FIXTURES / "multilang", root)
    idx = RepoIndex(root, cache_dir=tmp_path / "cache")
    idx.update()
    yield idx
    idx.close()


def test_search_after_an_edit_equals_a_cold_corpus(index: RepoIndex):
    search = FunctionSearch(index, None)
    search.search("compute the area of a shape")  # builds the corpus the edit will reuse
    path = index.root / "pkg" / "tax.py"
    path.write_text("from pkg.cart import Cart\n\n\ndef apply_sales_tax(amount, rate):\n"
                    "    \"\"\"Add sales tax to an amount.\"\"\"\n    return amount * (1 + rate)\n")
    index.update()

    found = search.search("add sales tax to an amount", alpha=0.5)
    assert found[0].qualname == "apply_sales_tax"

    warm, cold = search.corpus, FunctionCorpus(index)
    assert warm.code == cold.code and warm.cards == cold.cards and warm.tokens == cold.tokens
    assert [f.key for f in warm.fragments] == [f.key for f in cold.fragments] and warm.docs == cold.docs
    query = ["sales", "tax", "amount", "cart"]
    assert np.allclose(warm.lexical.scores(query), cold.lexical.scores(query))
    assert np.allclose(warm.names.scores(query), cold.names.scores(query))
    assert (warm.related != cold.related).nnz == 0
    assert warm.related.nnz > 0  # the fixture's functions do have related sets


def test_a_corpus_rebuilt_after_edits_to_types_and_plain_files_equals_a_cold_one(index: RepoIndex):
    """The rebuild reuses each unchanged file's units; what changed must still show."""
    search = FunctionSearch(index, None)
    search.search("compute the area of a shape")
    (index.root / "pkg" / "ledger.py").write_text(
        "# A ledger of entries.\nclass Ledger:\n    \"\"\"Entries in posting order.\"\"\"\n\n"
        "    def post(self, entry):\n        self.entries.append(entry)\n")
    (index.root / "pkg" / "settings.py").write_text("".join(f"OPTION_{n} = {n}\n" for n in range(8)))
    next(p for p in sorted(index.root.rglob("*.py")) if p.name not in ("ledger.py", "settings.py")).unlink()
    index.update()

    found = search.search("ledger entries in posting order")
    assert found[0].qualname == "Ledger"
    assert any(f.path == "pkg/settings.py" for f in search.search("OPTION settings", top=20))
    warm, cold = search.corpus, FunctionCorpus(index)
    assert [f.key for f in warm.fragments] == [f.key for f in cold.fragments]
    assert warm.code == cold.code and warm.docs == cold.docs and warm.tokens == cold.tokens


# Queries over the multilang fixture and the edits below: words of names, bodies, doc comments.
EDIT_QUERIES = ["add an item to the inventory", "store counts in memory", "area of a circle",
                "sales tax on an amount", "ledger entries in posting order", "Inventory", "helper data path",
                "cart total price", "radius", "option settings"]


def _ranked(search: FunctionSearch, query: str) -> list[tuple[str, str, float]]:
    return [(f.path, f.qualname, f.score) for f in search.search(query, top=30)]


def _assert_ranks_like_a_cold_build(index: RepoIndex, search: FunctionSearch) -> None:
    warm, cold = search.corpus, FunctionCorpus(index.snapshot())
    assert warm is not cold and warm.generation == index.generation
    keys = [f.key for f in warm.fragments]
    assert keys == [f.key for f in cold.fragments]
    # The function rows are the index's functions, in its order; the type and file units follow.
    assert keys[:len(index.functions())] == [f.key for f in index.functions()]
    assert warm.code == cold.code and warm.docs == cold.docs and warm.tokens == cold.tokens
    assert warm.unit_paths == cold.unit_paths and warm.unit_names == cold.unit_names
    for query in EDIT_QUERIES:
        terms = query_tokens(query)
        np.testing.assert_allclose(warm.lexical.scores(terms), cold.lexical.scores(terms), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(warm.names.scores(terms), cold.names.scores(terms), rtol=1e-6, atol=1e-7)
        assert _ranked(search, query) == _ranked(FunctionSearch(index, None), query)


def test_every_kind_of_edit_leaves_a_corpus_that_ranks_like_a_cold_build(index: RepoIndex):
    """The corpus is updated per file (the edited file's rows rebuilt, every other file's kept);
    after each edit, through the index's own update, it must rank as one built from scratch."""
    search = FunctionSearch(index, None)
    search.search("area of a circle")
    root = index.root
    core = root / "pkg" / "core.py"
    edits = [
        # A function's body.
        lambda: core.write_text(core.read_text().replace("scaled = helper(count)", "scaled = helper(count) * 2")),
        # A function added to a file, a new file with a type, a file deleted.
        lambda: (root / "go" / "store" / "store.go").write_text(
            (root / "go" / "store" / "store.go").read_text()
            + "\n// Reset empties the store of its item counts.\nfunc (s *Store) Reset() {\n\ts.items = nil\n}\n"),
        lambda: (root / "pkg" / "ledger.py").write_text(
            "class Ledger:\n    \"\"\"Entries in posting order.\"\"\"\n\n"
            "    def post(self, entry):\n        self.entries.append(entry)\n"),
        lambda: (root / "tools" / "report.py").unlink(),
        # A doc comment above a definition alone, then a type's fields.
        lambda: (root / "go" / "store" / "store.go").write_text(
            (root / "go" / "store" / "store.go").read_text().replace(
                "// New returns an empty store.", "// New returns an empty store of item counts in memory.")),
        lambda: (root / "rust" / "src" / "geo" / "circle.rs").write_text(
            (root / "rust" / "src" / "geo" / "circle.rs").read_text().replace(
                "pub radius: f64,", "pub radius: f64,\n    pub label: String,")),
        # A file that defines nothing, searched whole; then a file whose functions all go.
        lambda: (root / "pkg" / "settings.py").write_text("".join(f"OPTION_{n} = {n}\n" for n in range(8))),
        lambda: core.write_text('"""Core inventory model, emptied."""\n'),
    ]
    for edit in edits:
        before = search.corpus
        edit()
        index.update()
        _assert_ranks_like_a_cold_build(index, search)
        # Incrementally: the files the edit did not touch kept their rows.
        kept = [path for path, rows in search.corpus._files.items() if before._files.get(path) is rows]
        assert len(kept) >= len(before._files) - 1


def test_files_whose_function_keys_interleave_keep_the_corpus_in_key_order(tmp_path: Path):
    """A path that is another's followed by '#' puts its keys ('util.py#x.py#name') among the
    other file's ('util.py#name'): the rows are still in key order, after edits as cold."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "util.py").write_text("def alpha():\n    return 1\n\n\ndef zulu():\n    return 2\n")
    (root / "pkg" / "util.py#x.py").write_text("def mike():\n    return 3\n")
    idx = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        idx.update()
        search = FunctionSearch(idx, None)
        assert [f.qualname for f in search.corpus.fragments] == ["alpha", "mike", "zulu"]
        (root / "pkg" / "util.py").write_text("def alpha():\n    return 1\n\n\ndef yankee():\n    return 4\n")
        idx.update()
        assert [f.qualname for f in search.corpus.fragments] == ["alpha", "mike", "yankee"]
        assert [f.key for f in search.corpus.fragments] == [f.key for f in FunctionCorpus(idx).fragments]
        assert search.search("mike")[0].path == "pkg/util.py#x.py"
    finally:
        idx.close()


def test_relations_finished_later_reach_the_rerank(index: RepoIndex):
    search = FunctionSearch(index, None)
    path = index.root / "pkg" / "tax.py"
    path.write_text("def apply_sales_tax(amount, rate):\n    return amount * (1 + rate)\n")
    index.update(relations=False)
    before = search.corpus
    assert index.finish_relations() > 0
    after = search.corpus
    assert after is not before  # a new generation, so the related sets are read again
    assert (after.related != FunctionCorpus(index).related).nnz == 0


def test_a_model_note_reaches_the_card_once_embedded(index: RepoIndex):
    from prism_code.embeddings import VectorCache
    from prism_code.memory.code_schemas import FunctionNote
    from prism_code.memory.notes_store import NotesStore, function_hash, llm_note_texts
    from prism_code.retrieval.dense import Embedder

    (index.root / "pkg" / "terse.py").write_text(
        "def f1(xs, k):\n    return [x for x in xs if x % k == 0]\n")
    index.update()
    embedder = Embedder()
    search = FunctionSearch(index, embedder)
    cache = VectorCache(index.store, embedder)
    cache.fill(search.embedding_texts())
    # What the note says and the terse code does not: the query matches only the note.
    query = "which invoice rows fall on a billing cycle boundary"

    def card_score_and_rank() -> tuple[float, int]:
        scores, parts = search.scores(query, alpha=0.0)
        row = next(i for i, f in enumerate(search.corpus.fragments) if f.qualname == "f1")
        return float(parts["dense_card"][row]), int((scores > scores[row]).sum()) + 1

    plain_score, plain_rank = card_score_and_rank()
    fragment = next(f for f in index.functions() if f.qualname == "f1")
    with NotesStore.for_index(index) as store:
        store.put(fragment.path, "f1", function_hash(index, fragment), FunctionNote(
            purpose="Pick the invoice rows that fall on a billing cycle boundary.",
            input="invoice row numbers and the billing cycle length", output="the boundary rows",
            procedure="Keeps each invoice row whose number the billing cycle divides."), "test")
        search.set_notes(llm_note_texts(index, store))

    # Until the note card is embedded the plain card answers: dense search keeps working.
    assert card_score_and_rank() == (plain_score, plain_rank)
    assert cache.fill(search.embedding_texts()) == 1
    noted_score, noted_rank = card_score_and_rank()
    assert noted_score > plain_score + 0.1
    assert noted_rank < plain_rank


def test_a_snapshot_keeps_one_consistent_state_while_the_index_moves_on(index: RepoIndex):
    path = index.root / "pkg" / "tax.py"
    path.write_text("def apply_tax(amount):\n    \"\"\"Add 20% tax.\"\"\"\n    return amount * 1.2\n")
    index.update()
    before = index.snapshot()
    path.write_text("def apply_tax(amount, rate):\n    \"\"\"Add tax at a rate.\"\"\"\n"
                    "    return amount * (1 + rate)\n")
    index.update()
    corpus = FunctionCorpus(before)  # built after the update, from the state before it
    row = next(i for i, f in enumerate(corpus.fragments) if f.qualname == "apply_tax")
    assert corpus.generation == before.generation < index.generation
    assert "1.2" in corpus.code[row] and corpus.definitions[row].doc == "Add 20% tax."
    assert "(amount)" in corpus.definitions[row].signature


def test_the_name_field_ranks_what_a_function_is_called_above_what_a_long_body_mentions(tmp_path: Path):
    """A one-line description names the function's subject; BM25 over the body alone lets a
    long function that mentions the same words in passing outrank it."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "utils.py").write_text(
        "def get_encoding_from_headers(headers):\n"
        "    content_type = headers.get('content-type')\n"
        "    return parse_charset(content_type)\n\n\n"
        "def send(request, stream=False, timeout=None):\n"
        + "".join(f"    encoding_{i} = request.headers.get('encoding', headers[{i}])\n" for i in range(8))
        + "    return transmit(request, stream, timeout)\n")
    # Other functions give the words their usual rarity.
    (root / "other.py").write_text("".join(
        f"def task_{i}(items):\n    return [item * {i} for item in items]\n\n\n" for i in range(20)))
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        search = FunctionSearch(index, None)
        names = [f.qualname for f in search.corpus.fragments]
        parts = search.component_scores("Returns the encoding from the given HTTP headers")
        assert names[int(np.argmax(parts["bm25"]))] == "send"
        assert names[int(np.argmax(parts["bm25_name"]))] == "get_encoding_from_headers"
        assert search.search("Returns the encoding from the given HTTP headers")[0].qualname == \
            "get_encoding_from_headers"
    finally:
        index.close()


def test_a_structured_descriptions_purpose_is_read_against_the_cards(index: RepoIndex):
    """The purpose section reads like a docstring: scored against the cards alone it finds the
    function whose docstring says it, though the procedure describes another body."""
    from prism_code.embeddings import VectorCache
    from prism_code.retrieval.dense import Embedder

    embedder = Embedder()
    search = FunctionSearch(index, embedder)
    VectorCache(index.store, embedder).fill(search.embedding_texts())
    description = ("1. **Purpose**: Scale a value and round it up.\n"
                   "2. **Input**: A number and a factor.\n"
                   "3. **Output**: A whole number.\n"
                   "4. **Procedure**: Joins a name onto the data directory next to this file, "
                   "where the loaders keep their CSV files.")
    names = [f.qualname for f in search.corpus.fragments]
    parts = search.component_scores(description, sections=True)
    assert names[int(np.argmax(parts["dense_card_purpose"]))] == "helper"
    assert names[int(np.argmax(parts["dense_code_procedure"]))] == "data_path"
    # Unasked, or for a query without sections, no section scores are computed.
    assert "dense_card_purpose" not in search.component_scores(description)
    assert "dense_card_purpose" not in search.component_scores("Scale a value and round it up.", sections=True)
    # The default weights give the sections none, so find does not embed them.
    _, used = search.scores(description)
    assert set(used) == {"bm25", "bm25_name", "dense_code", "dense_card"}


def test_the_doc_comment_above_a_definition_is_searched_and_follows_its_edits(tmp_path: Path):
    """A Go function's comment sits above its code, outside its lines; find reads it, and an
    edit of the comment alone reaches the next search."""
    root = tmp_path / "cli"
    root.mkdir()
    source = root / "command.go"

    def write(comment: str) -> None:
        source.write_text(
            "package cli\n\n"
            f"// {comment}\n"
            "func (c *Command) Find(args []string) (*Command, error) {\n\treturn c.walk(args, 0)\n}\n\n"
            "// Usage prints the help text.\n"
            "func (c *Command) Usage() error {\n\treturn c.print(c.help)\n}\n\n"
            "// Walk descends one level.\n"
            "func (c *Command) walk(args []string, depth int) (*Command, error) {\n\treturn c, nil\n}\n")

    write("Find the target subcommand given the args and the command tree.")
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        search = FunctionSearch(index, None)
        found = search.search("how the command tree is traversed to find the target subcommand", top=3)
        assert found[0].qualname == "Command.Find"
        write("Prints a greeting in the terminal.")
        index.update()
        assert search.search("a greeting shown in the terminal", top=1)[0].qualname == "Command.Find"
        warm, cold = search.corpus, FunctionCorpus(index)
        assert warm.tokens == cold.tokens and warm.cards == cold.cards
    finally:
        index.close()


def test_a_file_that_defines_nothing_is_a_result_of_its_own(tmp_path: Path):
    """A shell plugin made only of aliases answers "git aliases" as a file; a three-line
    file of exports is no unit."""
    root = tmp_path / "shell"
    (root / "plugins").mkdir(parents=True)
    (root / "plugins" / "git.plugin.bash").write_text(
        "# Short git aliases for everyday work\n" + "".join(
            f"alias g{short}='git {verb}'\n" for short, verb in
            [("s", "status"), ("c", "commit"), ("p", "push"), ("l", "pull"), ("d", "diff"), ("b", "branch")]))
    (root / "plugins" / "env.bash").write_text("export EDITOR=vim\nexport PAGER=less\nexport LANG=C\n")
    (root / "lib.bash").write_text(
        "print_status() {\n  echo \"status: $1\"\n}\n\nrun_git() {\n  git \"$@\"\n}\n")
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        found = FunctionSearch(index, None).search("git aliases", top=5)
    finally:
        index.close()
    assert (found[0].path, found[0].kind, found[0].start_line, found[0].end_line) == \
        ("plugins/git.plugin.bash", "file", 1, 7)
    assert all(f.path != "plugins/env.bash" for f in found)
    assert {f.kind for f in found[1:]} == {"function"}


def test_while_vectors_are_missing_a_find_stays_lexical_without_recounting_them(index: RepoIndex):
    """Counting every stored vector costs a large repository about a second: while embedding is
    under way, finds search lexically and look again only after a while or once told the vectors
    are stored."""
    from prism_code.embeddings import VectorCache
    from prism_code.retrieval.dense import Embedder

    embedder = Embedder(threads=1)
    search = FunctionSearch(index, embedder)
    assert "dense_code" not in search.search("compute the area of a shape")[0].scores
    VectorCache(index.store, embedder).fill(search.embedding_texts())
    assert "dense_code" not in search.search("compute the area of a shape")[0].scores  # not recounted yet
    search.vectors_stored()
    assert "dense_code" in search.search("compute the area of a shape")[0].scores
