"""The line-start benchmark: its task set, and the two baselines' prompts token by token."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from prism_bench import baselines, linestart, linestart_data
from prism_bench.repoeval_data import PROJECTS as REPOEVAL_PROJECTS
from prism_code.tasks.complete import CompletionSettings
from prism_code.tasks.fim import split_at_cursor

FIXTURE = Path(__file__).parent / "fixtures" / "linestart"
QUOTAS = {"indent": 6, "mid": 3, "dot": 3}


# ---- the task set ---------------------------------------------------------------------------


def test_the_set_builder_gives_the_same_tasks_twice_and_other_ones_with_another_seed(tmp_path: Path):
    root = tmp_path / "shop-1.0"
    shutil.copytree(FIXTURE, root)
    first = linestart_data.select_tasks(root, "shop", per_kind=QUOTAS)
    assert first == linestart_data.select_tasks(root, "shop", per_kind=QUOTAS)
    assert first != linestart_data.select_tasks(root, "shop", seed=1, per_kind=QUOTAS)


def test_the_set_builder_keeps_the_quotas_and_places_each_cursor_as_its_kind_says(tmp_path: Path):
    tasks = linestart_data.select_tasks(FIXTURE, "shop", per_kind=QUOTAS)
    assert Counter(t.kind for t in tasks) == QUOTAS
    assert len({(t.path, t.line) for t in tasks}) == len(tasks)  # no line twice
    assert max(Counter(t.path for t in tasks).values()) <= linestart_data.MAX_PER_FILE
    for task in tasks:
        real = (FIXTURE / task.path).read_text().split("\n")[task.line - 1]
        assert task.expected == real
        indent = real[:len(real) - len(real.lstrip())]
        if task.kind == "indent":
            assert task.typed == indent  # nothing typed yet
        elif task.kind == "dot":
            assert task.typed.endswith(".") and task.typed.strip() != "."
        else:
            assert task.typed.strip() and not task.typed.endswith((".", " "))
            assert task.expected[task.col - 1:].strip()  # something is left to complete
        # the blanked file cuts exactly this line at the cursor
        prefix, suffix = split_at_cursor(task.blanked(FIXTURE), task.line, task.col)
        assert prefix.endswith("\n" + task.typed) and suffix.startswith("\n")


def test_comments_docstrings_imports_decorators_and_short_lines_are_never_asked_for():
    asked = {(line.path, line.line): line.text.strip()
             for path in linestart_data.python_files(FIXTURE)
             for line in linestart_data.eligible_lines(path, (FIXTURE / path).read_bytes())}
    texts = set(asked.values())
    assert "return self.on_hand[warehouse, sku]" in texts
    assert "factor = Decimal(100 - percent) / 100" in texts
    assert not any(t.startswith(("#", "@", "import ", "from ", '"""')) for t in texts)
    assert '"""The same price with `percent` taken off the net amount."""' not in texts
    assert all(len(t) >= linestart_data.MIN_LINE_CHARS for t in texts)
    assert "class Cart:" not in texts and "class Price:" in texts  # 11 characters are too few, 12 enough
    # a file that does not parse gives no task rather than a wrong one
    assert linestart_data.eligible_lines("bad.py", b"def broken(:\n    return 1\n") == []
    assert linestart_data.eligible_lines("bad.py", b"x = '\xff\xfe'\n") == []


def test_the_stored_set_has_240_tasks_in_halves_by_project_on_projects_no_other_bench_uses():
    tasks = linestart_data.load_set()
    assert len(tasks) == 240
    assert Counter(t.kind for t in tasks) == {"indent": 120, "mid": 60, "dot": 60}
    halves = {p.package: p.split for p in linestart_data.PROJECTS}
    assert Counter(halves.values()) == {"tune": 3, "test": 3}
    assert {t.project for t in tasks} == set(halves)
    assert all(Counter(t.kind for t in tasks if t.project == p) == linestart_data.PER_PROJECT for p in halves)
    docstrings = json.loads((Path(linestart_data.__file__).parent / "data" / "docstrings.json").read_text())
    used = {p["package"] for p in docstrings["projects"]} | {p.package for p in REPOEVAL_PROJECTS}
    used |= {"rich", "click", "jinja2", "httpx", "werkzeug", "attrs",  # the held-out lines
             "openai", "marshmallow", "torch-geometric", "locust", "web3", "black", "poetry",  # RepoQA
             "packaging", "pluggy", "cattrs", "pyparsing", "markdown-it-py", "mistune", "sqlparse", "tomli-w",
             "structlog", "tomlkit", "wtforms",  # the call-graph benchmark
             "fastapi", "model2vec"}  # semble's Python repositories (with flask, pydantic, requests, starlette)
    assert not used & set(halves)
    for task in tasks:
        assert len(task.expected.strip()) >= linestart_data.MIN_LINE_CHARS
        assert not task.expected.strip().startswith(("#", "@", "import ", "from "))


