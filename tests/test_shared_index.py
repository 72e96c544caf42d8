"""One index database shared by several processes (the language server, `prism-code`
commands), and a database that is damaged or cannot be written.

Whatever the interleaving, every process must answer from what the last writer committed,
and the shared database must hold what a clean build of the repository holds.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from lsprotocol import types
from test_index import bump_mtime, fresh_snapshot, snapshot
from test_server import command, find, hover, open_file, position_of, start_server, stop_server

from prism_code.cancel import Cancelled
from prism_code.index import RepoIndex
from prism_code.store.database import workspace_db_path
from prism_code.store.errors import IndexBusy
from prism_code.store.file_lock import FileLock
from prism_code.store.packing import unpacked
from prism_code.tasks.find_function import FunctionSearch

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"

PRICING = '''def scale_price(amount):
    """Scale a price by the regional factor."""
    return amount * 2


def unrelated():
    return 0
'''

ORDERS = '''from pricing import scale_price


def order_total(items):
    """Sum the prices of an order."""
    return sum(scale_price(i) for i in items)
'''

RENAMED = '''def double_cost(amount):
    """Double the cost of an order line."""
    return amount * 2


def unrelated():
    return 0
'''


DOUBLE_AMOUNT = "double the cost of an amount"


def shop(parent: Path) -> Path:
    root = parent / "shop"
    root.mkdir()
    (root / "pricing.py").write_text(PRICING)
    (root / "orders.py").write_text(ORDERS)
    return root


def rename_scale_price(root: Path) -> None:
    """What a user does in another editor or with git: the function is renamed on disk."""
    (root / "pricing.py").write_text(RENAMED)
    orders = root / "orders.py"
    orders.write_text(orders.read_text().replace("scale_price", "double_cost"))
    for path in (root / "pricing.py", orders):
        bump_mtime(path)


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "prism_code.cli", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def stored_tables(db: Path) -> dict:
    """What the database holds for retrieval, comparable between two databases (stat
    fields and the generation token differ between any two builds)."""
    with sqlite3.connect(db) as conn:
        def rows(sql: str) -> list:
            return sorted(conn.execute(sql).fetchall())
        return {
            "files": sorted((path, digest, text, _parse_facts(parsed)) for path, digest, text, parsed
                            in conn.execute("SELECT path, hash, text, parsed FROM files")),
            "definitions": rows("SELECT * FROM definitions"),
            "edges": sorted((o, u, v, round(w, 5)) for o, u, v, w in conn.execute("SELECT * FROM edges")),
            "fragments": rows("SELECT * FROM fragments"),
            "relations": sorted((key, [(k, round(w, 5)) for k, w in json.loads(unpacked(related))])
                                for key, related in conn.execute("SELECT key, related FROM relations")),
            "dirty": rows("SELECT key FROM dirty_fragments") + rows("SELECT node FROM dirty_nodes"),
        }


def _parse_facts(parsed: bytes) -> str:
    """A file's stored parse with its call sites in a fixed order: the parser lists the
    calls of one line in an order that varies between processes (string hashing)."""
    data = json.loads(unpacked(parsed))
    data["calls"] = sorted(data["calls"], key=json.dumps)
    return json.dumps(data, sort_keys=True)


def clean_build_tables(root: Path, cache: Path) -> dict:
    index = RepoIndex(root, cache_dir=cache)
    index.update()
    index.close()
    return stored_tables(workspace_db_path(root, cache))


# ---- processes sharing one index -----------------------------------------------------------


def test_indexes_in_two_processes_follow_each_other_and_match_a_rebuild(tmp_path):
    root, cache = shop(tmp_path), tmp_path / "cache"
    first = RepoIndex(root, cache_dir=cache)
    first.update()
    second = RepoIndex(root, cache_dir=cache)  # a second reader of the same database
    rename_scale_price(root)
    out = cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stderr

    # The files on disk now match the database's file states, so only the database can
    # tell that the functions changed.
    summary = first.update()
    assert summary.added + summary.changed + summary.removed == 0
    assert "pricing.py#double_cost" in first.fragments and "pricing.py#scale_price" not in first.fragments
    # Lexical find: order_total calls double_cost, so its name field shares "double cost"; the
    # query also names what only double_cost has, its parameter.
    assert FunctionSearch(first).search(DOUBLE_AMOUNT, top=1)[0].name == "double_cost"
    assert first.definition("pricing.py", "scale_price") is None

    # A reader that writes next starts from what the command line committed, not from its
    # own graph: its relations and edges are those of a clean build.
    (root / "report.py").write_text("from pricing import double_cost\n\n\n"
                                    "def report(x):\n    return double_cost(x) + 1\n")
    second.update()
    assert ("orders.py#order_total" in second.fragments
            and ("pricing.py#double_cost", 0.8) in second.related["orders.py#order_total"])
    assert snapshot(second) == fresh_snapshot(root, tmp_path / "fresh")
    assert stored_tables(workspace_db_path(root, cache)) == clean_build_tables(root, tmp_path / "fresh2")
    # ... and the first one follows that too, through a read that does not write.
    assert first.refresh() and not first.refresh()
    assert snapshot(first) == snapshot(second)
    first.close()
    second.close()


def test_a_writer_waits_for_another_and_a_reader_never_does(tmp_path):
    root, cache = shop(tmp_path), tmp_path / "cache"
    writer = RepoIndex(root, cache_dir=cache)
    writer.update()
    waiter = RepoIndex(root, cache_dir=cache, lock_timeout=0.3)
    rename_scale_price(root)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another process's long update, as far as `waiter` can tell
        with writer.store.write_lock.held():
            writer.update()
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        started = time.monotonic()
        assert waiter.refresh()  # reads what was committed without taking the lock
        assert time.monotonic() - started < 5
        assert "pricing.py#double_cost" in waiter.fragments
        with pytest.raises(IndexBusy, match="writing this index"):
            waiter.update()
        with pytest.raises(Cancelled):
            RepoIndex(root, cache_dir=cache).update(cancelled=lambda: True)
    finally:
        release.set()
        holder.join(30)
    assert waiter.update().added == 0  # the lock is free again
    writer.close()
    waiter.close()


def test_two_index_commands_at_once_embed_each_function_once(tmp_path):
    root, cache = tmp_path / "multilang", tmp_path / "cache"
    shutil.copytree(FIXTURES / "multilang", root)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command_line = [sys.executable, "-m", "prism_code.cli", "index", str(root), "--json",
                    "--cache-dir", str(cache)]
    runs = [subprocess.Popen(command_line, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in outputs]
    summaries = [json.loads(out) for out, _ in outputs]
    functions = summaries[0]["functions"]
    assert functions >= 30
    # One computed every vector (source and card per function and per type); the other
    # waited and found them stored.
    units = functions + summaries[0]["types"] + summaries[0]["file_units"]
    assert sorted(s["embedded"] for s in summaries) == [0, 2 * units]


# ---- the language server and the command line on one repository ---------------------------


async def settled(client, timeout: float = 120) -> dict:
    """prism.status once the worker is idle with every embedding done, twice in a row."""
    deadline, calm = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        status = await command(client, "prism.status")
        done = status["embeddings"]
        calm = calm + 1 if status["state"] == "idle" and done["done"] == done["total"] else 0
        if calm == 2:
            return status
        await asyncio.sleep(0.3)
    raise TimeoutError(f"the server did not settle: {status}")


@pytest.mark.asyncio(loop_scope="function")
async def test_the_server_follows_what_the_command_line_indexed(tmp_path: Path):
    root, cache = shop(tmp_path), tmp_path / "cache"
    client = await start_server(root, cache, notes={"enabled": False})
    try:
        assert (await find(client, "scale a price by the regional factor", top=1))[0]["name"] == "scale_price"
        rename_scale_price(root)
        # The editor is not told (the change came from elsewhere); the command line is run.
        out = cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache))
        assert out.returncode == 0, out.stderr

        found = await find(client, DOUBLE_AMOUNT)
        assert found[0]["name"] == "double_cost"
        assert all(hit["name"] != "scale_price" for hit in found)
        orders = root / "orders.py"
        uri = open_file(client, orders)
        shown = await hover(client, uri, position_of(orders, "return sum(", "double_cost"))
        assert shown is not None and "def double_cost(amount)" in shown.contents.value
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

        # The server's own next update (an edit it is told about) starts from that state.
        report = root / "report.py"
        report.write_text("from pricing import double_cost\n\n\n"
                          "def audit_report(x):\n    \"\"\"Audit the doubled costs.\"\"\"\n"
                          "    return double_cost(x) + 1\n")
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=report.as_uri(), type=types.FileChangeType.Created)]))
        deadline = time.monotonic() + 60
        while (await find(client, "audit the doubled costs", top=1))[0]["name"] != "audit_report":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
        await command(client, "prism.reindex")
        status = await settled(client)
        assert status["functions"] == 4 and status["embeddings"]["total"] == 8
        assert stored_tables(workspace_db_path(root, cache)) == clean_build_tables(root, tmp_path / "fresh")

        # While a command line holds the write lock, the worker waits for it; requests do not.
        lock = workspace_db_path(root, cache).with_name("index.lock")
        holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock)], stdout=subprocess.PIPE)
        try:
            assert holder.stdout.readline() == b"held\n"
            report.write_text(report.read_text() + "\n\ndef ledger_summary():\n"
                              "    \"\"\"Summarise the ledger.\"\"\"\n    return 0\n")
            client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
                types.FileEvent(uri=report.as_uri(), type=types.FileChangeType.Changed)]))
            await asyncio.sleep(1.0)  # the worker is waiting for the lock by now
            started = time.monotonic()
            assert (await find(client, "double the cost of an order line", top=1))[0]["name"] == "double_cost"
            assert time.monotonic() - started < 2.0
        finally:
            holder.kill()
            holder.wait()
        deadline = time.monotonic() + 60
        while (await find(client, "summarise the ledger", top=1))[0]["name"] != "ledger_summary":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
    finally:
        await stop_server(client)


# Holds the write lock of an index, as a `prism-code index` does while it writes.
HOLD_LOCK = """
import fcntl, sys, time
with open(sys.argv[1], "a") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.mark.asyncio(loop_scope="function")
async def test_the_server_rebuilds_a_damaged_index(tmp_path: Path):
    root, cache = shop(tmp_path), tmp_path / "cache"
    out = cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stderr
    db = workspace_db_path(root, cache)
    db.write_bytes(os.urandom(db.stat().st_size))
    client = await start_server(root, cache, notes={"enabled": False})
    try:
        status = await settled(client)
        assert status["state"] == "idle" and status["functions"] == 3
        assert (await find(client, "scale a price by the regional factor", top=1))[0]["name"] == "scale_price"
        assert any("damaged" in m.message for m in client.log_messages)
    finally:
        await stop_server(client)
    assert list(db.parent.glob("index.sqlite.damaged-*"))


