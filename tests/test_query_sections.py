"""A structured description's purpose / input / output / procedure sections."""

import json
from pathlib import Path

from prism_code.retrieval.query_sections import QuerySections, split_sections

REPOQA = Path(__file__).resolve().parents[1] / "benchmarks" / "repoqa"


def test_a_real_repoqa_description_splits_into_its_four_sections():
    data = json.loads((REPOQA / "Ciphey__Ciphey.json").read_text(encoding="utf-8"))
    description = data["needles"][0]["description"]
    sections = split_sections(description)
    assert sections is not None
    assert sections.purpose.startswith("Converts a pair of characters from a specific encoding")
    assert sections.input == "A string of two characters."
    assert sections.output.startswith("An integer representing the byte value")
    assert sections.procedure.startswith("The function calculates the byte value")
    # No label and no list marker is left in any section.
    for text in (sections.purpose, sections.input, sections.output, sections.procedure):
        assert "**" not in text and "Purpose" not in text and "Procedure" not in text
    assert sections.body() == "\n".join([sections.input, sections.output, sections.procedure])


def test_every_benchmark_description_has_all_four_sections():
    for path in sorted(REPOQA.glob("*__*.json")):
        for needle in json.loads(path.read_text(encoding="utf-8"))["needles"]:
            sections = split_sections(needle["description"])
            assert sections is not None and all(
                [sections.purpose, sections.input, sections.output, sections.procedure]), needle["name"]


def test_labels_without_markdown_and_missing_sections():
    text = "Purpose: parse a date.\nReturns: the date, or None.\nSteps: split on dashes; build it."
    assert split_sections(text) == QuerySections("parse a date.", "", "the date, or None.",
                                                 "split on dashes; build it.")


def test_a_sentence_is_not_a_structured_description():
    assert split_sections("Set the shape of a list of lines") is None
    assert split_sections("The purpose: to set the shape of a list of lines.") is None
    assert split_sections("Purpose: only a purpose, nothing else.") is None
