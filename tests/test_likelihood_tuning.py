"""The model-rerank bench: kept rows are reused only for the same candidates; the margin is
chosen on the tuning rows alone."""

from pathlib import Path

from prism_bench.likelihood_tuning import SIGNATURE_PMI, RowCache, ScoredCandidates, choose, top1


def row(needle: str, target: int | None, scores: list[float], candidates: list[str] | None = None
        ) -> ScoredCandidates:
    r = ScoredCandidates("docstrings tune", needle, 8, target, candidates or ["a", "b", "c"])
    r.scores[SIGNATURE_PMI] = scores
    return r


def test_a_kept_row_fills_only_a_needle_with_the_same_candidates(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    scored = row("requests:get", 1, [0.1, 0.9, 0.2])
    scored.tokens[SIGNATURE_PMI], scored.seconds[SIGNATURE_PMI] = 420, 3.5
    RowCache(path).add(scored, SIGNATURE_PMI)
    path.write_text(path.read_text() + '{"cut by an interrupted run')
    reopened = RowCache(path)
    same = ScoredCandidates("docstrings tune", "requests:get", 8, 1, ["a", "b", "c"])
    assert reopened.fill(same, SIGNATURE_PMI) and same.scores[SIGNATURE_PMI] == [0.1, 0.9, 0.2]
    assert same.tokens[SIGNATURE_PMI] == 420
    moved = ScoredCandidates("docstrings tune", "requests:get", 8, 0, ["b", "a", "c"])
    assert not reopened.fill(moved, SIGNATURE_PMI)  # retrieval changed: score again
    assert not reopened.fill(same, "code only")


def test_the_margin_is_the_best_on_the_tuning_rows_and_ties_keep_retrievals_order() -> None:
    tune = [row("n1", 1, [0.0, 0.4, 0.1]),  # moves at margins <= 0.4
            row("n2", 0, [0.0, 0.25, 0.1]),  # a wrong move below 0.25
            row("n3", 2, [0.0, 0.1, 2.5])]  # moves at margins <= 2.5
    assert top1(tune, None) == 1 / 3
    view, margin = choose(tune, [SIGNATURE_PMI])
    assert view == SIGNATURE_PMI and margin == 0.3  # 0.2 moves n2 wrongly, 0.5 leaves n1 second
    assert top1(tune, SIGNATURE_PMI, margin) == 1.0
