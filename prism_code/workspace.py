"""Which files of a workspace to index, and what changed since the last index.

Candidate files come from git when the workspace is inside a work tree (tracked plus
untracked-but-not-ignored files, exactly what the user sees as "the project"), else from a
directory walk that honours `.gitignore` files at every level. Both sources then go through
the same checks, and every file that looked like source but was left out is reported in
`ScanResult.skipped` with a reason, so "why is X not indexed?" has an answer.

Skip rules (all applied to workspace-relative, "/"-separated paths):

* user excludes: gitignore-style patterns, the same syntax users already know;
* vendored directories: any path component in `VENDORED_DIRS` (third-party or generated
  trees that would drown the project's own code in retrieval results);
* oversized: more than `max_file_bytes`;
* over the repository's limit: past the first `max_files` files that pass the other checks,
  in listing order (a directory of generated files must not run the machine out of memory);
* binary: a NUL byte in the first 8 KiB (git's heuristic);
* minified: a `.min.js`-style name, or, for text files over 2 KiB, an average line over 300
  bytes or any line over 5000 bytes within the first 64 KiB;
* symlinks: never followed into directories (that is how walks loop); a symlink whose target
  lies outside the workspace is skipped, and one whose target lies inside is skipped too,
  because the target is indexed at its real path and indexing it twice duplicates symbols.

A file is read at most up to the size its scan saw, so one that grows while it is indexed
(a log, a generator still writing) is read once and bounded; its new mtime makes the next
scan read it again.

Change detection is mtime-then-hash: an unchanged (size, mtime_ns) pair is trusted without
reading the file, anything else is read and hashed, so a `touch` costs a read but never a
re-parse.

A workspace is untrusted input, and so is everything in it, `.git/config` included:

* an untrusted workspace (`scan(trusted=False)`) never runs git; the walk lists its files;
* a trusted one runs git hardened against the repository's own configuration (see
  prism_code/git_files.py), since `git ls-files` would otherwise run `core.fsmonitor` from
  `.git/config`;
* every file is read through prism_code/safe_read.py, which refuses symlinks anywhere below
  the root, never blocks on a FIFO, and reads only the regular file the scan saw (same device and
  inode): between scan and read any file may be swapped for something else.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from prism_code import git_files, safe_read
from prism_code.config import DEFAULT_MAX_FILE_BYTES
from prism_code.safe_read import ReplacedFile

logger = logging.getLogger(__name__)

# Directory names whose contents are third-party, generated or tool caches. Matched against
# every path component, case-sensitively. `target` (Rust/Maven output) is deliberately
# absent: it is a common name for real source packages too.
VENDORED_DIRS = frozenset(
    {
        "node_modules",
        "bower_components",
        "vendor",
        "third_party",
        "third-party",
        "site-packages",
        ".venv",
        "venv",
        "dist",
        "build",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "Pods",
    }
)

# Version-control metadata: never content, and not worth a skip record either.
VCS_DIRS = frozenset({".git", ".hg", ".svn"})

MINIFIED_SUFFIXES = (".min.js", ".min.mjs", ".min.cjs", ".min.css", "-min.js")

BINARY_SNIFF_BYTES = 8 * 1024
MINIFIED_SNIFF_BYTES = 64 * 1024
MINIFIED_MIN_SIZE = 2 * 1024
MINIFIED_MAX_AVG_LINE = 300
MINIFIED_MAX_LINE = 5000


class WorkspaceError(ValueError):
    """The workspace path cannot be used."""


@dataclass(frozen=True)
class ScannedFile:
    path: str  # workspace-relative, "/" separated
    size: int
    mtime_ns: int
    # (st_dev, st_ino) the scan saw; a read accepts only this file. None: not from disk.
    identity: tuple[int, int] | None = None


@dataclass(frozen=True)
class Skipped:
    path: str  # a file or, for vendored/excluded/unreadable directories, the directory
    reason: str


@dataclass
class ScanResult:
    files: list[ScannedFile] = field(default_factory=list)  # sorted by path
    skipped: list[Skipped] = field(default_factory=list)  # sorted by path
    used_git: bool = False  # False when the directory walk was used


@dataclass(frozen=True)
class FileState:
    """What the index remembers about a file to detect changes on the next scan."""

    size: int
    mtime_ns: int
    content_hash: str


@dataclass(frozen=True)
class LoadedFile:
    """A file read during change detection, handed over so the caller does not read twice."""

    file: ScannedFile
    data: bytes
    content_hash: str

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def state(self) -> FileState:
        # Size and mtime come from the stat taken *before* the read: if the file was written
        # in between, the next scan sees a newer mtime and looks again.
        return FileState(self.file.size, self.file.mtime_ns, self.content_hash)


@dataclass
class ScanDiff:
    added: list[LoadedFile] = field(default_factory=list)
    changed: list[LoadedFile] = field(default_factory=list)
    touched: dict[str, FileState] = field(default_factory=dict)  # same content, new metadata
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    unreadable: list[str] = field(default_factory=list)  # listed by the scan, then unreadable
    # Listed by the scan, then replaced by another regular file before the read (an editor's
    # save by rename): what the index holds stays, and the next scan reads the new file.
    replaced: list[str] = field(default_factory=list)


def resolve_workspace(path: str | os.PathLike[str]) -> Path:
    """The absolute, symlink-free workspace directory, or a WorkspaceError saying why not."""
    given = Path(path).expanduser()
    try:
        resolved = given.resolve(strict=True)
    except FileNotFoundError:
        raise WorkspaceError(f"workspace path does not exist: {given}") from None
    except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop on older Pythons
        raise WorkspaceError(f"workspace path cannot be resolved: {given} ({exc})") from None
    if not resolved.is_dir():
        raise WorkspaceError(f"workspace path is not a directory: {given}")
    return resolved


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_source(root: Path, path: str, identity: tuple[int, int] | None = None) -> bytes | None:
    """The bytes of the regular file `path` inside `root`, or None (logged) if it vanished,
    cannot be read, or is not the file the scan saw (`identity`, when given)."""
    try:
        return safe_read.read_inside(root, path, identity)
    except OSError as exc:
        _log_unreadable(path, exc)
        return None


def scan(
    root: Path,
    exclude: Sequence[str] = (),
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    is_source: Callable[[str], bool] | None = None,
    known: Mapping[str, FileState] | None = None,
    trusted: bool = True,
    max_files: int | None = None,
) -> ScanResult:
    """List the workspace files worth indexing; see the module docstring for the rules.

    Files in `known` (accepted by an earlier scan) whose size and mtime did not move are
    not opened again: an edit-time update then reads only what changed. An untrusted
    workspace is never handed to git: its files are listed by the directory walk.
    """
    scanner = _Scanner(resolve_workspace(root), exclude, max_file_bytes, is_source, known or {},
                       trusted, max_files)
    return scanner.run()


def diff_scan(
    previous: Mapping[str, FileState], scanned: list[ScannedFile], root: Path
) -> ScanDiff:
    """Compare a fresh scan with the stored states, reading only files whose stat moved."""
    diff = ScanDiff()
    seen: set[str] = set()
    for file in scanned:
        seen.add(file.path)
        old = previous.get(file.path)
        if old is not None and old.size == file.size and old.mtime_ns == file.mtime_ns:
            diff.unchanged += 1
            continue
        try:
            # Bounded by the scanned size: a file still being written is not chased.
            data = safe_read.read_inside(root, file.path, file.identity, limit=file.size)
        except OSError as exc:
            _log_unreadable(file.path, exc)
            (diff.replaced if isinstance(exc, ReplacedFile) else diff.unreadable).append(file.path)
            continue
        loaded = LoadedFile(file, data, content_hash(data))
        if old is None:
            diff.added.append(loaded)
        elif old.content_hash == loaded.content_hash:
            diff.touched[file.path] = loaded.state
        else:
            diff.changed.append(loaded)
    # A previously indexed file we can no longer read must not keep serving stale content.
    gone = (set(previous) - seen) | {p for p in diff.unreadable if p in previous}
    diff.removed = sorted(gone)
    return diff


# --- scanning ---------------------------------------------------------------------------

# One directory's .gitignore: the directory (workspace-relative, "" for the root) and its
# patterns, which match paths relative to that directory.
_IgnoreLayer = tuple[str, tuple[pathspec.Pattern, ...]]


class _Scanner:
    def __init__(
        self,
        root: Path,
        exclude: Sequence[str],
        max_file_bytes: int,
        is_source: Callable[[str], bool] | None,
        known: Mapping[str, FileState],
        trusted: bool,
        max_files: int | None = None,
    ) -> None:
        self.root = root
        self.max_files = max_files
        self.known = known
        self.trusted = trusted
        self.real_root = Path(os.path.realpath(root))
        self.max_file_bytes = max_file_bytes
        self.is_source = is_source or (lambda _path: True)
        self.exclude = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None
        self.files: list[ScannedFile] = []
        self.skipped: list[Skipped] = []
        self._dir_blocked: dict[str, bool] = {}
        self._under_blocked: dict[str, bool] = {}  # a directory -> it or a parent is blocked
        # Files are stat-ed by a string path: a pathlib join per file cost an edit-time scan of
        # 600 files about a third of its time (issue #29).
        self._root_prefix = os.path.join(str(root), "")

    def run(self) -> ScanResult:
        if not self.trusted:
            logger.info("%s is not trusted: listing its files without git", self.root)
        listing = git_files.git_listing(self.root) if self.trusted else None
        used_git = listing is not None and bool(listing[0] or listing[1])
        if listing is not None and not used_git:
            # Typically the workspace is ignored by an enclosing repository (a dotfiles repo
            # in $HOME ignoring "*"); the user still asked for this directory.
            logger.info("git lists no files under %s; walking the directory instead", self.root)
        if used_git:
            assert listing is not None
            tracked, untracked = listing
            for rel in sorted(tracked | untracked):
                self._consider(rel, tracked=rel in tracked)
        else:
            for rel in self._walk():
                # Made of directory entries' names: a plain path by construction.
                self._consider(rel, tracked=False, plain=True)
        self.files.sort(key=lambda f: f.path)
        self.skipped.sort(key=lambda s: (s.path, s.reason))
        self._log_summary(used_git)
        return ScanResult(self.files, self.skipped, used_git)

    def _skip(self, path: str, reason: str) -> None:
        self.skipped.append(Skipped(path, reason))
        # Over the file limit: one line in the summary, not one per file.
        level = logging.INFO if reason.startswith(("unreadable", "too large")) else logging.DEBUG
        logger.log(level, "skipping %s: %s", path, reason)

    def _log_summary(self, used_git: bool) -> None:
        kinds = Counter(s.reason.split(" (")[0].split(":")[0] for s in self.skipped)
        logger.info(
            "scanned %s via %s: %d files, %d skipped%s",
            self.root,
            "git" if used_git else "directory walk",
            len(self.files),
            len(self.skipped),
            f" ({', '.join(f'{k}: {n}' for k, n in sorted(kinds.items()))})" if kinds else "",
        )

    # -- per-file checks, shared by both listing modes --

    def _consider(self, rel: str, tracked: bool, plain: bool = False) -> None:
        if rel.endswith("/"):
            # git lists an untracked nested repository as a directory entry.
            if self.is_source(rel.rstrip("/")):
                self._skip(rel.rstrip("/"), "nested git repository (not indexed)")
            return
        if not plain and not safe_read.is_plain(rel):
            # Only git's output can hold one; a path must not lead out of the workspace.
            self._skip(rel, "not a path inside the workspace")
            return
        if not self.is_source(rel) or self._in_blocked_dir(rel):
            return
        if self.exclude is not None and self.exclude.match_file(rel):
            self._skip(rel, "excluded by user pattern")
            return
        if self.max_files is not None and len(self.files) >= self.max_files:
            # Not even opened: past the limit, each file would cost a stat and a read.
            self._skip(rel, f"over the repository's limit of {self.max_files} files")
            return
        scanned = self._check_file(rel, tracked)
        if scanned is not None:
            self.files.append(scanned)

    def _in_blocked_dir(self, rel: str) -> bool:
        directory = rel.rpartition("/")[0]
        known = self._under_blocked.get(directory)
        if known is None:
            parts = directory.split("/") if directory else []
            known = self._under_blocked[directory] = any(
                self._blocked("/".join(parts[: i + 1])) for i in range(len(parts)))
        return known

    def _blocked(self, rel_dir: str) -> bool:
        """Whether a directory is vendored or user-excluded; recorded once per directory."""
        cached = self._dir_blocked.get(rel_dir)
        if cached is not None:
            return cached
        reason = None
        if rel_dir.rsplit("/", 1)[-1] in VENDORED_DIRS:
            reason = "vendored"
        elif self.exclude is not None and self.exclude.match_file(rel_dir + "/"):
            reason = "excluded by user pattern"
        if reason is not None:
            self._skip(rel_dir, reason)
        self._dir_blocked[rel_dir] = reason is not None
        return reason is not None

    def _check_file(self, rel: str, tracked: bool) -> ScannedFile | None:
        path = self._root_prefix + rel
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            # A tracked file deleted from the work tree is just not there; anything else was
            # seen a moment ago and disappeared under us.
            if not tracked:
                self._skip(rel, "vanished")
            return None
        except OSError as exc:
            self._skip(rel, _unreadable(exc))
            return None
        if not stat.S_ISREG(st.st_mode):
            # The three kinds are exclusive: a regular file, the common case, is one test.
            if stat.S_ISLNK(st.st_mode):
                self._skip(rel, self._symlink_reason(Path(path)))
            elif stat.S_ISDIR(st.st_mode):
                self._skip(rel, "git submodule (not indexed)")
            else:
                # FIFOs and devices: opening one could block forever.
                self._skip(rel, "not a regular file")
            return None
        if st.st_size > self.max_file_bytes:
            self._skip(rel, f"too large ({_human(st.st_size)} > {_human(self.max_file_bytes)})")
            return None
        # On the whole path, not its last part: no suffix holds a "/", so that is the same test.
        if rel.lower().endswith(MINIFIED_SUFFIXES):
            self._skip(rel, "minified")
            return None
        scanned = ScannedFile(rel, st.st_size, st.st_mtime_ns, (st.st_dev, st.st_ino))
        seen = self.known.get(rel)
        if seen is not None and seen.size == st.st_size and seen.mtime_ns == st.st_mtime_ns:
            return scanned
        reason = self._content_reason(scanned)
        if reason is not None:
            self._skip(rel, reason)
            return None
        return scanned

    def _symlink_reason(self, path: Path) -> str:
        try:
            target = Path(os.path.realpath(path, strict=True))
        except FileNotFoundError:
            return "broken symlink"
        except OSError as exc:  # ELOOP and friends
            return f"broken symlink: {exc.strerror or exc}"
        if not target.is_relative_to(self.real_root):
            return "symlink outside workspace"
        kind = "directory" if target.is_dir() else "file"
        return f"symlink to a {kind} inside the workspace (indexed at its real path)"

    def _content_reason(self, file: ScannedFile) -> str | None:
        size = file.size
        try:
            head = safe_read.read_inside(self.root, file.path, file.identity,
                                MINIFIED_SNIFF_BYTES if size > MINIFIED_MIN_SIZE else size + 1)
        except FileNotFoundError:
            return "vanished"
        except OSError as exc:
            return _unreadable(exc)
        if b"\0" in head[:BINARY_SNIFF_BYTES]:
            return "binary"
        if size > MINIFIED_MIN_SIZE:
            return _minified_reason(head)
        return None

    # -- directory walk, used without git --

    def _walk(self) -> Iterator[str]:
        """Workspace-relative paths of non-directory entries, honouring .gitignore files."""
        root_layers = self._info_exclude_layer()
        stack: list[tuple[str, tuple[_IgnoreLayer, ...]]] = [("", root_layers)]
        visited: set[tuple[int, int]] = set()
        while stack:
            rel_dir, layers = stack.pop()
            abs_dir = self.root / rel_dir if rel_dir else self.root
            entries = self._list_dir(rel_dir or ".", abs_dir, visited)
            if entries is None:
                continue
            if any(e.name == ".gitignore" for e in entries):
                rel_ignore = f"{rel_dir}/.gitignore" if rel_dir else ".gitignore"
                layers = layers + (_read_gitignore(self.root, rel_dir, rel_ignore),)
            subdirs: list[tuple[str, tuple[_IgnoreLayer, ...]]] = []
            for entry in entries:
                if entry.name in VCS_DIRS:
                    continue
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    # Symlinks count as files, as in git: the file checks decide about them.
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError as exc:
                    self._skip(rel, _unreadable(exc))
                    continue
                if _ignored(layers, rel, is_dir):
                    continue
                if not is_dir:
                    yield rel
                elif not self._blocked(rel):
                    subdirs.append((rel, layers))
            stack.extend(reversed(subdirs))

    def _list_dir(
        self, rel_dir: str, abs_dir: Path, visited: set[tuple[int, int]]
    ) -> list[os.DirEntry[str]] | None:
        try:
            st = os.stat(abs_dir)
            key = (st.st_dev, st.st_ino)
            if key in visited:
                # Only reachable through bind mounts or similar, since symlinks are not
                # followed; without this such a cycle would never end.
                self._skip(rel_dir, "directory already visited (filesystem loop)")
                return None
            visited.add(key)
            with os.scandir(abs_dir) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self._skip(rel_dir, _unreadable(exc))
            return None

    def _info_exclude_layer(self) -> tuple[_IgnoreLayer, ...]:
        # Without git we still honour the repository-local exclude file if there is one.
        return (_read_gitignore(self.root, "", ".git/info/exclude"),)


def _read_gitignore(root: Path, rel_dir: str, rel: str) -> _IgnoreLayer:
    """The patterns of the ignore file `rel`, read like any workspace file (it is one)."""
    try:
        data = safe_read.read_inside(root, rel, limit=DEFAULT_MAX_FILE_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return (rel_dir, ())  # no .git/info/exclude, or .git is a file (a linked work tree)
    except OSError as exc:
        logger.info("cannot read %s, ignoring it: %s", rel, exc)
        return (rel_dir, ())
    text = data.decode("utf-8", errors="replace")
    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    return (rel_dir, tuple(p for p in spec.patterns if p.include is not None))


def _ignored(layers: tuple[_IgnoreLayer, ...], rel: str, is_dir: bool) -> bool:
    """Git's rule: the deepest .gitignore with a matching pattern decides, last match wins."""
    for base, patterns in reversed(layers):
        sub = rel[len(base) + 1 :] if base else rel
        if is_dir:
            sub += "/"  # lets "build/" match the directory but not a file named build
        verdict: bool | None = None
        for pattern in patterns:
            if pattern.match_file(sub) is not None:
                verdict = bool(pattern.include)
        if verdict is not None:
            return verdict
    return False


def _minified_reason(head: bytes) -> str | None:
    lines = head.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the empty "line" after a trailing newline
    if not lines:
        return None
    longest = max(len(line) for line in lines)
    if longest > MINIFIED_MAX_LINE:
        return f"minified (a line of {longest}+ bytes)"
    average = len(head) / len(lines)
    if average > MINIFIED_MAX_AVG_LINE:
        return f"minified (average line {average:.0f} bytes)"
    return None


def _unreadable(exc: OSError) -> str:
    return f"unreadable: {type(exc).__name__}: {exc.strerror or exc}"


def _log_unreadable(path: str, exc: OSError) -> None:
    if isinstance(exc, FileNotFoundError):
        logger.info("%s vanished before it could be read", path)
    elif isinstance(exc, ReplacedFile):
        logger.info("%s was replaced since the scan; the next update reads it", path)
    else:
        logger.warning("cannot read %s: %s", path, exc.strerror or exc)


def _human(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1 << 20:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1 << 20):.1f} MiB"
