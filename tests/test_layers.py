"""The layers of prism_code (docs/architecture.md, "Layers"), checked on the source.

Every import statement counts wherever it is: at the top, inside a function (lazy), under
`if TYPE_CHECKING:`; so does `importlib.import_module("...")` with a literal name. The
package `__init__` Python runs on the way to a submodule is not counted as an import.
"""

from __future__ import annotations

import ast
import fnmatch
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = "prism_code"
BENCH = "prism_bench"

# Low to high. A module may import from its own layer and the ones before it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("prism_code", "prism_code.atomic", "prism_code.cancel", "prism_code.config",
              "prism_code.progress", "prism_code.terminal", "prism_code.cli_args")),
    ("parse", ("prism_code.parse",)),
    ("graph", ("prism_code.graph", "prism_code.call_resolution", "prism_code.call_index", "prism_code.call_values",
               "prism_code.call_chain", "prism_code.call_conservative", "prism_code.js_builtins")),
    ("store", ("prism_code.workspace", "prism_code.git_files", "prism_code.safe_read", "prism_code.fragments",
               "prism_code.worker_pool", "prism_code.parse_pool", "prism_code.relations", "prism_code.related_sets",
               "prism_code.relation_pool", "prism_code.relation_update", "prism_code.store", "prism_code.index",
               "prism_code.file_order")),
    ("retrieval, llm", ("prism_code.retrieval", "prism_code.embeddings", "prism_code.llm")),
    ("memory", ("prism_code.memory",)),
    ("tasks", ("prism_code.tasks",)),
    ("entry points", ("prism_code.lsp", "prism_code.cli", "prism_code.cli_notes")),
]

# Packages (or modules) only these modules may import from outside them, and only inside a
# function, so nothing else pays for loading them.
GUARDED: dict[str, tuple[str, ...]] = {
    "prism_code.lsp": ("prism_code.cli",),  # `prism-code serve`
    BENCH: ("prism_code.cli",),  # `prism-code bench`, from a source checkout
    "prism_code.cli": (),  # the program's entry point
    "prism_code.cli_notes": ("prism_code.cli",),  # `prism-code notes`
}

# Imports allowed against the layer order, each with its reason. Keep this list short.
LAYER_EXCEPTIONS: dict[tuple[str, str], str] = {}

# Importing these leaves llama.cpp's library unloaded.
WITHOUT_LLAMA = ("prism_code.llm.types", "prism_code.llm.backend", "prism_code.llm.remote",
                 "prism_code.llm.accounting", "prism_code.llm.json_grammar", "prism_code.memory",
                 "prism_code.file_order")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the module imported (a package when a name is taken from its __init__)
    line: int
    lazy: bool  # inside a function

    def __str__(self) -> str:
        where = "inside a function" if self.lazy else "at module level"
        return f"{self.source} imports {self.target} ({_path(self.source)}:{self.line}, {where})"


def _modules(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules(LIBRARY)
KNOWN = {**MODULES, **_modules(BENCH)}


def _path(module: str) -> str:
    return KNOWN[module].relative_to(ROOT).as_posix()


def _known(name: str) -> str | None:
    """The longest prefix of `name` that is a module of this repository."""
    while name:
        if name in KNOWN:
            return name
        name = name.rpartition(".")[0]
    return None


def _absolute(module: str, level: int, name: str | None) -> str:
    package = module.split(".") if KNOWN[module].name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - level + 1]
    return ".".join(base + ([name] if name else []))


def _imports_of(module: str) -> list[Import]:
    tree = ast.parse(KNOWN[module].read_text(encoding="utf-8"))
    found: list[Import] = []

    def add(name: str, line: int, lazy: bool) -> None:
        target = _known(name)
        if target is not None and target != module:
            found.append(Import(module, target, line, lazy))

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child.lineno, inner)
            elif isinstance(child, ast.ImportFrom):
                base = _absolute(module, child.level, child.module) if child.level else child.module or ""
                for alias in child.names:
                    # `from package import module` imports the module; else the name is in base.
                    add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in KNOWN else base, child.lineno, inner)
            elif (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                  and child.func.attr == "import_module" and child.args
                  and isinstance(child.args[0], ast.Constant) and isinstance(child.args[0].value, str)):
                name = child.args[0].value
                if name.startswith("."):
                    stripped = name.lstrip(".")
                    name = _absolute(module, len(name) - len(stripped), stripped or None)
                add(name, child.lineno, inner)
            visit(child, inner)

    visit(tree, False)
    return found


# What the library imports from itself and from the benchmarks (prism_bench sits above it all).
LIBRARY_IMPORTS = [imp for module in MODULES for imp in _imports_of(module)]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int | None:
    best, depth = None, -1
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact_only = prefix == LIBRARY
            if (module == prefix or (not exact_only and _within(module, prefix))) and len(prefix) > depth:
                best, depth = number, len(prefix)
    return best