# ---- the floor and the peer, token by token -------------------------------------------------


def _cursor(line: int) -> tuple[str, int, int]:
    """inventory.py with `line` blanked to its indentation: (text, line, col)."""
    lines = (FIXTURE / "shop" / "inventory.py").read_text().split("\n")
    indent = lines[line - 1][:len(lines[line - 1]) - len(lines[line - 1].lstrip())]
    lines[line - 1] = indent
    return "\n".join(lines), line, len(indent) + 1


@pytest.mark.model
def test_the_floor_is_the_80_lines_above_and_the_24_below_token_by_token(vocab):
    text, line, col = _cursor(100)
    lines = text.split("\n")
    assert lines[99] == "        " and len(lines) > 100 + 24
    prefix, suffix = split_at_cursor(text, line, col)
    above = "".join(f"{lines[n]}\n" for n in range(19, 99)) + "        "  # lines 20-99, then the indentation
    below = "\n" + "".join(f"{lines[n]}\n" for n in range(100, 124))  # the line's end, lines 101-124
    assert baselines.floor_texts(prefix, suffix) == (above, below)
    mark = {name: vocab.special_token(f"<|{name}|>") for name in ("fim_prefix", "fim_suffix", "fim_middle")}
    assert baselines.floor_prompt(vocab, prefix, suffix) == [
        mark["fim_prefix"], *vocab.tokenize_text(above), mark["fim_suffix"], *vocab.tokenize_text(below),
        mark["fim_middle"]]
    # the first lines of a file: all of them above, and fewer than 24 below at its end
    text, line, col = _cursor(11)
    prefix, suffix = split_at_cursor(text, line, col)
    head, _ = baselines.floor_texts(prefix, suffix)
    assert head == "\n".join(text.split("\n")[:10]) + "\n        "
    _, tail = baselines.floor_texts(*split_at_cursor(text, 120, 1))
    assert tail == "\n".join(text.split("\n")[119:])  # line 120 from the cursor on, and the 8 below


@pytest.mark.model
def test_the_floor_cuts_its_token_budgets_from_the_start_of_the_prefix_and_the_end_of_the_suffix(vocab):
    wide = "\n".join(f"    weights_{n} = [" + ", ".join(str(n * k) for k in range(40)) + "]" for n in range(150))
    prefix, suffix = split_at_cursor(wide, 100, 5)
    head, tail = baselines.floor_texts(prefix, suffix)
    tokens = baselines.floor_prompt(vocab, prefix, suffix)
    end_of_prefix = tokens.index(vocab.special_token("<|fim_suffix|>"))
    assert tokens[1:end_of_prefix] == vocab.tokenize_text(head)[-1500:]
    assert len(vocab.tokenize_text(head)) > 1500  # cut, and the cut kept the end: the cursor's line
    assert vocab.detokenize(tokens[1:end_of_prefix]).endswith("weights_98 = [" + ", ".join(
        str(98 * k) for k in range(40)) + "]\n    ")
    assert tokens[end_of_prefix + 1:-1] == vocab.tokenize_text(tail)[:400]


