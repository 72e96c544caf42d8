"""Fill-in-the-middle prompt pieces: cursor split, block detection, trimming, token layout."""

import pytest

from prism_code.tasks.fim import (
    PLAIN_LAYOUT,
    STOP_MARKERS,
    FimBudget,
    FimLayout,
    TokenCache,
    build_prompt,
    finish_completion,
    neighbour_lines,
    split_at_cursor,
    wants_block,
)


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


def test_indentation_the_model_writes_is_not_inserted_twice():
    # The prompt stopped at the line start, so the model's middle starts with the indentation.
    assert finish_completion("        return x", "\n", 1, held_indent="        ") == "return x"
    assert finish_completion("  return x", "\n", 1, held_indent="    ") == "return x"  # dedented answer
    assert finish_completion("\n    total = 0\n    for v in vs:", "", 4, held_indent="    ") == (
        "total = 0\n    for v in vs:")  # later lines keep their own indentation
    assert finish_completion("    return x", "\n", 1) == "    return x"  # prompt ended at the cursor


def test_the_neighbours_of_a_line_start_are_the_nearest_non_blank_lines():
    prefix, suffix = split_at_cursor("def f(x):\n    y = g(x)\n\n    \n\n    return y\n", 4, 5)
    assert neighbour_lines(prefix, suffix) == ["y = g(x)", "return y"]
    assert neighbour_lines("    ", "\n") == []  # a file's only line
    assert neighbour_lines("x = 1\n", "\nx = 1") == ["x = 1"]  # once


@pytest.mark.model
def test_a_line_start_can_be_refused_the_lines_around_it(model_session):
    # The grammar a refused repeat is written again under: the first line, after its
    # indentation, may not begin with a neighbour; everything else stays possible.
    from prism_code.llm.gbnf import line_not_starting_with

    prefix = "def pairs(items):\n    out = []\n    for a in items:\n        "
    suffix = "\n    return out\n"
    prompt = build_prompt(model_session, "demo", "demo/pairs.py", prefix, suffix, [], FimBudget())
    stop = [*STOP_MARKERS, "\n"]
    free = model_session.generate(prompt.tokens, max_tokens=24, stop=stop).text
    said = finish_completion(free, suffix, 1, prompt.held_indent)
    assert said  # some code, which the grammar then refuses
    refused = model_session.generate(prompt.tokens, max_tokens=24, stop=stop,
                                     grammar=line_not_starting_with([said, "return out"])).text
    again = finish_completion(refused, suffix, 1, prompt.held_indent)
    assert again and not again.startswith(said) and not again.startswith("return out")


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
    middle = prompt.tokens.index(special["<|fim_middle|>"])
    # the middle opens on line 200 (the last multiple of MIDDLE_STEP_LINES), then the typed
    # text, whose last token is left for the model (token healing)
    assert tok.detokenize(prompt.tokens[middle + 1:prompt.line_start]) == "x = 1\n"
    assert tok.detokenize(prompt.tokens[prompt.line_start:]) + prompt.heal == "y = " and prompt.heal
    assert prompt.tokens[:len(prompt.stable)] == prompt.stable
    assert prompt.context == ["pkg/a.py:1-2", "pkg/b.py:1-3"]  # location order; huge one over budget
    prefix_part = prompt.tokens[prompt.tokens.index(special["<|fim_prefix|>"]) + 1:
                                prompt.tokens.index(special["<|fim_suffix|>"])]
    assert len(prefix_part) <= 100 + 8
    assert tok.detokenize(prefix_part).endswith("x = 1\nx = 1\n")


@pytest.mark.model
def test_prompt_ends_at_the_line_start_when_the_cursor_is_in_indentation(model_session):
    tok = model_session
    indented = build_prompt(tok, "demo", "m.py", "def f(x):\n    ", "\n", [], FimBudget())
    at_start = build_prompt(tok, "demo", "m.py", "def f(x):\n", "\n", [], FimBudget())
    assert indented.tokens == at_start.tokens
    assert indented.held_indent == "    " and at_start.held_indent == ""
    typed = build_prompt(tok, "demo", "m.py", "def f(x):\n    ret", "\n", [], FimBudget())
    assert typed.held_indent is None
    assert tok.detokenize(typed.tokens[:typed.line_start]).endswith("def f(x):\n")
    assert typed.tokens[:typed.line_start] == at_start.tokens
    assert tok.detokenize(typed.tokens[typed.line_start:]) + typed.heal == "    ret"
    assert typed.heal.endswith("ret")


