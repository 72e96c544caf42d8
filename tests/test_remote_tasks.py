"""Every model task through a real remote engine: llama-cpp-python's server on loopback with
the 0.5B model, against the same model run locally (issue #16 item 3).

That server completes under a grammar but has no usable prompt log-probabilities (its echo
reads each token's number off the next token's logits), so the likelihood rerank fails
there with a clear error and `find` falls back to retrieval's list; PRISM's own pass
(`--evidence fit`), the notes pass and the module summaries run through it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from prism_code.cli import main
from prism_code.index import RepoIndex
from prism_code.llm.remote import RemoteError, RemoteSession, RemoteSettings
from prism_code.memory.cok import ModuleSummarizer
from prism_code.memory.note_writer import run_notes
from prism_code.memory.notes_store import NotesStore
from prism_code.retrieval.dense import Embedder
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.find_settings import PrismSettings
from prism_code.tasks.find_strategies import run_find

pytestmark = pytest.mark.model

FIXTURE = Path(__file__).parent / "fixtures" / "calcrepo"
ORDER_TOTAL = "Work out what an order costs: multiply each unit price by its quantity and add them up."


@pytest.fixture(scope="module")
def remote(llama_server):
    # llama_cpp.server computes logits for every prompt token (its logits_all): on one busy
    # core a PRISM step's prompt can take longer than the default deadline.
    with RemoteSession(RemoteSettings(url=llama_server, timeout=600)) as session:
        yield session


def calcrepo(parent: Path, name: str) -> RepoIndex:
    root = parent / name
    shutil.copytree(FIXTURE, root)
    index = RepoIndex(root, cache_dir=parent / f"{name}-cache")
    index.update()
    return index


def test_prism_find_through_the_remote_ranks_as_the_local_model(remote, model_session, tmp_path):
    index = calcrepo(tmp_path, "calcrepo")
    try:
        search = FunctionSearch(index, Embedder())
        ranked = {}
        for name, session in (("local", model_session), ("remote", remote)):
            outcome = run_find(FindRequest(ORDER_TOTAL, "prism", top=5, candidates=5,
                                           prism=PrismSettings(evidence="fit")), search, session=session)
            ranked[name] = ([r.qualname for r in outcome.results], outcome.stats["memory"])
    finally:
        index.close()
    assert ranked["remote"] == ranked["local"]
    assert ranked["remote"][0][0] == "total_price"
    assert ranked["remote"][1]  # the pass kept candidates in its memory


def test_the_likelihood_needs_prompt_logprobs_and_find_falls_back_to_retrieval(llama_server, tmp_path, capsys):
    root = tmp_path / "calcrepo"
    shutil.copytree(FIXTURE, root)
    common = ["find", str(root), ORDER_TOTAL, "--cache-dir", str(tmp_path / "cache"), "--json", "--top", "3"]
    assert main(common) == 0
    retrieval = json.loads(capsys.readouterr().out)
    assert main([*common, "--strategy", "prism", "--remote", llama_server]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == retrieval
    assert "the remote engine failed, showing retrieval's list" in err
    assert "returns no log-probabilities of prompt tokens" in err
    assert "echo: the echoed log-probabilities do not line up with the prompt" in err


def test_the_misread_echo_of_llama_cpp_python_is_refused(remote):
    prefix = remote.chatml([("user", "def add(a, b):\n    return a + b")])
    with pytest.raises(RemoteError, match="do not line up"):
        remote.continuation_logprobs(prefix, remote.tokenize_text("Adds two numbers."))


def test_a_note_and_a_module_summary_through_the_remote(remote, model_session, tmp_path):
    written: dict[str, dict] = {}
    for name, session in (("local", model_session), ("remote", remote)):
        index = calcrepo(tmp_path, name)
        try:
            with NotesStore.for_index(index) as store:
                run = run_notes(session, index, priority=["calc/billing.py"], limit=1, store=store)
                assert (run.noted, run.failed) == (1, 0)
                notes = store.notes_in("calc/billing.py")
                model = store.get("calc/billing.py", "make_invoice").model
                summary = ModuleSummarizer(session, index, store).notes_arrived("calc/billing.py", notes)
                written[name] = {"notes": notes, "model": model, "summary": summary}
        finally:
            index.close()
    note = written["remote"]["notes"]["make_invoice"]
    assert all(getattr(note, field).strip() for field in ("purpose", "input", "output", "procedure"))
    assert written["remote"]["model"] == f"remote:{remote.model_name}"
    # The first field follows the same prompt on both sides. Later ones may part: the local
    # session keeps the tokens it sampled in its prompt, a text-only server reads their text
    # back as its own tokenization of it.
    assert note.purpose == written["local"]["notes"]["make_invoice"].purpose
    summary = written["remote"]["summary"]
    assert summary["purpose"].strip() and set(summary["key_functions"]) <= {"make_invoice"}
