"""The member names of JavaScript's built-in objects (Array, String, Map, Set, Promise, Object, ...).

Read from prism_code/data/js_builtin_members.txt, which scripts/builtin_members.mjs generates
from the ECMAScript libraries of npm's `typescript` (lib.es*.d.ts): shipped with the package,
never fetched at run time. Call resolution (prism_code.call_resolution) does not link a call on
a receiver of unknown type by one of these names alone: `rows.filter(...)` is far likelier an
Array's than the repository's one `filter` method.
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)

MEMBERS_FILE = Path(__file__).resolve().parent / "data" / "js_builtin_members.txt"


@cache
def builtin_members() -> frozenset[str]:
    """The names; empty (with a warning) if the packaged list is missing, and then every name
    counts as maybe built-in (may_be_builtin_member): no list, no guesses."""
    try:
        text = MEMBERS_FILE.read_text(encoding="utf-8")
    except OSError as error:
        log.warning("no list of JavaScript built-in members (%s): untyped receivers stay unlinked", error)
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def may_be_builtin_member(name: str) -> bool:
    """Whether a call by this name may be a built-in's; always so without the list."""
    members = builtin_members()
    return not members or name in members
