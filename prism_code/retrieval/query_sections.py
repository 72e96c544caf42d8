"""The sections of a structured description: purpose, input, output, procedure.

Long descriptions (RepoQA's, and the function memory's notes) come as labelled lists:
"1. **Purpose**: ...", "2. **Input**: ...". The purpose reads like a docstring, the
input, output and procedure like the body, so find may score each against the text it
resembles. A description without such labels has no sections (``None``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LABELS = ("purpose", "input", "output", "procedure")

# A label opening a line: an optional list marker, optional bold or heading marks around the
# label word, then a colon (inside or outside the marks). "Inputs", "Outputs", "Returns" too.
_LABEL = re.compile(
    r"^[ \t]*(?:\d+[.)]|[-*+])?[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*"
    r"(purpose|inputs?|outputs?|returns?|procedure|steps?)[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*:",
    re.IGNORECASE | re.MULTILINE)
_CANONICAL = {"purpose": "purpose", "input": "input", "inputs": "input", "output": "output",
              "outputs": "output", "return": "output", "returns": "output", "procedure": "procedure",
              "step": "procedure", "steps": "procedure"}


@dataclass(frozen=True)
class QuerySections:
    """A description's labelled parts; a part the description lacks is empty."""

    purpose: str
    input: str
    output: str
    procedure: str

    def body(self) -> str:
        """What reads like code: input, output and procedure, without the purpose."""
        return "\n".join(p for p in (self.input, self.output, self.procedure) if p)


def split_sections(text: str) -> QuerySections | None:
    """The description's sections, or None when it has no purpose label and at least one other
    (a sentence that merely contains "purpose:" is not a structured description)."""
    found: dict[str, list[str]] = {}
    matches = list(_LABEL.finditer(text))
    for m, following in zip(matches, [*matches[1:], None]):
        end = following.start() if following is not None else len(text)
        label = _CANONICAL[m.group(1).lower()]
        found.setdefault(label, []).append(text[m.end():end].strip())
    if "purpose" not in found or len(found) < 2:
        return None
    return QuerySections(*("\n".join(found.get(label, [])) for label in LABELS))
