"""The model strategies' sample of semble's queries (prism_bench/semble_model.py): the seeded
sample, the kept outcomes a rerun resumes from, and the side-by-side report, on
tests/fixtures/semble_mini. No model runs here: the outcomes are ones a run keeps."""

from __future__ import annotations

from pathlib import Path

from prism_bench.semble_data import load_repos
from prism_bench.semble_model import (
    SampledOutcome,
    load_outcomes,
    markdown,
    outcome_key,
    sample_queries,
    save_outcomes,
)

FIXTURE = Path(__file__).parent / "fixtures" / "semble_mini"


def test_the_sample_is_seeded_and_spread_across_repositories() -> None:
    repos = load_repos(FIXTURE)
    sample = sample_queries(repos, 4)
    assert sample == sample_queries(list(reversed(repos)), 4)  # the same queries whatever the order given
    names = [r.name for r, _ in sample]
    # Dealt round-robin in name order: every repository before any gives a second query.
    assert names[:3] == sorted({r.name for r in repos}) and len(set(names)) == 3
    other = sample_queries(repos, 4, seed=1)
    every = sample_queries(repos, 100)
    assert len(every) == sum(len(r.queries) for r in repos)  # a sample larger than the split is all of it
    assert {(r.name, q.text) for r, q in other} <= {(r.name, q.text) for r, q in every}


def test_kept_outcomes_resume_and_a_partial_run_says_so(tmp_path: Path) -> None:
    repos = load_repos(FIXTURE)
    sample = sample_queries(repos, 3)
    (first_repo, first), (second_repo, second) = sample[0], sample[1]
    outcomes = {
        outcome_key(first_repo.name, first.text): SampledOutcome(
            first_repo.name, first.text, "symbol", 1.0, 0.5, 900, 30, 4.0, True),
        outcome_key(second_repo.name, second.text): SampledOutcome(
            second_repo.name, second.text, "semantic", 0.0, 1.0, 1500, 50, 8.0, False),
    }
    path = tmp_path / "results" / "semble-sample-prism.json"
    save_outcomes(outcomes, path)
    assert load_outcomes(path) == outcomes
    path.write_text("{not json")
    assert load_outcomes(path) == {}  # a damaged file: the queries run again

    text = markdown(sample, outcomes, "prism", "qwen2.5-coder-0.5b", "test", "prism-code bench semble")
    assert "Partial: 2 of the 3 queries finished" in text
    assert f"Ranked lexically (vectors not all stored): {second_repo.name}." in text
    assert "| symbol | 1 | 1.000 | 0.500 | 0 | 1 |" in text
    assert "| semantic | 1 | 0.000 | 1.000 | 1 | 0 |" in text
    assert "| **all** | 2 | 0.500 | 0.750 | 1 | 1 |" in text
    assert "| prompt tokens (cached or not) | 1200 | 1200 |" in text
