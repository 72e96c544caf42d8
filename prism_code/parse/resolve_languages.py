"""Imports of the query-file languages (`tagged.py`) resolved to workspace files, by path rules.

A workspace may be a whole repository or a folder inside its source root (`lua/telescope`,
`src/Illuminate`), so a module's path is looked for two ways: files whose path ends with it
(`require "sinatra/base"` -> lib/sinatra/base.rb), then, failing that, files whose whole path is
a tail of it (`require("telescope.utils")` -> utils.lua in a workspace opened at lua/telescope).
Among equally good files the ones nearest the importer win (`_closest`).

- Ruby: `require_relative "x"` ("./x") beside the file; `require "a/b"` -> a/b.rb.
- Lua: `require("a.b")` -> a/b.lua or a/b/init.lua.
- PHP: `use A\\B\\C` -> A/B/C.php, or B/C.php (PSR-4 maps the vendor namespace to a folder such
  as src/); `require __DIR__ . '/x.php'` beside the file.
- C#: `using A.B` -> the .cs files of the folder A/B (a folder named with dots, Newtonsoft.Json,
  counts as its segments); `System` namespaces are the platform's.
- Kotlin, Scala: `import a.b.C` -> a/b/C.kt (.scala), else the files of package folder a/b (a
  top-level function, or a class in a file named otherwise); `import a.b.*` -> that folder's files.
- Elixir: `alias A.BC` -> a/bc.ex (Elixir's file naming: `Phoenix.LiveView` in phoenix/live_view.ex).
- Haskell: `import A.B.C` -> A/B/C.hs (a tail drops two folders or more: `Data.Map` is not Map.hs).
- Zig: `@import("x.zig")` beside the file; package names (`std`) are not files.
- Bash: `source "$DIR/x.sh"` beside the script, else from the workspace root.
- Swift imports name modules, not files: nothing resolves.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import cached_property

from prism_code.parse.model import Import

_EXTENSIONS = {
    "ruby": (".rb",),
    "lua": (".lua",),
    "php": (".php",),
    "csharp": (".cs",),
    "kotlin": (".kt", ".kts"),
    "scala": (".scala", ".sc"),
    "elixir": (".ex", ".exs"),
    "haskell": (".hs",),
    "zig": (".zig",),
    "bash": (".sh", ".bash", ".bats"),
}

# Folders that hold a project's top-level modules: lib/json.rb is `require "json"`.
_SOURCE_FOLDERS = frozenset({"lib", "src", "source", "sources", "Sources", "app"})
# A package's own file, named after its folder (Lua's a/b/init.lua is module a.b).
_PACKAGE_FILES = frozenset({"init.lua"})

# Namespaces of the .NET platform: a repository's own code is not under them.
_CSHARP_PLATFORM = ("System", "Microsoft.Extensions", "Microsoft.CSharp", "Microsoft.Win32")


class LanguageResolver:
    """The path rules of the query-file languages over one workspace's file set."""

    def __init__(self, files: frozenset[str], closest: Callable[[Iterable[str], str], list[str]]) -> None:
        self.files = files
        self._closest = closest

    def resolve(self, imp: Import, from_path: str, language: str) -> list[str]:
        module = imp.module
        if language == "ruby":
            if module.startswith("./"):
                return self._beside(from_path, module, ".rb")
            return self._module_file([_with_extension(module, ".rb")], from_path)
        if language == "lua":
            path = module.replace(".", "/")
            return self._module_file([path + ".lua", path + "/init.lua"], from_path)
        if language == "php":
            return self._php(module, from_path)
        if language == "csharp":
            return self._csharp(module, from_path)
        if language in ("kotlin", "scala"):
            return self._jvm(module, from_path, language)
        if language == "elixir":
            path = "/".join(_underscore(part) for part in module.split("."))
            return self._module_file([path + ".ex", path + ".exs"], from_path)
        if language == "haskell":  # `Data.Map` is never Map.hs: a tail drops two folders or more
            return self._module_file([module.replace(".", "/") + ".hs"], from_path, min_dropped=2)
        if language == "zig":
            return self._beside(from_path, module, "") if module.endswith(".zig") else []
        if language == "bash":
            beside = self._beside(from_path, module, "")
            return beside or self._existing(posixpath.normpath(module))
        return []

    # Shared ---------------------------------------------------------------------------------

    @cached_property
    def _suffixes(self) -> dict[str, list[str]]:
        """Every path tail ("b.rb", "a/b.rb", ...) of the files of these languages -> files."""
        extensions = tuple(extension for group in _EXTENSIONS.values() for extension in group)
        suffixes: dict[str, list[str]] = defaultdict(list)
        for path in self.files:
            if not path.endswith(extensions):
                continue
            parts = path.split("/")
            for start in range(len(parts)):
                suffixes["/".join(parts[start:])].append(path)
        return dict(suffixes)

    def _module_file(self, candidates: list[str], from_path: str, min_dropped: int = 1) -> list[str]:
        """Files ending with a candidate path, else files whose whole path is a tail of one that
        drops at least `min_dropped` leading folders (the workspace opened inside the source root).

        A one-segment candidate ("json.rb") matches only at the workspace root or in a source
        folder (lib/, src/): anywhere else it is some other module's file (`require "json"` is
        not rails/generators/json.rb). A tail keeps the module's own name ("b/init.lua", never
        just "init.lua")."""
        for candidate in candidates:
            found = self._suffixes.get(candidate)
            if found and "/" not in candidate:
                found = [path for path in found if path == candidate or _in_source_folder(path)]
            if found:
                return self._closest(found, from_path)
        for candidate in candidates:
            parts = candidate.split("/")
            kept = 2 if parts[-1] in _PACKAGE_FILES else 1
            for start in range(min_dropped, len(parts) - kept + 1):
                tail = "/".join(parts[start:])
                if tail in self.files:
                    return [tail]
        return []

    def _beside(self, from_path: str, relative: str, extension: str) -> list[str]:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), relative))
        if path.startswith("../"):
            return []
        return self._existing(_with_extension(path, extension) if extension else path)

    def _existing(self, path: str) -> list[str]:
        return [path] if path in self.files else []

    # PHP ------------------------------------------------------------------------------------

    def _php(self, module: str, from_path: str) -> list[str]:
        if module.startswith("./"):
            return self._beside(from_path, module, "")
        segments = [segment for segment in module.split("\\") if segment]
        if not segments:
            return []
        found = self._module_file(["/".join(segments) + ".php"], from_path)
        if not found and len(segments) > 1:  # PSR-4: `Vendor\` is a folder such as src/
            found = self._closest(self._suffixes.get("/".join(segments[1:]) + ".php", ()), from_path)
        return found

    # C# -------------------------------------------------------------------------------------

    @cached_property
    def _csharp_folders(self) -> dict[str, list[str]]:
        """Folder -> its .cs files."""
        folders: dict[str, list[str]] = defaultdict(list)
        for path in self.files:
            if path.endswith(".cs"):
                folders[posixpath.dirname(path)].append(path)
        return dict(folders)

    def _csharp(self, namespace: str, from_path: str) -> list[str]:
        """The files of the folders whose dotted path ends with the namespace (the nearest ones
        to the importer), else of the folder whose dotted path is a tail of the namespace."""
        if not namespace or namespace == "System" or namespace.startswith(_CSHARP_PLATFORM):
            return []
        folders = self._csharp_folders
        forward = [folder for folder in folders
                   if (dotted := folder.replace("/", ".")) == namespace or dotted.endswith("." + namespace)]
        if forward:
            return sorted(path for folder in self._closest(forward, from_path) for path in folders[folder])
        segments = namespace.split(".")
        for start in range(1, len(segments)):
            tail = ".".join(segments[start:])
            tails = [folder for folder in folders if folder and folder.replace("/", ".") == tail]
            if tails:
                return sorted(path for folder in tails for path in folders[folder])
        # `using static A.B.C;` and `using X = A.B.C;` name a type: the file C.cs of folder A.B.
        owner, _, type_name = namespace.rpartition(".")
        return self._module_file([owner.replace(".", "/") + f"/{type_name}.cs"], from_path) if owner else []

    # Kotlin, Scala --------------------------------------------------------------------------

    def _jvm(self, module: str, from_path: str, language: str) -> list[str]:
        extensions = _EXTENSIONS[language]
        if module.endswith(".*"):
            return self._package_files(module[:-2], extensions)
        path = module.replace(".", "/")
        found = self._module_file([path + extension for extension in extensions], from_path)
        if found:
            return found
        owner = module.rpartition(".")[0]
        # `import a.b.C.Inner` lives in a/b/C.kt; `import a.b.topLevelFunction` in package a.b.
        if "." in owner:
            found = self._module_file([owner.replace(".", "/") + extension for extension in extensions], from_path)
        return found or self._package_files(owner, extensions)

    def _package_files(self, package: str, extensions: tuple[str, ...]) -> list[str]:
        """The files of the folder package a.b lives in: a/b, or a tail of it (kotlinx-coroutines
        keeps kotlinx.coroutines.channels in channels/); never the workspace root itself."""
        if "." not in package:
            return []
        folder = package.replace(".", "/")
        directories = self._directories(extensions)
        matches = [directory for directory in directories
                   if directory == folder or directory.endswith("/" + folder)]
        if not matches:
            parts = folder.split("/")
            matches = next(([tail] for start in range(1, len(parts))
                            if (tail := "/".join(parts[start:])) in directories), [])
        return sorted(path for directory in matches for path in directories[directory])

    def _directories(self, extensions: tuple[str, ...]) -> dict[str, list[str]]:
        return self._jvm_directories.get(extensions, {})

    @cached_property
    def _jvm_directories(self) -> dict[tuple[str, ...], dict[str, list[str]]]:
        tables: dict[tuple[str, ...], dict[str, list[str]]] = {}
        for language in ("kotlin", "scala"):
            extensions = _EXTENSIONS[language]
            table: dict[str, list[str]] = defaultdict(list)
            for path in self.files:
                if path.endswith(extensions) and "/" in path:
                    table[posixpath.dirname(path)].append(path)
            tables[extensions] = dict(table)
        return tables


def _in_source_folder(path: str) -> bool:
    parts = path.split("/")
    return len(parts) >= 2 and parts[-2] in _SOURCE_FOLDERS


def _with_extension(path: str, extension: str) -> str:
    return path if path.endswith(extension) else path + extension


_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _underscore(segment: str) -> str:
    """Elixir's `Macro.underscore` of one alias segment: "LiveView" -> "live_view", "HTTPClient" -> "http_client"."""
    return _WORD_BOUNDARY.sub("_", segment).lower()
