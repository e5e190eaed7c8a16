"""Review of the parallel HYBRID search (oam_core/store/sqlite/backend.py run_beside,
SQLiteBackend.rank_hybrid, docs/sqlite.md#hybrid-search-in-parallel): the store's
lock must stay held while the helper thread reads the vector mirror, whatever
interrupts the searching thread, and the pool must work in a child after fork.
Each interleaving is injected by wrapping the method that reads or waits."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import pytest

from oam_core import SQLiteMemoryStore
from oam_core.embedders import HashingEmbedder
from oam_core.store.sqlite import backend as sqlite_backend
from oam_core.store.sqlite import backend as worker


def _store(path: Path) -> SQLiteMemoryStore:
    s = SQLiteMemoryStore(path, embedder=HashingEmbedder(32), search_strategy="HYBRID")
    s.add([f"apple river note {i}" for i in range(200)], "memory")
    return s


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteMemoryStore]:
    s = _store(tmp_path / "r.db")
    yield s
    s.close()


def _held_by_another_thread(lock: Any) -> bool:
    got = lock.acquire(blocking=False)
    if got:
        lock.release()
    return not got


def test_ctrl_c_while_waiting_for_the_vector_half_keeps_the_lock(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the searching thread waits for the helper (the keyword half is
    done): the SIGINT handler raises KeyboardInterrupt inside ``wait``, injected here
    as the first ``wait`` call raising it. The store lock must not be left while the
    helper still reads the mirror (another thread's catch-up resizes its arrays in
    place, ``refcheck=False``)."""
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)
    impl = store._impl
    main = threading.get_ident()
    # ``decided``: the caller either left search (the lock with it) or waits again
    decided, checked = threading.Event(), threading.Event()
    held: list[bool] = []
    waits: list[int] = []
    real_wait, real_rank = futures.wait, sqlite_backend.SQLiteBackend._rank_rows

    def interrupted_wait(*args: Any, **kwargs: Any) -> Any:
        waits.append(1)
        if len(waits) == 1:
            raise KeyboardInterrupt  # what the SIGINT handler raises in the wait
        decided.set()
        return real_wait(*args, **kwargs)

    def helper(self: Any, *args: Any) -> Any:
        if threading.get_ident() != main and not held:
            decided.wait(10)
            held.append(_held_by_another_thread(impl.lock))
            try:
                return real_rank(self, *args)
            finally:
                checked.set()
        return real_rank(self, *args)

    monkeypatch.setattr("oam_core.store.sqlite.backend.wait", interrupted_wait)
    monkeypatch.setattr(sqlite_backend.SQLiteBackend, "_rank_rows", helper)
    with pytest.raises(KeyboardInterrupt):
        try:
            store.search("apple river", 5)
        finally:
            decided.set()
    assert checked.wait(10)
    assert held == [True], "the store lock was released while the helper read the mirror"


def test_a_queued_vector_half_never_runs_after_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ThreadPoolExecutor.submit queues the task before it starts a thread. When the
    start fails ("can't start new thread") while the pool's thread is busy with
    another store's search, the search falls back to running both halves inline;
    the queued copy must not run later on the pool thread, without the lock."""
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)
    x, y = _store(tmp_path / "x.db"), _store(tmp_path / "y.db")
    try:
        x.search("apple", 1)  # the pool exists, with one idle thread
        busy, free = threading.Event(), threading.Event()
        late: list[bool] = []  # one entry per run of y's vector half on a pool thread
        real_rank = sqlite_backend.SQLiteBackend._rank_rows
        main = threading.get_ident()

        def spy(self: Any, *args: Any) -> Any:
            if self is x._impl and threading.get_ident() != main and not busy.is_set():
                busy.set()
                free.wait(10)  # x's vector half keeps the only pool thread busy
            if self is y._impl and threading.get_ident() != main:
                late.append(_held_by_another_thread(y._impl.lock))
            return real_rank(self, *args)

        monkeypatch.setattr(sqlite_backend.SQLiteBackend, "_rank_rows", spy)
        searcher = threading.Thread(target=lambda: x.search("apple river", 3))
        searcher.start()
        assert busy.wait(10)
        assert worker._pool is not None
        pool = worker._pool[1]

        def cannot_start() -> None:
            raise RuntimeError("can't start new thread")

        pool._adjust_thread_count = cannot_start  # type: ignore[method-assign]
        assert len(y.search("apple river", 3)) == 3  # both halves inline
        del pool._adjust_thread_count
        free.set()
        searcher.join(10)
        pool.submit(lambda: None).result(10)  # the pool thread drained its queue
        assert late == [], "y's vector half ran on the pool thread after y's search"
    finally:
        x.close()
        y.close()


def _child_lock_state(out: Any) -> None:
    out.put(worker._lock.locked())


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_fork_while_another_thread_is_in_beside_leaves_the_child_a_free_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fork() while another thread holds worker._lock (it creates the pool under it):
    the child inherits the lock held and its first HYBRID search would hang forever."""
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)
    monkeypatch.setattr(worker, "_pool", None)
    inside, forked = threading.Event(), threading.Event()
    real_pool = futures.ThreadPoolExecutor

    def slow_pool(*args: Any, **kwargs: Any) -> Any:  # runs under worker._lock
        inside.set()
        forked.wait(10)
        return real_pool(*args, **kwargs)

    monkeypatch.setattr("oam_core.store.sqlite.backend.ThreadPoolExecutor", slow_pool)
    creator = threading.Thread(target=lambda: worker.run_beside(lambda: 1, lambda: 2))
    creator.start()
    assert inside.wait(10)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_lock_state, args=(out,))
    child.start()
    forked.set()
    creator.join(10)
    child.join(30)
    assert child.exitcode == 0
    assert out.get(timeout=5) is False, "the child inherited worker._lock held"
