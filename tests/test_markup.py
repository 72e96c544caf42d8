"""Markdown marks are dropped before a description is embedded; the words stay."""

from prism_code.retrieval.markup import plain_text


def test_a_repoqa_style_description_becomes_plain_prose():
    description = (
        "\n1. **Purpose**: To check that `None` topics return no logs.\n"
        "2. **Input**: A filter with `fromBlock` set.\n"
        "3. **Output**: An *empty* list.\n"
    )
    assert plain_text(description) == (
        "\nPurpose: To check that None topics return no logs.\n"
        "Input: A filter with fromBlock set.\n"
        "Output: An empty list.\n"
    )


def test_bullets_headings_and_code_spans():
    assert plain_text("## Parse args\n- reads ``argv``\n* returns __opts__\n") == (
        "Parse args\nreads argv\nreturns opts\n"
    )


def test_arithmetic_and_identifiers_survive():
    # A lone '*' between operands is not emphasis; snake_case words keep their underscores.
    assert plain_text("multiply a * b, then 2*3 in parse_http_response") == (
        "multiply a * b, then 2*3 in parse_http_response"
    )


def test_plain_text_is_unchanged():
    text = "Find the function that merges two sorted lists.\nIt returns a new list."
    assert plain_text(text) == text
