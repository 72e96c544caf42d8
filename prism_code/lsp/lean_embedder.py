"""The embedder as the language server runs it: small batches, one thread."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from prism_code.cancel import CancelCheck
from prism_code.retrieval.dense import Embedder

# Texts per ONNX call when embedding in the server. Memory grows with the batch's
# attention buffers, speed does not: on 256-token texts a batch of 8 grew RSS by ~290 MB,
# 2 by ~70 MB and 1 by ~30 MB, all at the same texts per second (2 cores, busy). Texts are
# embedded shortest first, so batching saved little padding anyway.
EMBED_BATCH = 1


class LeanEmbedder(Embedder):
    """The embedder with the server's batch size (see EMBED_BATCH)."""

    def embed(self, texts: Sequence[str], batch_size: int = EMBED_BATCH,
              progress: Callable[[int, int], None] | None = None,
              cancelled: CancelCheck | None = None) -> np.ndarray:
        return super().embed(texts, batch_size, progress, cancelled)