# ---- a damaged database, an unusable cache directory -----------------------------------------


def damage_pages(db: Path) -> None:
    """Garbage over everything but the header page: SQLite opens the file, then finds it
    malformed where the tables are."""
    data = bytearray(db.read_bytes())
    data[4096:] = os.urandom(len(data) - 4096)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["random bytes", "damaged pages"])
def test_a_damaged_database_is_moved_aside_and_rebuilt(tmp_path, damage):
    root, cache = tmp_path / "multilang", tmp_path / "cache"
    shutil.copytree(FIXTURES / "multilang", root)
    out = cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stderr
    db = workspace_db_path(root, cache)
    assert db.stat().st_size > 3 * 4096
    if damage == "random bytes":
        db.write_bytes(os.urandom(db.stat().st_size))
    else:
        damage_pages(db)
    for run in range(2):  # the first run repairs it, the second finds it sound
        out = cli("find", str(root), "add an item to the cart", "--json", "--cache-dir", str(cache))
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        assert ("is damaged" in out.stderr) == (run == 0)
        assert "Cart.add" in [r["qualname"] for r in json.loads(out.stdout)[:3]]
    assert len(list(db.parent.glob("index.sqlite.damaged-*"))) == 1
    assert stored_tables(db) == clean_build_tables(root, tmp_path / "fresh")


