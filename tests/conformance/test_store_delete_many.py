"""Store conformance: ``delete_many`` [oam], several records of one type in one
transaction (SPEC §3.6; BUGCASES C15: an empty id list deletes nothing)."""

from __future__ import annotations

import asyncio

import pytest


def ids(records):
    return [r.id for r in records]


def test_delete_many_removes_records_and_search_rows(store):
    store.add([f"pizza {i}" for i in range(5)], "memory", record_ids=[f"m{i}" for i in range(5)])
    store.add(["pizza fact"], "fact", record_ids="f1")
    assert store.delete_many("memory", ["m1", "m3", "missing", "m1"]) == 2
    assert ids(store.list("memory")) == ["m0", "m2", "m4"]
    assert sorted(r.id for r, _ in store.search("pizza", 10)) == ["f1", "m0", "m2", "m4"]
    assert store.delete_many("memory", ["f1"]) == 0  # another type is left alone
    assert store.get("fact", "f1") is not None


def test_delete_many_empty_list_deletes_nothing(store):
    store.add(["a", "b"], "memory", record_ids=["a", "b"])
    assert store.delete_many("memory", []) == 0
    assert ids(store.list("memory")) == ["a", "b"]


def test_delete_many_messages(store):
    store.add(["x", "y", "z"], "message", record_ids=["x", "y", "z"], thread_ids="t", roles="user")
    assert store.delete_many("message", ["x", "z"]) == 2
    assert ids(store.list_thread_messages("t")) == ["y"]


@pytest.mark.parametrize(
    ("record_type", "record_ids", "match"),
    [
        ("user_profile", ["u"], "cascade"),
        ("thread", ["t"], "cascade"),
        ("nope", ["a"], "record_type"),
        ("memory", "a", "string"),
        ("memory", ["a", 3], "record_ids"),
        ("memory", ["a", ""], "record_ids"),
    ],
)
def test_delete_many_rejects_bad_input_and_deletes_nothing(
    store, rejected, record_type, record_ids, match
):
    store.add(["a"], "memory", record_ids="a")
    with rejected(store, match=match):
        store.delete_many(record_type, record_ids)


def test_delete_many_async_twin(store):
    store.add(["a", "b", "c"], "memory", record_ids=["a", "b", "c"])
    assert asyncio.run(store.delete_many_async("memory", ["a", "c"])) == 2
    assert ids(store.list("memory")) == ["b"]
