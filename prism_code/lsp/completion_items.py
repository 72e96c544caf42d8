"""A completion as the editor shows it: the first entry of the suggestion list, or ghost text."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

if TYPE_CHECKING:
    from prism_code.tasks.complete import CompletionResult

# The identifier being typed before the cursor. VS Code filters the list by it and would
# replace it with the item: the item must start with it.
_WORD = re.compile(r"\w*$")
# A space sorts before the digits and letters other servers' sort texts start with.
_SORT_FIRST = " "


def detail(result: CompletionResult) -> str:
    return "prism · " + (", ".join(result.context) if result.context else "no repository context")


def completion_list(result: CompletionResult | None, before: str, position: types.Position,
                    codec: PositionCodec) -> types.CompletionList:
    """`before` is the cursor line's text up to the cursor. The list is incomplete: the next
    keystroke changes what the model would say, so the editor must ask again."""
    if result is None:
        return types.CompletionList(is_incomplete=True, items=[])
    found = _WORD.search(before)  # always found: the pattern matches the empty string
    word = found.group() if found else ""
    start = types.Position(line=position.line,
                           character=position.character - codec.client_num_units(word))
    item = types.CompletionItem(
        label=(word + result.completion).strip().split("\n", 1)[0],
        kind=types.CompletionItemKind.Text,
        detail=detail(result),
        documentation=result.completion if "\n" in result.completion else None,
        sort_text=_SORT_FIRST,
        filter_text=word + result.completion.split("\n", 1)[0],
        insert_text=result.completion,
        insert_text_format=types.InsertTextFormat.PlainText,
        # The edit says exactly what is replaced, so no client re-interprets insert_text.
        text_edit=types.TextEdit(range=types.Range(start=start, end=position),
                                 new_text=word + result.completion),
        # The detail is for people; a client that wants to show the fragments reads them here.
        data={"context": list(result.context)},
    )
    return types.CompletionList(is_incomplete=True, items=[item])


def inline_list(result: CompletionResult | None,
                position: types.Position) -> types.InlineCompletionList:
    if result is None:
        return types.InlineCompletionList(items=[])
    return types.InlineCompletionList(items=[types.InlineCompletionItem(
        insert_text=result.completion, range=types.Range(start=position, end=position))])
