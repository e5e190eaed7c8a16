"""Several processes on one PostgreSQL store (issue 6 §5; docs/store.md#sequence-numbers;
one call = one transaction; cascades: docs/store.md#reading-updating-deleting; docs/failure-modes.md#c16): real OS processes (spawn), a real server.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from typing import Any

import _pg
import _pg_workers
import pytest

psycopg = pytest.importorskip("psycopg")

CTX = multiprocessing.get_context("spawn")


@pytest.fixture
def conninfo() -> str:
    try:
        info = _pg.conninfo_for(_pg.new_schema())
    except _pg.ServerUnavailable as exc:
        pytest.skip(str(exc))
    from oam_core.store.postgres import PostgresMemoryStore

    PostgresMemoryStore(
        info, embedder=_pg_workers.HashingEmbedder(16), schema_policy="CREATE_IF_NECESSARY"
    ).close()
    return info


def _run(procs: list[Any], timeout: float = 120) -> None:
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]


def _orphan_chunks(conninfo: str) -> int:
    with psycopg.connect(conninfo) as conn:
        row = conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN records r ON r.pk = c.record_pk "
            "WHERE r.pk IS NULL"
        ).fetchone()
    return int(row[0])


def test_writer_processes_lose_nothing_and_keep_their_order(conninfo: str) -> None:
    writers, n = 4, 30
    start = CTX.Event()
    procs = [
        CTX.Process(target=_pg_workers.writer, args=(conninfo, w, n, "shared", start))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    store = _pg_workers.open_store(conninfo)
    messages = store.list_thread_messages("shared")
    assert len(messages) == writers * n
    assert [m.seq_no for m in messages] == list(range(writers * n))
    for w in range(writers):
        mine = [m.metadata["i"] for m in messages if m.metadata["w"] == w]
        assert mine == list(range(n)), f"writer {w}'s messages were lost or reordered"
    assert store.count_thread_messages("shared") == writers * n
    store.close()


def test_cascade_delete_racing_with_writers_leaves_no_orphans(conninfo: str) -> None:
    start = CTX.Event()
    procs = [
        CTX.Process(target=_pg_workers.adder_until, args=(conninfo, w, "doomed", 4.0, start))
        for w in range(3)
    ]
    procs.append(
        CTX.Process(target=_pg_workers.deleter_until, args=(conninfo, "doomed", 4.0, start))
    )
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    store = _pg_workers.open_store(conninfo)
    assert _orphan_chunks(conninfo) == 0
    # What survived was written after the last delete: whole calls, in order, seq 0..n-1.
    left = store.list_thread_messages("doomed")
    assert [m.seq_no for m in left] == list(range(len(left)))
    for w in range(3):
        mine = [m.content for m in left if m.metadata["w"] == w]
        assert len(mine) % 2 == 0
        assert all(
            a.replace("message", "reply") == b for a, b in zip(mine[::2], mine[1::2], strict=True)
        )
    store.delete_thread("doomed")
    assert store.list_thread_messages("doomed") == []
    assert store.list("memory", thread_id="doomed") == []
    assert [r for r, _ in store.search("racer", 50) if r.thread_id == "doomed"] == []
    with psycopg.connect(conninfo) as conn:
        left_rows = conn.execute("SELECT count(*) FROM chunks").fetchone()
    assert left_rows == (0,)
    store.close()


def test_a_killed_client_leaves_no_partial_batch(conninfo: str) -> None:
    inside = CTX.Event()
    proc = CTX.Process(target=_pg_workers.stalled_writer, args=(conninfo, 400, inside))
    proc.start()
    try:
        assert inside.wait(60), "the writer never reached its transaction"
        with psycopg.connect(conninfo) as conn:  # rows exist, uncommitted, right now
            busy = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'"
            ).fetchone()
        assert busy is not None and busy[0] >= 1
        os.kill(proc.pid, signal.SIGKILL)  # type: ignore[arg-type]
        proc.join(30)
    finally:
        if proc.is_alive():
            proc.kill()
    assert proc.exitcode == -signal.SIGKILL
    store = _pg_workers.open_store(conninfo)
    assert store.list_thread_messages("killed") == []
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute("SELECT count(*) FROM records").fetchone()
    assert rows == (0,)
    # The thread's lock died with the client: the next writer proceeds at seq 0.
    store.add(["after"], "message", thread_ids="killed", roles="user")
    assert [m.seq_no for m in store.list_thread_messages("killed")] == [0]
    assert _orphan_chunks(conninfo) == 0
    store.close()
