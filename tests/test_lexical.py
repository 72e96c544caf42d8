import numpy as np
import pytest

from prism_code.retrieval.lexical import LexicalIndex
from prism_code.retrieval.tokenize import code_tokens, query_tokens

DOCS = [
    "def sort_items(xs):\n    return sorted(xs)",
    "def open_socket(host, port):\n    return socket.create_connection((host, port))",
    "def parse_config(path):\n    with open(path) as fh:\n        return json.load(fh)",
    "",
    "class HttpClient:\n    def get(self, url): return self.session.get(url)",
]


@pytest.fixture(scope="module")
def index():
    return LexicalIndex.build([code_tokens(d) for d in DOCS])


def test_ranks_matching_document_first(index):
    top = index.top(query_tokens("open a socket to a host"), 3)
    assert top[0][0] == 1
    assert index.top(query_tokens("parse the config file"), 1)[0][0] == 2


def test_scores_shape_dtype_and_zero_for_no_overlap(index):
    scores = index.scores(query_tokens("sort items"))
    assert scores.shape == (len(DOCS),) and scores.dtype == np.float32
    assert scores[0] > 0 and scores[3] == 0 and scores[1] == 0
    assert not index.scores(["unknownword"]).any()
    assert not index.scores([]).any()
    assert index.top([], 5) == [] and index.top(["unknownword"], 5) == []


def test_top_only_returns_matches_best_first(index):
    top = index.top(query_tokens("get url from http client session"), 10)
    assert [i for i, _ in top] == [4]
    assert len(index) == len(DOCS)


def test_top_breaks_ties_by_index():
    idx = LexicalIndex.build([["alpha"], ["beta"], ["alpha"], ["alpha"]])
    assert [i for i, _ in idx.top(["alpha"], 2)] == [0, 2]


def test_empty_corpus_and_all_empty_documents():
    empty = LexicalIndex.build([])
    assert len(empty) == 0
    assert empty.scores(["x"]).shape == (0,)
    assert empty.top(["x"], 3) == []
    blank = LexicalIndex.build([[], []])
    assert blank.scores(["anything"]).tolist() == [0.0, 0.0]


def test_matches_bm25s_lucene():
    import bm25s

    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(300)]
    docs = [list(rng.choice(vocab, size=rng.integers(0, 60), p=None)) for _ in range(200)]
    ours = LexicalIndex.build(docs)
    ref = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    ref.index(docs, show_progress=False)
    for query in (["w1", "w2", "w2"], ["w299", "w0", "w17", "w5"], ["w42"]):
        np.testing.assert_allclose(ours.scores(query), ref.get_scores(query), rtol=1e-5, atol=1e-6)


def test_bags_reused_over_a_grown_vocabulary_score_like_a_fresh_build():
    from prism_code.retrieval.lexical import TermNumbering

    vocabulary = TermNumbering()
    bags = [vocabulary.bag(code_tokens(d)) for d in DOCS]
    before = LexicalIndex.from_bags(bags, vocabulary)
    # An edit replaces document 1; the old bags are kept, the vocabulary grows.
    edited = "def close_socket(conn):\n    conn.shutdown()"
    bags[1] = vocabulary.bag(code_tokens(edited))
    after = LexicalIndex.from_bags(bags, vocabulary)
    fresh = LexicalIndex.build([code_tokens(d) for d in DOCS[:1] + [edited] + DOCS[2:]])
    for query in ("close the socket connection", "open socket host", "parse config"):
        assert np.allclose(after.scores(query_tokens(query)), fresh.scores(query_tokens(query)))
    # The index built before the edit ignores words its build never saw.
    assert not before.scores(["shutdown"]).any()
    assert before.scores(query_tokens("open socket"))[1] > 0
