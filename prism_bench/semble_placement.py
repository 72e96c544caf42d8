"""Score placements of a model strategy's pick offline, from the semble sample's kept outcomes (#27).

`python -m prism_bench.semble_placement OUTCOMES.json`: each rule builds a top ten from what a
format-2 outcome kept (retrieval's ranked list, the strategy's, its stats), and every list is
scored by semble's NDCG@10 against the query's kept targets. No model runs: a rule is chosen on
the tune split's outcomes and then run for real on the test split.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from prism_bench.semble_data import Target
from prism_bench.semble_scoring import mean_or_zero, ndcg_at_10
from prism_code.tasks.find_prism import is_question
from prism_code.tasks.find_ranking import spelled_parts, spelled_symbol

Row = list[object]  # [path, start line, end line, key, kind]
Rule = Callable[[dict[str, object]], list[Row]]


def spells(query: str, key: str) -> bool:
    """The query is the definition's name: find_prism's own test (spelled_parts, spelled_symbol)."""
    return bool(spelled_symbol(key.split("#", 1)[-1], spelled_parts(query)))


def pick(o: dict[str, object]) -> str | None:
    """The key the strategy moved to its front, or None when it kept its pool's order."""
    stats = o["stats"]
    assert isinstance(stats, dict)
    strategy = o["strategy_ranked"]
    assert isinstance(strategy, list)
    if not strategy or str(stats.get("chosen_by", "")).startswith("retrieval"):
        return None
    return str(strategy[0][3])


def _moved(rows: list[Row], key: str | None, at: int) -> list[Row]:
    if key is None:
        return rows
    found = [r for r in rows if r[3] == key]
    rest = [r for r in rows if r[3] != key]
    if not found:
        return rows
    return rest[:at] + found + rest[at:]


def _retrieval(o: dict[str, object]) -> list[Row]:
    return o["retrieval_ranked"]  # type: ignore[return-value]


def _strategy(o: dict[str, object]) -> list[Row]:
    return o["strategy_ranked"]  # type: ignore[return-value]


def _first_kind(o: dict[str, object]) -> str:
    rows = _retrieval(o)
    return str(rows[0][4]) if rows else ""


def _spelled(o: dict[str, object]) -> bool:
    rows = _retrieval(o)
    return bool(rows) and spells(str(o["query"]), str(rows[0][3]))


def _gated(o: dict[str, object], at: int = 0) -> list[Row]:
    if _first_kind(o) == "class" or _spelled(o):
        return _retrieval(o)
    return _moved(_retrieval(o), pick(o), at)


RULES: dict[str, Rule] = {
    "retrieval": _retrieval,
    "strategy as run": _strategy,
    "pick moved to 1st of retrieval's list": lambda o: _moved(_retrieval(o), pick(o), 0),
    "pick moved to 2nd of retrieval's list": lambda o: _moved(_retrieval(o), pick(o), 1),
    "strategy, unless the query names retrieval's first": lambda o: (
        _retrieval(o) if _spelled(o) else _strategy(o)),
    "strategy, unless the query is a question": lambda o: (
        _retrieval(o) if is_question(str(o["query"])) else _strategy(o)),
    "strategy, unless a question or named (find_prism's rule, held_by_retrieval)": lambda o: (
        _retrieval(o) if is_question(str(o["query"])) or _spelled(o) else _strategy(o)),
    "strategy, unless retrieval's first is a class": lambda o: (
        _retrieval(o) if _first_kind(o) == "class" else _strategy(o)),
    "strategy, unless retrieval's first is a class or spelled": lambda o: (
        _retrieval(o) if _first_kind(o) == "class" or _spelled(o) else _strategy(o)),
    "pick to 1st of retrieval's list, unless its first is a class or spelled": _gated,
    "pick to 2nd of retrieval's list, unless its first is a class or spelled": lambda o: _gated(o, 1),
}


def score(o: dict[str, object], rows: list[Row]) -> float:
    targets = [Target(str(t[0]), t[1], t[2], bool(t[3])) for t in o["targets"]]  # type: ignore[attr-defined]
    return ndcg_at_10([(str(r[0]), int(str(r[1])), int(str(r[2]))) for r in rows[:10]], targets)


def main(path: str, category: str = "") -> None:
    outcomes = [o for o in json.loads(Path(path).read_text(encoding="utf-8")).values()
                if o.get("targets") and category in ("", o["category"])]
    base = [score(o, _retrieval(o)) for o in outcomes]
    print(f"{len(outcomes)} outcomes; moved {sum(pick(o) is not None for o in outcomes)}; "
          f"named {sum(_spelled(o) for o in outcomes)}; "
          f"questions {sum(is_question(str(o['query'])) for o in outcomes)}; "
          f"class first {sum(_first_kind(o) == 'class' for o in outcomes)}")
    for name, rule in RULES.items():
        got = [score(o, rule(o)) for o in outcomes]
        above = sum(g > b + 1e-9 for g, b in zip(got, base, strict=True))
        below = sum(g < b - 1e-9 for g, b in zip(got, base, strict=True))
        print(f"{mean_or_zero(got):.3f}  above {above:2d} below {below:2d}  {name}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
