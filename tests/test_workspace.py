"""Workspace scan and change detection, on real files and (when installed) real git."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from prism_code import git_files, safe_read, workspace
from prism_code.workspace import (
    FileState,
    ScanResult,
    WorkspaceError,
    content_hash,
    diff_scan,
    read_source,
    resolve_workspace,
    scan,
)

HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git is not installed")


@pytest.fixture(autouse=True)
def _isolated_git(isolated_git: None) -> None:
    """Every test here runs git as a fresh user would (fixture in conftest.py)."""


@pytest.fixture(params=["git", "walk"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test in both listing modes; "walk" behaves as if git were not installed."""
    if request.param == "git":
        if not HAS_GIT:
            pytest.skip("git is not installed")
    else:
        monkeypatch.setattr(git_files, "run_git", lambda root, args: None)
    return request.param


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def init_repo(root: Path) -> None:
    git(root, "init", "-q")


def write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def prepare(root: Path, mode: str) -> None:
    """Make `root` a git repository in git mode (files stay untracked unless added)."""
    if mode == "git":
        init_repo(root)


def paths(result: ScanResult) -> list[str]:
    return [f.path for f in result.files]


def reasons(result: ScanResult) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


# --- listing ------------------------------------------------------------------------------


@needs_git
def test_git_mode_lists_tracked_and_untracked_but_not_ignored(tmp_path: Path) -> None:
    init_repo(tmp_path)
    write(tmp_path, ".gitignore", "*.log\nout/\n")
    write(tmp_path, "tracked.py")
    write(tmp_path, "gone.py")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "init")
    write(tmp_path, "new.py")
    write(tmp_path, "debug.log")
    write(tmp_path, "out/gen.py")
    (tmp_path / "gone.py").unlink()  # tracked but deleted: silently absent

    result = scan(tmp_path)

    assert result.used_git
    assert paths(result) == [".gitignore", "new.py", "tracked.py"]
    assert result.skipped == []
    f = result.files[2]
    st = (tmp_path / "tracked.py").stat()
    assert (f.size, f.mtime_ns) == (st.st_size, st.st_mtime_ns)


@needs_git
def test_git_mode_from_a_subdirectory_gives_root_relative_paths(tmp_path: Path) -> None:
    init_repo(tmp_path)
    write(tmp_path, "top.py")
    write(tmp_path, "pkg/a.py")
    write(tmp_path, "pkg/sub/b.py")

    result = scan(tmp_path / "pkg")

    assert result.used_git
    assert paths(result) == ["a.py", "sub/b.py"]


@needs_git
def test_untracked_nested_repository_is_reported_not_indexed(tmp_path: Path) -> None:
    init_repo(tmp_path)
    write(tmp_path, "a.py")
    write(tmp_path, "nested/x.py")
    init_repo(tmp_path / "nested")

    result = scan(tmp_path)

    assert paths(result) == ["a.py"]
    assert reasons(result) == {"nested": "nested git repository (not indexed)"}


def test_walk_honours_nested_gitignore_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(git_files, "run_git", lambda root, args: None)
    write(tmp_path, ".gitignore", "*.log\nsecret/\n/rootonly.py\n")
    write(tmp_path, "keep.py")
    write(tmp_path, "rootonly.py")
    write(tmp_path, "app.log")
    write(tmp_path, "secret/s.py")
    write(tmp_path, "pkg/rootonly.py")  # "/rootonly.py" is anchored to the root directory
    write(tmp_path, "pkg/.gitignore", "!important.log\ngen_*.py\n")
    write(tmp_path, "pkg/important.log")
    write(tmp_path, "pkg/other.log")
    write(tmp_path, "pkg/gen_models.py")
    write(tmp_path, "pkg/deep/gen_x.py")  # nested .gitignore patterns apply below it too
    write(tmp_path, "lib/gen_models.py")  # ...but not to its siblings
    write(tmp_path, ".git/config", "[core]\n")  # a .git directory is never listed

    result = scan(tmp_path)

    assert not result.used_git
    assert paths(result) == [
        ".gitignore",
        "keep.py",
        "lib/gen_models.py",
        "pkg/.gitignore",
        "pkg/important.log",
        "pkg/rootonly.py",
    ]
    assert result.skipped == []


def test_walk_is_used_when_git_is_not_installed(tmp_path: Path, monkeypatch) -> None:
    write(tmp_path, "a.py")
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-bin"))

    result = scan(tmp_path)

    assert not result.used_git
    assert paths(result) == ["a.py"]


def test_git_timeout_falls_back_to_walk(tmp_path: Path, monkeypatch) -> None:
    write(tmp_path, "a.py")

    def hang(*args, **kwargs):
        raise subprocess.TimeoutExpired(cmd=args[0], timeout=kwargs.get("timeout"))

    monkeypatch.setattr(git_files.subprocess, "run", hang)

    result = scan(tmp_path)

    assert not result.used_git
    assert paths(result) == ["a.py"]


