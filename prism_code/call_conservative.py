"""Calls linked by name rules where scopes and types say nothing (issue #26).

Python, JavaScript and TypeScript calls are resolved through scopes and types
(prism_code.call_resolution). Other languages keep the graph's older rules (ConservativeRules):
`this`/`self` calls in the same class, then the same file, imported symbols and modules, and
else a name defined exactly once in the repository. In JavaScript and TypeScript a method call
on a receiver of unknown type may link the repository's one method so named
(one_method_named).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prism_code.call_index import FileIndex
from prism_code.call_values import Target, Value, definition_value
from prism_code.parse.model import CallSite, Import, ParsedFile

# A name defined in more places than this is not linked by name alone: linking `get` or `run`
# to every definition of that name would be noise, not structure.
MAX_GLOBAL_CANDIDATES = 1


class ConservativeRules:
    """The rules over one resolver's view of the files: `index` reads a file's index (and
    records the read), `import_files` answers which repository files an import reaches."""

    def __init__(self, named: Callable[[str, int | None], Iterable[Target]],
                 index: Callable[[str], FileIndex | None],
                 import_files: Callable[[str, Import], list[str]]) -> None:
        self.named = named
        self.index = index
        self.import_files = import_files
        self._imports_of: dict[str, tuple[dict[str, list[str]], dict[str, list[Target]]]] = {}

    def targets(self, pf: ParsedFile, call: CallSite) -> list[Target]:
        """Same class for `this`/`self`, same file, imported symbols and modules, else a name
        defined once in the repository."""
        name, receiver = call.name, call.receiver
        candidates = sorted(set(self.named(name, None)))
        if not candidates:
            return []
        imported_files, imported_symbols = self._imports(pf)
        if receiver in (None, "self", "this", "cls", "super()"):
            local = [c for c in candidates if c[0] == pf.path]
            if receiver in ("self", "this", "cls") and call.caller and "." in call.caller:
                cls = call.caller.rsplit(".", 1)[0]
                in_class = [c for c in local if c[1] == f"{cls}.{name}"]
                if in_class:
                    return in_class
            if local:
                return local
            if receiver is None and name in imported_symbols:
                return imported_symbols[name]
        else:
            head = receiver.split(".")[0]
            files = imported_files.get(receiver) or imported_files.get(head) or []
            hits = [c for c in candidates if c[0] in files]
            if hits:
                return hits
            classes = [s for s in imported_symbols.get(head, []) if self._kind(s) == "class"]
            methods = [c for c in candidates for s in classes if c == (s[0], f"{s[1]}.{name}")]
            if methods:
                return methods
        if len(candidates) <= MAX_GLOBAL_CANDIDATES:
            for path, _qualname in candidates:
                self.index(path)
            return candidates
        return []

    def _kind(self, target: Target) -> str:
        index = self.index(target[0])
        definition = index.by_qualname.get(target[1]) if index is not None else None
        return definition.kind if definition is not None else ""

    def _imports(self, pf: ParsedFile) -> tuple[dict[str, list[str]], dict[str, list[Target]]]:
        hit = self._imports_of.get(pf.path)
        if hit is not None:
            return hit
        files: dict[str, list[str]] = {}
        symbols: dict[str, list[Target]] = {}
        for imp in pf.imports:
            for target in self.import_files(pf.path, imp):
                self.index(target)  # read: its definitions decide the links
                for name, alias in imp.names:
                    index = self.index(target)
                    if index is not None and name in index.by_qualname:
                        symbols.setdefault(alias or name, []).append((target, name))
                local = imp.alias or (imp.module.split(".")[-1] if not imp.names else None)
                if local:
                    files.setdefault(local, []).append(target)
                for name, alias in imp.names:
                    files.setdefault(alias or name, []).append(target)
        self._imports_of[pf.path] = (files, symbols)
        return files, symbols


def one_method_named(name: str, named: Callable[[str, int | None], Iterable[Target]],
                     index: Callable[[str], FileIndex | None]) -> Value | None:
    """The repository's one method called `name`: a method with a body, or a function that
    declares `this: Class` (a method mixed into the class); None when there are several."""
    found: set[Value] = set()
    for path, qualname in dict.fromkeys(named(name, None)):
        file_index = index(path)
        definition = file_index.by_qualname.get(qualname) if file_index is not None else None
        if file_index is None or definition is None or definition.stub or definition.kind == "class":
            continue
        if definition.kind == "method" or (qualname, "this") in file_index.entries:
            found.add(definition_value(path, definition))
    return found.pop() if len(found) == 1 else None
