"""Block completion tasks: the first lines of a function body, blanked, asked for at once.

When the cursor sits on the empty line under a `def ...:` header, the completer writes
several lines (`CompletionSettings.max_lines`). How many are worth showing is a question
for data: each task blanks the first BLOCK_LINES lines of a real function body, the cursor
waits at the body's indentation, and the answer is scored line by line, so the report can
say how good line 1, line 2, ... of a block suggestion are.

Only bodies that start right under their header qualify (no docstring between: the
completer offers a block only where a line opens one) and that have more than BLOCK_LINES
lines, so the blanked lines end inside the function.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import tree_sitter

from prism_bench.repoeval_data import PROJECTS, ProjectSpec, default_cache_dir, materialise_project
from prism_code.parse.languages import grammar, parser

BLOCK_LINES = 5
RULES_VERSION = 1
_BODIES = "(function_definition body: (block) @body)"


@dataclass(frozen=True)
class BlockTask:
    task_id: str  # "<project>/block/<n>"
    project: str
    path: str
    line: int  # 1-based first blanked line (the body's first)
    indent: str  # the body's indentation: where the cursor waits
    truth: list[str]  # the blanked lines as in the file

    @property
    def split(self) -> str:
        return "tune" if int(self.task_id.rsplit("/", 1)[1]) % 2 == 0 else "test"

    def blanked(self, root: Path) -> tuple[str, int, int]:
        """The file with the task's lines removed and an indented empty line in their place,
        and the cursor (line, column), 1-based, at its end."""
        lines = (root / self.path).read_bytes().decode("utf-8").split("\n")
        if [ln.rstrip("\r") for ln in lines[self.line - 1:self.line - 1 + len(self.truth)]] != self.truth:
            raise ValueError(f"{self.task_id}: {self.path}:{self.line} no longer holds the block")
        kept = lines[:self.line - 1] + [self.indent] + lines[self.line - 1 + len(self.truth):]
        return "\n".join(kept), self.line, len(self.indent) + 1


def block_candidates(path: str, source: bytes) -> list[tuple[int, str, list[str]]]:
    """(first line, indentation, lines) of each qualifying body in one Python file."""
    tree = parser("python").parse(source)
    if tree.root_node.has_error:
        return []
    lines = [ln.rstrip("\r") for ln in source.decode("utf-8", errors="replace").split("\n")]
    query = tree_sitter.Query(grammar("python"), _BODIES)
    found = []
    for body in tree_sitter.QueryCursor(query).captures(tree.root_node).get("body", ()):
        first = body.children[0] if body.children else None
        header_end = body.parent.child_by_field_name("parameters") if body.parent else None
        if first is None or header_end is None or first.type == "expression_statement" and \
                first.children and first.children[0].type == "string":
            continue  # no statement, or a docstring first
        row = first.start_point[0]
        if row == 0 or not lines[row - 1].rstrip().endswith(":") or body.end_point[0] - row < BLOCK_LINES:
            continue  # the body shares its header's line, or is too short to end inside it
        block = lines[row:row + BLOCK_LINES]
        if not all(ln.strip() for ln in block):
            continue
        indent = block[0][:len(block[0]) - len(block[0].lstrip())]
        found.append((row + 1, indent, block))
    return found


def build_block_tasks(root: Path, project: str, n: int, seed: int = 0) -> list[BlockTask]:
    """`n` seeded tasks from the project's files, at most two per file."""
    pool: list[tuple[str, int, str, list[str]]] = []
    for file in sorted(root.rglob("*.py")):
        rel = file.relative_to(root).as_posix()
        pool += [(rel, *c) for c in block_candidates(rel, file.read_bytes())]
    rng = random.Random(f"{seed}/{project}/block")
    rng.shuffle(pool)
    per_file: dict[str, int] = {}
    chosen: list[tuple[str, int, str, list[str]]] = []
    for rel, line, indent, block in pool:
        if len(chosen) == n:
            break
        if per_file.get(rel, 0) < 2:
            per_file[rel] = per_file.get(rel, 0) + 1
            chosen.append((rel, line, indent, block))
    chosen.sort()
    return [BlockTask(f"{project}/block/{i}", project, rel, line, indent, block)
            for i, (rel, line, indent, block) in enumerate(chosen)]


def build_block_benchmark(per_project: int = 20, seed: int = 0,
                          projects: tuple[ProjectSpec, ...] = PROJECTS) -> Path:
    cache = default_cache_dir()
    out = cache / f"blocks-v{RULES_VERSION}-{per_project}-{seed}.jsonl"
    if out.is_file():
        return out
    tasks = []
    for spec in projects:
        tasks += build_block_tasks(materialise_project(spec, cache), spec.package, per_project, seed)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps(asdict(t)) + "\n" for t in tasks), encoding="utf-8")
    os.replace(tmp, out)
    return out


def load_block_tasks(path: Path) -> list[BlockTask]:
    return [BlockTask(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line]
