"""A HYBRID search of the SQLite store ranks its vector half on a helper thread while
FTS5 ranks the keywords (oam_core/store/sqlite/backend.py run_beside, SQLiteBackend.rank_hybrid,
docs/sqlite.md#hybrid-search-in-parallel)."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.embedders import HashingEmbedder
from oam_core.store.sqlite import backend as sqlite_backend
from oam_core.store.sqlite import backend as worker

WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "music",
    "garden",
    "winter",
    "paper",
    "engine",
    "violet",
    "coffee",
    "bridge",
]
QUERIES = ["apple river", "music garden winter", "paper engine", "violet coffee bridge stone"]


def _fill(store: SQLiteMemoryStore, n: int = 600) -> None:
    rng = np.random.default_rng(3)
    texts = [" ".join(rng.choice(WORDS, size=6)) + f" note {i}" for i in range(n)]
    store.add(
        texts,
        "memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[f"u{i % 5}" for i in range(n)],
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteMemoryStore]:
    s = SQLiteMemoryStore(tmp_path / "h.db", embedder=HashingEmbedder(32), search_strategy="HYBRID")
    _fill(s)
    yield s
    s.close()


def _rank_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that rank a vector half, appended as they do."""
    threads: list[str] = []
    rank_rows = sqlite_backend.SQLiteBackend._rank_rows

    def spy(self: Any, *args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return rank_rows(self, *args)

    monkeypatch.setattr(sqlite_backend.SQLiteBackend, "_rank_rows", spy)
    return threads


def _results(store: SQLiteMemoryStore, **scope: Any) -> list[list[tuple[str, float]]]:
    return [[(r.id, d) for r, d in store.search(q, 10, **scope)] for q in QUERIES]


def test_parallel_results_equal_the_sequential_ones(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = _rank_threads(monkeypatch)
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)
    parallel = _results(store) + _results(store, user_id="u2", exact_user_match=True)
    assert threads and all(name.startswith("oam-search") for name in threads)
    monkeypatch.setattr(worker, "WORKERS", 1)
    threads.clear()
    sequential = _results(store) + _results(store, user_id="u2", exact_user_match=True)
    assert threads == [threading.current_thread().name] * len(threads) and threads
    assert parallel == sequential
    assert all(len(r) == 10 for r in parallel)


def test_the_lock_is_held_while_the_helper_reads_the_mirror(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread's catch-up would change the mirror under the helper: the
    searching thread keeps the store's lock until the helper is done."""
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)
    impl = store._impl
    free: list[bool] = []
    rank_rows = sqlite_backend.SQLiteBackend._rank_rows

    def probe(self: Any, *args: Any) -> Any:
        got = impl.lock.acquire(blocking=False)
        if got:
            impl.lock.release()
        free.append(got)
        return rank_rows(self, *args)

    monkeypatch.setattr(sqlite_backend.SQLiteBackend, "_rank_rows", probe)
    store.search("apple river", 5)
    assert free == [False]


def test_a_keyword_error_waits_for_the_vector_half(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)
    impl = store._impl
    release = threading.Event()
    done: list[bool] = []
    rank_rows = sqlite_backend.SQLiteBackend._rank_rows

    def slow(self: Any, *args: Any) -> Any:
        release.wait(10)
        out = rank_rows(self, *args)
        done.append(True)
        return out

    def failing(*args: Any, **kwargs: Any) -> Any:
        release.set()  # the helper finishes only after the keyword half failed
        raise RuntimeError("keyword half failed")

    monkeypatch.setattr(sqlite_backend.SQLiteBackend, "_rank_rows", slow)
    monkeypatch.setattr(impl.keywords, "rank", failing)
    with pytest.raises(RuntimeError, match="keyword half failed"):
        store.search("apple river", 5)
    assert done == [True]
    assert not impl.conn.in_transaction  # the read snapshot was ended


def test_a_vector_error_reaches_the_caller(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)

    def broken(self: Any, *args: Any) -> Any:
        raise MemoryError("no room for the product")

    monkeypatch.setattr(sqlite_backend.SQLiteBackend, "_rank_rows", broken)
    with pytest.raises(MemoryError, match="no room"):
        store.search("apple river", 5)
    assert not store._impl.conn.in_transaction


def _child_search(path: str, out: Any) -> None:
    s = SQLiteMemoryStore(path, embedder=HashingEmbedder(32), search_strategy="HYBRID")
    out.put([r.id for r, _ in s.search("music garden winter", 3)])
    s.close()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_child_starts_its_own_pool(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent's pool has no live threads in a child after fork; the child's
    search must not wait on it forever."""
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)
    expected = [r.id for r, _ in store.search("music garden winter", 3)]
    assert worker._pool is not None  # the parent made its pool
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_search, args=(store.path, out))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert out.get(timeout=5) == expected


def test_no_helper_thread_when_none_can_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)

    class Refusing:
        def submit(self, fn: Any) -> Any:
            raise RuntimeError("can't start new thread")

    monkeypatch.setattr(worker, "_pool", (os.getpid(), Refusing()))
    order: list[str] = []

    def side() -> int:
        order.append("side")
        return 1

    def main() -> int:
        order.append("main")
        return 2

    assert worker.run_beside(side, main) == (1, 2)
    assert order == ["main", "side"]


def test_the_pool_counts_the_cores_the_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``taskset -c 0`` or a one-CPU container ``os.cpu_count()`` still says
    the machine's count; the affinity set decides."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert worker._usable_cores() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert worker._usable_cores() == 3
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert worker._usable_cores() == 6


def test_a_small_vector_half_runs_in_the_searching_thread(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most ``BESIDE_MIN_ROWS`` candidate rows: no hand-over, the same results."""
    threads = _rank_threads(monkeypatch)
    monkeypatch.setattr(worker, "WORKERS", 2)
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 0)
    beside = _results(store) + _results(store, user_id="u2", exact_user_match=True)
    assert threads and all(name.startswith("oam-search") for name in threads)
    threads.clear()
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 600)  # 600 rows; one user: 120
    inline = _results(store) + _results(store, user_id="u2", exact_user_match=True)
    assert threads == [threading.current_thread().name] * len(threads) and threads
    assert inline == beside
    threads.clear()
    monkeypatch.setattr(worker, "BESIDE_MIN_ROWS", 599)
    _results(store)  # every row a candidate: more than 599
    assert threads and all(name.startswith("oam-search") for name in threads)
