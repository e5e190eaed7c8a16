"""Store conformance: async twins (docs/concepts.md#sync-and-async; docs/failure-modes.md#c18).

The same scenario runs through the sync methods on one store and through the
``*_async`` twins on another; results, order and errors must be identical.
"""

from __future__ import annotations

import asyncio
import inspect
import threading

import pytest

from oam_core.apis.batch import PendingRecordBatch
from oam_core.embedders.hashing import HashingEmbedder

STRATEGIES = ["VECTOR", "KEYWORD", "HYBRID"]
SEED_METHODS = [
    "add",
    "add_batches",
    "add_user",
    "add_agent",
    "update",
    "get",
    "list",
    "list_thread_messages",
    "search",
    "delete",
    "delete_thread",
    "purge_expired",
]
OAM_EXTRAS = ["count_thread_messages", "upsert", "upsert_batches", "delete_records", "reindex"]

V = [1.0] + [0.0] * 63

SCENARIO = [
    (
        "add",
        (["pizza margherita", "sushi rolls", "pizza oven"], "memory"),
        {
            "record_ids": ["m1", "m2", "m3"],
            "user_ids": ["u1", "u1", None],
            "metadata": [{"tags": ["food"]}, None, {"tags": ["tools"]}],
        },
    ),
    (
        "add",
        (["hello pizza", "hi there", "bye"], "message"),
        {
            "record_ids": ["x1", "x2", "x3"],
            "thread_ids": "t1",
            "roles": ["user", "assistant", "user"],
            "timestamps": "2026-01-01T00:00:00Z",
        },
    ),
    ("add", (["short lived pizza"], "fact"), {"record_ids": "f1", "ttl_days": 1}),
    (
        "add_batches",
        (
            [
                PendingRecordBatch(
                    texts=["batch pizza"], record_type="guideline", record_ids="g1", agent_ids="a1"
                )
            ],
        ),
        {},
    ),
    ("add_user", ("u1", "pizza lover"), {}),
    ("add_agent", ("a1", "pizza bot"), {}),
    ("add", (["dup"], "memory"), {"record_ids": ["m1"]}),
    ("get", ("memory", "m1"), {}),
    ("get", ("message", "x2"), {}),
    ("get", ("memory", "missing"), {}),
    ("list", ("memory",), {}),
    ("list", ("memory",), {"limit": 2}),
    ("list", ("memory",), {"user_id": None}),
    ("list", ("memory",), {"metadata_filter": {"tags": {"$array_contains": "food"}}}),
    ("list", ("memory",), {"metadata_filter": {"tags": {"$bogus": 1}}}),
    ("list_thread_messages", ("t1",), {}),
    ("list_thread_messages", ("t1",), {"last_n": 2}),
    ("search", ("pizza", 10), {}),
    ("search", ("pizza", 2), {"user_id": "u1", "exact_user_match": True}),
    ("search", ("pizza", 10), {"record_types": {"message", "fact"}}),
    ("search", ("pizza", 10), {"metadata_filter": {"tags": ["tools"]}}),
    ("search", ("pizza", 0), {}),
    ("search", ("   ", 3), {}),
    ("update", ("memory", "m2"), {"text": "sushi and pizza", "metadata": {"n": 1}}),
    ("update", ("memory", "missing"), {"text": "x"}),
    ("update", ("memory", "m2"), {}),
    ("get", ("memory", "m2"), {}),
    ("search", ("sushi pizza", 3), {}),
    ("delete", ("message", "x2"), {}),
    ("delete", ("message", "x2"), {}),
    ("list_thread_messages", ("t1",), {}),
    ("ADVANCE", (), {"days": 2}),
    ("get", ("fact", "f1"), {}),
    ("purge_expired", (), {}),
    ("delete", ("user_profile", "u1"), {"cascade": True}),
    ("list", ("memory",), {"limit": None}),
    ("delete_thread", ("t1",), {}),
    ("list_thread_messages", ("t1",), {}),
    ("search", ("pizza", 10), {}),
]


def outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # compare errors too
        return ("error", type(exc).__name__, str(exc))


