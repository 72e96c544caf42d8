"""Settings shared by indexing, retrieval and the CLI."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

DEFAULT_MAX_FILE_BYTES = 1 << 20
# Repository limits: past them files are skipped with a logged reason rather than indexed
# until the machine runs out of memory (a directory of generated files, a monorepo's vendored
# copies). sympy, 746k lines in 1,560 files, indexes in about 1 GB; the defaults leave room
# for about three times that, and a user with the memory raises them (--max-files, --max-lines).
DEFAULT_MAX_FILES = 50_000
DEFAULT_MAX_LINES = 2_000_000

# Bounds of the user-facing knobs, one definition for the command line and the server's
# settings and commands (a value outside is an error there, a warning and the default here).
MAX_FIND_TOP = 1000  # results of one find: 1..MAX_FIND_TOP
FRAGREL_ALPHA_RANGE = (0.0, 10.0)  # the FragRel weight; 0 is the vanilla retriever
THREADS_RANGE = (1, 256)  # llama.cpp CPU threads

CACHE_DIR_ENV = "PRISM_CODE_CACHE_DIR"


def cache_root() -> Path:
    """Where everything prism-code caches goes: $PRISM_CODE_CACHE_DIR, else the user cache.

    The index databases, the models, the KV state files and the benchmarks' data all live
    under it, so the one variable moves all of them.
    """
    override = os.environ.get(CACHE_DIR_ENV)
    return Path(override) if override else user_cache_root()


def user_cache_root() -> Path:
    """The user's own cache, whatever $PRISM_CODE_CACHE_DIR says (models are read from it)."""
    return Path(platformdirs.user_cache_dir("prism-code"))


@dataclass
class IndexConfig:
    exclude: list[str] = field(default_factory=list)  # gitignore-style patterns from the user
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_files: int = DEFAULT_MAX_FILES  # files indexed at most, in path order
    max_lines: int = DEFAULT_MAX_LINES  # lines indexed at most, over all files
    # False: never run git in the workspace (git obeys the repository's own config); the
    # directory walk lists the files instead.
    trusted: bool = True
    window_lines: int = 20  # RepoCoder windows
    window_stride: int = 10
    relation_cutoff: float = 0.05  # node relation strengths below this are dropped
    related_per_fragment: int = 24  # size of each fragment's sparse related set
    context_weight: float = 0.3  # w_rel of FragRel Eq. 7 for neighbouring windows
