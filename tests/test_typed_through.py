"""Typing into the shown suggestion: answered from it, exactly as the model would answer."""

import pytest

from prism_code.tasks.complete import Completer, CompletionSettings

pytestmark = pytest.mark.model
NET = "calc/net.py"


@pytest.fixture()
def index(calcrepo_index):
    return calcrepo_index


def at_cursor(index, typed: str = "") -> tuple[str, int, int]:
    """net.py's last line (`grace = settings.`) with `typed` after it, and the cursor after that."""
    lines = (index.root / NET).read_text().rstrip("\n").split("\n")
    lines[-1] += typed
    return "\n".join(lines) + "\n", len(lines), len(lines[-1]) + 1


def test_typing_what_the_suggestion_begins_with_needs_no_model_call(index, model_session):
    completer = Completer(index, model_session)
    shown = completer.complete(NET, *at_cursor(index))
    assert shown.completion.startswith("HANDSHAKE_GRACE") and not shown.typed_through
    decoded, encoded = model_session.counters.decoded, model_session.counters.encoded
    answers = {}
    for n in (1, 3, 9, len("HANDSHAKE_GRACE")):  # ends of tokens and cuts inside them
        answers[n] = completer.complete(NET, *at_cursor(index, shown.completion[:n]))
        assert answers[n].typed_through
        assert answers[n].completion == shown.completion[n:]
    assert (model_session.counters.decoded, model_session.counters.encoded) == (decoded, encoded)

    model_path = Completer(index, model_session, CompletionSettings(type_through=False))
    for n, answer in answers.items():
        assert model_path.complete(NET, *at_cursor(index, shown.completion[:n])).completion == answer.completion


def test_typing_something_else_asks_the_model(index, model_session):
    completer = Completer(index, model_session)
    shown = completer.complete(NET, *at_cursor(index))
    decoded = model_session.counters.decoded
    assert completer.follow(NET, *at_cursor(index, "HA")).completion == shown.completion[2:]
    assert completer.follow(NET, *at_cursor(index, "T")) is None  # the suggestion starts with "H"
    assert model_session.counters.decoded == decoded  # asking whether it follows costs no model work
    other = completer.complete(NET, *at_cursor(index, "T"))
    assert not other.typed_through
    assert model_session.counters.decoded > decoded
    assert other.completion != shown.completion[1:]
