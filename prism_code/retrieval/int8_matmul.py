"""MiniLM with int8 matrix products, made locally from the shipped model file.

The shipped model stores its weights as int8 but multiplies in float32: onnxruntime folds
each `Cast` + `Mul` back into a float weight when the session loads. Dynamic quantization
(int8_quantize.py: onnxruntime's `quantize_dynamic` graph, weights per output channel,
activations per call, without its uuid1 call that opened a socket) turns those MatMuls into
MatMulInteger. The file is derived once from the verified shipped model and kept in the
cache beside the other models; nothing is downloaded.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prism_code.retrieval.int8_quantize import quantize_int8_file

log = logging.getLogger(__name__)

# Part of the vector cache's model id: vectors of this model never mix with the float ones.
VARIANT = "int8mm"

_build_lock = threading.Lock()


def derived_model_path(models_dir: Path, source_sha256: str) -> Path:
    return models_dir / f"minilm-{VARIANT}-{source_sha256[:16]}.onnx"


def ensure_int8_model(ort: Any, source: Path, source_sha256: str, models_dir: Path,
                      check: Callable[[Path], None] | None = None) -> Path:
    """The int8-MatMul model derived from `source` (whose sha256 was verified), built on first
    use; written under a temporary name and renamed, so a reader never sees half a file.
    `check(built)` raises if the built file is not fit to use; it is then never kept."""
    target = derived_model_path(models_dir, source_sha256)
    with _build_lock:
        if target.is_file():
            return target
        models_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=models_dir, prefix=".int8-build-") as work:
            folded = Path(work) / "folded.onnx"
            # Basic optimizations only (constant folding): the file stays portable between
            # CPUs, and the weights become float initializers that can be quantized.
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
            built = Path(work) / "int8.onnx"
            quantize_int8_file(folded, built)
            if check is not None:
                check(built)
            os.replace(built, target)
        log.info("derived the int8-MatMul embedding model %s", target)
        return target
