"""Classes, structs, interfaces, traits and enums as units find can return.

A symbol query ("HTTPAdapter", "Response") names a type, and the answer is the type's own
lines: its header, its documentation, its fields. Reached only through one of its methods,
the answer is a method somewhere in the middle of the class, which a person (and semble's
benchmark) does not count as the class. So each type is searched as a unit of its own.

A type's searchable text is its skeleton: every line of its span except the bodies of the
functions inside it (each member keeps its first line, its signature). The bodies are
searched as the members' own units; repeated in the class they would make every long class
match every sentence about any of its methods. Its result span stays the whole type.
"""

from __future__ import annotations

from prism_code.fragments import is_function
from prism_code.parse.model import Definition, ParsedFile

# A type's skeleton is cut after this many lines: the header, the documentation and the
# first fields say what the type is; a 3,000-line generated enum adds only length.
MAX_SKELETON_LINES = 200


def skeleton(lines: list[str], pf: ParsedFile | None, definition: Definition) -> str:
    """The type's lines without its member functions' bodies, at most MAX_SKELETON_LINES."""
    hidden: set[int] = set()
    for member in pf.definitions if pf is not None else []:
        inside = definition.start_line <= member.start_line and member.end_line <= definition.end_line
        if inside and is_function(member) and member is not definition:
            hidden.update(range(member.start_line + 1, member.end_line + 1))
    kept = [lines[n - 1] for n in range(definition.start_line, min(definition.end_line, len(lines)) + 1)
            if n not in hidden]
    return "\n".join(kept[:MAX_SKELETON_LINES])
