"""Review of the SQLite bulk write path (docs/sqlite.md#writes): failing cases found
by breaking it. Each test states what a user sees; none of them sleeps, the one race
is driven by wrapping the methods that run it."""

from __future__ import annotations

import sqlite3
import threading
import types
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.errors import DatabaseLockedError
from oam_core.store.sqlite import checkpoint
from oam_core.store.sqlite.backend import SQLiteTx


def _vectors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


# -- the WAL under a steady stream of small writes ------------------------------------


class _GatedConnection:
    """The checkpoint thread's connection: its checkpoint waits for ``go``."""

    def __init__(self, conn: sqlite3.Connection, go: threading.Event) -> None:
        self._conn, self._go = conn, go

    def execute(self, sql: str, *args: Any) -> Any:
        if "wal_checkpoint" in sql:
            assert self._go.wait(60)
        return self._conn.execute(sql, *args)

    def close(self) -> None:
        self._conn.close()


def test_the_log_stays_bounded_when_checkpoints_start_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One message per call, as an agent writes a conversation, and the checkpoint
    # thread gets the CPU late each time: its checkpoint runs while the next write is
    # under way. A checkpoint overlapping every write would keep SQLite from ever
    # restarting the log, which then grows by every commit (review finding: 256 MiB).
    # Past WAL_WAIT_BYTES the write waits for it (``Checkpointer.before_write``), so
    # the log is all copied when the write starts and restarts from its beginning.
    # The thread's checkpoint is released inside the write transaction (the wrapped
    # ``SQLiteTx.insert``), so every checkpoint overlaps a write, whatever the timing.
    go = threading.Event()
    real_connect = sqlite3.connect
    gated = types.SimpleNamespace(
        connect=lambda *a, **k: _GatedConnection(real_connect(*a, **k), go),
        Error=sqlite3.Error,
    )
    monkeypatch.setattr(checkpoint, "sqlite3", gated)
    path = tmp_path / "s.db"
    store = SQLiteMemoryStore(str(path), embedder=None, vector_dim=384)
    ckpt = store._impl.checkpointer
    assert ckpt is not None
    real_before = ckpt.before_write
    real_insert = SQLiteTx.insert
    overlapped = []
    sizes = []

    def before_write(conn: sqlite3.Connection) -> None:
        sizes.append((path.parent / "s.db-wal").stat().st_size)
        past = sizes[-1] > checkpoint.WAL_WAIT_BYTES
        if past:  # the write waits for the thread: let it finish
            go.set()
        real_before(conn)
        if past:
            go.clear()

    def insert_during_checkpoint(self: Any, *args: Any, **kwargs: Any) -> None:
        if ckpt._pending or ckpt._busy:  # the thread checkpoints now, inside this write
            go.set()
            assert ckpt.drain()
            go.clear()
            overlapped.append(1)
        real_insert(self, *args, **kwargs)

    monkeypatch.setattr(ckpt, "before_write", before_write)
    monkeypatch.setattr(SQLiteTx, "insert", insert_during_checkpoint)
    store.add(["big"] * 4000, "memory", embeddings=_vectors(4000, 384))  # past 4 MiB
    vector = _vectors(1, 384)
    try:
        for i in range(1500):  # ~60 KiB of log each: past WAL_WAIT_BYTES
            store.add([f"message {i}"], "message", roles="user", thread_ids="t", embeddings=vector)
        size = (path.parent / "s.db-wal").stat().st_size
    finally:
        go.set()
        store.close()
    assert overlapped and ckpt.done > 0  # checkpoints ran, each one inside a write
    assert max(sizes) > checkpoint.WAL_WAIT_BYTES  # the log grew to the bound...
    assert max(sizes) <= checkpoint.WAL_WAIT_BYTES + checkpoint.WAL_CHECKPOINT_BYTES, (
        f"-wal file reached {max(sizes) / 2**20:.0f} MiB in 1500 one-message adds"
    )  # ...and no further: the write waited, copied the rest and restarted it
    assert size < checkpoint.WAL_WAIT_BYTES


# -- partial indexes ------------------------------------------------------------------


def _steps_of_one_add(store: SQLiteMemoryStore, vector: np.ndarray) -> int:
    conn = store._impl.conn
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 100)
    try:
        store.add(["one more"], "message", roles="user", embeddings=vector)
    finally:
        conn.set_progress_handler(None, 0)
    return steps[0]


