"""Listing the files of a git work tree, with git hardened against the repository's own config.

`git ls-files` reads the repository's own config, and a repository is as untrusted as its
files: a cloned or unpacked project can carry a `.git/config` naming programs to run.
So every git call gets, and why:

* `-c core.fsmonitor=false`: the setting ls-files itself executes (to ask which files
  changed); a command-line value beats every config file. (git < 2.36 reads the value
  as a hook path and runs `false` from PATH's absolute directories: harmless.)
* `-c core.hooksPath=<devnull>`: ls-files runs no hook, but a write of the index runs
  `post-index-change`; no hook can be found under the null device.
* `--no-optional-locks`: no opportunistic index write at all (so no hook either), and no
  lock contention with the user's own git commands.
* `-c safe.bareRepository=explicit` (git >= 2.38, ignored before): a workspace that is,
  or sits in, a bare repository is not picked up with that repository's config.
* `--no-pager`: output goes to a pipe, where git never pages; this makes it certain.
* the environment keeps no GIT_* variable but those naming the user's own config
  (GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM) and GIT_CEILING_DIRECTORIES
  (it only narrows discovery): GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_EXEC_PATH,
  GIT_CONFIG_PARAMETERS and friends, inherited from a shell or a hook, would list
  another repository or run other programs.
* git is looked up in PATH's absolute directories only, and runs with only those: a
  relative entry ("." or an empty one) would name the workspace, where git runs.
* `safe.directory` is left as the user set it: git refuses a repository owned by someone
  else, and the scan then walks the directory. For the same reason the system config is
  still read (no GIT_CONFIG_NOSYSTEM): it is the administrator's, not the repository's.

Not overridden, because ls-files never consults them (tests/test_workspace_security.py
sets most up to leave a mark): filter drivers (clean, smudge, process), diff.external and
textconv, core.pager, core.editor, hooks in .git/hooks. core.sshCommand, credential
helpers, core.askPass and protocol.* serve the network, which ls-files does not touch.
core.untrackedCache stays: it caches directory listings and runs nothing. A config
`include.path` naming a FIFO would block git: GIT_TIMEOUT_S then ends it and the scan walks.

git is not started at all for a folder where its discovery cannot find a repository: no
`.git` (directory, or file of a linked work tree) and no `HEAD` (a bare repository's, which
lists nothing anyway) in the folder or any folder above it. Discovery needs one of them now
that GIT_DIR is dropped, so the scan walks exactly as when git fails, without the 3-4 ms
a failing `git ls-files` costs every update (issue #29). The check is made on each call:
a `git init` between two updates is seen at the next one.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 60.0

_GIT_OPTIONS = (
    "--no-pager",
    "--no-optional-locks",
    "-c", "core.fsmonitor=false",
    "-c", f"core.hooksPath={os.devnull}",
    "-c", "safe.bareRepository=explicit",
)
_GIT_ENV_KEPT = frozenset(
    {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CEILING_DIRECTORIES"}
)


def git_listing(root: Path) -> tuple[set[str], set[str]] | None:
    """(tracked, untracked-not-ignored) paths relative to root, or None without git.

    Two listings rather than one so a tracked file deleted from disk can be told apart from
    a file that vanished mid-scan.
    """
    if not may_be_in_repository(root):
        log.debug("no .git in or above %s; walking it", root)
        return None
    tracked = run_git(root, ["ls-files", "-z", "--cached"])
    if tracked is None:
        return None
    untracked = run_git(root, ["ls-files", "-z", "--others", "--exclude-standard"])
    if untracked is None:
        return None
    return _split_z(tracked), _split_z(untracked)


# What git's discovery looks for in the folder and each one above it (setup.c): `.git` (a
# directory, or a file naming one) or a bare repository's own `HEAD`.
_DISCOVERY_MARKERS = (".git", "HEAD")


def may_be_in_repository(root: Path) -> bool:
    """False only when git could not find a repository for `root`: no discovery marker in it
    or in any folder above it. Errors other than absence say True: git then decides."""
    folder = os.path.abspath(root)
    while True:
        for marker in _DISCOVERY_MARKERS:
            try:
                os.lstat(os.path.join(folder, marker))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                pass  # cannot tell: git decides
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def _split_z(out: bytes) -> set[str]:
    # A set: unmerged files appear once per conflict stage.
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def _absolute_path() -> str:
    return os.pathsep.join(d for d in os.get_exec_path() if os.path.isabs(d))


def _git_env(path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _GIT_ENV_KEPT}
    env["PATH"] = path
    return env


def run_git(root: Path, args: list[str]) -> bytes | None:
    """git's output for `args` run in `root`, hardened as described above; None on failure."""
    path = _absolute_path()
    git = shutil.which("git", path=path) if path else None
    if git is None:
        log.debug("git is not installed; walking %s", root)
        return None
    try:
        proc = subprocess.run(
            [git, *_GIT_OPTIONS, *args],
            cwd=root,
            env=_git_env(path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        log.debug("git is not installed; walking %s", root)
        return None
    except subprocess.TimeoutExpired:
        log.warning(
            "git %s timed out after %ss in %s; walking instead", args[0], GIT_TIMEOUT_S, root
        )
        return None
    except OSError as exc:
        log.info("cannot run git in %s (%s); walking instead", root, exc)
        return None
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        log.debug("git %s failed in %s (%s); walking instead", args[0], root, err)
        return None
    return proc.stdout
