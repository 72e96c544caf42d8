"""The pure parts of `prism-code bench find-server` (no server, no model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_bench.find_server import (
    CancelRun,
    FindRun,
    FindServer,
    first_sentence,
    markdown,
    needle_rank,
    pick_queries,
    summary,
)
from prism_bench.repoqa_data import Needle
from prism_code.retrieval.fusion import SHORT_QUERY_WORDS

LONG = ("1. **Purpose**: To combine adjacent strings into a single string within a line of code, ensuring "
        "that the merged result is syntactically correct. It is used by the formatter.\n"
        "2. **Input**: A line of code and a list of indices in that line.\n"
        "3. **Output**: The new line, or an error when the strings cannot be merged.\n"
        "4. **Procedure**: " + "It walks the leaves and checks each string's prefix and quotes. " * 4)


def needle(name: str, description: str = LONG, path: str = "pkg/mod.py", start: int = 10) -> Needle:
    return Needle("owner/repo", name, description, path, start, start + 5, f"id-{name}")


def test_first_sentence_drops_the_heading_and_stops_at_the_first_full_stop() -> None:
    assert first_sentence(LONG) == ("To combine adjacent strings into a single string within a line of code, "
                                    "ensuring that the merged result is syntactically correct.")
    assert first_sentence("Adds two numbers") == "Adds two numbers"
    assert len(first_sentence("word " * 100).split()) == SHORT_QUERY_WORDS


def test_queries_alternate_long_and_first_sentence_and_keep_the_last_needle_for_the_cold_find() -> None:
    needles = [needle("a"), needle("b"), needle("c")]
    cold, queries = pick_queries(needles, 3)
    assert (cold.needle.name, cold.form) == ("c", "sentence")
    assert [(q.needle.name, q.form) for q in queries] == [("a", "long"), ("a", "sentence"), ("b", "long")]
    assert [q.path for q in queries] == ["long", "signature", "long"]
    with pytest.raises(ValueError, match="from 1 to 4"):
        pick_queries(needles, 5)


def test_summary_is_the_median_and_the_maximum() -> None:
    assert summary([0.3, 0.1, 0.2]) == (0.2, 0.3)
    assert summary([1.0, 2.0, 4.0, 3.0]) == (2.5, 4.0)
    assert summary([]) is None


def test_needle_rank_is_the_result_that_starts_on_the_def_line(tmp_path: Path) -> None:
    target = needle("a", path="pkg/mod.py", start=10)
    other = {"uri": (tmp_path / "pkg" / "other.py").as_uri(),
             "range": {"start": {"line": 9, "character": 0}, "end": {"line": 20, "character": 0}}}
    # the class around the needle method holds its line, but is not the needle
    enclosing = {"uri": (tmp_path / "pkg" / "mod.py").as_uri(),
                 "range": {"start": {"line": 2, "character": 0}, "end": {"line": 30, "character": 0}}}
    hit = {"uri": (tmp_path / "pkg" / "mod.py").as_uri(),
           "range": {"start": {"line": 9, "character": 0}, "end": {"line": 14, "character": 0}}}
    assert needle_rank([other, enclosing, hit], tmp_path, target) == 3
    assert needle_rank([other, enclosing], tmp_path, target) is None


def test_markdown_states_the_command_the_targets_the_load_and_each_query() -> None:
    _, (long, short) = pick_queries([needle("merge"), needle("cold")], 2)
    result = FindServer("owner/repo", "1.0", 1, index_s=42.0, functions=900,
                        runs=[FindRun(long, 0.12, 61.0, 12, 4400, 300, 90, 2, 1),
                              FindRun(short, 0.4, 20.0, 12, 370, 0, 90, 3, 1)],
                        cancels=[CancelRun(long, 3.0, False, 0.004, 0.35, 0.36, 0.45),
                                 CancelRun(short, 2.0, True, None, None, None, None)],
                        long_query_bodies=3, prefill_tokens_per_s=107.0, decode_ms_per_token=40.0,
                        load="3.1 / 2.9 / 2.5")
    text = markdown(result, "prism-code bench find-server --queries 2")
    assert text.startswith("Command: `prism-code bench find-server --queries 2`")
    assert "| first update (retrieval's list), s | 0.26 | 0.40 | <= 0.3 | 1/2 |" in text
    assert "| cancel -> model idle, s | 0.36 | 0.36 | <= 0.5 | 1/1 |" in text
    assert "answered first" in text
    assert "Load average 3.1 / 2.9 / 2.5" in text and "other jobs shared the 2 cores" in text
    assert "long 4400 (1 query), signature 370 (1 query)" in text
    assert "prefilled 107 tokens/s" in text
    assert "then the description's likelihood after the bodies of 3" in text
    assert "| `merge` long | " in text and "| 2 -> 1 |" in text