@pytest.mark.model
def test_the_peer_puts_the_ring_buffer_before_the_floor_as_llama_server_does(vocab):
    files = {p: (FIXTURE / p).read_text().split("\n") for p in linestart_data.python_files(FIXTURE)}
    neighbours = baselines.import_neighbours(FIXTURE, sorted(files))
    assert neighbours["shop/cart.py"] == {"shop/pricing.py"}
    chunks = baselines.peer_chunks("shop/cart.py", files, neighbours, seed="shop")
    assert chunks == baselines.peer_chunks("shop/cart.py", files, neighbours, seed="shop")
    assert [c.path for c in chunks][-1] == "shop/pricing.py"  # the import neighbour was opened last
    assert "shop/cart.py" not in {c.path for c in chunks}
    for chunk in chunks:
        lines = chunk.text.split("\n")[:-1]
        assert chunk.text.endswith("\n") and 3 <= len(lines) <= baselines.RING_CHUNK_LINES
        assert chunk.text in "\n".join(files[chunk.path]) + "\n"  # consecutive lines of the file
    text = (FIXTURE / "shop" / "cart.py").read_text().replace("        self.lines[sku] += quantity", "        ")
    prefix, suffix = split_at_cursor(text, 17, 9)
    sep = vocab.special_token("<|file_sep|>")
    extra = [vocab.special_token("<|repo_name|>"), *vocab.tokenize_text("myproject\n")]
    for chunk in chunks:
        extra += [sep, *vocab.tokenize_text(chunk.path + "\n"), *vocab.tokenize_text(chunk.text)]
    extra += [sep, *vocab.tokenize_text("filename\n")]
    assert len(extra) < baselines.PEER_EXTRA_TOKENS
    floor = baselines.floor_prompt(vocab, prefix, suffix)
    assert baselines.peer_prompt(vocab, prefix, suffix, chunks) == extra + floor
    # over its budget the extra context loses its oldest tokens, as llama-server cuts it
    many = chunks * 40
    long_extra = [vocab.special_token("<|repo_name|>"), *vocab.tokenize_text("myproject\n")]
    for chunk in many:
        long_extra += [sep, *vocab.tokenize_text(chunk.path + "\n"), *vocab.tokenize_text(chunk.text)]
    long_extra += [sep, *vocab.tokenize_text("filename\n")]
    assert baselines.peer_prompt(vocab, prefix, suffix, many) == long_extra[-baselines.PEER_EXTRA_TOKENS:] + floor