@needs_git
def test_workspace_ignored_by_enclosing_repo_is_walked(tmp_path: Path) -> None:
    # e.g. a dotfiles repository in $HOME with "*" in its .gitignore
    init_repo(tmp_path)
    write(tmp_path, ".gitignore", "*\n")
    write(tmp_path, "project/main.py")

    result = scan(tmp_path / "project")

    assert not result.used_git
    assert paths(result) == ["main.py"]


@needs_git
def test_git_runs_only_where_it_can_find_a_repository(tmp_path: Path, monkeypatch) -> None:
    # A git on PATH that leaves a mark, then is the real one.
    real = shutil.which("git")
    assert real is not None
    bin_dir, mark = tmp_path / "bin", tmp_path / "git-ran"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\necho ran >> "{mark}"\nexec "{real}" "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{Path(real).parent}")
    project = tmp_path / "project"
    write(project, ".gitignore", "gen.py\n")
    write(project, "main.py")
    write(project, "gen.py")

    walked = scan(project)

    assert not walked.used_git and not mark.exists()
    assert paths(walked) == [".gitignore", "main.py"]
    init_repo(project)  # between two scans: the next one lists by git
    write(project, "pkg/late.py")
    listed = scan(project / "pkg")

    assert listed.used_git and mark.exists()
    assert paths(listed) == ["late.py"]


def test_user_excludes(tmp_path: Path, mode: str) -> None:
    prepare(tmp_path, mode)
    write(tmp_path, "src/a.py")
    write(tmp_path, "src/a_test.py")
    write(tmp_path, "docs/conf.py")
    write(tmp_path, "docs/more/x.py")

    result = scan(tmp_path, exclude=["*_test.py", "docs/"])

    assert paths(result) == ["src/a.py"]
    # An excluded directory is reported once, not once per file inside it.
    assert reasons(result) == {
        "src/a_test.py": "excluded by user pattern",
        "docs": "excluded by user pattern",
    }


def test_is_source_filters_silently(tmp_path: Path, mode: str) -> None:
    prepare(tmp_path, mode)
    write(tmp_path, "a.py")
    write(tmp_path, "README.md", "hello\n")
    write(tmp_path, "logo.png", b"\x89PNG\0\0")

    result = scan(tmp_path, is_source=lambda p: p.endswith(".py"))

    assert paths(result) == ["a.py"]
    assert result.skipped == []


# --- skip rules ---------------------------------------------------------------------------


def test_binary_minified_and_vendored_are_skipped(tmp_path: Path, mode: str) -> None:
    prepare(tmp_path, mode)
    write(tmp_path, "ok.py", "def f():\n    return 1\n" * 200)  # > 2 KiB, normal lines
    write(tmp_path, "blob.dat", b"abc\0def")
    write(tmp_path, "lib/jquery.min.js", "var a=1;\n")
    write(tmp_path, "bundle.js", "var a=1;" * 1000)  # one 8000-byte line
    write(tmp_path, "wide.js", ("x" * 350 + "\n") * 20)  # average line 351 bytes
    write(tmp_path, "small_wide.js", "x" * 1500)  # too small to judge
    write(tmp_path, "node_modules/left-pad/index.js")
    write(tmp_path, "node_modules/left-pad/lib.js")
    write(tmp_path, "pkg/__pycache__/m.py")

    result = scan(tmp_path)

    assert paths(result) == ["ok.py", "small_wide.js"]
    got = reasons(result)
    assert got["blob.dat"] == "binary"
    assert got["lib/jquery.min.js"] == "minified"
    assert got["bundle.js"].startswith("minified (a line of")
    assert got["wide.js"].startswith("minified (average line")
    assert got["node_modules"] == "vendored"
    assert got["pkg/__pycache__"] == "vendored"
    assert not any(p.startswith("node_modules/") for p in got)


def test_oversized_files_are_skipped(tmp_path: Path, mode: str) -> None:
    prepare(tmp_path, mode)
    write(tmp_path, "ok.py", "def f():\n    return 1\n" * 100)  # 2200 bytes, > 2 KiB
    write(tmp_path, "huge.py", b"#" * ((1 << 20) + 400_000))
    write(tmp_path, "medium.py", "x = 1\n" * 500)

    result = scan(tmp_path)

    assert paths(result) == ["medium.py", "ok.py"]
    assert reasons(result) == {"huge.py": "too large (1.4 MiB > 1.0 MiB)"}
    small = scan(tmp_path, max_file_bytes=2500)
    assert paths(small) == ["ok.py"]
    assert reasons(small)["medium.py"] == "too large (2.9 KiB > 2.4 KiB)"


