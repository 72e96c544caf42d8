"""Where the embedder's time goes, on the texts the indexer embeds for a sample of functions.

    python -m prism_bench.embed_speed extract /tmp/sympy /tmp/embed-sample.json --functions 3000
    python -m prism_bench.embed_speed time /tmp/embed-sample.json [--limit N] [--only NAME ...]

`extract` indexes a repository (no embeddings) and writes the code and card texts of every
k-th function, deduplicated as the vector cache would. `time` embeds them in several ways:
the embedder as shipped, tokenizing alone, and ONNX session variants (batch size, threads,
length sorting, sequence length, session options), each reported in vectors per second.
Variants that change vectors report their smallest cosine to the shipped vectors.
Not a test: timings depend on the host; run it through `flock /tmp/prism-bench.lock`.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from prism_code.retrieval import dense


def extract(repo: Path, out: Path, functions: int, cache_dir: Path | None) -> int:
    from prism_code.index import RepoIndex
    from prism_code.tasks.find_function import FunctionSearch

    index = RepoIndex(repo, cache_dir=cache_dir)
    try:
        index.update()
        corpus = FunctionSearch(index, None).corpus
        step = max(1, len(corpus.code) // functions)
        rows = list(range(0, len(corpus.code), step))[:functions]
        texts = list(dict.fromkeys([corpus.code[i] for i in rows] + [corpus.cards[i] for i in rows]))
    finally:
        index.close()
    out.write_text(json.dumps({"repo": str(repo), "functions": len(rows), "texts": texts}))
    return len(texts)


@dataclass
class Variant:
    """One way of running the session: how texts are batched and how the session is set up."""

    name: str
    batch: int = 8
    threads: int = 2
    sort: bool = True
    max_tokens: int = dense.MAX_TOKENS
    options: dict[str, Any] = field(default_factory=dict)  # SessionOptions attributes
    config: dict[str, str] = field(default_factory=dict)  # session config entries
    model: Path | None = None  # another ONNX file (e.g. a re-quantized one)
    token_budget: int = 0  # >0: batches of sorted texts up to this many padded tokens


def _session(variant: Variant) -> Any:
    ort = dense._import_onnxruntime()
    options = ort.SessionOptions()
    options.intra_op_num_threads = variant.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    for key, value in variant.options.items():
        setattr(options, key, value)
    for key, text in variant.config.items():
        options.add_session_config_entry(key, text)
    model = variant.model or dense._model_file()[0]
    return ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])


def _tokenizer(max_tokens: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(dense._tokenizer_file()))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def _pooled(session: Any, batch_ids: list[list[int]]) -> tuple[np.ndarray, int]:
    """Unit vectors of one batch, and the padded token count the session ran."""
    width = max(len(ids) for ids in batch_ids)
    input_ids = np.zeros((len(batch_ids), width), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for row, ids in enumerate(batch_ids):
        input_ids[row, :len(ids)] = ids
        mask[row, :len(ids)] = 1
    names = [i.name for i in session.get_inputs()]
    feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
    hidden = session.run(None, {n: feeds[n] for n in names})[0]
    m = mask[:, :, None].astype(np.float32)
    pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12), input_ids.size


def _batches(order: list[int], lengths: list[int], variant: Variant) -> list[list[int]]:
    if not variant.token_budget:
        return [order[s:s + variant.batch] for s in range(0, len(order), variant.batch)]
    batches: list[list[int]] = [[]]
    for i in order:  # ascending length: the newest member is the batch's longest
        if batches[-1] and (len(batches[-1]) + 1) * lengths[i] > variant.token_budget:
            batches.append([])
        batches[-1].append(i)
    return batches


def run_variant(variant: Variant, texts: Sequence[str]) -> tuple[np.ndarray, dict[str, float]]:
    session = _session(variant)
    _pooled(session, [[101, 102]])  # warm-up: the first run allocates
    t0 = time.perf_counter()
    encodings = _tokenizer(variant.max_tokens).encode_batch(list(texts))
    t1 = time.perf_counter()
    order = list(range(len(texts)))
    if variant.sort:
        order.sort(key=lambda i: len(encodings[i].ids))
    out = np.zeros((len(texts), dense.DIM), dtype=np.float32)
    padded = 0
    for rows in _batches(order, [len(e.ids) for e in encodings], variant):
        out[rows], size = _pooled(session, [encodings[i].ids for i in rows])
        padded += size
    t2 = time.perf_counter()
    real = sum(len(e.ids) for e in encodings)
    return out, {"tokenize_s": t1 - t0, "session_s": t2 - t1, "vectors_per_s": len(texts) / (t2 - t0),
                 "padding": 1 - real / padded, "tokens": real}


def variants(per_tensor: Path, per_channel: Path) -> list[Variant]:
    return [
        Variant("shipped-like: batch 8, 2 threads, sorted"),
        Variant("unsorted, batch 8", sort=False),
        Variant("batch 1", batch=1),
        Variant("batch 4", batch=4),
        Variant("batch 16", batch=16),
        Variant("batch 32", batch=32),
        Variant("1 thread, batch 8", threads=1),
        Variant("token budget 1024", token_budget=1024),
        Variant("token budget 4096", token_budget=4096),
        Variant("no mem arena", options={"enable_cpu_mem_arena": False}),
        Variant("spinning on", config={"session.intra_op.allow_spinning": "1"}),
        Variant("max 128 tokens", max_tokens=128),
        Variant("int8 dynamic (per tensor)", model=per_tensor),
        Variant("int8 dynamic (per channel)", model=per_channel),
        Variant("int8 dynamic, 1 thread", model=per_tensor, threads=1),
        Variant("int8 dynamic, batch 32", model=per_tensor, batch=32),
    ]


def _int8_models(work: Path) -> tuple[Path, Path]:
    """(per-tensor, per-channel) int8-MatMul models: the second is the one the embedder
    derives (int8_matmul); the first differs only in quantize_dynamic's per_channel."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from prism_code.config import user_cache_root
    from prism_code.retrieval.int8_matmul import ensure_int8_model

    ort = dense._import_onnxruntime()
    source, sha256, _ = dense._model_file()
    per_channel = ensure_int8_model(ort, source, sha256, user_cache_root() / "models")
    folded, per_tensor = work / "folded.onnx", work / "per-tensor.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
    quantize_dynamic(str(folded), str(per_tensor), weight_type=QuantType.QInt8, per_channel=False)
    return per_tensor, per_channel