def test_the_ring_keeps_the_newest_16_chunks_and_evicts_near_repeats():
    files = {f"pkg/m{n}.py": [f"value_{n}_{k} = {k}" for k in range(200)] for n in range(30)}
    files["pkg/edited.py"] = ["import pkg.m7", "x = 1", "y = 2", "z = 3"]
    chunks = baselines.peer_chunks("pkg/edited.py", files, {"pkg/edited.py": {"pkg/m7.py"}}, seed="s")
    assert len(chunks) == baselines.RING_CHUNKS
    assert chunks[-1].path == "pkg/m7.py"
    sizes = Counter(c.text.count("\n") for c in chunks)
    # the 65 lines around a cursor give a random 32-line slice; near a file's edge, fewer lines stay whole
    assert sizes[baselines.RING_CHUNK_LINES // 2] > len(chunks) // 2
    assert max(sizes) < baselines.RING_CHUNK_LINES - 1
    same = [f"setting_{k} = {k}" for k in range(10)]
    small = {"pkg/a.py": same, "pkg/b.py": list(same), "pkg/c.py": ["p = 1", "q = 2", "r = 3"],
             "pkg/tiny.py": ["a = 1", "b = 2"], "pkg/edited.py": ["x = 1"]}
    ring = baselines.peer_chunks("pkg/edited.py", small, {}, seed="s")
    assert sorted(c.path for c in ring if c.path != "pkg/c.py") in (["pkg/a.py"], ["pkg/b.py"])  # one evicts the other
    assert "pkg/tiny.py" not in {c.path for c in ring}  # files under 3 lines give no chunk


def test_a_completion_is_scored_with_what_was_typed_before_it():
    task = linestart_data.LinestartTask("p/mid/0", "p", "m.py", 3, 13, "mid", "    total = sum(values)")
    assert task.typed == "    total = "
    assert linestart.score(task, "sum(values)") == (True, 1.0)
    assert not linestart.score(task, " sum(values)")[0]  # a space too many inside the line
    em, es = linestart.score(task, "sum(value)")
    assert not em and 0.8 < es < 1.0


def test_modes_are_keyed_by_their_settings_and_kept_outcomes_outlive_a_new_default_setting():
    keys = {name: linestart._results_file(Path("/cache"), "m", name).name for name in linestart.MODES}
    assert len(set(keys.values())) == len(keys)  # every mode its own outcomes
    assert not any("," in name for name in linestart.MODES)  # --modes takes them comma-separated
    from prism_bench.completion_modes import mode_key

    assert "hold_indent" not in mode_key(linestart.MODES[linestart.PRODUCT])  # the key it had before
    assert "hold_indent=False" in mode_key(linestart.MODES["off: indentation typed and healed"])
    # The product's own candidates change one setting of the product, retrieval still on.
    product = linestart.MODES[linestart.PRODUCT]
    longer = linestart.MODES["product: prefix 1500 tokens"]
    bare = linestart.MODES["product: no repository markers"]
    assert isinstance(product, CompletionSettings) and isinstance(longer, CompletionSettings)
    assert isinstance(bare, CompletionSettings)
    assert replace(longer, budget=product.budget) == product and longer.budget.prefix_tokens == 1500
    assert replace(bare, layout=product.layout) == product and not bare.layout.repo_markers


def test_a_modes_key_keeps_the_former_settings_in_their_places_and_changes_with_a_real_setting():
    from prism_bench.completion_modes import mode_key

    product = linestart.MODES[linestart.PRODUCT]
    assert isinstance(product, CompletionSettings)
    # top_k, query_lines and line_tokens became constants (issue #30): the outcomes were kept under these keys.
    assert mode_key(product).startswith("CompletionSettings(retrieval=True, alpha=0.5, top_k=10, query_lines=20, "
                                        "iterations=1, max_lines=1, line_tokens=48, block_tokens=")
    assert mode_key(product) == repr(product).replace("alpha=0.5, ", "alpha=0.5, top_k=10, query_lines=20, ").replace(
        "max_lines=1, ", "max_lines=1, line_tokens=48, ").replace(", hold_indent=True", "").replace(
        ", reject_repeats=False", "")
    changed = [replace(product, alpha=0.3), replace(product, retrieval=False), replace(product, type_through=False),
               replace(product, budget=replace(product.budget, prefix_tokens=1500))]
    assert len({mode_key(s) for s in [product, *changed]}) == 1 + len(changed)


def test_a_wrong_line_start_is_told_apart_by_what_the_model_wrote_instead():
    from prism_bench.linestart_diagnosis import classify

    want = "        self.on_hand[warehouse, sku] += quantity"
    task = linestart_data.LinestartTask("shop/indent/0", "shop", "shop/inventory.py", 18, 9, "indent", want)

    def outcome(text: str) -> linestart.Outcome:
        em, es = linestart.score(task, text)
        return linestart.Outcome(task.task_id, text, text, em, es, 900, 1.0)

    assert classify(task, outcome("self.on_hand[warehouse, sku] += quantity"), FIXTURE) == "right"
    assert classify(task, outcome("   "), FIXTURE) == "empty"
    assert classify(task, outcome('self.history.append(("receive", warehouse, sku, quantity))'), FIXTURE) == "next line"
    assert classify(task, outcome("if warehouse not in self.warehouses:"), FIXTURE) == "line above"
    assert classify(task, outcome("self.on_hand[sku] += quantity"), FIXTURE) == "other"


def test_before_enter_the_line_is_not_there_and_the_cursor_ends_the_line_above():
    from prism_bench.linestart_latency import before_enter

    want = "        self.on_hand[warehouse, sku] += quantity"
    task = linestart_data.LinestartTask("shop/indent/0", "shop", "shop/inventory.py", 18, 9, "indent", want)
    lines = (FIXTURE / task.path).read_text(encoding="utf-8").split("\n")
    text, line, col = before_enter(task, FIXTURE)
    assert text.split("\n") == lines[:17] + lines[18:]
    assert (line, col) == (17, len(lines[16]) + 1)
    # Enter there gives the task's own file: the line above, then the new line's indentation.
    prefix, _ = split_at_cursor(text, line, col)
    assert prefix + "\n" + task.typed == split_at_cursor(task.blanked(FIXTURE), task.line, task.col)[0]