def test_every_library_module_has_a_layer():
    missing = [_path(m) for m in MODULES if layer_of(m) is None]
    assert not missing, f"put these in a layer (tests/test_layers.py and docs/architecture.md): {missing}"


def test_no_module_imports_from_a_higher_layer():
    wrong = []
    for imp in LIBRARY_IMPORTS:
        if imp.target not in MODULES or (imp.source, imp.target) in LAYER_EXCEPTIONS:
            continue
        low, high = layer_of(imp.source), layer_of(imp.target)
        if low is not None and high is not None and high > low:
            wrong.append(f"{imp}: layer '{LAYERS[low][0]}' imports from the higher layer '{LAYERS[high][0]}'")
    assert not wrong, "\n".join(wrong)


def test_the_server_the_benchmarks_and_the_cli_are_imported_only_where_allowed():
    wrong = []
    for imp in LIBRARY_IMPORTS:
        for guarded, allowed in GUARDED.items():
            if not _within(imp.target, guarded) or _within(imp.source, guarded):
                continue
            if imp.source not in allowed:
                who = " or ".join(allowed) if allowed else "no library module"
                wrong.append(f"{imp}: {who} may import {guarded}")
            elif not imp.lazy:
                wrong.append(f"{imp}: {guarded} must be imported inside the function that needs it")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    lines: dict[tuple[str, str], Import] = {}
    for imp in LIBRARY_IMPORTS:
        if imp.target in MODULES:
            graph.add_edge(imp.source, imp.target)
            lines.setdefault((imp.source, imp.target), imp)
    cycles = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            cycle = nx.find_cycle(graph.subgraph(component))
            cycles.append(" -> ".join(u for u, _ in cycle) + f" -> {cycle[0][0]}\n  "
                          + "\n  ".join(str(lines[edge]) for edge in cycle))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_rules_see_the_imports_they_are_about():
    # The checks above would pass on nothing: make sure the reader finds real imports,
    # lazy and TYPE_CHECKING ones included.
    seen = {(imp.source, imp.target, imp.lazy) for imp in LIBRARY_IMPORTS}
    assert ("prism_code.cli", "prism_code.lsp.app", True) in seen
    assert ("prism_code.cli", "prism_bench.cli", True) in seen
    assert ("prism_code.lsp.app", "prism_code.memory.cok", True) in seen  # importlib.import_module
    assert ("prism_code.memory.runner", "prism_code.llm.backend", False) in seen  # under TYPE_CHECKING
    assert ("prism_code.tasks.find_prism", "prism_code.tasks.find_outcome", False) in seen
    assert layer_of("prism_code.graph") < layer_of("prism_code.store") < layer_of("prism_code.memory.cok")
    # A package's modules are in its layer: the store's halves sit with the index that uses them.
    assert layer_of("prism_code.store.index_store") == layer_of("prism_code.store.reads") \
        == layer_of("prism_code.index")
    assert ("prism_code.index", "prism_code.store.index_store", False) in seen
    assert layer_of("prism_code.lsp.app") == layer_of("prism_code.cli")


def _without_llama() -> list[str]:
    return sorted(m for m in MODULES if any(_within(m, prefix) for prefix in WITHOUT_LLAMA))


# Run in a fresh interpreter: imports the modules named on its command line one by one and
# stops at the first that loads llama_cpp, naming the library line whose import reached it.
LLAMA_CHECK = """
import importlib, sys

loaded_by = []


class Watch:
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while name == "llama_cpp" and frame and not loaded_by:
            if frame.f_globals.get("__name__", "").startswith("prism_code"):
                loaded_by.append(f"{frame.f_globals['__name__']} line {frame.f_lineno}")
            frame = frame.f_back


sys.meta_path.insert(0, Watch())
for name in sys.argv[1:]:
    importlib.import_module(name)
    if "llama_cpp" in sys.modules:
        sys.exit(f"importing {name} loaded llama_cpp: {loaded_by}")
"""


def test_the_memory_modules_and_the_remote_backend_do_not_load_llama_cpp():
    out = subprocess.run([sys.executable, "-c", LLAMA_CHECK, *_without_llama()], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_the_library_and_its_server_are_installed_and_the_benchmarks_are_not():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    include = setuptools["packages"]["find"]["include"]
    installed = {m for m in KNOWN if any(fnmatch.fnmatchcase(m, pattern) for pattern in include)}
    assert "prism_code.lsp.app" in installed and "prism_code.cli" in installed
    assert not any(_within(m, BENCH) for m in installed)