def test_invalid_utf8_text_is_listed(tmp_path: Path, mode: str) -> None:
    prepare(tmp_path, mode)
    write(tmp_path, "latin1.py", "# caf\xe9\nx = 1\n".encode("latin-1"))

    result = scan(tmp_path)

    assert paths(result) == ["latin1.py"]


def test_fifo_is_not_opened(tmp_path: Path, monkeypatch) -> None:
    # Only the walk can meet one: git does not list FIFOs.
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    monkeypatch.setattr(git_files, "run_git", lambda root, args: None)
    write(tmp_path, "a.py")
    os.mkfifo(tmp_path / "pipe.py")  # reading it would block forever

    result = scan(tmp_path)

    assert paths(result) == ["a.py"]
    assert reasons(result) == {"pipe.py": "not a regular file"}


# --- symlinks, permissions, races ---------------------------------------------------------


def test_directory_symlink_loop_terminates_without_duplicates(tmp_path: Path, mode: str) -> None:
    prepare(tmp_path, mode)
    write(tmp_path, "a/x.py")
    os.symlink("..", tmp_path / "a" / "loop")  # a/loop/a/loop/... forever if followed
    os.symlink("a", tmp_path / "alias")

    result = scan(tmp_path)

    assert paths(result) == ["a/x.py"]
    got = reasons(result)
    assert got["a/loop"].startswith("symlink to a directory inside the workspace")
    assert got["alias"].startswith("symlink to a directory inside the workspace")


def test_symlinks_outside_the_workspace_are_skipped(tmp_path: Path, mode: str) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.py")
    root = tmp_path / "ws"
    root.mkdir()
    prepare(root, mode)
    write(root, "a.py")
    os.symlink(outside / "secret.py", root / "linked.py")
    os.symlink(outside, root / "linked_dir")
    os.symlink(root / "a.py", root / "same.py")
    os.symlink(root / "missing.py", root / "dangling.py")

    result = scan(root)

    assert paths(result) == ["a.py"]
    assert reasons(result) == {
        "linked.py": "symlink outside workspace",
        "linked_dir": "symlink outside workspace",
        "same.py": "symlink to a file inside the workspace (indexed at its real path)",
        "dangling.py": "broken symlink",
    }


def test_unreadable_directory_is_skipped_with_reason(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(git_files, "run_git", lambda root, args: None)
    write(tmp_path, "a.py")
    write(tmp_path, "locked/b.py")
    write(tmp_path, "locked/inner/c.py")
    locked = tmp_path / "locked"
    real_scandir = os.scandir

    def scandir(path=".", *args, **kwargs):
        # chmod 000 does not stop root, so deny the listing the way the kernel would.
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)

    result = scan(tmp_path)

    assert paths(result) == ["a.py"]
    assert reasons(result) == {"locked": "unreadable: PermissionError: Permission denied"}


