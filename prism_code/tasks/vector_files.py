"""Dense search's vectors saved beside the lexical copy, memory-mapped by the next find.

With every vector stored, a find over the saved lexical index (tasks/corpus_files.py) still
read each function's source and card vectors from SQLite into Python: one blob object per
text, then a stacked copy, for every `prism-code find`. The first such find now writes the
two matrices it stacked as .npy files into the copy's directory (so under the same
generation token, and removed with it); later finds open them memory-mapped.

float32, the store's own type, so the scores are equal bit for bit (float16 would halve the
files but move cosine scores by ~1e-3, enough to swap near ties). Files are named by the
embedding model, so a find with another model never reads them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


def vectors_path(directory: Path, model: str, which: str) -> Path:
    """The file of the `which` ("code" or "card") vectors made by `model`."""
    tag = hashlib.blake2b(model.encode(), digest_size=6).hexdigest()
    return directory / f"vectors.{which}.{tag}.npy"


def load_vectors(directory: Path, model: str, which: str, rows: int) -> np.ndarray | None:
    """The saved matrix, memory-mapped, or None if there is none that fits `rows` rows."""
    path = vectors_path(directory, model, which)
    try:
        matrix: np.ndarray = np.load(path, mmap_mode="r")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("the saved vectors %s are unreadable (%s): reading them from the index", path, exc)
        path.unlink(missing_ok=True)
        return None
    if matrix.ndim != 2 or matrix.shape[0] != rows or matrix.dtype != np.float32:
        log.warning("the saved vectors %s do not fit the saved rows: reading them from the index", path)
        path.unlink(missing_ok=True)
        return None
    return matrix


def save_vectors(directory: Path, model: str, which: str, matrix: np.ndarray) -> None:
    """Write `matrix` for the next find; written aside and renamed, so never seen half-written."""
    target = vectors_path(directory, model, which)
    try:
        handle, staging = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.")
        try:
            with os.fdopen(handle, "wb") as out:
                np.save(out, np.ascontiguousarray(matrix, dtype=np.float32))
            os.replace(staging, target)
        except BaseException:
            Path(staging).unlink(missing_ok=True)
            raise
    except OSError as exc:  # a full disk or a removed copy: this find has its answer
        log.warning("could not save the vectors for the next find: %s", exc)
        return
    log.info("saved the %s vectors beside the lexical index for the next find", which)
