"""Fill-in-the-middle prompt pieces: cursor split, block detection, trimming, token layout."""

import pytest

from prism_code.tasks.fim import (FimBudget, build_prompt, finish_completion, split_at_cursor,
                                  wants_block)


def test_split_at_cursor_is_one_based_and_exact():
    text = "def f(x):\n    return x\n"
    assert split_at_cursor(text, 2, 5) == ("def f(x):\n    ", "return x\n")
    assert split_at_cursor(text, 1, 1) == ("", text)
    prefix, suffix = split_at_cursor(text, 3, 1)
    assert prefix + suffix == text
    with pytest.raises(ValueError, match="outside"):
        split_at_cursor(text, 9, 1)
    with pytest.raises(ValueError, match="column"):
        split_at_cursor(text, 1, 40)


def test_multi_line_only_where_a_block_opens():
    assert wants_block("def f(x):\n    ")
    assert wants_block("if (ready) {\n  ")
    assert wants_block("for item in items:  # each one\n        ")
    assert not wants_block("x = compute(\n    y")  # cursor after text: finish this line
    assert not wants_block("total = 0\n")


def test_finish_completion_cuts_lines_and_repeated_closers():
    assert finish_completion("a * b\nprint(1)", "", 1) == "a * b"
    assert finish_completion("foo(x))", ")\nnext()", 1) == "foo(x)"
    assert finish_completion("max", "x = 1", 1) == "max"  # a coincidence, not a repeat
    assert finish_completion("a, b]", "]", 1) == "a, b"
    assert finish_completion("x = 1\ny = 2\nz = 3\n", "", 2) == "x = 1\ny = 2"


@pytest.mark.model
def test_prompt_layout_budget_and_control_tokens(model_session):
    tok = model_session
    prefix = "# <|fim_suffix|> written in a comment must stay text\n" + "x = 1\n" * 200 + "y = "
    prompt = build_prompt(tok, "demo", "pkg/main.py", prefix, "\nprint(y)\n",
                          [("pkg/b.py:1-3", "def b():\n    return 2"),
                           ("pkg/a.py:1-2", "A = 1"),
                           ("pkg/huge.py:1-900", "z = 0\n" * 900)],
                          FimBudget(context_tokens=200, prefix_tokens=100, suffix_tokens=20))
    special = {name: tok.special_token(name) for name in
               ("<|repo_name|>", "<|file_sep|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")}
    assert prompt.tokens.count(special["<|fim_suffix|>"]) == 1  # the comment's copy is plain text
    assert prompt.tokens.count(special["<|fim_prefix|>"]) == 1
    assert prompt.tokens[-1] == special["<|fim_middle|>"]
    assert prompt.tokens[:len(prompt.stable)] == prompt.stable
    assert prompt.context == ["pkg/a.py:1-2", "pkg/b.py:1-3"]  # location order; huge one over budget
    prefix_part = prompt.tokens[prompt.tokens.index(special["<|fim_prefix|>"]) + 1:
                                prompt.tokens.index(special["<|fim_suffix|>"])]
    assert len(prefix_part) <= 100 + 8
    assert tok.detokenize(prefix_part).endswith("x = 1\ny = ")
