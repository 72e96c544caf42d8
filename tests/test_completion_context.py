"""The context shown for a suggestion: window labels back to lines, and which suggestion's.

The server side with the real model is in tests/test_server_completion.py."""

from __future__ import annotations

from pathlib import Path

from pygls.workspace.position_codec import PositionCodec

from prism_code.lsp import commands
from prism_code.lsp.completion_context import ContextLog
from prism_code.retrieval.windows import WindowRetriever, parse_label
from prism_code.tasks.complete import CompletionResult


def test_every_retrieved_label_reads_back_as_its_window(calcrepo_index):
    windows = WindowRetriever(calcrepo_index).retrieve(
        "settings MAX_RETRIES_PER_HOST HANDSHAKE_GRACE_PERIOD_MS total", "calc/net.py", top_k=20)
    assert windows
    for window in windows:
        f = window.fragment
        assert parse_label(window.label) == (f.path, f.start_line, f.end_line)
    assert parse_label("c:/odd:name.py:3-7") == ("c:/odd:name.py", 3, 7)
    for not_a_label in ("calc/net.py", "calc/net.py:7", "calc/net.py:0-3", "calc/net.py:9-3",
                        "calc/net.py:١-٣"):
        assert parse_label(not_a_label) is None


def test_each_document_shows_its_own_last_suggestion(calcrepo_index):
    root: Path = calcrepo_index.root
    log = ContextLog()
    net, ops = "file:///w/calc/net.py", "file:///w/calc/ops.py"
    log.observe(net, root, _result("HANDSHAKE_GRACE_PERIOD_MS", ["calc/settings.py:1-3"]))
    log.observe(ops, root, _result("total", []))
    # A blank answer shows nothing: what the user saw in net.py is still the suggestion before.
    log.observe(net, root, _result("  ", ["calc/report.py:1-8"]))
    assert log.of(net) is not None and log.of(net).labels == ("calc/settings.py:1-3",)
    assert log.of(None) == log.of(ops) and log.status() == {"context": [], "contextUri": ops}

    def line_text(at: Path, path: str, line: int) -> str:
        return calcrepo_index.lines[path][line - 1]

    shown = commands.context_json(log.of(net), PositionCodec(), line_text)
    [fragment] = shown["fragments"]
    assert fragment["uri"] == (root / "calc/settings.py").as_uri()
    assert fragment["range"] == {"start": {"line": 0, "character": 0},
                                 "end": {"line": 2, "character": len("HANDSHAKE_GRACE_PERIOD_MS = 250")}}
    log.forget(net)  # closed
    assert log.of(net) is None and log.of(None) is not None


def _result(completion: str, context: list[str]) -> CompletionResult:
    return CompletionResult(completion=completion, latency_ms=1.0, context=context)


def test_a_retriever_rebuilt_after_edits_answers_as_a_new_one(calcrepo_index):
    # It keeps the code tokens of unchanged windows across index generations: the same index.
    index = calcrepo_index
    kept = WindowRetriever(index)
    query = "settings MAX_RETRIES_PER_HOST HANDSHAKE_GRACE_PERIOD_MS total retries"
    kept.retrieve(query, "calc/net.py", top_k=20, alpha=0.5)
    edits = [("calc/settings.py", "DEFAULT_TIMEOUT_SECONDS = 30\nMAX_RETRIES_PER_HOST = 7\n"
              "HANDSHAKE_GRACE_PERIOD_MS = 250\ntotal_retries = MAX_RETRIES_PER_HOST * 2\n"),
             ("calc/new_module.py", "from calc import settings\n\n\ndef retries():\n"
              "    return settings.MAX_RETRIES_PER_HOST\n" * 3),
             ("calc/new_module.py", None)]  # deleted
    for path, text in edits:
        if text is None:
            (index.root / path).unlink()
        else:
            (index.root / path).write_text(text)
        generation = index.generation
        index.update()
        assert index.generation != generation
        fresh = WindowRetriever(index)
        for alpha in (0.0, 0.5):
            got = kept.retrieve(query, "calc/net.py", top_k=20, alpha=alpha)
            want = fresh.retrieve(query, "calc/net.py", top_k=20, alpha=alpha)
            assert [(w.label, w.text, w.score) for w in got] == [(w.label, w.text, w.score) for w in want]
        assert (kept._related != fresh._related).nnz == 0
        assert kept._lexical is not None and fresh._lexical is not None
        assert (kept._lexical.weights != fresh._lexical.weights).nnz == 0