def test_adding_a_message_without_a_thread_does_not_read_every_message(tmp_path: Path) -> None:
    # next_seq asks MAX(seq_no) of the messages with thread_id IS NULL: schema 3 read
    # it off records_thread; a thread index holding only rows with a thread would hold
    # no such row, and each add would read every message of the store (0.2 ms -> 540
    # ms at 200k messages). Schema 5's partial thread index keeps every message.
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=None, vector_dim=4)
    vectors = _vectors(20_000, 4)
    store.add([f"m {i}" for i in range(200)], "message", roles="user", embeddings=vectors[:200])
    small = _steps_of_one_add(store, vectors[:1])
    store.add([f"m {i}" for i in range(20_000)], "message", roles="user", embeddings=vectors)
    large = _steps_of_one_add(store, vectors[:1])
    # A step is 100 VM instructions: reading 20k messages takes thousands of them.
    assert large < max(3 * small, 50), f"{small} VM steps at 200 messages, {large} at 20,200"
    store.close()


# -- expiry as an SQL literal -----------------------------------------------------------


class _Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


# SQLite's text-to-float conversion (3.40 here) is not correctly rounded: this
# creation time plus one day, written as repr() in the INSERT, is read back one unit
# in the last place above the value the same row gets when bound.
CREATED = datetime(2026, 3, 1, 12, 0, 0, 20769, tzinfo=timezone.utc)


@pytest.mark.skipif(
    sqlite3.connect(":memory:")
    .execute(f"SELECT {(CREATED + timedelta(days=1)).timestamp()!r}")
    .fetchone()[0]
    == (CREATED + timedelta(days=1)).timestamp(),
    reason="this SQLite parses the literal exactly",
)
def test_a_batch_expires_when_a_single_record_does(tmp_path: Path) -> None:
    clock = _Clock(CREATED)
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=None, vector_dim=4, clock=clock)
    vectors = _vectors(3, 4)
    store.add(["alone"], "memory", embeddings=vectors[:1], record_ids=["single"], ttl_days=1)
    store.add(["a", "b"], "memory", embeddings=vectors[1:], record_ids=["b0", "b1"], ttl_days=1)
    expires = CREATED + timedelta(days=1)
    raw = dict(store._impl.conn.execute("SELECT id, expires_at FROM records").fetchall())
    clock.now = expires
    assert store.get("memory", "single") is None  # expired at its expiry instant
    visible = [rid for rid in ("b0", "b1") if store.get("memory", rid) is not None]
    assert visible == [], (
        f"{visible} still visible at their expiry {expires.isoformat()}; stored "
        f"{raw['b0']!r} for {expires.timestamp()!r} (single: {raw['single']!r})"
    )
    store.close()


# -- fork -------------------------------------------------------------------------------


def test_a_child_forked_while_the_thread_holds_its_condition_can_close_the_store(
    tmp_path: Path,
) -> None:
    # The checkpoint thread holds Checkpointer._wake for a moment after each
    # checkpoint. A fork in that moment (multiprocessing, a pre-fork server) copies
    # the lock held by a thread the child does not have: the child's close(), or the
    # weakref finalizer at its exit, waits on it forever.
    import os
    import select
    import signal

    in_lock, forked = threading.Event(), threading.Event()

    class Wake(threading.Condition):
        armed = True

        def notify_all(self) -> None:  # called by the thread with the lock held
            super().notify_all()
            if Wake.armed and threading.current_thread().name == "oam-wal-checkpoint":
                Wake.armed = False
                in_lock.set()
                forked.wait(60)

    store = SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=None, vector_dim=384)
    ckpt = store._impl.checkpointer
    assert ckpt is not None
    ckpt._wake = Wake()
    store.add([f"t {i}" for i in range(4000)], "memory", embeddings=_vectors(4000, 384))
    assert in_lock.wait(60)  # the thread checkpointed and is inside the lock
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            store.close()
            os.write(write, b"closed")
        finally:
            os._exit(0)
    forked.set()
    os.close(write)
    ready, _, _ = select.select([read], [], [], 10)  # a hang guard, not a wait for a race
    answer = os.read(read, 16) if ready else b""
    if not answer:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(read)
    store.close()
    assert answer == b"closed", "the forked child hung in store.close()"


# -- compact while another checkpoint runs ----------------------------------------------

_HOLD_CHECKPOINT_LOCK = """
import fcntl, sys
f = open(sys.argv[1], "r+b")
fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 121)  # the -shm byte of WAL_CKPT_LOCK
print("held", flush=True)
sys.stdin.read()
"""