@pytest.mark.model
def test_the_indentation_can_be_typed_text_healed_instead_of_held_out(model_session):
    tok = model_session
    held = build_prompt(tok, "demo", "m.py", "def f(x):\n        ", "\n", [], FimBudget())
    typed = build_prompt(tok, "demo", "m.py", "def f(x):\n        ", "\n", [], FimBudget(),
                         FimLayout(hold_indent=False))
    assert typed.held_indent is None and held.held_indent == "        "
    assert typed.tokens[:typed.line_start] == held.tokens  # the same prompt up to the middle
    # the indentation opens the middle; its last token is left for the model to write again
    assert tok.detokenize(typed.tokens[typed.line_start:]) + typed.heal == "        " and typed.heal


# A blanked line inside a small function followed by more code, as in RepoEval: the model
# must fill the hole, not continue after the end of the (truncated) suffix.
_HASH_FILES = (
    "def files_digest(paths: list[str]) -> str:\n"
    "    \"\"\"A stable digest of the text of several files.\"\"\"\n"
    "    lines = []\n"
)
_HASH_FILES_AFTER = (
    "\n"
    "        with open(path, encoding=\"utf-8\") as handle:\n"
    "            lines.extend(handle.readlines())\n"
    "    return hashlib.sha256(\"\".join(lines).encode()).hexdigest()\n"
    "\n"
    "\n"
    "def split_remote_url(url: str) -> tuple[str, str | None]:\n"
    "    \"\"\"Repository and revision of a URL such as https://host/org/repo@rev.\"\"\"\n"
    "    if \"@\" in url:\n"
    "        url, revision = url.rsplit(\"@\", 1)\n"
    "        return url, revision\n"
    "    return url, None\n"
)


@pytest.mark.model
def test_fim_fills_a_blanked_loop_header_in_a_real_function(model_session):
    prefix = _HASH_FILES + "    "  # the cursor after the blank line's indentation
    prompt = build_prompt(model_session, "demo", "demo/digest.py", prefix, _HASH_FILES_AFTER, [],
                          FimBudget())
    out = model_session.generate(prompt.tokens, max_tokens=32, stop=[*STOP_MARKERS, "\n"])
    assert finish_completion(out.text, _HASH_FILES_AFTER, 1, prompt.held_indent) == "for path in paths:"


@pytest.mark.model
def test_moving_down_a_line_keeps_the_cached_start_of_a_long_prefix(model_session):
    tok = model_session
    body = "".join(f"    total_{i} = compute(values[{i}], scale={i % 7})\n" for i in range(400))
    text = "def long_function(values):\n" + body
    lines = text.split("\n")
    suffix_marker = tok.special_token("<|fim_suffix|>")
    prompts = []
    for cursor_line in range(300, 340):  # the prefix is far over its budget
        prefix = "\n".join(lines[:cursor_line - 1]) + "\n    "
        # The prefix runs to the cursor's line here: this is about where the prefix starts.
        prompts.append(build_prompt(tok, "demo", "m.py", prefix, "\n", [], FimBudget(prefix_tokens=512),
                                    FimLayout(middle_step_lines=None)))
    heads = [p.tokens[:p.tokens.index(suffix_marker)] for p in prompts]
    kept = sum(b[:len(a)] == a for a, b in zip(heads, heads[1:]))
    assert kept >= len(heads) - 4  # the start moves once per HEAD_STEP_LINES lines
    assert all(200 <= len(h) <= 512 + 12 for h in heads)
    assert all(tok.detokenize(h).endswith(lines[n - 2] + "\n") for h, n in zip(heads, range(300, 340)))


@pytest.mark.model
def test_the_floor_and_the_product_prompt_hold_the_same_cursor_split(model_session):
    from prism_bench import baselines

    tok = model_session
    mark = {name: tok.special_token(f"<|{name}|>") for name in ("fim_prefix", "fim_suffix", "fim_middle")}
    lines = [f"v_{i} = mix(v_{i - 1})" for i in range(1, 200)]
    prefix, suffix = split_at_cursor("\n".join(lines), 120, len("v_120 = m") + 1)
    above = "\n".join(lines[39:119]) + "\n"
    # the floor (every completion bench's, issue #28): the hole at the cursor, no repository markers
    assert baselines.floor_prompt(tok, prefix, suffix) == [
        mark["fim_prefix"], *tok.tokenize_text(above + "v_120 = m"), mark["fim_suffix"],
        *tok.tokenize_text("ix(v_119)\n" + "".join(f"{line}\n" for line in lines[120:144])), mark["fim_middle"]]
    budget = FimBudget(prefix_tokens=1500, prefix_lines=80, suffix_tokens=400, suffix_lines=24, align_head=False)
    product = build_prompt(tok, "demo", "m.py", prefix, suffix, [], budget)
    assert tok.detokenize(product.stable) == "demo\nm.py\n"  # after <|repo_name|>, <|file_sep|>
    # the same split: the lines from line 113 (after the last multiple of MIDDLE_STEP_LINES) and the
    # typed text open the middle instead of ending the prefix, whose 80 lines end at line 112
    assert product.tokens[len(product.stable):product.line_start] == [
        mark["fim_prefix"], *tok.tokenize_text("\n".join(lines[32:112]) + "\n"), mark["fim_suffix"],
        *tok.tokenize_text("ix(v_119)\n" + "\n".join(lines[120:144])), mark["fim_middle"],
        *tok.tokenize_text("\n".join(lines[112:119]) + "\n")]
    assert tok.detokenize(product.tokens[product.line_start:]) + product.heal == "v_120 = m"