def _time_shipped(texts: Sequence[str], threads: int, int8_matmul: bool = False) -> tuple[np.ndarray, float]:
    embedder = dense.Embedder(threads=threads, int8_matmul=int8_matmul)
    embedder.embed(["warm up"])
    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    return vectors, time.perf_counter() - t0


def time_all(sample: Path, limit: int | None, only: list[str], report: Callable[[str], None],
             threads: int | None = None) -> None:
    """With `threads`, every variant runs on that many threads (for cosines beside other jobs)."""
    texts: list[str] = json.loads(sample.read_text())["texts"]
    if limit:  # every k-th text, so that code and cards stay mixed as extracted
        texts = texts[::max(1, len(texts) // limit)][:limit]
    report(f"{len(texts)} texts, {sum(map(len, texts)) / len(texts):.0f} chars on average, "
           f"load {os.getloadavg()[0]:.2f}")
    reference, seconds = _time_shipped(texts, threads or 2)
    report(f"Embedder.embed, float model: {len(texts) / seconds:.1f} vectors/s ({seconds:.1f} s)")
    _, seconds = _time_shipped(texts, threads or 2, int8_matmul=True)
    report(f"Embedder.embed, int8 MatMul (the default): {len(texts) / seconds:.1f} vectors/s ({seconds:.1f} s)")
    with tempfile.TemporaryDirectory(prefix="embed-speed-") as work:
        models = _int8_models(Path(work))
        for variant in variants(*models):
            if only and not any(o in variant.name for o in only):
                continue
            if threads:
                variant.threads = threads
            vectors, figures = run_variant(variant, texts)
            cosines = np.einsum("ij,ij->i", vectors, reference)
            cosine, mean = float(np.min(cosines)), float(np.mean(cosines))
            report(f"{variant.name}: {figures['vectors_per_s']:.1f} vectors/s, tokenize "
                   f"{figures['tokenize_s']:.1f} s, session {figures['session_s']:.1f} s, "
                   f"padding {figures['padding']:.0%}, cosine to shipped min {cosine:.5f} mean {mean:.5f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m prism_bench.embed_speed")
    sub = parser.add_subparsers(dest="command", required=True)
    ext = sub.add_parser("extract")
    ext.add_argument("repo", type=Path)
    ext.add_argument("out", type=Path)
    ext.add_argument("--functions", type=int, default=3000)
    ext.add_argument("--cache-dir", type=Path)
    tim = sub.add_parser("time")
    tim.add_argument("sample", type=Path)
    tim.add_argument("--limit", type=int)
    tim.add_argument("--only", nargs="*", default=[])
    tim.add_argument("--threads", type=int, help="every variant on this many threads")
    args = parser.parse_args(argv)
    if args.command == "extract":
        print(f"{extract(args.repo, args.out, args.functions, args.cache_dir)} texts written to {args.out}")
    else:
        time_all(args.sample, args.limit, args.only, lambda line: print(line, flush=True), args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
