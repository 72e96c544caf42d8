"""Repository-aware completion with the real local model on a small fixture repository."""

import pytest

from prism_code.llm import StateCache
from prism_code.tasks.complete import Completer, CompletionSettings

pytestmark = pytest.mark.model
NET = "calc/net.py"


@pytest.fixture()
def index(calcrepo_index):
    return calcrepo_index


def cursor_after_settings(index):
    text = (index.root / NET).read_text()
    line = text.rstrip("\n").split("\n")
    return text, len(line), len(line[-1]) + 1


def test_retrieved_context_names_what_only_another_file_defines(index, model_session):
    text, line, col = cursor_after_settings(index)
    with_context = Completer(index, model_session).complete(NET, text, line, col)
    alone = Completer(index, model_session, CompletionSettings(retrieval=False)).complete(NET, text, line, col)
    assert "calc/settings.py:1-3" in with_context.context
    assert "HANDSHAKE_GRACE_PERIOD_MS" in with_context.completion  # spelled only in settings.py
    assert "HANDSHAKE" not in alone.completion
    assert "\n" not in with_context.completion  # single line unless a block opens


def test_keystrokes_reuse_the_cache_and_restarts_use_state_files(index, model_session, tmp_path):
    # The model path: typing the suggestion's own first letter would be answered from it.
    settings = CompletionSettings(min_state_tokens=0, type_through=False)
    states = StateCache(tmp_path / "states")
    text, line, col = cursor_after_settings(index)
    model_session.reset()
    completer = Completer(index, model_session, settings, states)
    first = completer.complete(NET, text, line, col)
    typed = text.rstrip("\n") + "H\n"  # typed at the cursor; the newline after it stays
    second = completer.complete(NET, typed, line, col + 1)
    assert second.reused >= first.prompt_tokens - 12  # only the typed tail is evaluated again
    assert second.encoded < 12
    assert completer.checkpoint()  # e.g. when the editor goes idle or the server exits
    model_session.reset()  # a restart: the KV cache is empty, the state file is not
    third = Completer(index, model_session, settings, states).complete(NET, text, line, col)
    assert third.restored >= first.prompt_tokens - 12
    assert third.encoded < 12
    assert third.completion == first.completion


def test_the_cursor_may_cut_a_token_and_the_completion_still_fits(index, model_session):
    text, line, col = cursor_after_settings(index)  # `grace = settings.`: "." ends a token
    head = text.rstrip("\n")
    model_session.reset()
    completer = Completer(index, model_session, CompletionSettings(type_through=False))
    assert completer.complete(NET, text, line, col).completion.startswith("HANDSHAKE_GRACE")  # no space
    typed = head + "HANDSH\n"  # mid-word
    assert completer.complete(NET, typed, line, col + 6).completion.startswith("AKE_GRACE_PERIOD_MS")


def test_the_fast_path_writes_what_the_plain_path_writes(index, model_session):
    # Kept logits, sampling shortcuts, cached prompt tokens and retrieval against every logit
    # evaluated again, llama.cpp sampling over the whole vocabulary, prompts tokenized and
    # retrieval run afresh: keystrokes that type the suggestion, others, a deletion, a new line.
    text, line, col = cursor_after_settings(index)
    head = text.rstrip("\n")
    below = head + "HANDSHAKE_GRACE_PERIOD_MS\n    "
    steps = [(text, line, col), (head + "H\n", line, col + 1), (head + "HA\n", line, col + 2),
             (head + "HX\n", line, col + 2), (head + "M\n", line, col + 1), (text, line, col),
             (below + "\n", line + 1, 5), (below + "r\n", line + 1, 6), (below + "re\n", line + 1, 7)]

    def run(plain: bool) -> tuple[list[tuple[str, list[str], list[int]]], int]:
        model_session.reset()
        model_session.shortcuts = not plain
        completer = Completer(index, model_session, CompletionSettings(type_through=False))
        seen = []
        evaluated = 0
        try:
            for typed, at_line, at_col in steps:
                if plain:
                    completer._tokens = model_session
                    completer._ranked = None
                answer = completer.complete(NET, typed, at_line, at_col)
                seen.append((answer.completion, answer.context, completer._last_prompt.tokens))
                evaluated += answer.encoded
        finally:
            model_session.shortcuts = True
        return seen, evaluated

    model_session.set_threads(1)  # two spin at barriers on a busy machine; both runs use the same
    try:
        fast, fast_evaluated = run(plain=False)
        plain, plain_evaluated = run(plain=True)
    finally:
        model_session.set_threads(2)
    assert fast == plain
    assert fast_evaluated < plain_evaluated  # tokens typed as the model wrote them are not evaluated again


def test_a_new_line_gets_a_whole_statement_at_its_indentation(model_session, tmp_path):
    # Issue #28: right after Enter the cursor sits at the new line's indentation with nothing
    # typed. The suggestion is inserted there, so it must start with code (no indentation of
    # its own), be one whole statement, and leave the file valid Python.
    import ast
    import shutil
    from pathlib import Path

    from prism_code.index import RepoIndex

    root = tmp_path / "shop"
    shutil.copytree(Path(__file__).parent / "fixtures" / "linestart" / "shop", root)
    path = "cart.py"
    lines = (root / path).read_text().split("\n")
    number = lines.index("        self.prices.pop(sku, None)") + 1  # in Cart.remove, after lines.pop
    indent = "        "
    text = "\n".join([*lines[:number - 1], indent, *lines[number:]])
    idx = RepoIndex(root, cache_dir=tmp_path / "cache")
    idx.update()
    try:
        model_session.reset()
        answer = Completer(idx, model_session).complete(path, text, number, len(indent) + 1)
    finally:
        idx.close()
    said = answer.completion
    assert said and not said[0].isspace() and "\n" not in said
    assert len(ast.parse(said).body) == 1  # one whole statement
    filled = "\n".join([*lines[:number - 1], indent + said, *lines[number:]])
    ast.parse(filled)  # at the indentation of the block it belongs to
    assert said != lines[number - 2].strip()  # not the line above written again
