"""`prism-code bench hover`: a real server over stdio answers every timed hover on the big buffer
with the definition hovered, before and after the edits."""

from __future__ import annotations

from prism_bench import hover_speed


def test_every_timed_hover_names_the_function_under_the_cursor() -> None:
    result = hover_speed.run(megabytes=0.3, repeat=2)
    assert [h.label for h in result.hovers] == ["first", "repeated", "after edit 1", "repeated",
                                                "after edit 2", "repeated"]
    name = result.hovered.split(": ", 1)[1].removeprefix("def ").split("(")[0]
    assert all(h.found is not None and h.found.startswith(f"def {name}(") for h in result.hovers)
    assert result.megabytes >= 0.3
    report = hover_speed.markdown(result, "prism-code bench hover --mb 0.3 --repeat 2")
    assert report.count("\n| ") == 1 + len(result.hovers) and f"def {name}(" in report
