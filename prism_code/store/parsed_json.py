"""A ParsedFile as the index stores it: compact JSON, read back into the same dataclasses."""

from __future__ import annotations

import json
import sys
from dataclasses import fields

from prism_code.parse.model import Binding, CallSite, Definition, Import, ParsedFile

# Written by hand rather than with dataclasses.asdict, which deep-copies every value (4.8 s of
# a first index of sympy went to it).
_DEFINITION_FIELDS = tuple(f.name for f in fields(Definition))


def _shared(text: str | None) -> str | None:
    """One string object for every repeat of a name across all files (callee and caller
    names repeat thousands of times; on sympy the parses held ~2 million copies)."""
    return None if text is None else sys.intern(text)


def parsed_to_json(pf: ParsedFile) -> str:
    return json.dumps({
        "language": pf.language, "line_count": pf.line_count, "has_errors": pf.has_errors,
        "definitions": [{name: getattr(d, name) for name in _DEFINITION_FIELDS} for d in pf.definitions],
        "calls": [[c.name, c.receiver, c.line, c.caller] for c in pf.calls],
        "imports": [[i.module, i.line, [list(n) for n in i.names], i.alias, i.level]
                    for i in pf.imports],
        "blocks": pf.blocks,
        "bindings": [[b.scope, b.name, b.line, b.kind, b.evidence] for b in pf.bindings],
    }, separators=(",", ":"))


def parsed_from_json(path: str, data: str | bytes) -> ParsedFile:
    raw = json.loads(data)
    return ParsedFile(
        path=path, language=raw["language"], line_count=raw["line_count"],
        has_errors=raw["has_errors"],
        definitions=[Definition(**{**d, "name": _shared(d["name"]), "qualname": _shared(d["qualname"]),
                                   "parent": _shared(d.get("parent")), "bases": tuple(d.get("bases", ())),
                                   "decorators": tuple(d.get("decorators", ()))}) for d in raw["definitions"]],
        calls=[CallSite(_shared(name) or "", _shared(receiver), line, _shared(caller))
               for name, receiver, line, caller in raw["calls"]],
        imports=[Import(m, line, tuple(tuple(n) for n in names), alias, level)
                 for m, line, names, alias, level in raw["imports"]],
        blocks=[tuple(b) for b in raw["blocks"]],
        bindings=[Binding(_shared(scope), _shared(name) or "", line, kind, _shared(evidence) or "")
                  for scope, name, line, kind, evidence in raw.get("bindings", ())],
    )
