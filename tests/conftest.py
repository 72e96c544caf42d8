import os
import shutil
from pathlib import Path

import pytest

# The remote-engine tests' servers (llama-cpp-python's on loopback, a recording stub) as fixtures.
pytest_plugins = ["remote_servers"]

# The fixture repositories are code to index, not tests: some hold files named test_*.py.
collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(scope="session")
def model_session():
    """The default local model (Qwen2.5-Coder-0.5B), loaded once for the model tests."""
    from prism_code.llm import LlamaSession

    session = LlamaSession.open("qwen2.5-coder-0.5b", n_ctx=4096)
    yield session
    session.close()


@pytest.fixture()
def calcrepo_index(tmp_path):
    """The index of a copy of tests/fixtures/calcrepo, where net.py needs a name settings.py defines."""
    from prism_code.index import RepoIndex

    root = tmp_path / "calcrepo"
    shutil.copytree(Path(__file__).parent / "fixtures" / "calcrepo", root)
    idx = RepoIndex(root, cache_dir=tmp_path / "cache")
    idx.update()
    yield idx
    idx.close()


@pytest.fixture()
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """git as a fresh user has it: the developer's global config, excludes file and git
    variables must not change what a test sees."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
