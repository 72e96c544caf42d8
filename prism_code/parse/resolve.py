"""Resolve an Import to the workspace files it refers to.

`ModuleResolver(files)` precomputes per-language lookup tables on first use, so each
`resolve` call is a handful of dict and set probes (it runs once per import of a repository).
Paths are workspace-relative and "/" separated, like `ParsedFile.path`.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import cached_property

from prism_code.parse.model import Import
from prism_code.parse.resolve_languages import LanguageResolver

_JS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
# ESM TypeScript imports name the compiled file: `./lib.js` means `./lib.ts`.
_JS_COMPILED_SOURCES = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_C_FAMILY_EXTENSIONS = frozenset(
    {".h", ".c", ".hh", ".hpp", ".hxx", ".h++", ".cc", ".cpp", ".cxx", ".inl", ".inc", ".ipp", ".tpp", ".tcc"}
)
_RUST_MODULE_ROOT_FILES = ("mod.rs", "lib.rs", "main.rs")


class ModuleResolver:
    """Maps imports to workspace files; build once per workspace file set, then call `resolve`."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = frozenset(files)

    def resolve(self, imp: Import, from_path: str, language: str) -> list[str]:
        """Workspace files `imp` (written in `from_path`) refers to; [] for external or unknown modules."""
        if language == "python":
            found = self._python(imp, from_path)
        elif language in ("javascript", "typescript", "tsx"):
            found = self._javascript(imp, from_path)
        elif language == "java":
            found = self._java(imp)
        elif language == "go":
            found = self._go(imp)
        elif language == "rust":
            found = self._rust(imp, from_path)
        elif language in ("c", "cpp"):
            found = self._c_include(imp, from_path)
        else:  # the languages of query files
            found = self._languages.resolve(imp, from_path, language)
        return [path for path in dict.fromkeys(found) if path != from_path]

    @cached_property
    def _languages(self) -> LanguageResolver:
        return LanguageResolver(self.files, _closest)

    # Python ---------------------------------------------------------------------------------

    @cached_property
    def _python_modules(self) -> dict[str, list[str]]:
        """Dotted module name -> files, for every source root the module could be imported from.

        A file a/b/c.py is module "c" under root a/b, "b.c" under root a and "a.b.c" under the
        repository root; a root that is itself a package (has __init__.py) is not a source root.
        """
        modules: dict[str, list[str]] = defaultdict(list)
        sources = sorted(self.files, key=lambda path: path.endswith(".pyi"))  # a .py beats its stub
        for path in sources:
            if not path.endswith((".py", ".pyi")):
                continue
            stem = path[: path.rindex(".")]
            if path.endswith(".pyi") and stem + ".py" in self.files:
                continue
            parts = stem.split("/")
            if parts[-1] == "__init__":
                parts.pop()
            for start in range(len(parts)):
                root = "/".join(parts[:start])
                if start and root + "/__init__.py" in self.files:
                    continue
                modules[".".join(parts[start:])].append(path)
        return dict(modules)

    def _python(self, imp: Import, from_path: str) -> list[str]:
        if imp.level:
            package = _ancestor(posixpath.dirname(from_path), imp.level - 1)
            if package is None:
                return []
            base = _join(package, imp.module.replace(".", "/"))
            return self._with_submodules(
                self._python_file(base), lambda name: self._python_file(_join(base, name)), imp.names
            )
        return self._with_submodules(
            self._python_absolute(imp.module, from_path),
            lambda name: self._python_absolute(f"{imp.module}.{name}", from_path),
            imp.names,
        )

    def _python_file(self, module_path: str) -> list[str]:
        """The file of a module given as a path without extension ("" for the workspace root)."""
        for candidate in (module_path + ".py", _join(module_path, "__init__.py"), module_path + ".pyi"):
            if candidate in self.files:
                return [candidate]
        return []

    def _python_absolute(self, module: str, from_path: str) -> list[str]:
        return _closest(self._python_modules.get(module, ()), from_path) if module else []

    @staticmethod
    def _with_submodules(
        module_files: list[str],
        submodule_files: Callable[[str], list[str]],
        names: tuple[tuple[str, str | None], ...],
    ) -> list[str]:
        """`from m import a, b`: the submodule files of names that are modules, plus m itself
        unless every name was a submodule (then m's own code is not what the import reaches for)."""
        submodules: list[str] = []
        every_name_is_module = bool(names)
        for name, _alias in names:
            found = submodule_files(name) if name not in ("*", "self") else []
            submodules.extend(found)
            every_name_is_module = every_name_is_module and bool(found)
        return submodules if every_name_is_module else module_files + submodules

    # JavaScript / TypeScript ----------------------------------------------------------------

    def _javascript(self, imp: Import, from_path: str) -> list[str]:
        """Relative specifiers only: bare ones name packages from node_modules."""
        if not imp.module.startswith("."):
            return []
        base = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), imp.module))
        if base == ".." or base.startswith("../"):
            return []
        stem, extension = posixpath.splitext(base)
        candidates = [base]
        candidates += [stem + source for source in _JS_COMPILED_SOURCES.get(extension, ())]
        candidates += [base + suffix for suffix in _JS_EXTENSIONS]
        candidates += [f"{base}/index{suffix}" for suffix in _JS_EXTENSIONS]
        for candidate in candidates:
            if candidate in self.files:
                return [candidate]
        return []

    # Java -----------------------------------------------------------------------------------

    @cached_property
    def _java_tables(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """(dotted class suffix -> files, dotted package suffix -> files in that package)."""
        classes: dict[str, list[str]] = defaultdict(list)
        packages: dict[str, list[str]] = defaultdict(list)
        for path in self.files:
            if not path.endswith(".java"):
                continue
            parts = path[: -len(".java")].split("/")
            for start in range(len(parts)):
                classes[".".join(parts[start:])].append(path)
                if start < len(parts) - 1:
                    packages[".".join(parts[start:-1])].append(path)
        return dict(classes), dict(packages)

    def _java(self, imp: Import) -> list[str]:
        classes, packages = self._java_tables
        module = imp.module
        if module.endswith(".*"):
            owner = module[:-2]
            return sorted(packages.get(owner, ())) or sorted(classes.get(owner, ()))
        # `import a.b.C.Inner` and `import static a.b.C.member` live in a/b/C.java.
        owner = module.rpartition(".")[0]
        return sorted(classes.get(module, ())) or (sorted(classes.get(owner, ())) if "." in owner else [])

    # Go -------------------------------------------------------------------------------------

    @cached_property
    def _go_packages(self) -> dict[str, list[str]]:
        """Package directory relative to its module root (nearest go.mod) -> its non-test .go files.

        Without any go.mod every directory suffix is a key, as the module root is unknown.
        """
        module_roots = {posixpath.dirname(path) for path in self.files if posixpath.basename(path) == "go.mod"}
        packages: dict[str, list[str]] = defaultdict(list)
        for path in sorted(self.files):
            if not path.endswith(".go") or path.endswith("_test.go"):
                continue
            directory = posixpath.dirname(path)
            if module_roots:
                root = next((r for r in _ancestors(directory) if r in module_roots), None)
                # The module root's own package is named by go.mod's module line, which we do not read.
                if root is not None and directory != root:
                    packages[directory[len(root) + 1 :] if root else directory].append(path)
            else:
                parts = directory.split("/") if directory else []
                for start in range(len(parts)):
                    packages["/".join(parts[start:])].append(path)
        return dict(packages)

    def _go(self, imp: Import) -> list[str]:
        """The longest package directory the import path ends with; the path's remaining
        prefix is the module path, so single-segment paths ("fmt") never resolve."""
        parts = imp.module.split("/")
        for count in range(len(parts) - 1, 0, -1):
            found = self._go_packages.get("/".join(parts[-count:]))
            if found:
                return list(found)
        return []

    # Rust -----------------------------------------------------------------------------------

    def _rust(self, imp: Import, from_path: str) -> list[str]:
        segments = imp.module.split("::")
        module_dir = _rust_module_dir(from_path)
        head = segments[0]
        if head == "crate":
            base, rest, is_local = _rust_crate_root(from_path), segments[1:], True
        elif head in ("self", "super"):
            base, rest = module_dir, segments
            while rest and rest[0] in ("self", "super"):
                if rest[0] == "super":
                    base = posixpath.dirname(base)
                rest = rest[1:]
            is_local = True
        else:  # a child module of the current one, or an external crate (then nothing matches)
            base, rest, is_local = module_dir, segments, False
        return self._with_submodules(
            self._rust_longest_module(base, rest, is_local),
            lambda name: self._rust_module_file(base, [*rest, name]),
            imp.names,
        )

    def _rust_module_file(self, base: str, segments: list[str]) -> list[str]:
        """The file of module `base::segments`: a.rs or a/mod.rs; the base module's own file if empty."""
        if not segments:
            candidates = [_join(base, name) for name in _RUST_MODULE_ROOT_FILES] + [base + ".rs"]
        else:
            path = _join(base, "/".join(segments))
            candidates = [path + ".rs", path + "/mod.rs"]
        return next(([candidate] for candidate in candidates if candidate in self.files), [])

    def _rust_longest_module(self, base: str, segments: list[str], include_base: bool) -> list[str]:
        """`a::b::Item` is usually an item inside module a::b: strip trailing segments until a file matches."""
        for count in range(len(segments), -1 if include_base else 0, -1):
            found = self._rust_module_file(base, segments[:count])
            if found:
                return found
        return []

    # C / C++ --------------------------------------------------------------------------------

    @cached_property
    def _c_suffixes(self) -> dict[str, list[str]]:
        """Every path suffix ("x.h", "sub/x.h", ...) of C-family files -> files."""
        suffixes: dict[str, list[str]] = defaultdict(list)
        for path in self.files:
            if posixpath.splitext(path)[1].lower() not in _C_FAMILY_EXTENSIONS:
                continue
            parts = path.split("/")
            for start in range(len(parts)):
                suffixes["/".join(parts[start:])].append(path)
        return dict(suffixes)

    def _c_include(self, imp: Import, from_path: str) -> list[str]:
        """`#include "x.h"`: next to the including file first, else any file ending in /x.h."""
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), imp.module))
        if beside in self.files:
            return [beside]
        return _closest(self._c_suffixes.get(posixpath.normpath(imp.module), ()), from_path)