async def outcome_async(coro_fn):
    try:
        return ("ok", await coro_fn())
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_c18_async_twins_give_identical_results(make_store, clock, strategy):
    """docs/failure-modes.md#c18: identical results, order and errors."""
    sync_store = make_store(name="sync.db", search_strategy=strategy)
    async_store = make_store(name="async.db", search_strategy=strategy)
    start = clock.now

    sync_results = []
    for name, args, kwargs in SCENARIO:
        if name == "ADVANCE":
            clock.advance(**kwargs)
            continue
        method = getattr(sync_store, name)
        sync_results.append(outcome(lambda m=method, a=args, k=kwargs: m(*a, **k)))

    clock.set(start)

    async def run():
        results = []
        for name, args, kwargs in SCENARIO:
            if name == "ADVANCE":
                clock.advance(**kwargs)
                continue
            method = getattr(async_store, name + "_async")
            results.append(await outcome_async(lambda m=method, a=args, k=kwargs: m(*a, **k)))
        return results

    async_results = asyncio.run(run())
    assert len(async_results) == len(sync_results)
    for step, (s, a) in enumerate(zip(sync_results, async_results, strict=True)):
        assert a == s, f"step {step}: {[x for x in SCENARIO if x[0] != 'ADVANCE'][step]}"
    assert [r[0] for r in sync_results].count("error") == 5


@pytest.mark.parametrize("name", SEED_METHODS)
def test_every_seed_method_has_an_async_twin(store, name):
    assert asyncio.iscoroutinefunction(getattr(store, name + "_async"))


def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize(
    "name",
    SEED_METHODS,
)
def test_async_twin_has_the_same_parameters(store, name):
    assert _params(getattr(store, name + "_async")) == _params(getattr(store, name))


def test_async_twins_accept_positional_arguments(make_store):
    sync_store = make_store(name="sync.db")
    async_store = make_store(name="async.db")
    args = (["stored"], "memory", [["retrieval"]], None, "m1")
    assert sync_store.add(*args) == ["m1"]
    assert asyncio.run(async_store.add_async(*args)) == ["m1"]
    assert asyncio.run(async_store.list_async("memory", 1)) == sync_store.list("memory", 1)


@pytest.mark.parametrize("name", OAM_EXTRAS)
def test_every_oam_store_method_has_an_async_twin(store, name):
    assert asyncio.iscoroutinefunction(getattr(store, name + "_async", None))


class ThreadRecordingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.threads: set[int] = set()

    def embed(self, texts, *, is_query=False):
        self.threads.add(threading.get_ident())
        return super().embed(texts, is_query=is_query)


def test_async_twins_do_not_block_the_event_loop_thread(make_store, clock):
    """C18: no embedding or database work on the loop thread (clock calls mark it)."""
    clock_threads: set[int] = set()
    base_clock = clock

    def recording_clock():
        clock_threads.add(threading.get_ident())
        return base_clock()

    embedder = ThreadRecordingEmbedder()
    store = make_store(embedder=embedder, clock=recording_clock)

    async def run():
        loop_thread = threading.get_ident()
        await store.add_async(["pizza"], "memory", record_ids="m1")
        await store.search_async("pizza", 1)
        await store.update_async("memory", "m1", text="pasta")
        await store.list_async("memory")
        await store.get_async("memory", "m1")
        await store.list_thread_messages_async("t1")
        await store.purge_expired_async()
        return loop_thread

    loop_thread = asyncio.run(run())
    assert embedder.threads and loop_thread not in embedder.threads
    assert clock_threads and loop_thread not in clock_threads


def test_sync_methods_work_inside_a_running_event_loop(store):
    """docs/concepts.md#sync-and-async: sync wrappers must work when called inside a running loop."""

    async def run():
        ids = store.add(["pizza"], "memory", record_ids=["m1"])
        found = store.search("pizza", 1)
        return ids, [r.id for r, _ in found], store.update("memory", "m1", text="x")

    assert asyncio.run(run()) == (["m1"], ["m1"], 1)


def test_concurrent_async_adds_lose_nothing(store):
    async def run():
        await asyncio.gather(
            *(
                store.add_async(
                    [f"message {i}"],
                    "message",
                    record_ids=f"x{i:02}",
                    thread_ids="t1",
                    roles="user",
                )
                for i in range(20)
            )
        )

    asyncio.run(run())
    messages = store.list_thread_messages("t1")
    assert sorted(m.id for m in messages) == [f"x{i:02}" for i in range(20)]
    assert len({m.seq_no for m in messages}) == 20
