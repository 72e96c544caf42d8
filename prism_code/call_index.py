"""One file's names by scope, for call resolution (prism_code.call_resolution).

What binds each name in each scope (definitions, bindings, imports, by line), each class's
members and the attributes its methods assign to `self`, and the names its imports bind;
built once per ParsedFile and kept across graph updates (`ResolutionCache`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prism_code.parse.model import Binding, Definition, Import, ParsedFile
from prism_code.parse.resolve import ModuleResolver

# How the receiver of an instance method is spelled.
SELF_NAMES = frozenset({"self", "this"})

# (line, rank, what binds the name): a definition or an import outranks a binding on its line.
_Entry = tuple[int, int, "Definition | Binding | tuple[Import, str | None]"]


@dataclass
class FileIndex:
    """One file's names by (scope, name): what binds them there, and its classes' members."""

    pf: ParsedFile
    by_qualname: dict[str, Definition]
    members: dict[tuple[str | None, str], list[Definition]]  # (parent qualname, name) -> definitions
    entries: dict[tuple[str | None, str], list[_Entry]]  # (scope, name) -> what binds it there, by line
    attributes: dict[tuple[str, str], list[Binding]]  # (class, attribute) -> `self.attr = ...` bindings
    imported: dict[str, list[Import]]  # name -> the imports binding it, in any scope
    star_imports: list[Import]  # module-level `from m import *`


class ResolutionCache:
    """What outlives one resolver: each file's index (valid while its ParsedFile is the same
    object) and the module resolver's answers (valid while the set of files is the same).
    Without it an edit of a file many others import rebuilt the index of every file they read."""

    def __init__(self) -> None:
        self.indexes: dict[str, FileIndex] = {}
        self.imports: dict[tuple[object, ...], list[str]] = {}
        self.modules: ModuleResolver | None = None  # whose answers `imports` holds

    def forget(self, path: str) -> None:
        self.indexes.pop(path, None)


def build_index(pf: ParsedFile) -> FileIndex:
    by_qualname = {d.qualname: d for d in pf.definitions}
    members: dict[tuple[str | None, str], list[Definition]] = {}
    entries: dict[tuple[str | None, str], list[_Entry]] = {}
    for definition in pf.definitions:
        key = (definition.parent, definition.name)
        members.setdefault(key, []).append(definition)
        entries.setdefault(key, []).append((definition.start_line, 1, definition))
    attributes: dict[tuple[str, str], list[Binding]] = {}
    for binding in pf.bindings:
        head, _, attribute = binding.name.partition(".")
        if not attribute:
            entries.setdefault((binding.scope, binding.name), []).append((binding.line, 0, binding))
            continue
        method = by_qualname.get(binding.scope) if binding.scope else None
        owner = by_qualname.get(method.parent) if method is not None and method.parent else None
        if head in SELF_NAMES and owner is not None and owner.kind == "class":
            attributes.setdefault((owner.qualname, attribute), []).append(binding)
    imported: dict[str, list[Import]] = {}
    star_imports: list[Import] = []
    scope_of_line = _scope_finder(pf.definitions)
    for imp in pf.imports:
        scope = scope_of_line(imp.line)
        bound: list[tuple[str, str | None]] = []
        if not imp.names:
            name = imp.alias or (imp.module.split(".")[0] if pf.language == "python" else None)
            bound = [(name, None)] if name else []
        for name, alias in imp.names:
            if name == "*" and alias is None:
                if scope is None:
                    star_imports.append(imp)
            else:
                bound.append((alias or name, "*" if name == "*" else name))
        for local, name_in_module in bound:
            entries.setdefault((scope, local), []).append((imp.line, 1, (imp, name_in_module)))
            imported.setdefault(local, []).append(imp)
    for listed in entries.values():
        if len(listed) > 1:
            listed.sort(key=_entry_order)
    return FileIndex(pf, by_qualname, members, entries, attributes, imported, star_imports)


def _entry_order(entry: _Entry) -> tuple[int, int]:
    return entry[0], entry[1]


def _scope_finder(definitions: list[Definition]) -> Callable[[int], str | None]:
    """A function from a line to the innermost definition around it (None: module level)."""
    spans = sorted(definitions, key=lambda d: (d.start_line, -d.end_line))

    def scope(line: int) -> str | None:
        inner = None
        for definition in spans:
            if definition.start_line > line:
                break
            if definition.start_line < line <= definition.end_line:
                inner = definition.qualname
        return inner
    return scope
