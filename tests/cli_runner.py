"""`prism-code` run as a user runs it, for the tests of the command line: a subprocess with its
own cache directory, and fixture repositories copied where the index may write beside them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
# A cold command on a fixture repository takes seconds; a hang must fail the test, not the run.
TIMEOUT_S = 300


def run(*args: str | bytes, cache: Path) -> subprocess.CompletedProcess[str]:
    """`prism-code ARGS` in a new process whose default cache directory is `cache`. Arguments may
    be bytes (a file name that is not UTF-8); output that is not UTF-8 is read with replacements."""
    env = {**os.environ, "PRISM_CODE_CACHE_DIR": str(cache)}
    argv = [os.fsencode(a) if isinstance(a, str) else a for a in args]
    return subprocess.run([os.fsencode(sys.executable), b"-m", b"prism_code.cli", *argv],
                          capture_output=True, text=True, errors="replace", env=env, timeout=TIMEOUT_S)


def copy_fixture(name: str, into: Path) -> Path:
    """A copy of tests/fixtures/NAME under `into`, which a test may change."""
    root = into / name
    shutil.copytree(FIXTURES / name, root)
    return root
