"""A workspace is untrusted input: its git config must run nothing, and its files, swapped
between the scan and the read, must neither hang indexing nor lead it out of the workspace.

Real git with real configuration, real FIFOs and symlinks; the races are made
deterministic by swapping the file right after the real scan returns.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from prism_code import git_files, safe_read
from prism_code import index as index_module
from prism_code.config import IndexConfig
from prism_code.index import RepoIndex
from prism_code.workspace import FileState, content_hash, diff_scan, read_source, scan

REPO = Path(__file__).resolve().parents[1]
HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")

SECRET = "API_KEY = 'do-not-index-me'\n"


@pytest.fixture(autouse=True)
def _isolated_git(isolated_git: None) -> None:
    """Every test here runs git as a fresh user would (fixture in conftest.py)."""


@pytest.fixture(params=["dir-fd walk", "path check"])
def opener(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of opening safely: by directory descriptors, and the resolved-path fallback."""
    if request.param == "path check":
        monkeypatch.setattr(safe_read, "_WALK_BY_FD", False)
    return request.param


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=root, check=True, capture_output=True)


def write(root: Path, rel: str, content: str = "def f():\n    return 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def leaves_mark(mark: Path) -> str:
    """A shell command that creates `mark` (and prints nothing, as fsmonitor expects)."""
    return f"touch {shlex.quote(str(mark))}; echo"


def indexed_text(root: Path, cache: Path) -> dict[str, list[str]]:
    """The lines of each file one index update took in."""
    index = RepoIndex(root, cache_dir=cache)
    try:
        index.update()
        return dict(index.lines)
    finally:
        index.close()


def hostile_repo(root: Path, mark: Path) -> None:
    """A committed repository whose .git/config runs `leaves_mark` through fsmonitor, with
    `kept.gen.py` tracked though ignored: only git lists it, the directory walk does not."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    write(root, "a.py")
    write(root, ".gitignore", "*.gen.py\nignored/\n")
    write(root, "kept.gen.py")
    write(root, "ignored/skip.py")
    git(root, "add", "a.py", ".gitignore")
    git(root, "add", "-f", "kept.gen.py")
    git(root, "commit", "-q", "-m", "init")
    write(root, "untracked.py")
    git(root, "config", "core.fsmonitor", leaves_mark(mark))


def paths(files) -> list[str]:
    return [f.path for f in files]


# --- git runs nothing the repository names (bug 1) -------------------------------------------


@needs_git
def test_repository_fsmonitor_is_not_run_and_git_still_lists_the_files(tmp_path: Path) -> None:
    root, mark = tmp_path / "r", tmp_path / "PWNED"
    hostile_repo(root, mark)

    result = scan(root)

    assert not mark.exists()
    assert result.used_git
    assert paths(result.files) == [".gitignore", "a.py", "kept.gen.py", "untracked.py"]


@needs_git
def test_indexing_a_hostile_repository_from_the_command_line_runs_nothing(tmp_path: Path) -> None:
    # The reproduction of issue #13: `prism-code index r --no-embeddings`.
    root, mark = tmp_path / "r", tmp_path / "PWNED"
    hostile_repo(root, mark)

    proc = subprocess.run([sys.executable, "-m", "prism_code.cli", "index", str(root),
                           "--no-embeddings", "--cache-dir", str(tmp_path / "cache"), "--json"],
                          capture_output=True, text=True, timeout=120)

    assert proc.returncode == 0, proc.stderr
    assert not mark.exists()
    assert '"files": 3' in proc.stdout  # a.py, kept.gen.py, untracked.py: git's listing


@needs_git
def test_no_program_named_by_the_repository_config_runs(tmp_path: Path) -> None:
    """Everything in .git/config and .git/hooks that can name a program, each leaving a mark."""
    root, marks = tmp_path / "r", tmp_path / "marks"
    marks.mkdir()
    hostile_repo(root, marks / "fsmonitor")
    write(root, ".gitattributes", "*.py filter=evil diff=evil\n")
    for key in ("filter.evil.clean", "filter.evil.smudge", "filter.evil.process",
                "diff.evil.textconv", "diff.external", "core.pager", "core.sshCommand",
                "core.askPass", "credential.helper", "core.editor"):
        git(root, "config", key, leaves_mark(marks / key))
    git(root, "config", "core.untrackedCache", "true")
    hooks = root / ".git" / "hooks"
    for hook in ("post-index-change", "pre-commit", "post-checkout", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\n{leaves_mark(marks / hook)}\n")
        (hooks / hook).chmod(0o755)
    # The same hook in a hooksPath the repository chose.
    git(root, "config", "core.hooksPath", str(hooks))
    os.utime(root / "a.py", ns=(0, 0))  # a stat that disagrees with the index: racy-git paths

    result = scan(root)

    assert sorted(p.name for p in marks.iterdir()) == []
    assert result.used_git and "kept.gen.py" in paths(result.files)


@needs_git
def test_git_found_through_a_relative_path_entry_is_not_the_workspaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # git runs in the workspace, so "." on PATH would name a `git` the workspace ships.
    root, mark = tmp_path / "r", tmp_path / "fake-git-ran"
    hostile_repo(root, tmp_path / "fsmonitor")
    fake = root / "git"
    fake.write_text(f"#!/bin/sh\n{leaves_mark(mark)}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([".", os.environ.get("PATH", "")]))

    result = scan(root)

    assert not mark.exists()
    assert result.used_git and "kept.gen.py" in paths(result.files)


@needs_git
def test_inherited_git_environment_does_not_redirect_the_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A server started from a shell or a hook inherits GIT_DIR and GIT_WORK_TREE.
    root = tmp_path / "r"
    hostile_repo(root, tmp_path / "fsmonitor")
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    write(other, "elsewhere.py")
    git(other, "add", "elsewhere.py")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))

    result = scan(root)

    assert result.used_git
    assert paths(result.files) == [".gitignore", "a.py", "kept.gen.py", "untracked.py"]


def test_a_path_from_git_that_leads_out_of_the_workspace_is_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "r"
    write(root, "a.py")
    write(tmp_path, "secret.py", SECRET)
    monkeypatch.setattr(git_files, "git_listing",
                        lambda _root: ({"a.py", "../secret.py", "./a.py"}, set()))

    result = scan(root)

    assert paths(result.files) == ["a.py"]
    assert {s.path: s.reason for s in result.skipped} == {
        "../secret.py": "not a path inside the workspace",
        "./a.py": "not a path inside the workspace"}


# --- an untrusted workspace never runs git ---------------------------------------------------


@needs_git
def test_untrusted_scan_never_invokes_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, mark = tmp_path / "r", tmp_path / "PWNED"
    hostile_repo(root, mark)
    calls: list[object] = []
    real_run = subprocess.run
    monkeypatch.setattr(git_files.subprocess, "run",
                        lambda *a, **k: calls.append(a) or real_run(*a, **k))

    result = scan(root, trusted=False)

    assert calls == [] and not mark.exists()
    assert not result.used_git
    # The walk's listing: .gitignore honoured, so the ignored-but-tracked file is left out.
    assert paths(result.files) == [".gitignore", "a.py", "untracked.py"]


@needs_git
def test_untrusted_index_and_command_line_flag(tmp_path: Path) -> None:
    root, mark = tmp_path / "r", tmp_path / "PWNED"
    hostile_repo(root, mark)

    index = RepoIndex(root, IndexConfig(trusted=False), cache_dir=tmp_path / "cache")
    try:
        index.update()
        assert sorted(index.lines) == ["a.py", "untracked.py"]
    finally:
        index.close()
    proc = subprocess.run([sys.executable, "-m", "prism_code.cli", "index", str(root),
                           "--untrusted", "--no-embeddings",
                           "--cache-dir", str(tmp_path / "cache2"), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"files": 2' in proc.stdout
    assert not mark.exists()
    proc = subprocess.run([sys.executable, "-m", "prism_code.cli", "notes", str(root),
                           "--untrusted", "--cache-dir", str(tmp_path / "cache3"), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert {row["path"] for row in json.loads(proc.stdout)} == {"a.py", "untracked.py"}
    assert not mark.exists()


def test_trust_comes_from_the_client_and_survives_a_settings_change() -> None:
    from prism_code.lsp.settings import parse_settings

    untrusted = parse_settings({"workspaceTrusted": False, "exclude": ["x/"]})
    assert untrusted.trusted is False and untrusted.warnings == ()
    assert "workspaceTrusted" not in untrusted.to_json()  # not a user setting
    # A client that says nothing (Neovim, Helix) gets git, hardened as above.
    assert parse_settings({}).trusted is True
    # A later change that leaves trust out (a pulled "prism" section) keeps the first word.
    assert parse_settings({"exclude": []}, base={"workspaceTrusted": False}).trusted is False


async def indexed_files(client: LanguageClient, expected: int, timeout: float = 120) -> int:
    """The server's file count once it is idle at `expected` files (or at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        status = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="prism.status", arguments=[]))
        settled = status["state"] == "idle" and status["files"] == expected
        if settled or time.monotonic() > deadline:
            return status["files"]
        await asyncio.sleep(0.2)


@needs_git
@pytest.mark.asyncio
async def test_server_runs_no_git_until_the_client_trusts_the_workspace(tmp_path: Path) -> None:
    # What VS Code sends: workspaceTrusted in the initializationOptions, then again in the
    # settings pushed when the user grants trust.
    root, mark = tmp_path / "r", tmp_path / "PWNED"
    hostile_repo(root, mark)
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "prism_code.lsp"],
        server_env={**os.environ, "PYTHONPATH": str(REPO),
                    "PRISM_CODE_CACHE_DIR": str(tmp_path / "default-cache")})
    client = await config.start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options={"cacheDir": str(tmp_path / "cache"), "workspaceTrusted": False,
                                    "notes": {"enabled": False},
                                    "completion": {"enabled": False}}))
        # The walk's listing: a.py and untracked.py; git's adds the tracked kept.gen.py.
        assert await indexed_files(client, 2) == 2
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"workspaceTrusted": True}))
        assert await indexed_files(client, 3) == 3
        assert not mark.exists()
    finally:
        await client.shutdown_session()
        await client.stop()


