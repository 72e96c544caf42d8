"""The model-rerank bench: kept rows are reused only for the same candidates; the margin is
chosen on the tuning rows alone."""

from pathlib import Path

from prism_bench.likelihood_tuning import (
    MARGINS,
    NOT_READ,
    SIGNATURE_PMI,
    STAGED,
    WITH_GUESS,
    RowCache,
    ScoredCandidates,
    _staged_view,
    choose,
    expansion_markdown,
    first_is_right,
    staged_markdown,
    top1,
)
from prism_code.tasks.find_prism import first_candidate, shortlist
from prism_code.tasks.find_settings import LONG_QUERY_BODIES


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


def test_the_staged_view_reads_retrieval_first_and_the_best_headers_from_the_bodies_already_scored() -> None:
    # Five candidates; the needle is fourth. Its header is the best other, so its body is read.
    scored = ScoredCandidates("RepoQA python", "repo:needle", 120, 3, list("abcde"))
    scored.scores[SIGNATURE_PMI], scored.tokens[SIGNATURE_PMI] = [0.0, 0.2, -0.5, 1.1, 0.6], 700
    scored.scores["as written"] = [-1.2, -0.5, -0.4, -0.9, -1.3]  # every body: b looks best
    scored.candidate_tokens["as written"] = [400, 410, 420, 430, 440]
    scores, tokens, per_candidate = _staged_view(None, None, [None] * 5, "a long description", scored)
    assert [i for i, s in enumerate(scores) if s != NOT_READ] == [0, 3, 4]  # STAGED_BODIES == 3
    assert tokens == 700 + 400 + 430 + 440 and per_candidate == [400, 0, 0, 430, 440]
    scored.scores[STAGED] = scores
    # Reading every body would move b (wrong); the shortlist moves the needle up.
    assert not first_is_right(scored, "as written", 0.1) and first_is_right(scored, STAGED, 0.1)
    report = staged_markdown({"RepoQA python": [scored]}, "prism-code bench likelihood ...")
    assert "| RepoQA python | 1 | 0.000 | 1.000 (1) | 0.000 (1) | 1.000 (1) | 1 / 0 |" in report


def test_the_guessed_rows_choose_their_own_margin_and_are_paired_with_the_plain_ones_in_order() -> None:
    # The same needle name twice in a project (two `get`s): pairing must follow the order, not the name.
    plain = {f"docstrings {split}": [row("requests:get", 1, [0.0, 0.4, 0.1]), row("requests:get", 0, [0.0, 0.1, 0.2])]
             for split in ("tune", "test")}
    # With the guess the first needle's function is first already; the second is moved down by the guess.
    guessed = {f"docstrings {split}{WITH_GUESS}": [row("requests:get", 0, [0.0, 0.9, 0.1]),
                                                   row("requests:get", 1, [0.0, 1.2, 0.2])]
               for split in ("tune", "test")}
    rows = plain | guessed
    # On the guessed tuning rows only a margin of 0.9 or more keeps the first right; 1.0 makes the second right too.
    assert choose(rows[f"docstrings tune{WITH_GUESS}"], [SIGNATURE_PMI]) == (SIGNATURE_PMI, 1.0)
    table = expansion_markdown(rows, [SIGNATURE_PMI])
    # Retrieval's list at the signatures' own margin (0.5): the first needle is left second, the second kept.
    assert "| test | 2 | 0.500 | 1.000 | +0.500" in table


def test_the_bench_puts_first_the_candidate_find_would_at_every_margin() -> None:
    # Six candidates: the signatures' PMI and every body's likelihood, as find and the bench read them.
    pmis = [0.0, 0.3, -0.2, 0.9, 0.35, 0.1]
    bodies = [-1.0, -0.7, -0.2, -0.85, -0.9, -1.4]
    keep = shortlist(pmis, LONG_QUERY_BODIES)  # find reads these bodies only
    for margin in MARGINS:
        scored = ScoredCandidates("RepoQA python", "repo:needle", 120, None, list("abcdef"))
        scored.scores[SIGNATURE_PMI], scored.tokens[SIGNATURE_PMI] = pmis, 700
        scored.scores["as written"], scored.candidate_tokens["as written"] = bodies, [400] * 6
        scored.scores[STAGED] = _staged_view(None, None, [None] * 6, "a long description", scored)[0]
        find_first = {SIGNATURE_PMI: first_candidate(dict(enumerate(pmis)), margin),
                      "as written": first_candidate(dict(enumerate(bodies)), margin),
                      STAGED: first_candidate({i: bodies[i] for i in keep}, margin)}
        for view, first in find_first.items():
            bench_first = [target for target in range(6)
                           if first_is_right(ScoredCandidates("", "", 0, target, scored.candidates, scored.scores),
                                             view, margin)]
            assert bench_first == [first], (view, margin)
    # The rows differ where they should: all bodies move the look-alike c, the staged read the needle d.
    assert first_candidate(dict(enumerate(bodies)), 0.1) == 2
    assert first_candidate({i: bodies[i] for i in keep}, 0.1) == 3
