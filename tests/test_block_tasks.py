"""Block completion tasks: which bodies qualify, the blanked file, and scoring by depth."""

from __future__ import annotations

from pathlib import Path

from prism_bench.block_completion import BlockOutcome, line_scores
from prism_bench.block_tasks import BLOCK_LINES, block_candidates, build_block_tasks
from prism_code.tasks.fim import split_at_cursor, wants_block

SOURCE = '''\
def documented(values):
    """Has a docstring first: the completer offers no block there."""
    a = 1
    b = 2
    c = 3
    d = 4
    return a + b + c + d


def short(x): return x


def tiny(values):
    total = 0
    return total


def summarise(rows,
              key):
    seen = set()
    totals = {}
    for row in rows:
        name = row[key]
        seen.add(name)
        totals[name] = totals.get(name, 0) + row["amount"]
    return totals, seen
'''


def test_only_bodies_under_their_header_and_longer_than_the_block_qualify():
    found = block_candidates("m.py", SOURCE.encode())
    assert [(line, indent) for line, indent, _ in found] == [(20, "    ")]
    assert found[0][2] == SOURCE.split("\n")[19:19 + BLOCK_LINES]


def test_the_blanked_file_puts_the_cursor_where_the_completer_offers_a_block(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(SOURCE)
    [task] = build_block_tasks(tmp_path, "fixture", 5)
    text, line, col = task.blanked(tmp_path)
    prefix, suffix = split_at_cursor(text, line, col)
    assert wants_block(prefix) and prefix.endswith("key):\n    ")
    assert prefix[:-len("    ")] + "\n".join(task.truth) + suffix == SOURCE


def test_depth_scores_count_a_missing_line_as_wrong(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(SOURCE)
    [task] = build_block_tasks(tmp_path, "fixture", 5)
    answer = BlockOutcome(task.task_id, ["seen = set()", "totals = []"], 900.0, 12)
    scores = line_scores(task, answer)
    assert [em for em, _ in scores] == [True, False, False, False, False]
    assert 0.5 < scores[1][1] < 1.0 and scores[2] == (False, 0.0)
