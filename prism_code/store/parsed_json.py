"""A ParsedFile as the index stores it: compact JSON, read back into the same dataclasses."""

from __future__ import annotations

import json
from dataclasses import asdict

from prism_code.parse.model import Binding, CallSite, Definition, Import, ParsedFile


def parsed_to_json(pf: ParsedFile) -> str:
    return json.dumps({
        "language": pf.language, "line_count": pf.line_count, "has_errors": pf.has_errors,
        "definitions": [asdict(d) for d in pf.definitions],
        "calls": [[c.name, c.receiver, c.line, c.caller] for c in pf.calls],
        "imports": [[i.module, i.line, [list(n) for n in i.names], i.alias, i.level]
                    for i in pf.imports],
        "blocks": pf.blocks,
        "bindings": [[b.scope, b.name, b.line, b.kind, b.evidence] for b in pf.bindings],
    }, separators=(",", ":"))


def parsed_from_json(path: str, data: str) -> ParsedFile:
    raw = json.loads(data)
    return ParsedFile(
        path=path, language=raw["language"], line_count=raw["line_count"],
        has_errors=raw["has_errors"],
        definitions=[Definition(**{**d, "bases": tuple(d.get("bases", ())),
                                   "decorators": tuple(d.get("decorators", ()))}) for d in raw["definitions"]],
        calls=[CallSite(*c) for c in raw["calls"]],
        imports=[Import(m, line, tuple(tuple(n) for n in names), alias, level)
                 for m, line, names, alias, level in raw["imports"]],
        blocks=[tuple(b) for b in raw["blocks"]],
        bindings=[Binding(*b) for b in raw.get("bindings", ())],
    )