def test_compact_does_not_return_with_deleted_text_on_disk_while_a_checkpoint_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # compact() ends with PRAGMA wal_checkpoint(TRUNCATE) and ignores its result.
    # While another connection checkpoints (the store's own background thread now
    # does, after any commit past 4 MiB), SQLite answers busy without waiting, the
    # log is not copied or emptied, and compact() returns normally with the deleted
    # text still in the -wal file and in the database file (docs/sqlite.md#deleted-text).
    # A second process holding SQLite's checkpointer lock stands in for the thread
    # being in the middle of its checkpoint.
    import subprocess
    import sys

    from oam_core.store.sqlite import store as sqlite_store

    monkeypatch.setattr(sqlite_store, "COMPACT_WAIT_S", 0.5)  # its retries, shortened
    path = tmp_path / "s.db"
    store = SQLiteMemoryStore(str(path), embedder=None, vector_dim=4)
    ids = [f"r{i}" for i in range(200)]
    store.add(
        [f"secretword{i}" for i in range(200)],
        "memory",
        embeddings=_vectors(200, 4),
        record_ids=ids,
    )
    for rid in ids:
        store.delete("memory", rid)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_CHECKPOINT_LOCK, f"{path}-shm"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        try:
            store.compact()
            raised = None
        except DatabaseLockedError as exc:  # a clear error naming the file
            assert str(path) in str(exc)
            raised = exc
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.stdout.close()
        holder.wait()
    on_disk = [
        name
        for name in ("s.db", "s.db-wal")
        if (tmp_path / name).exists() and b"secretword" in (tmp_path / name).read_bytes()
    ]
    store.close()
    assert raised is not None or not on_disk, f"compact() returned; deleted text still in {on_disk}"


# -- a thread that cannot start ---------------------------------------------------------


class _NoThread(threading.Thread):
    def start(self) -> None:
        raise RuntimeError("can't start new thread")


def _store_without_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SQLiteMemoryStore:
    no_threads = types.SimpleNamespace(
        Thread=_NoThread, Condition=threading.Condition, current_thread=threading.current_thread
    )
    monkeypatch.setattr(checkpoint, "threading", no_threads)
    return SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=None, vector_dim=384)


def _big_add(store: SQLiteMemoryStore) -> BaseException | None:
    try:
        store.add([f"t {i}" for i in range(4000)], "memory", embeddings=_vectors(4000, 384))
    except RuntimeError as exc:
        return exc
    return None


def _force_close(store: SQLiteMemoryStore) -> None:
    ckpt = store._impl.checkpointer
    if ckpt is not None:
        ckpt._thread = None
    store._impl.conn.close()


def test_a_write_that_raises_has_written_nothing_when_the_thread_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first commit that leaves the log past 4 MiB starts the checkpoint thread
    # after COMMIT. When no thread can be started (RLIMIT_NPROC in a container, a
    # process at its thread limit, Python 3.12+ at interpreter shutdown) the error
    # escapes store.add, although the records are committed: the caller is told the
    # write failed and a retry stores every record twice (fresh uuid4 ids).
    store = _store_without_threads(tmp_path, monkeypatch)
    try:
        raised = _big_add(store)
        stored = len(store.list("memory"))
    finally:
        _force_close(store)
    assert raised is None or stored == 0, f"add raised {raised!r}, yet {stored} records are stored"


def test_close_works_after_the_thread_could_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Checkpointer.committed keeps the Thread object before start() fails; close()
    # then joins a thread never started: RuntimeError from store.close() (the
    # vector index is not saved) and again from the weakref finalizer at exit.
    store = _store_without_threads(tmp_path, monkeypatch)
    _big_add(store)
    try:
        store.close()
    except RuntimeError as exc:
        _force_close(store)
        pytest.fail(f"store.close() raised {exc!r}")


# -- a path SQLite reads as a URI -------------------------------------------------------


def _sqlite_reads_file_names_as_uris(tmp_path: Path) -> bool:
    sqlite3.connect(f"file:{tmp_path}/probe.db?mode=rwc").close()
    return (tmp_path / "probe.db").exists()


def test_a_file_uri_path_is_checkpointed(tmp_path: Path) -> None:
    # SQLite built with SQLITE_USE_URI (Debian's libsqlite3, which this Python uses)
    # opens "file:..." names as URIs even without uri=True, so the store writes
    # s.db and s.db-wal. The checkpointer watches Path("file:...").resolve() + "-wal",
    # a file that never exists: committed() returns at its stat, no checkpoint runs,
    # and with wal_autocheckpoint = 0 the log grows by every write, without the
    # 256 MiB fallback. Before schema 4 SQLite's auto-checkpoint kept it bounded.
    if not _sqlite_reads_file_names_as_uris(tmp_path):
        pytest.skip("this SQLite opens file: names as plain file names")
    store = SQLiteMemoryStore(f"file:{tmp_path}/s.db", embedder=None, vector_dim=384)
    ckpt = store._impl.checkpointer
    assert ckpt is not None
    for k in range(5):
        texts = [f"t {k} {i}" for i in range(4000)]
        store.add(texts, "memory", embeddings=_vectors(4000, 384, seed=k))
        assert ckpt.drain()
    size = (tmp_path / "s.db-wal").stat().st_size
    store.close()
    assert size <= 4 * checkpoint.WAL_CHECKPOINT_BYTES, (
        f"-wal file is {size / 2**20:.0f} MiB after five 4000-row adds; "
        f"the checkpointer watches {ckpt.wal}"
    )
