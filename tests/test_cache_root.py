"""PRISM_CODE_CACHE_DIR moves every cache prism-code writes, not just the index.

Before config.cache_root(), only the index database honoured the variable: the models, the
KV state files and the benchmarks' data still went to the user cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from prism_bench import corpora, repoeval_data, repoqa_data
from prism_code.llm import models
from prism_code.llm.state_cache import StateCache

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("PRISM_CODE_CACHE_DIR", str(root))
    # The user cache the variable replaces: nothing of prism-code's may appear here.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    return root


def _nothing_in_user_cache(tmp_path: Path) -> None:
    assert not list((tmp_path / "user-cache").rglob("prism-code*"))


def test_cli_index_goes_under_the_variable(cache: Path, tmp_path: Path) -> None:
    repo = tmp_path / "multilang"
    shutil.copytree(FIXTURES / "multilang", repo)
    out = subprocess.run([sys.executable, "-m", "prism_code.cli", "index", str(repo), "--no-embeddings"],
                         capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert out.returncode == 0, out.stderr
    assert list(cache.rglob("index.sqlite"))
    _nothing_in_user_cache(tmp_path)


class _Session:
    """What StateCache needs of a llama.cpp session to write a state file."""

    model_sha256 = "0" * 64
    n_ctx = 32

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.tokens = [1, 2, 3, 4]

    def truncate(self, n: int) -> None:
        del self.tokens[n:]

    def export_state(self) -> memoryview:
        return memoryview(b"state")

    def import_state(self, tokens: Sequence[int], data: bytearray) -> bool:
        return False


def test_kv_state_files_go_under_the_variable(cache: Path, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    saved = StateCache().save_prefix(_Session(), 3)
    assert saved is not None and saved.is_file()
    assert saved.is_relative_to(cache / "kv-states")
    _nothing_in_user_cache(tmp_path)


def test_model_lookup_goes_under_the_variable(cache: Path) -> None:
    assert models.model_path(models.DEFAULT_MODEL).is_relative_to(cache / "models")
    assert not models.is_assembled(models.DEFAULT_MODEL)  # looked for there, not in the user cache


def test_bench_data_goes_under_the_variable(cache: Path) -> None:
    for where in (corpora.default_cache_dir(), repoqa_data.default_cache_dir(),
                  repoeval_data.default_cache_dir()):
        assert where.is_relative_to(cache / "bench")