def test_damaged_again_keeps_only_the_newest_damaged_copy(tmp_path):
    root, cache = tmp_path / "multilang", tmp_path / "cache"
    shutil.copytree(FIXTURES / "multilang", root)
    assert cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache)).returncode == 0
    db = workspace_db_path(root, cache)
    older = db.with_name("index.sqlite.damaged-20000101-000000")
    older.write_bytes(b"an earlier damaged copy")
    db.write_bytes(os.urandom(db.stat().st_size))
    out = cli("find", str(root), "add an item to the cart", "--json", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stderr
    kept = list(db.parent.glob("index.sqlite.damaged-*"))
    assert len(kept) == 1 and kept[0] != older


def test_damaged_vectors_are_dropped_and_computed_again(tmp_path):
    """Damage where only the vectors live: the index loads and updates fine, and only
    find's vector lookup meets it."""
    root, cache = tmp_path / "multilang", tmp_path / "cache"
    shutil.copytree(FIXTURES / "multilang", root)
    out = cli("index", str(root), "--json", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    units = summary["functions"] + summary["types"] + summary["file_units"]
    db = workspace_db_path(root, cache)
    with sqlite3.connect(db) as conn:
        try:
            pages = [p for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'embeddings'")]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table to find the vectors' pages")
    assert len(pages) > 10
    data = bytearray(db.read_bytes())
    for page in pages[len(pages) // 2:]:
        data[(page - 1) * 4096:page * 4096] = os.urandom(4096)
    db.write_bytes(bytes(data))
    for run in range(2):
        out = cli("find", str(root), "add an item to the cart", "--json", "--cache-dir", str(cache))
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        assert ("is damaged" in out.stderr) == (run == 0)
        assert "lexical ranking only" in out.stderr
        assert "Cart.add" in [r["qualname"] for r in json.loads(out.stdout)[:3]]
    out = cli("index", str(root), "--json", "--cache-dir", str(cache))
    assert json.loads(out.stdout)["embedded"] == 2 * units
    assert stored_tables(db) == clean_build_tables(root, tmp_path / "fresh")


def test_a_reader_follows_the_database_another_process_rebuilt(tmp_path):
    root, cache = shop(tmp_path), tmp_path / "cache"
    reader = RepoIndex(root, cache_dir=cache)
    reader.update()
    db = workspace_db_path(root, cache)
    with sqlite3.connect(db) as conn:  # else the pages live in the write-ahead log
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.write_bytes(os.urandom(db.stat().st_size))
    rename_scale_price(root)
    out = cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache))
    assert out.returncode == 0 and "is damaged" in out.stderr, out.stderr
    # The reader still has the damaged file open: it must move to the rebuilt one.
    assert reader.refresh()
    assert "pricing.py#double_cost" in reader.fragments
    assert snapshot(reader) == fresh_snapshot(root, tmp_path / "fresh")
    (root / "report.py").write_text("from pricing import double_cost\n\n\ndef report(x):\n"
                                    "    return double_cost(x)\n")
    reader.update()
    assert stored_tables(db) == clean_build_tables(root, tmp_path / "fresh2")
    reader.close()


def test_a_damaged_database_says_so_once(tmp_path):
    root, cache = shop(tmp_path), tmp_path / "cache"
    assert cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache)).returncode == 0
    db = workspace_db_path(root, cache)
    db.write_bytes(b"this is not a database" * 100)
    out = cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache))
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert "is damaged" in out.stderr and "moved it to index.sqlite.damaged-" in out.stderr
    assert "3 functions" in out.stdout