# --- files swapped between the scan and the read (bug 5) -------------------------------------


@pytest.fixture()
def swap_after_scan(monkeypatch: pytest.MonkeyPatch) -> Iterator[list]:
    """Swaps queued here happen inside RepoIndex.update, right after its real scan returns."""
    swaps: list = []
    real_scan = index_module.scan

    def scan_then_swap(*args, **kwargs):
        result = real_scan(*args, **kwargs)
        while swaps:
            swaps.pop(0)()
        return result

    monkeypatch.setattr(index_module, "scan", scan_then_swap)
    yield swaps


def replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def replace_with_symlink(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


@needs_fifo
@pytest.mark.timeout(20)
def test_file_swapped_for_a_fifo_after_the_scan_does_not_hang_indexing(
        tmp_path: Path, swap_after_scan: list, opener: str) -> None:
    root = tmp_path / "r"
    write(root, "a.py", "def a():\n    return 1\n")
    write(root, "b.py", "def b():\n    return 2\n")
    swap_after_scan.append(lambda: replace_with_fifo(root / "a.py"))

    assert sorted(indexed_text(root, tmp_path / "cache")) == ["b.py"]


@needs_fifo
@pytest.mark.timeout(20)
def test_read_source_of_a_fifo_returns_none(tmp_path: Path, opener: str) -> None:
    write(tmp_path, "a.py")
    files = scan(tmp_path).files
    replace_with_fifo(tmp_path / "a.py")

    assert read_source(tmp_path, "a.py") is None
    diff = diff_scan({}, files, tmp_path)
    assert diff.unreadable == ["a.py"] and diff.added == []


def test_file_swapped_for_a_symlink_outside_is_never_read(
        tmp_path: Path, swap_after_scan: list, opener: str) -> None:
    root = tmp_path / "r"
    write(root, "a.py", "def a():\n    return 1\n")
    write(root, "b.py", "def b():\n    return 2\n")
    secret = write(tmp_path, "outside/secret.py", SECRET)
    swap_after_scan.append(lambda: replace_with_symlink(root / "a.py", secret))

    lines = indexed_text(root, tmp_path / "cache")
    assert sorted(lines) == ["b.py"]
    assert all("do-not-index-me" not in line for ls in lines.values() for line in ls)
    assert read_source(root, "a.py") is None


def test_parent_directory_swapped_for_a_symlink_outside_is_never_read(
        tmp_path: Path, swap_after_scan: list, opener: str) -> None:
    root = tmp_path / "r"
    write(root, "pkg/a.py", "def a():\n    return 1\n")
    write(root, "b.py", "def b():\n    return 2\n")
    outside = tmp_path / "outside"
    write(outside, "a.py", SECRET)  # the same name, where the swapped directory leads

    def swap() -> None:
        (root / "pkg").rename(tmp_path / "pkg-moved")
        (root / "pkg").symlink_to(outside, target_is_directory=True)

    swap_after_scan.append(swap)
    assert sorted(indexed_text(root, tmp_path / "cache")) == ["b.py"]
    assert read_source(root, "pkg/a.py") is None


def test_file_replaced_after_the_scan_keeps_what_was_indexed_until_the_next_update(
        tmp_path: Path, swap_after_scan: list) -> None:
    # An editor saving by rename, between the scan and the read: the update reads no file
    # the scan did not see, keeps the indexed text, and the next update reads the new file.
    root = tmp_path / "r"
    target = write(root, "a.py", "def old():\n    return 1\n")
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    try:
        index.update()
        st = target.stat()
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # scan re-reads it

        def save_by_rename() -> None:
            write(root, "a.py.tmp", "def new():\n    return 2\n").replace(target)

        swap_after_scan.append(save_by_rename)
        index.update()
        assert "def old():" in index.lines["a.py"]
        index.update()
        assert "def new():" in index.lines["a.py"]
    finally:
        index.close()


def test_diff_scan_reports_a_replaced_file_without_reading_it(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "a = 1\n")
    files = scan(tmp_path).files
    stored = {"a.py": FileState(1, 1, content_hash(b"a = 1\n"))}  # stale stat: forces a read
    write(tmp_path, "a.tmp", SECRET).replace(tmp_path / "a.py")

    diff = diff_scan(stored, files, tmp_path)

    assert diff.replaced == ["a.py"]
    assert diff.removed == [] and diff.changed == [] and diff.unreadable == []


@needs_fifo
@pytest.mark.timeout(20)
def test_a_fifo_gitignore_does_not_hang_the_walk(tmp_path: Path) -> None:
    write(tmp_path, "a.py")
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / ".git" / "info").mkdir(parents=True)
    os.mkfifo(tmp_path / ".git" / "info" / "exclude")

    result = scan(tmp_path, trusted=False)

    assert paths(result.files) == ["a.py"]


def test_a_gitignore_symlinked_outside_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "r"
    write(root, "a.py")
    write(root, "b.py")
    (root / ".gitignore").symlink_to(write(tmp_path, "outside-ignore", "a.py\n"))

    result = scan(root, trusted=False)

    assert paths(result.files) == ["a.py", "b.py"]