def test_unreadable_directory_with_real_permissions(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(git_files, "run_git", lambda root, args: None)
    write(tmp_path, "a.py")
    write(tmp_path, "locked/b.py")
    locked = tmp_path / "locked"
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("permissions are not enforced for this user (root?)")
        result = scan(tmp_path)
    finally:
        locked.chmod(0o755)

    assert paths(result) == ["a.py"]
    assert reasons(result)["locked"].startswith("unreadable: PermissionError")


def test_file_vanishing_between_listing_and_stat_walk(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(git_files, "run_git", lambda root, args: None)
    write(tmp_path, "a.py")
    write(tmp_path, "b.py")
    real_walk = workspace._Scanner._walk

    def walk_then_delete(self):
        listed = list(real_walk(self))
        (tmp_path / "b.py").unlink()
        yield from listed

    monkeypatch.setattr(workspace._Scanner, "_walk", walk_then_delete)

    result = scan(tmp_path)

    assert paths(result) == ["a.py"]
    assert reasons(result) == {"b.py": "vanished"}


@needs_git
def test_file_vanishing_between_listing_and_stat_git(tmp_path: Path, monkeypatch) -> None:
    init_repo(tmp_path)
    write(tmp_path, "a.py")
    write(tmp_path, "tracked.py")
    git(tmp_path, "add", "tracked.py")
    write(tmp_path, "untracked.py")
    real_listing = git_files.git_listing

    def listing_then_delete(root):
        listed = real_listing(root)
        (tmp_path / "tracked.py").unlink()
        (tmp_path / "untracked.py").unlink()
        return listed

    monkeypatch.setattr(git_files, "git_listing", listing_then_delete)

    result = scan(tmp_path)

    assert paths(result) == ["a.py"]
    # A tracked file missing from disk is an ordinary deletion; the untracked one was seen
    # by git an instant earlier.
    assert reasons(result) == {"untracked.py": "vanished"}


def test_empty_workspace(tmp_path: Path, mode: str) -> None:
    prepare(tmp_path, mode)

    result = scan(tmp_path)

    assert result.files == [] and result.skipped == []


# --- workspace path -----------------------------------------------------------------------


def test_resolve_workspace(tmp_path: Path) -> None:
    file = write(tmp_path, "f.py")
    assert resolve_workspace(tmp_path) == tmp_path.resolve()
    with pytest.raises(WorkspaceError, match="not a directory"):
        resolve_workspace(file)
    with pytest.raises(WorkspaceError, match="does not exist"):
        resolve_workspace(tmp_path / "nope")
    with pytest.raises(WorkspaceError, match="not a directory"):
        scan(file)
    assert issubclass(WorkspaceError, ValueError)


# --- hashing and change detection ---------------------------------------------------------


def test_content_hash_and_read_source(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "x = 1\n")
    assert content_hash(b"x = 1\n") == content_hash(b"x = 1\n")
    assert content_hash(b"x = 1\n") != content_hash(b"x = 2\n")
    assert len(content_hash(b"")) == 32
    assert read_source(tmp_path, "a.py") == b"x = 1\n"
    assert read_source(tmp_path, "missing.py") is None


def test_diff_scan(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(git_files, "run_git", lambda root, args: None)
    write(tmp_path, "same.py", "a = 1\n")
    write(tmp_path, "touched.py", "b = 1\n")
    write(tmp_path, "edited.py", "c = 1\n")
    write(tmp_path, "deleted.py", "d = 1\n")
    first = scan(tmp_path)
    stored = {
        f.path: FileState(f.size, f.mtime_ns, content_hash((tmp_path / f.path).read_bytes()))
        for f in first.files
    }

    touched = tmp_path / "touched.py"
    st = touched.stat()
    os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    edited = tmp_path / "edited.py"
    st = edited.stat()
    edited.write_text("c = 2\n")  # same size: only the hash can tell
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    (tmp_path / "deleted.py").unlink()
    write(tmp_path, "new.py", "e = 1\n")

    files = scan(tmp_path).files
    reads: list[str] = []
    real_read = safe_read.read_inside

    def counting_read(root, path, identity=None, limit=-1):
        reads.append(path)
        return real_read(root, path, identity, limit)

    monkeypatch.setattr(safe_read, "read_inside", counting_read)

    diff = diff_scan(stored, files, tmp_path)

    assert sorted(reads) == ["edited.py", "new.py", "touched.py"]  # same.py never read
    assert diff.unchanged == 1
    assert [f.path for f in diff.added] == ["new.py"]
    assert diff.added[0].data == b"e = 1\n"
    assert diff.added[0].content_hash == content_hash(b"e = 1\n")
    assert [f.path for f in diff.changed] == ["edited.py"]
    assert diff.changed[0].data == b"c = 2\n"
    assert diff.changed[0].state.mtime_ns == edited.stat().st_mtime_ns
    assert list(diff.touched) == ["touched.py"]
    assert diff.touched["touched.py"] == FileState(
        touched.stat().st_size, touched.stat().st_mtime_ns, stored["touched.py"].content_hash
    )
    assert diff.removed == ["deleted.py"]
    assert diff.unreadable == []


def test_diff_scan_file_unreadable_after_scan(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(git_files, "run_git", lambda root, args: None)
    write(tmp_path, "a.py", "a = 1\n")
    write(tmp_path, "b.py", "b = 1\n")
    files = scan(tmp_path).files
    old = FileState(1, 1, "0" * 32)  # stale stat: forces a read
    (tmp_path / "a.py").unlink()
    (tmp_path / "b.py").unlink()

    diff = diff_scan({"a.py": old}, files, tmp_path)

    # A previously indexed file that cannot be read is dropped rather than served stale.
    assert diff.unreadable == ["a.py", "b.py"]
    assert diff.removed == ["a.py"]
    assert diff.added == [] and diff.changed == []


def test_scan_does_not_reopen_known_unchanged_files(tmp_path, monkeypatch):
    """An edit-time rescan opens only files whose size or mtime moved."""
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    first = scan(tmp_path)
    known = {f.path: FileState(f.size, f.mtime_ns, "h") for f in first.files}
    (tmp_path / "b.py").write_text("y = 22\n")
    opened = []
    real = workspace._Scanner._content_reason
    monkeypatch.setattr(workspace._Scanner, "_content_reason",
                        lambda self, file: opened.append(file.path) or real(self, file))
    again = scan(tmp_path, known=known)
    assert [f.path for f in again.files] == ["a.py", "b.py"]
    assert opened == ["b.py"]
