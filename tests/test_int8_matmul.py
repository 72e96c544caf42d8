import numpy as np
import pytest

from prism_code.retrieval import dense
from prism_code.retrieval.dense import Embedder
from prism_code.retrieval.int8_matmul import derived_model_path, ensure_int8_model

TEXTS = [
    "a function that sorts a list",
    "def sort_items(xs):\n    return sorted(xs, key=lambda x: x.priority)",
    "def open_socket(host, port):\n    s = socket.socket()\n    s.connect((host, port))\n    return s",
    "parse the command line arguments",
]


@pytest.fixture(scope="module")
def int8_embedder(tmp_path_factory, monkeypatch_module):
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch_module.setattr(dense, "user_cache_root", lambda: cache)
    return Embedder(threads=1, int8_matmul=True)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_derived_once_from_the_shipped_file_and_reused(tmp_path):
    ort = dense._import_onnxruntime()
    source, sha256, _ = dense._model_file()
    built = ensure_int8_model(ort, source, sha256, tmp_path)
    assert built == derived_model_path(tmp_path, sha256) and built.stat().st_size > 1_000_000
    first = built.stat().st_mtime_ns
    assert ensure_int8_model(ort, source, sha256, tmp_path) == built
    assert built.stat().st_mtime_ns == first  # not rebuilt
    assert [p.name for p in tmp_path.iterdir()] == [built.name]  # no build leftovers


def test_int8_vectors_keep_the_float_model_s_meaning(int8_embedder):
    floats = Embedder(threads=1).embed(TEXTS)
    ints = int8_embedder.embed(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(ints, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.einsum("ij,ij->i", ints, floats))) > 0.97
    query, sorter, sock, _ = ints
    assert float(query @ sorter) > float(query @ sock)


def test_int8_vectors_are_cached_under_their_own_model_id(int8_embedder):
    assert int8_embedder.model_id != Embedder(int8_matmul=False).model_id
    assert int8_embedder.model_id.endswith("+int8mm")


def test_find_embeds_with_the_int8_model_by_default():
    assert Embedder().model_id.endswith("+int8mm")


def test_an_index_of_float_vectors_is_re_embedded_not_mixed(tmp_path, int8_embedder):
    from prism_code.embeddings import VectorCache
    from prism_code.store.index_store import Store

    store = Store(tmp_path / "index.sqlite")
    floats = VectorCache(store, Embedder(threads=1, int8_matmul=False))
    assert floats.fill(TEXTS) == len(TEXTS)  # an index written before int8 became the default
    ints = VectorCache(store, int8_embedder)
    assert ints.matrix(TEXTS) is None  # no float vector is served to an int8 query
    assert ints.missing(TEXTS) == TEXTS
    assert ints.fill(TEXTS) == len(TEXTS)
    matrix = ints.matrix(TEXTS)
    assert matrix is not None
    np.testing.assert_allclose(matrix, int8_embedder.embed(TEXTS), atol=1e-6)


def test_a_derived_model_that_disagrees_is_not_kept(tmp_path):
    ort = dense._import_onnxruntime()
    source, sha256, _ = dense._model_file()

    def reject(built):
        raise dense.ModelUnavailable("disagrees")

    with pytest.raises(dense.ModelUnavailable):
        ensure_int8_model(ort, source, sha256, tmp_path, check=reject)
    assert list(tmp_path.iterdir()) == []


def test_the_build_is_checked_against_the_shipped_model(tmp_path):
    from tokenizers import Tokenizer

    ort = dense._import_onnxruntime()
    source, sha256, _ = dense._model_file()
    tokenizer = Tokenizer.from_file(str(dense._tokenizer_file()))
    tokenizer.no_padding()  # as the Embedder sets it
    built = ensure_int8_model(ort, source, sha256, tmp_path)
    dense._check_int8(ort, source, built, tokenizer)  # raises if the vectors disagree


def test_the_build_is_onnxruntime_s_dynamic_quantization_without_its_socket(tmp_path, monkeypatch):
    """int8_quantize.py writes quantize_dynamic's graph and numbers without calling it (it
    names a temporary file with uuid1, and libuuid opens an AF_INET socket to read the MAC)."""
    import uuid

    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    ort = dense._import_onnxruntime()
    source, sha256, _ = dense._model_file()
    ours = ensure_int8_model(ort, source, sha256, tmp_path)
    folded = tmp_path / "folded.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
    reference = tmp_path / "reference.onnx"
    # Only the reference's temporary file name: keeps this test process off the network too.
    monkeypatch.setattr(uuid, "uuid1", uuid.uuid4)
    quantize_dynamic(str(folded), str(reference), weight_type=QuantType.QInt8, per_channel=True)

    graphs = [onnx.load(str(path)).graph for path in (ours, reference)]
    nodes = [sorted((n.op_type, tuple(n.input), tuple(n.output)) for n in g.node) for g in graphs]
    assert nodes[0] == nodes[1]
    assert sum(op == "MatMulInteger" for op, _, _ in nodes[0]) == 36  # 6 per layer
    weights = [{i.name: numpy_helper.to_array(i) for i in g.initializer} for g in graphs]
    assert weights[0].keys() == weights[1].keys()
    for name, ours_array in weights[0].items():
        assert ours_array.dtype == weights[1][name].dtype, name
        np.testing.assert_array_equal(ours_array, weights[1][name], err_msg=name)