def _join(directory: str, name: str) -> str:
    if not directory:
        return name
    return f"{directory}/{name}" if name else directory


def _ancestor(directory: str, levels: int) -> str | None:
    """`directory` with `levels` trailing components removed; None when it has too few."""
    for _ in range(levels):
        if not directory:
            return None
        directory = posixpath.dirname(directory)
    return directory


def _ancestors(directory: str) -> Iterable[str]:
    """`directory`, its parent, ..., up to "" (the workspace root)."""
    while directory:
        yield directory
        directory = posixpath.dirname(directory)
    yield ""


def _closest(candidates: Iterable[str], from_path: str) -> list[str]:
    """Among equally named candidates, those sharing the longest directory prefix with the importer."""
    candidates = list(candidates)
    if len(candidates) <= 1:
        return candidates
    importer = from_path.split("/")

    def shared(path: str) -> int:
        count = 0
        for mine, theirs in zip(importer, path.split("/")):
            if mine != theirs:
                break
            count += 1
        return count

    best = max(shared(path) for path in candidates)
    return sorted(path for path in candidates if shared(path) == best)


def _rust_crate_root(path: str) -> str:
    """The nearest enclosing `src` directory, else the file's own directory."""
    directory = posixpath.dirname(path)
    for candidate in _ancestors(directory):
        if posixpath.basename(candidate) == "src":
            return candidate
    return directory


def _rust_module_dir(path: str) -> str:
    """Directory holding the child modules of the module defined in `path`."""
    directory, name = posixpath.split(path)
    if name in _RUST_MODULE_ROOT_FILES:
        return directory
    return _join(directory, posixpath.splitext(name)[0])