def test_an_unusable_cache_directory_is_a_clear_error(tmp_path):
    root = shop(tmp_path)
    in_the_way = tmp_path / "cache-file"
    in_the_way.write_text("not a directory")
    for args in (("index", str(root), "--no-embeddings"), ("find", str(root), "a price")):
        out = cli(*args, "--cache-dir", str(in_the_way))
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        assert out.stderr.startswith("prism-code: error: cannot create the index directory")
        assert str(in_the_way) in out.stderr and "--cache-dir" in out.stderr
    # A directory where the database file should be.
    cache = tmp_path / "cache"
    workspace_db_path(root, cache).mkdir(parents=True)
    out = cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "cannot use the index database" in out.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_a_read_only_cache_directory_is_a_clear_error(tmp_path):
    root, cache = shop(tmp_path), tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o500)
    try:
        out = cli("index", str(root), "--no-embeddings", "--cache-dir", str(cache))
    finally:
        cache.chmod(0o700)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "prism-code: error:" in out.stderr and str(cache) in out.stderr


# Holds a FileLock, as another prism-code process's update does, until its stdin closes.
HOLD_FILE_LOCK = """
import sys
from pathlib import Path
from prism_code.store.file_lock import FileLock
with FileLock(Path(sys.argv[1]), "writing this index").held():
    print("held", flush=True)
    sys.stdin.read()
"""


def test_the_lock_names_its_holder_across_processes_and_repeated_updates(tmp_path):
    # The pid in the lock file is what a waiting writer's message names; a process taking
    # the lock again does not rewrite it when it already names that process.
    path = tmp_path / "index.lock"
    mine = FileLock(path, "writing this index")
    for _ in range(2):
        with mine.held():
            assert path.read_text() == f"{os.getpid()}\n"
    other = subprocess.Popen([sys.executable, "-c", HOLD_FILE_LOCK, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, cwd=Path(__file__).parent.parent)
    try:
        assert other.stdout.readline() == b"held\n"
        with pytest.raises(IndexBusy, match=f"process {other.pid} has been writing this index"):
            with FileLock(path, "writing this index").held(timeout=0.05):
                pass
    finally:
        other.communicate(timeout=30)
    with mine.held():
        assert path.read_text() == f"{os.getpid()}\n"
