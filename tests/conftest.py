import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from prism_code.llm import models
from prism_code.llm.models import ModelSpec

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


@pytest.fixture(scope="session")
def vocab():
    """The 0.5B model's tokenizer, loaded vocabulary-only (no weights: ~0.3 s)."""
    import llama_cpp

    from prism_code.llm.models import model_path
    from prism_code.llm.vocab import ModelVocabulary

    path = model_path("qwen2.5-coder-0.5b")
    if not path.is_file():
        pytest.skip("the 0.5B model file is not installed")
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    yield ModelVocabulary(llm, path.name)
    llm.close()


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


@pytest.fixture()
def part_packaged_model(tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> Callable[[list[int], str], tuple[ModelSpec, bytes]]:
    """`make(sizes, prefix)`: a model registered as "fake" whose parts are small real packages of
    random bytes (one per size) in tmp_path/site, on sys.path, so the lookup is the same find_spec
    as for the PyPI part wheels; its spec and its whole file. Each part's package name starts with
    `prefix` and the test's own folder name, so no two tests' parts share a name in one session."""

    def make(sizes: list[int], prefix: str) -> tuple[ModelSpec, bytes]:
        contents = [os.urandom(size) for size in sizes]
        whole = b"".join(contents)
        package_prefix = f"{prefix}_{tmp_path.name.replace('-', '_')}_"
        site = tmp_path / "site"
        for i, blob in enumerate(contents, 1):
            package = site / f"{package_prefix}{i}"
            (package / "data").mkdir(parents=True)
            (package / "__init__.py").write_text("raise RuntimeError('part packages must not be imported')\n")
            (package / "data" / f"part{i:02d}.bin").write_bytes(blob)
        monkeypatch.syspath_prepend(str(site))
        spec = ModelSpec.numbered("fake", "test", package_prefix.replace("_", "-"), "1.0", len(contents),
                                         len(whole), hashlib.sha256(whole).hexdigest())
        monkeypatch.setitem(models.MODELS, "fake", spec)
        return spec, whole

    return make


@pytest.fixture()
def calcrepo_search(calcrepo_index):
    """Find over the calcrepo fixture's index."""
    from prism_code.tasks.find_function import FunctionSearch

    return FunctionSearch(calcrepo_index)
