"""The persistent index: incremental updates equal a rebuild, kills leave it consistent.

An update publishes files and fragments first and relations second; both the finished
update and the first phase alone (what search sees at once) are checked here.
"""

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from prism_code.config import IndexConfig
from prism_code.index import RepoIndex
from prism_code.tasks.find_function import FunctionSearch
from prism_code.workspace import WorkspaceError

FIXTURE = Path(__file__).parent / "fixtures" / "pyrepo"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    return root


def snapshot(index: RepoIndex) -> dict:
    """Everything retrieval depends on, in a comparable form."""
    return {
        "fragments": sorted((f.key, f.start_line, f.end_line, f.nodes) for f in index.fragments.values()),
        "related": {k: [(o, round(w, 5)) for o, w in v] for k, v in sorted(index.related.items())},
        "edges": sorted((u, v, round(w, 5)) if u < v else (v, u, round(w, 5))
                        for u, v, w in ((e.u, e.v, e.weight) for e in index.graph.edges())),
        # What hovers, notes and `prism-code calls` read: the resolved calls and the overrides.
        "calls": index.graph.resolved_calls(),
        "overrides": {n: index.graph.overrides(n) for n in sorted(index.graph.g) if index.graph.overrides(n)},
        "lines": dict(index.lines),
        "function_count": index.function_count,  # what prism.status shows
    }


def fresh_snapshot(root: Path, cache: Path, config: IndexConfig | None = None) -> dict:
    index = RepoIndex(root, config, cache_dir=cache)
    index.update()
    snap = snapshot(index)
    index.close()
    return snap


def bump_mtime(path: Path) -> None:
    # Some filesystems keep a coarse mtime; make sure the change is visible to the stat check.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_full_index_finds_definitions_and_persists(repo, tmp_path):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    summary = index.update()
    assert summary.files == 3 and summary.added == 3
    assert summary.functions == 5
    assert {f.qualname for f in index.functions()} == {
        "caller", "Greeter.greet", "Greeter.format", "helper", "unrelated"}
    index.close()
    reopened = RepoIndex(repo, cache_dir=tmp_path / "cache")
    assert reopened.update().added == 0
    assert snapshot(reopened) == fresh_snapshot(repo, tmp_path / "other")
    reopened.close()


@pytest.mark.parametrize("two_phase", [False, True], ids=["one-call", "two-phase"])
@pytest.mark.parametrize("change", ["edit", "delete", "rename", "add"])
def test_incremental_update_equals_rebuild(repo, tmp_path, change, two_phase):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    b = repo / "pkg" / "b.py"
    if change == "edit":
        b.write_text(b.read_text().replace("def helper(v):", "def twice(v):"))
        bump_mtime(b)
    elif change == "delete":
        b.unlink()
    elif change == "rename":
        b.rename(repo / "pkg" / "c.py")
        (repo / "pkg" / "a.py").write_text((repo / "pkg" / "a.py").read_text().replace("pkg.b", "pkg.c"))
        bump_mtime(repo / "pkg" / "a.py")
    else:
        (repo / "pkg" / "d.py").write_text("from pkg.a import caller\n\n\ndef use():\n    return caller(2)\n")
    if two_phase:
        summary = index.update(relations=False)
        assert summary.relations_pending and index.relations_pending
        assert index.finish_relations() > 0
        assert not index.relations_pending
    else:
        summary = index.update()
        assert not summary.relations_pending
    assert summary.added + summary.changed + summary.removed >= 1
    assert snapshot(index) == fresh_snapshot(repo, tmp_path / f"fresh-{change}")
    keys = set(index.fragments)
    if change == "edit":
        assert "pkg/b.py#twice" in keys and "pkg/b.py#helper" not in keys
    elif change == "delete":
        assert not any(k.startswith("pkg/b.py") for k in keys)
    elif change == "rename":
        assert "pkg/c.py#helper" in keys
        assert ("pkg/c.py#helper", 0.8) in index.related["pkg/a.py#caller"]
    else:
        assert ("pkg/a.py#caller", 0.8) in index.related["pkg/d.py#use"]
    index.close()


