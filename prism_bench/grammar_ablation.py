"""How well a PRISM pass's revisions survive validation under a typed grammar, a generic
one, or none, on a real repository with the local model.

Runs the same RepoQA-style pass (find a function from its description; memory
`CandidateFunctions`) over the same chunks each way, from a cold KV cache, and prints what
the model proposed, what was applied and rejected, and what decoding cost.

    python -m prism_bench.grammar_ablation PATH [--chunks 6] [--chunk-tokens 500] [--query TEXT]

The encoding ablation (paper Table 3: in-place or amendments, with or without updates) is
`prism-code bench repoqa --strategy prism --ablation N` (prism_bench/repoqa_strategies.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prism_code.file_order import functions_in_order
from prism_code.index import RepoIndex
from prism_code.memory.code_schemas import CandidateFunctions, FunctionNote
from prism_code.memory.encoding import Encoding
from prism_code.memory.revisions import Target
from prism_code.memory.runner import PassSettings, run_pass
from prism_code.memory.schema import format_path

if TYPE_CHECKING:
    from prism_code.llm.runtime import LlamaSession  # loads llama.cpp's library: typing only

TASK = ("You search a repository for the one function that [QUERY] describes. Add to the memory "
        "each function of [TEXT] that could be it, under its name as written in [TEXT], described "
        "from its code.")
DEFAULT_QUERY = ("Find the function that checks whether a value has the right length: it takes the "
                 "value, compares its length with a minimum, a maximum or an exact length, and "
                 "raises a validation error when it does not fit.")


@dataclass
class Chunk:
    text: str
    qualnames: list[str]


def chunks_of(session: LlamaSession, index: RepoIndex, n_chunks: int, chunk_tokens: int) -> list[Chunk]:
    """Function sources in file order, packed into chunks of about `chunk_tokens` tokens."""
    chunks: list[Chunk] = []
    current = Chunk("", [])
    size = 0
    for fragment in functions_in_order(index):
        text = f"# {fragment.path}\n{index.text(fragment)}\n"
        n = len(session.tokenize_text(text))
        if n > chunk_tokens:
            continue
        if size + n > chunk_tokens and current.qualnames:
            chunks.append(current)
            if len(chunks) == n_chunks:
                return chunks
            current, size = Chunk("", []), 0
        current.text += ("\n" if current.text else "") + text
        current.qualnames.append(fragment.qualname)
        size += n
    if current.qualnames and len(chunks) < n_chunks:
        chunks.append(current)
    return chunks


def chunk_targets(chunks: list[Chunk]) -> Callable[[int, str], list[Target]]:
    """Per step, the candidate entries named after the functions that chunk defines."""
    def targets(i: int, _text: str) -> list[Target]:
        return [Target(FunctionNote, path=format_path(("candidate_functions", q))) for q in chunks[i].qualnames]
    return targets


def grammar_comparison(session: LlamaSession, index: RepoIndex, query: str = DEFAULT_QUERY, n_chunks: int = 6,
                       chunk_tokens: int = 500, max_tokens: int = 160) -> list[dict[str, Any]]:
    """How well the model's revisions survive validation: typed grammar, generic grammar, none."""
    chunks = chunks_of(session, index, n_chunks, chunk_tokens)
    rows = []
    for label, grammar, typed, targets in (
            ("typed grammar, chunk's names", True, True, chunk_targets(chunks)),
            ("typed grammar", True, True, None),
            ("generic grammar", True, False, None),
            ("no grammar", False, False, None)):
        session.reset()
        settings = PassSettings(encoding=Encoding.AMENDMENTS, allow_updates=True, grammar=grammar,
                                typed_grammar=typed, max_revisions=3, max_tokens=max_tokens)
        result = run_pass(session, TASK, query, CandidateFunctions, [c.text for c in chunks], settings,
                          targets=targets)
        proposed = sum(len(step.proposed) for step in result.steps)
        rows.append({"variant": label, "proposed": proposed, "applied": result.applied,
                     "rejected": len(result.rejected),
                     "parse_errors": sum(len(step.parse_errors) for step in result.steps),
                     "decoded": result.accounting.decoded,
                     "decode_s": round(result.accounting.decode_ms / 1000, 1),
                     "tok_per_s": round(1000 * result.accounting.decoded / max(result.accounting.decode_ms, 1), 1)})
    return rows


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m prism_bench.grammar_ablation", description=__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--chunks", type=int, default=6)
    parser.add_argument("--chunk-tokens", type=int, default=500)
    parser.add_argument("--query", default=DEFAULT_QUERY)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    from prism_code.llm.runtime import LlamaSession

    with tempfile.TemporaryDirectory() as cache:
        index = RepoIndex(args.path, cache_dir=Path(cache))
        session = LlamaSession.open(args.model, n_threads=args.threads)
        try:
            index.update()
            rows = grammar_comparison(session, index, args.query, args.chunks, args.chunk_tokens)
        finally:
            session.close()
            index.close()
    print(_table(rows, ["variant", "proposed", "applied", "rejected", "parse_errors", "decoded",
                        "decode_s", "tok_per_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
