"""The matrix of a store opened from its index file is filled from SQLite by a
background thread (store/sqlite/vector/loading.py, docs/sqlite.md#the-index-file):
searches meanwhile read their candidates' vectors themselves and equal an exact
search; a write meanwhile finishes the fill first; ``close`` stops the thread. The
thread is held at its first batch (an event), so the interleaving is injected."""

from __future__ import annotations

import gc
import os
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.vector import loading
from oam_core.store.sqlite.vector.mirror import unit
from tests.small_index import open_store

DIM = 8
N = 600
QUERIES = np.random.default_rng(5).standard_normal((6, DIM)).astype(np.float32)


def add(store: SQLiteMemoryStore, start: int, stop: int) -> None:
    vecs = np.random.default_rng(start).standard_normal((stop - start, DIM)).astype(np.float32)
    store.add(
        [f"t{i}" for i in range(start, stop)],
        "memory",
        embeddings=list(vecs),
        record_ids=[f"r{i}" for i in range(start, stop)],
        user_ids=[f"u{i % 5}" for i in range(start, stop)],
    )


def exact(path: Path, q: np.ndarray, k: int, user: str | None = None) -> list[str]:
    """Top-k record ids by exact cosine over the vector chunks SQLite holds."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT r.id, c.embedding, r.user_id FROM chunks c "
            "JOIN records r ON r.pk = c.record_pk WHERE c.has_vector = 1"
        ).fetchall()
    rows = [r for r in rows if user is None or r[2] == user]
    mat = unit(np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows]))
    sims = mat @ (q / np.linalg.norm(q))
    return [rows[i][0] for i in np.argsort(-sims, kind="stable")[:k]]


def ids(store: SQLiteMemoryStore, q: np.ndarray, k: int, user: str | None = None) -> list[str]:
    kwargs: dict[str, Any] = {} if user is None else {"user_id": user, "exact_user_match": True}
    return [r.id for r, _ in store.search(query_vector=list(q), k=k, **kwargs)]


def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold the loader's thread before its first batch until the event is set (or
    the loader is stopped); a fill on another thread is not held."""
    release = threading.Event()
    real = loading.VectorLoader._step

    def step(self: loading.VectorLoader) -> bool:
        if threading.current_thread().name == "oam-vector-load":
            while not release.wait(0.02) and not self._stop.is_set():
                pass
        return real(self)

    monkeypatch.setattr(loading.VectorLoader, "_step", step)
    return release


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A store of ``N`` records whose index file holds the IVF index and every row."""
    path = tmp_path / "s.db"
    store = open_store(path)
    add(store, 0, N)
    assert ids(store, QUERIES[0], 10) == exact(path, QUERIES[0], 10)
    store.close()
    assert (tmp_path / "s.db.oamvec").exists()
    return path


def test_searches_during_the_fill_equal_an_exact_search(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = held(monkeypatch)
    store = open_store(saved)
    try:
        for q in QUERIES:  # the IVF index's candidates, read from SQLite per search
            assert ids(store, q, 10) == exact(saved, q, 10)
            assert ids(store, q, 5, user="u2") == exact(saved, q, 5, user="u2")
        index = store._impl.index
        loader = index.log.loader
        assert loader is not None and loader.thread is not None and loader.thread.is_alive()
        assert index.mirror.missing is not None  # the thread has not filled a row
        assert index.ann is not None and index.ann.hwm > 0
        release.set()
        loader.thread.join(30)
        assert not loader.thread.is_alive() and index.mirror.missing is None
        m = index.mirror
        with sqlite3.connect(saved) as conn:
            stored = dict(conn.execute("SELECT pk, embedding FROM chunks WHERE has_vector = 1"))
        want = unit(np.stack([np.frombuffer(stored[int(pk)], dtype="<f4") for pk in m.pks[: m.n]]))
        assert np.array_equal(m.mat[: m.n], want)  # every row, as an exact load gives it
        for q in QUERIES:
            assert ids(store, q, 10) == exact(saved, q, 10)
    finally:
        release.set()
        store.close()


def test_a_write_during_the_fill_finishes_it_first(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = held(monkeypatch)
    store = open_store(saved)
    try:
        assert ids(store, QUERIES[0], 10) == exact(saved, QUERIES[0], 10)
        index = store._impl.index
        assert index.mirror.missing is not None
        add(store, N, N + 50)
        store.delete("memory", "r3")
        for q in QUERIES:  # the catch-up filled every row on the search's own thread
            assert ids(store, q, 10) == exact(saved, q, 10)
        assert index.mirror.missing is None
        m = index.mirror
        assert bool(np.all(np.linalg.norm(m.mat[: m.n][m.live[: m.n]], axis=1) > 0.99))
    finally:
        release.set()
        store.close()


def test_close_during_the_fill_stops_the_thread_and_the_file_stays_usable(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held(monkeypatch)  # released by the stop of close
    store = open_store(saved)
    assert ids(store, QUERIES[1], 10) == exact(saved, QUERIES[1], 10)
    loader = store._impl.index.log.loader
    assert loader is not None and loader.thread is not None
    store.close()  # stops the held thread: nothing else waits for it
    assert not loader.thread.is_alive()
    monkeypatch.undo()
    store = open_store(saved)
    try:
        for q in QUERIES:
            assert ids(store, q, 10) == exact(saved, q, 10)
        assert store._impl.index.file.saved is not None  # read from the file, not rebuilt
    finally:
        store.close()


def test_a_failing_thread_leaves_the_searches_to_read_the_rows(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread's connection cannot open: it stops (logged), and a search needing
    more rows than ``FETCH_MAX`` fills them on its own connection."""
    monkeypatch.setattr(loading, "FETCH_MAX", 3)
    store = open_store(saved)
    try:
        loader = store._impl.index.log.loader if store._impl.index.log.started else None
        assert loader is None  # nothing opened before the first search
        real = loading.VectorLoader._connection

        def broken(self: loading.VectorLoader) -> sqlite3.Connection:
            if threading.current_thread().name == "oam-vector-load":
                raise sqlite3.OperationalError("unable to open database file")
            return real(self)

        monkeypatch.setattr(loading.VectorLoader, "_connection", broken)
        for q in QUERIES:
            assert ids(store, q, 10) == exact(saved, q, 10)
            assert ids(store, q, 5, user="u4") == exact(saved, q, 5, user="u4")
        assert store._impl.index.mirror.missing is None  # filled by a search
    finally:
        store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_while_the_loader_holds_its_locks_leaves_the_child_searchable(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock another thread holds at ``fork`` stays held in the child. The loader's
    thread is made to hold the mirror's lock and the connection's when the process
    forks (the fork waits for them, ``loading._before_fork``); the child's search
    then fills its rows on a connection of its own and equals an exact search (it
    waited forever before). The interleaving is injected: the thread lets go only
    once the fork asks for the locks."""
    release = held(monkeypatch)
    store = open_store(saved)
    try:
        assert ids(store, QUERIES[0], 10) == exact(saved, QUERIES[0], 10)
        loader = store._impl.index.log.loader
        assert loader is not None and store._impl.index.mirror.missing is not None
        holding, forking = threading.Event(), threading.Event()

        def hold() -> None:
            with loader.mirror.lock, loader._conn_lock:
                holding.set()
                forking.wait(30)

        real_hold = loading.VectorLoader.hold_for_fork

        def hold_for_fork(self: loading.VectorLoader) -> None:
            forking.set()  # the holder lets go now; this waits for it
            real_hold(self)

        monkeypatch.setattr(loading.VectorLoader, "hold_for_fork", hold_for_fork)
        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(30)
        want = exact(saved, QUERIES[3], 10)
        pid = os.fork()
        if pid == 0:  # the child: search, report by exit status, never return
            code = 1
            try:
                signal.alarm(20)  # a child stuck on an inherited lock dies
                code = 0 if ids(store, QUERIES[3], 10) == want else 2
            finally:
                os._exit(code)
        holder.join(30)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert ids(store, QUERIES[3], 10) == want  # the parent goes on as before
    finally:
        release.set()
        store.close()


def test_a_store_dropped_without_close_stops_its_fill(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fill of a store garbage-collected unclosed stops (it went on filling a
    matrix nobody reads: a whole fill's CPU at 1M rows)."""
    release = held(monkeypatch)
    store = open_store(saved)
    try:
        assert ids(store, QUERIES[0], 10) == exact(saved, QUERIES[0], 10)
        loader = store._impl.index.log.loader
        assert loader is not None and loader.thread is not None and loader.thread.is_alive()
        thread = loader.thread
        del store, loader
        gc.collect()
        thread.join(30)
        assert not thread.is_alive()
    finally:
        release.set()


def test_a_due_recall_check_does_not_make_the_first_search_wait_for_the_fill(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall check reads every row; when one is due on a reopened store (it grew
    since its index's last check) the first search used to fill the whole matrix
    first (3 s at 300k rows). It now answers from the index while the fill goes on,
    and a search after the fill runs the check."""
    from oam_core.store.sqlite.vector import file, ivf

    real_load = file.IndexFile.load

    def load(self: file.IndexFile, *args: Any) -> Any:
        snap = real_load(self, *args)
        if snap is not None and snap.ann is not None:  # as if trained and checked on half
            snap.ann.checked_on = 1
            snap.ann.trained_hwm //= 2
        return snap

    monkeypatch.setattr(file.IndexFile, "load", load)
    checks: list[int] = []
    real_check = ivf.Ann.recall_holds

    def counted(self: ivf.Ann, *args: Any) -> bool:
        checks.append(1)
        return real_check(self, *args)

    monkeypatch.setattr(ivf.Ann, "recall_holds", counted)
    release = held(monkeypatch)
    store = open_store(saved)
    try:
        assert ids(store, QUERIES[0], 10) == exact(saved, QUERIES[0], 10)
        index = store._impl.index
        assert index.mirror.missing is not None  # the fill still runs (held)
        assert index.builds.ann is not None and checks == []
        release.set()
        assert index.log.loader is not None and index.log.loader.thread is not None
        index.log.loader.thread.join(30)
        assert ids(store, QUERIES[1], 10) == exact(saved, QUERIES[1], 10)
        assert index.mirror.missing is None and len(checks) == 1
    finally:
        release.set()
        store.close()