def test_bad_inputs_are_skipped_not_fatal(repo, tmp_path):
    (repo / "blob.py").write_bytes(b"\x00\x01binary\x00" * 100)
    (repo / "latin.py").write_bytes(b"def caf\xe9():\n    return 'd\xe9j\xe0'\n\n\ndef ok():\n    return 1\n")
    (repo / "broken.py").write_text("def fine(a):\n    return a\n\ndef broken(:\n    pass\n")
    (repo / "huge.py").write_text("x = 1\n" * 300_000)
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    summary = index.update()
    reasons = dict(summary.skipped_reasons)
    assert reasons["blob.py"] == "binary"
    assert reasons["huge.py"].startswith("too large")
    names = {f.qualname for f in index.functions()}
    assert {"ok", "fine"} <= names  # invalid UTF-8 and syntax errors still yield what parses
    assert summary.parse_errors >= 1
    index.close()


def test_empty_repo_and_non_directory(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    index = RepoIndex(empty, cache_dir=tmp_path / "cache")
    assert index.update().files == 0
    index.close()
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(WorkspaceError, match="not a directory"):
        RepoIndex(tmp_path / "file.txt", cache_dir=tmp_path / "cache")
    with pytest.raises(WorkspaceError, match="does not exist"):
        RepoIndex(tmp_path / "missing", cache_dir=tmp_path / "cache")


def test_kill_during_indexing_leaves_a_consistent_index(tmp_path):
    """SIGKILL the indexer at several moments; every reopen must be a valid index."""
    root = tmp_path / "big"
    for package in range(12):
        pkg = root / f"pkg{package}"
        pkg.mkdir(parents=True)
        for module in range(12):
            body = "\n\n".join(
                f"def fn_{module}_{i}(x):\n    return fn_{module}_{(i + 1) % 30}(x) + {i}" for i in range(30))
            imported = f"pkg{(package + 1) % 12}.mod{module}"
            (pkg / f"mod{module}.py").write_text(f"from {imported} import fn_{module}_0\n\n{body}\n")
    cache = tmp_path / "cache"
    script = textwrap.dedent(f"""
        from prism_code.index import RepoIndex
        index = RepoIndex({str(root)!r}, cache_dir=__import__('pathlib').Path({str(cache)!r}))
        print("opened", flush=True)
        index.update()
        print("done", flush=True)
    """)
    for delay in (0.0, 0.2, 0.5, 1.0):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"opened\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        db = next(cache.rglob("index.sqlite"))
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            files = {p for (p,) in conn.execute("SELECT path FROM files")}
            fragment_files = {p for (p,) in conn.execute("SELECT DISTINCT path FROM fragments")}
            assert fragment_files <= files  # never fragments of a file the index does not hold
        # Touch a file so the next run has something to do on top of a partial state.
        target = root / "pkg0" / "mod0.py"
        target.write_text(target.read_text() + f"\n\ndef late_{int(delay * 10)}():\n    return 0\n")
    index = RepoIndex(root, cache_dir=cache)
    index.update()
    assert snapshot(index) == fresh_snapshot(root, tmp_path / "fresh")
    index.close()


def test_first_phase_publishes_the_edit_and_keeps_other_relations(repo, tmp_path):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    before = dict(index.related)
    b = repo / "pkg" / "b.py"
    b.write_text(b.read_text() + "\n\ndef tripled_total(values):\n    return sum(values) * 3\n")
    bump_mtime(b)
    index.update(relations=False)
    # Search answers from the new fragments at once ...
    found = FunctionSearch(index).search("tripled total of the values", top=1)
    assert found[0].qualname == "tripled_total"
    # ... while relations are still the previous ones, and the new function has none yet.
    assert "pkg/b.py#tripled_total" not in index.related
    assert index.related["pkg/a.py#caller"] == before["pkg/a.py#caller"]
    index.finish_relations()
    assert snapshot(index) == fresh_snapshot(repo, tmp_path / "fresh")
    index.close()


def test_a_large_update_keeps_the_previous_graph_for_readers_until_it_publishes(repo, tmp_path):
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    # Every file changes (a checkout, say): the update rebuilds the graph.
    for path in repo.rglob("*.py"):
        path.write_text(re.sub(r"\b(caller|helper|greet|unrelated)\b", r"\1_v2", path.read_text()))
        bump_mtime(path)
    seen: list[tuple[bool, bool]] = []

    def read() -> None:  # as a hover does, on another thread
        with index.lock:
            nodes = {n for f in index.fragments.values() for n, _ in f.nodes}
            seen.append((all(n in index.graph.g for n in nodes),
                         index.definition("pkg/a.py", "caller") is not None))

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "graph" and done == total:  # the new graph is built, not yet published
            reader = threading.Thread(target=read)
            reader.start()
            reader.join(10)

    index.update(progress=progress)
    read()
    # Meanwhile the graph a reader saw matched the fragments it saw: both the previous ones.
    assert seen == [(True, True), (True, False)]
    assert index.definition("pkg/a.py", "caller_v2") is not None
    assert snapshot(index) == fresh_snapshot(repo, tmp_path / "fresh")
    index.close()

def write_call_web(root: Path) -> None:
    """Three packages of modules whose functions call along a chain and across imports:
    enough relations per fragment that small related sets are cut, unlike in pyrepo."""
    for p in range(3):
        pkg = root / f"web{p}"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        for m in range(4):
            other = f"web{(p + 1) % 3}.mod{m}"
            body = "\n\n\n".join(
                f"def step_{m}_{i}(x):\n    y = step_{m}_{(i + 1) % 8}(x)\n    return go_{m}(y) + {i}"
                for i in range(8))
            (pkg / f"mod{m}.py").write_text(f"from {other} import go_{m}\n\n\n{body}\n\n\n"
                                            f"def go_{m}(v):\n    return v\n")


def test_deferred_relations_equal_a_rebuild_when_sets_are_cut(tmp_path):
    """Small related sets make the second phase choose between patching a set and
    recomputing it; several first phases may pile up before it runs."""
    root = tmp_path / "web"
    write_call_web(root)
    config = IndexConfig(related_per_fragment=3)
    index = RepoIndex(root, config, cache_dir=tmp_path / "cache")
    index.update()
    mod = root / "web0" / "mod1.py"
    other = root / "web1" / "mod1.py"
    edits = [
        # Lines move but the graph stays: windows elsewhere lose or keep these windows.
        lambda: mod.write_text(mod.read_text().replace("def step_1_2(x):\n", "def step_1_2(x):\n\n")),
        lambda: mod.write_text(mod.read_text() + "\n\ndef late(v):\n    return step_1_3(v)\n"),
        lambda: mod.write_text("import os\n\n" + mod.read_text()),  # every window moves
        lambda: other.write_text(other.read_text().replace("def go_1(", "def gone_1(")),
        lambda: (root / "web2" / "mod3.py").unlink(),
        lambda: (root / "web2" / "mod9.py").write_text(
            "from web0.mod1 import late\n\n\ndef use(v):\n    return late(v)\n"),
    ]
    for n, edit in enumerate(edits):
        edit()
        for path in root.rglob("*.py"):
            bump_mtime(path)
        index.update(relations=False)
        if n in (2, 4):
            continue  # the next update piles its work on top of this one's
        index.finish_relations()
        assert snapshot(index) == fresh_snapshot(root, tmp_path / f"fresh-{n}", config), n
    index.close()


def test_kill_between_the_phases_is_finished_on_reopen(repo, tmp_path):
    cache = tmp_path / "cache"
    index = RepoIndex(repo, cache_dir=cache)
    index.update()
    index.close()
    b = repo / "pkg" / "b.py"
    b.write_text(b.read_text().replace("def helper(v):", "def twice(v):"))
    bump_mtime(b)
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from prism_code.index import RepoIndex
        index = RepoIndex({str(repo)!r}, cache_dir=Path({str(cache)!r}))
        index.update(relations=False)
        print("published", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"published\n"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    reopened = RepoIndex(repo, cache_dir=cache)
    # The first phase was committed: the edit is there, its relations are owed.
    assert "pkg/b.py#twice" in reopened.fragments and reopened.relations_pending
    summary = reopened.update()
    assert summary.added + summary.changed + summary.removed == 0
    assert summary.relations_recomputed > 0 and not reopened.relations_pending
    assert snapshot(reopened) == fresh_snapshot(repo, tmp_path / "fresh")
    reopened.close()


@pytest.mark.parametrize("kept", [1, 8])
def test_a_weakened_member_moves_down_or_makes_room(tmp_path, kept):
    """`a` relates to `b` (0.64) over `c` (0.6); growing b's inner function (no graph change)
    weakens it to 0.55: with one related fragment kept, `c` must take its place (the set is
    recomputed); with room for all, `b` moves below `c` (the set is patched)."""
    root = tmp_path / "repo"
    root.mkdir()
    lib = root / "lib.py"
    lib.write_text("def b(x):\n    y = x + 1\n    def inner(z):\n        return z\n    return y\n\n\n"
                   "def c(x):\n    def inner(z):\n        return z\n    return x\n")
    (root / "use.py").write_text("from lib import b, c\n\n\ndef a(x):\n    return b(x) + c(x)\n")
    config = IndexConfig(related_per_fragment=kept)
    index = RepoIndex(root, config, cache_dir=tmp_path / "cache")
    index.update()
    assert index.related["use.py#a"][:2] == [("lib.py#b", 0.64), ("lib.py#c", 0.6)][:kept]
    lib.write_text(lib.read_text().replace(
        "        return z\n    return y",
        "        z += 1\n        z += 2\n        z += 3\n        return z\n    return y"))
    bump_mtime(lib)
    index.update(relations=False)
    index.finish_relations()
    assert index.related["use.py#a"][:2] == [("lib.py#c", 0.6), ("lib.py#b", 0.55)][:kept]
    assert snapshot(index) == fresh_snapshot(root, tmp_path / "fresh", config)
    index.close()


def test_an_index_parsed_by_an_older_parser_is_parsed_again_once(repo, tmp_path, monkeypatch):
    """Unchanged files are not re-read, so a parser fix would never reach an existing index
    unless the index knows which parser wrote it."""
    import dataclasses

    import prism_code.index as index_module
    import prism_code.parse_pool as parse_pool

    real_parse = parse_pool.parse_source

    def older_parser(path: str, source: bytes):  # found no definitions at all
        parsed = real_parse(path, source)
        return parsed and dataclasses.replace(parsed, definitions=[], calls=[])

    cache = tmp_path / "cache"
    with monkeypatch.context() as old:
        old.setattr(parse_pool, "parse_source", older_parser)
        old.setattr(index_module, "PARSER_VERSION", 1)
        stale = RepoIndex(repo, cache_dir=cache)
        stale.update()
        assert stale.function_count == 0
        stale.close()

    index = RepoIndex(repo, cache_dir=cache)
    try:
        summary = index.update()
        assert summary.changed == len(index.lines)  # every file parsed again
        assert snapshot(index) == fresh_snapshot(repo, tmp_path / "fresh")
        assert index.update().changed == 0  # and only once
    finally:
        index.close()


def test_updates_in_a_row_see_every_disk_change_and_another_process_s(repo, tmp_path):
    # The stored file states are kept in memory between updates: each later update must
    # still see what changed on disk since the one before, and what another process stored.
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    b, a = repo / "pkg" / "b.py", repo / "pkg" / "a.py"
    same_size = b.read_text().replace("def helper(v):", "def hel_er(v):")
    b.write_text(same_size)
    bump_mtime(b)
    first = index.update()
    assert (first.added, first.changed, first.removed) == (0, 1, 0)
    assert "pkg/b.py#hel_er" in index.fragments
    # A touch: read again, same content, nothing parsed; the update after reads nothing.
    bump_mtime(a)
    touched = index.update()
    assert (touched.added, touched.changed, touched.removed) == (0, 0, 0)
    (repo / "pkg" / "d.py").write_text("def fresh():\n    return 1\n")
    b.unlink()
    second = index.update()
    assert (second.added, second.changed, second.removed) == (1, 0, 1)
    # Another process (the command line beside the editor) indexes an edit first.
    a.write_text(a.read_text() + "\n\ndef other_process():\n    return 2\n")
    other = RepoIndex(repo, cache_dir=tmp_path / "cache")
    assert other.update().changed == 1
    other.close()
    after_other = index.update()
    assert (after_other.added, after_other.changed, after_other.removed) == (0, 0, 0)
    assert "pkg/a.py#other_process" in index.fragments
    assert snapshot(index) == fresh_snapshot(repo, tmp_path / "fresh")
    index.close()
