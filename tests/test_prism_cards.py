"""Prism's prompts fit the model's window whatever a candidate's header holds.

The repository below is a real Python file in fastapi's style: an `__init__` whose every option
is `Annotated[str | None, Doc("...")]` (fastapi's `FastAPI.__init__` header is 4,799 tokens;
on semble's fastapi question a step's prompt reached 11,415 tokens against a 4,096 window). It
is parsed by tree-sitter through the index as any repository is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_code.index import RepoIndex
from prism_code.memory.code_schemas import CandidateMatches
from prism_code.memory.encoding import PromptBuilder
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_prism import TASK
from prism_code.tasks.find_request import FindRequest
from prism_code.tasks.find_settings import PrismSettings
from prism_code.tasks.find_strategies import run_find
from prism_code.tasks.prism_cards import NOTE_TOKENS, candidate_text, fit_texts
from prism_code.tasks.signature_pmi import MAX_SIGNATURE_TOKENS

OPTIONS = 150  # the header is then about 6,000 tokens: more than the 0.5B's 4,096-token window
QUESTION = "how are routes registered?"


def app_source(options: int = OPTIONS) -> str:
    params = "".join(
        f"        option_{i}: Annotated[\n"
        "            str | None,\n"
        '            Doc("""\n'
        f"                The value of option {i} of the application, given to every route it registers;\n"
        f"                see the documentation of routing for how option {i} is used.\n"
        '                """),\n'
        "        ] = None,\n"
        for i in range(options))
    return ("from typing import Annotated\n\nfrom annotated_doc import Doc\n\n\n"
            'class App:\n    """The application: it holds the routes."""\n\n'
            '    @deprecated("""' + "Use the router instead; " * 40 + '""")\n'
            "    def __init__(\n        self,\n" + params + "    ) -> None:\n        self.routes = []\n\n"
            "    def add_route(self, path: str, endpoint) -> None:\n"
            '        """Register a route for a path."""\n'
            "        self.routes.append((path, endpoint))\n\n"
            "    def include_router(self, router) -> None:\n"
            '        """Register every route of a router."""\n'
            "        for path, endpoint in router.routes:\n"
            "            self.add_route(path, endpoint)\n")


@pytest.fixture()
def search(tmp_path: Path):
    root = tmp_path / "app"
    root.mkdir()
    (root / "app.py").write_text(app_source())
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    yield FunctionSearch(index)
    index.close()


def _huge(search: FunctionSearch):
    return next(f for f in search.search(QUESTION, top=10) if f.qualname == "App.__init__")


def test_a_card_shows_the_heads_of_a_huge_signature_and_its_note(search, vocab):
    found = _huge(search)
    whole = candidate_text(search.index, found, "App.__init__", "notes", None, 60)
    card = candidate_text(search.index, found, "App.__init__", "notes", None, 60, vocab)
    assert len(vocab.tokenize_text(whole)) > 4096  # the header alone overflows the window
    header = len(vocab.tokenize_text(f"### App.__init__\n# {found.path}:{found.start_line}\nNote: \n"))
    # Each cut part may gain a token or two when its head is tokenized again with the cut mark.
    assert len(vocab.tokenize_text(card)) <= header + MAX_SIGNATURE_TOKENS + NOTE_TOKENS + 8
    assert card.startswith("### App.__init__\n# app.py:")
    assert "def __init__( self, option_0" in card and "option_149" not in card
    assert card.count(" ...") == 2


def test_fitted_texts_keep_the_best_whole_and_cut_the_lowest_ranked_first(search, vocab):
    found = search.search(QUESTION, top=10)
    texts = [candidate_text(search.index, f, f.qualname, "notes", None, 60, vocab) for f in found]
    small = sorted(texts, key=lambda t: len(vocab.tokenize_text(t)))
    for room in (40, 120, 300, 4000):
        fitted = fit_texts(vocab, small, room)
        assert len(vocab.tokenize_text(fitted)) <= room
    everything = "\n".join(small)
    assert fit_texts(vocab, small, len(vocab.tokenize_text(everything))) == everything
    cut = fit_texts(vocab, small, len(vocab.tokenize_text(small[0])) + 20)
    assert cut.startswith(small[0] + "\n") and cut.endswith(" ...")  # the first whole, the second's head


@pytest.mark.model
def test_a_step_prompt_fits_the_window_with_the_decoding_however_long_the_chunk(search, model_session):
    uncapped = candidate_text(search.index, _huge(search), "App.__init__", "notes", None, 60)
    builder = PromptBuilder(model_session, TASK, QUESTION, CandidateMatches)
    reserve = PrismSettings().step_tokens
    prompt = builder.prompt({}, uncapped, reserve=reserve)
    assert len(model_session.tokenize_text(uncapped)) > model_session.n_ctx
    assert len(prompt.tokens) + reserve <= model_session.n_ctx
    assert len(prompt.tokens) + reserve == model_session.n_ctx  # cut to the room left, not below it
    assert builder.chunk_room({}, reserve) < model_session.n_ctx - reserve


@pytest.mark.model
def test_prism_on_a_huge_header_reads_it_within_the_window(search, model_session):
    prism = PrismSettings(noted=2, noted_chunk=2, max_revisions=1, step_tokens=60)
    outcome = run_find(FindRequest(QUESTION, "prism", top=4, candidates=4, prism=prism), search,
                       session=model_session)
    assert "model_skipped" not in outcome.stats and outcome.model_error is None
    assert "App.__init__" in outcome.stats["noted"]
    assert outcome.stats["steps"] == 1
    for step in outcome.stats["step_rows"]:  # prompt tokens (cached or not) of each step
        assert step["total_tokens"] + prism.step_tokens <= model_session.n_ctx
    assert outcome.stats["candidate_tokens"] < 500  # two cards, the huge one shown to its heads
    assert [r.qualname for r in outcome.results] == [r.qualname for r in search.search(QUESTION, top=4)]


LONG = "Register every route of a router with the application, keeping its path and endpoint. " * 400


# A description is read by the signature scorer first; a question (held) only by the notes pass.
@pytest.mark.model
@pytest.mark.parametrize("description", [LONG, "How are routes registered? " + LONG + "?"])
def test_a_description_longer_than_the_window_gets_retrievals_list_and_why(search, model_session, description):
    outcome = run_find(FindRequest(description, "prism", top=4, candidates=4), search, session=model_session)
    assert "does not fit the context" in outcome.stats["model_skipped"]
    assert outcome.model_error is None  # not the engine's failure: no remote status
    assert [r.qualname for r in outcome.results] == [r.qualname for r in search.search(description, top=4)]
