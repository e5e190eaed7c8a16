"""Store conformance: the oam additions ``upsert`` and ``delete_records``, the two store methods
the framework adapters write through (one transaction each; issue 4).

Expected values come from their contracts in ``OracleMemoryStore``: upsert = add
whose existing ids are replaced; delete_records = per-record delete of one type.
"""

from __future__ import annotations

import asyncio

import pytest


def test_upsert_adds_new_and_replaces_existing(store):
    store.add(["old text"], "memory", record_ids="r1", metadata={"v": 1}, user_ids="u1")
    ids = store.upsert(["new text", "other"], "memory", record_ids=["r1", "r2"], metadata={"v": 2})
    assert ids == ["r1", "r2"]
    r1 = store.get("memory", "r1")
    assert (r1.content, r1.metadata, r1.user_id) == ("new text", {"v": 2}, None)
    assert [r.id for r in store.list("memory")] == ["r1", "r2"]
    hits = store.search("old text", 10)
    assert all(r.content != "old text" for r, _ in hits)  # old search rows are gone
    assert store.search("new text", 1)[0][0].id == "r1"


def test_upsert_replaces_across_the_memory_family(store):
    store.add(["a fact"], "fact", record_ids="x")
    store.upsert(["a memory"], "memory", record_ids="x")
    assert store.get("fact", "x") is None
    assert store.get("memory", "x").content == "a memory"


def test_upsert_rejects_bad_calls_and_writes_nothing(store, rejected):
    store.add(["keep"], "memory", record_ids="k")
    with rejected(store, match="duplicate"):
        store.upsert(["a", "b"], "memory", record_ids=["k", "k"])
    with rejected(store, match="record_ids"):
        store.upsert(["a"], "memory")
    with rejected(store, match="all given or all omitted|record_ids"):
        store.upsert(["a", "b"], "memory", record_ids=["k", None])
    with rejected(store):
        store.upsert(["a"], "memory", record_ids=["k"], metadata={"bad": float("nan")})
    assert store.get("memory", "k").content == "keep"


def test_upsert_async_twin(store):
    ids = asyncio.run(store.upsert_async(["x"], "memory", record_ids=["a1"]))
    assert ids == ["a1"]
    assert store.get("memory", "a1").content == "x"


def test_delete_records_one_type_in_one_call(store):
    store.add(["m1", "m2", "m3"], "memory", record_ids=["a", "b", "c"])
    store.add(["f"], "fact", record_ids="f1")
    assert store.delete_records("memory", ["a", "c", "missing", "f1", "a"]) == 2
    assert [r.id for r in store.list("memory")] == ["b"]
    assert store.get("fact", "f1") is not None  # another type is left alone
    assert store.delete_records("memory", []) == 0
    assert [r.id for r in store.list("memory")] == ["b"]
    assert {r.id for r, _ in store.search("m1 m2 m3", 10, record_types={"memory"})} == {"b"}


def test_delete_records_thread_constraint(store):
    store.add(
        ["hi", "yo"], "message", record_ids=["m1", "m2"], thread_ids=["t1", "t2"], roles="user"
    )
    assert store.delete_records("message", ["m1", "m2"], thread_id="t1") == 1
    assert [r.id for r in store.list("message")] == ["m2"]
    assert asyncio.run(store.delete_records_async("message", ["m2"])) == 1


@pytest.mark.parametrize("bad", ["abc", [""], [3], None])
def test_delete_records_rejects_bad_ids(store, rejected, bad):
    store.add(["m"], "memory", record_ids="abc")
    with rejected(store):
        store.delete_records("memory", bad)
