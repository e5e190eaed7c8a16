"""Store conformance: concurrent writers and several store objects on one database
(docs/store.md#sequence-numbers; one call = one transaction, insertion order:
docs/store.md#what-is-stored-and-what-is-searched).

Expected values come from the documented rules, not from the implementation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

STRATEGIES = ["VECTOR", "KEYWORD", "HYBRID"]


def run_threads(targets: list[Callable[[], None]]) -> None:
    """Start all targets together; re-raise the first error of any of them."""
    barrier = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                barrier.wait()
                fn()
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        return run

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    if errors:
        raise errors[0]


def check_shared_thread(store, writers: int, per_writer: int) -> None:
    messages = store.list_thread_messages("shared")
    assert len(messages) == writers * per_writer
    assert len({m.seq_no for m in messages}) == len(messages), "seq_no must be unique"
    assert [m.seq_no for m in messages] == sorted(m.seq_no for m in messages)
    for w in range(writers):
        mine = [m.metadata["i"] for m in messages if m.metadata["w"] == w]
        assert mine == list(range(per_writer)), f"writer {w}'s messages were reordered"


def writer(store, w: int, n: int) -> Callable[[], None]:
    def run() -> None:
        for i in range(n):
            store.add(
                [f"writer {w} message {i}"],
                "message",
                record_ids=f"w{w}-{i}",
                thread_ids="shared",
                roles="user",
                metadata={"w": w, "i": i},
            )
            store.add(
                [f"own {i}"],
                "message",
                record_ids=f"own{w}-{i}",
                thread_ids=f"t{w}",
                roles="assistant",
            )
            store.add([f"memory of writer {w} number {i}"], "memory", user_ids=f"u{w}")

    return run


def test_eight_threads_on_one_store_object(store):
    writers, n = 8, 25
    run_threads([writer(store, w, n) for w in range(writers)])
    check_shared_thread(store, writers, n)
    for w in range(writers):
        own = store.list_thread_messages(f"t{w}")
        assert [m.content for m in own] == [f"own {i}" for i in range(n)]
        assert len(store.list("memory", user_id=f"u{w}")) == n
    assert len(store.list("message", limit=None)) == 2 * writers * n
    assert len(store.list("memory", limit=None)) == writers * n
    assert len(store.search("writer", 10_000, record_types={"memory"})) == writers * n


def test_concurrent_batches_are_atomic(store):
    """One call is one transaction: a reader never sees half a batch."""
    seen_sizes: list[int] = []
    stop = threading.Event()

    def write() -> None:
        for b in range(20):
            store.add([f"row {b}-{i}" for i in range(10)], "fact", user_ids=f"b{b}")
        stop.set()

    def read() -> None:
        while not stop.is_set():
            for b in range(20):
                seen_sizes.append(len(store.list("fact", user_id=f"b{b}")))

    run_threads([write, read])
    assert set(seen_sizes) <= {0, 10}
    assert len(store.list("fact", limit=None)) == 200


@pytest.fixture
def two_objects(backend, make_store):
    if not backend.shared_storage:
        pytest.skip(f"{backend.id}: two store objects cannot share storage")

    def open_pair(**kwargs):
        return make_store(**kwargs), make_store(**kwargs)

    return open_pair


def test_two_store_objects_on_one_file_lose_no_writes(two_objects):
    a, b = two_objects()
    n = 40
    run_threads([writer(a, 0, n), writer(b, 1, n)])
    for store in (a, b):
        check_shared_thread(store, 2, n)
        assert [m.content for m in store.list_thread_messages("t0")] == [
            f"own {i}" for i in range(n)
        ]
        assert len(store.list("memory", limit=None)) == 2 * n


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_search_on_one_object_sees_writes_of_another(two_objects, strategy):
    a, b = two_objects(search_strategy=strategy)
    a.add(["pizza oven", "pasta pot"], "memory", record_ids=["p1", "p2"])
    assert [r.id for r, _ in b.search("pizza", 1)] == ["p1"]  # b has searched (warm)
    a.add(["zebra crossing"], "memory", record_ids="z1")
    assert [r.id for r, _ in b.search("zebra crossing", 1)] == ["z1"]
    a.update("memory", "z1", text="giraffe neck")
    assert [r.id for r, _ in b.search("giraffe neck", 1)] == ["z1"]
    assert b.get("memory", "z1").content == "giraffe neck"
    if strategy == "KEYWORD":
        assert "z1" not in [r.id for r, _ in b.search("zebra", 5)]
    a.delete("memory", "z1")
    assert "z1" not in [r.id for r, _ in b.search("giraffe neck", 5)]
    assert b.get("memory", "z1") is None


def test_reads_while_writing_never_fail(store):
    store.add(["seed pizza"], "memory")
    done = threading.Event()

    def write() -> None:
        for i in range(100):
            store.add([f"pizza {i}"], "memory")
        done.set()

    def search() -> None:
        while not done.is_set():
            results = store.search("pizza", 5)
            assert 1 <= len(results) <= 5

    run_threads([write, search, search])
    assert len(store.list("memory", limit=None)) == 101