@pytest.mark.model
def test_prompts_built_through_the_token_cache_equal_fresh_ones(model_session):
    # Keystrokes, a new line, an earlier line changed, a line deleted, the suffix edited and
    # other windows, through one cache small enough to evict: every prompt as built afresh.
    tok = model_session
    cache = TokenCache(tok, max_texts=40, max_chars=4000)
    lines = [f"    value_{i} = combine(value_{i - 1}, weight={i % 5})" for i in range(1, 60)]
    windows = [("pkg/a.py:1-20", "def combine(a, b, weight):\n    return a * weight + b"),
               ("pkg/b.py:11-30", "WEIGHTS = [1, 2, 3]\n<|fim_suffix|> stays text")]
    edits = []
    text = "def build(value_0):\n" + "\n".join(lines) + "\n    return value_59\n"
    for typed in ("    r", "    re", "    ret", "    retu", "    return", "    return v", "    return v\n    "):
        edits.append((text.replace("    value_30 =", typed + "\n    value_30 =", 1), windows))
    edits.append((text.replace("weight=2)", "weight=7)", 1), windows))  # a line above changed
    edits.append((text.replace("    value_12 = combine(value_11, weight=2)\n", "", 1), windows[:1]))
    edits.append((text.replace("value_45", "total_45"), windows[::-1]))  # the suffix changed
    edits.append((text.replace("    value_30 =", "    é 日本 = \"<|\"\n    value_30 =", 1), []))
    for edited, context in edits * 2:
        cut = edited.index("\n    value_30 =")
        prefix, suffix = edited[:cut], edited[cut:]
        for layout in (FimBudget(), FimBudget(prefix_tokens=200, suffix_tokens=60)):
            fresh = build_prompt(tok, "demo", "pkg/m.py", prefix, suffix, context, layout)
            cached = build_prompt(cache, "demo", "pkg/m.py", prefix, suffix, context, layout)
            assert cached == fresh
        plain = build_prompt(tok, "demo", "pkg/m.py", prefix, suffix, context, FimBudget(), PLAIN_LAYOUT)
        assert build_prompt(cache, "demo", "pkg/m.py", prefix, suffix, context, FimBudget(), PLAIN_LAYOUT) == plain
    assert len(cache._tokens) <= 40


@pytest.mark.model
def test_enter_appends_the_finished_line_to_the_cached_prompt(model_session):
    # Before Enter the cursor ends line n; after it, it sits on the new line's indentation.
    # The prompt after Enter must begin with everything the model evaluated before it, except
    # when the new line is a multiple of MIDDLE_STEP_LINES and the middle opens anew.
    tok = model_session
    lines = ["def long_function(values):", *(f"    total_{i} = compute(values[{i}], scale={i % 7})"
                                             for i in range(200))]
    suffix = "\n" + "\n".join(lines[150:170]) + "\n"
    kept = 0
    for n in range(100, 140):  # 0-based index of the line just finished
        before = build_prompt(tok, "demo", "m.py", "\n".join(lines[:n + 1]), suffix, [], FimBudget())
        after = build_prompt(tok, "demo", "m.py", "\n".join(lines[:n + 1]) + "\n    ", suffix, [], FimBudget())
        middle = tok.detokenize(after.tokens[after.tokens.index(tok.special_token("<|fim_middle|>")) + 1:])
        # the new line's number is a multiple of 8: it opens the middle, which holds nothing yet
        assert middle == "" if (n + 1) % 8 == 0 else middle.endswith(lines[n] + "\n")
        kept += after.tokens[:before.line_start] == before.tokens[:before.line_start]
    assert kept == 40 - 5  # after lines 104, 112, 120, 128 and 136 the middle opens anew
