"""Store conformance: delete, profile cascades, delete_thread (docs/store.md#reading-updating-deleting;
C03, C16 in docs/failure-modes.md).

Expected values come from the documented rules and Oracle's SDK, not from the implementation.
"""

from __future__ import annotations

import pytest
from _fixtures import add_derived

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.threads import thread_store

STRATEGIES = ["VECTOR", "KEYWORD", "HYBRID"]
TYPES = ("message", "memory", "guideline", "fact", "preference", "user_profile", "agent_profile")


def ids(records):
    return [r.id for r in records]


def everything(store):
    """(type, id) of every listed record."""
    return {(t, r.id) for t in TYPES for r in store.list(t, limit=None)}


def searchable(store, query="cascade"):
    return {(r.record_type, r.id) for r, _ in store.search(query, 1000)}


# -- single records --------------------------------------------------------------------------


def test_delete_seed_examples(store):
    store.add(["Delete me"], record_type="memory", record_ids="mem-delete-docs")
    assert store.delete("memory", "mem-delete-docs") == 1
    assert store.delete_thread("c1") == 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_delete_removes_the_record_and_its_search_rows(make_store, strategy):
    store = make_store(
        search_strategy=strategy, embedder=HashingEmbedder(64, max_input_tokens=10)
    )  # chunked
    store.add([" ".join(["pizza oven"] * 30)], "memory", record_ids="m1")
    store.add(["pizza"], "memory", record_ids="m2")
    assert store.delete("memory", "m1") == 1
    assert store.get("memory", "m1") is None
    assert ids(store.list("memory")) == ["m2"]
    assert [r.id for r, _ in store.search("pizza oven", 10)] == ["m2"]
    assert store.delete("memory", "m1") == 0


@pytest.mark.parametrize(
    ("record_type", "add"),
    [
        ("fact", lambda s: s.add(["f"], "fact", record_ids="x")),
        (
            "message",
            lambda s: s.add(["hi"], "message", record_ids="x", thread_ids="t", roles="user"),
        ),
        ("user_profile", lambda s: s.add_user("x", "info")),
        ("agent_profile", lambda s: s.add_agent("x", "info")),
        ("preference", lambda s: s.add(["p"], "preference", record_ids="x")),
    ],
)
def test_delete_each_type(store, record_type, add):
    add(store)
    assert store.delete(record_type, "x") == 1
    assert store.get(record_type, "x") is None
    assert store.delete(record_type, "x") == 0


def test_delete_with_another_type_deletes_nothing(store, snapshot):
    store.add(["a fact"], "fact", record_ids="f1")
    before = snapshot(store)
    assert store.delete("memory", "f1") == 0
    assert store.delete("guideline", "f1") == 0
    assert store.delete("message", "f1") == 0
    assert snapshot(store) == before


def test_delete_unknown_type_is_rejected(store, rejected):
    store.add(["x"], "memory", record_ids="m1")
    with rejected(store):
        store.delete("note", "m1")


def test_deleting_a_message_keeps_derived_memories(store):
    """Deleting a message removes only that message (docs/concepts.md#the-client-and-threads)."""
    store.add(["I like pizza"], "message", record_ids="msg", thread_ids="t1", roles="user")
    add_derived(store, "User likes pizza", "preference", "pref", {"source_message_ids": ["msg"]})
    assert store.delete("message", "msg") == 1
    assert store.list_thread_messages("t1") == []
    assert store.get("preference", "pref").content == "User likes pizza"
    assert [r.id for r, _ in store.search("pizza", 5)] == ["pref"]


def test_c03_delete_middle_first_then_the_rest(store):
    """Deleting the middle message, then the rest (docs/failure-modes.md#c03), at store level."""
    store.add(["A", "B", "C"], "message", record_ids=["a", "b", "c"], thread_ids="t1", roles="user")
    assert store.delete("message", "b") == 1
    assert [m.content for m in store.list_thread_messages("t1")] == ["A", "C"]
    assert store.delete("message", "a") == 1
    assert [m.content for m in store.list_thread_messages("t1")] == ["C"]
    assert store.delete("message", "c") == 1
    assert store.list_thread_messages("t1") == []
    assert store.count_thread_messages("t1") == 0


def test_cascade_is_ignored_for_non_profiles(store):
    store.add(["m"], "memory", record_ids="m1", user_ids="u1")
    store.add(["n"], "memory", record_ids="m2", user_ids="u1")
    assert store.delete("memory", "m1", cascade=True) == 1
    assert ids(store.list("memory")) == ["m2"]


# -- profile cascades (docs/store.md#reading-updating-deleting) -----------------------------------


@pytest.fixture(params=STRATEGIES)
def actors(request, make_store):
    """Two users and an agent with threads, messages and memories; every text has 'cascade'."""
    store = make_store(search_strategy=request.param)
    store.add_user("u1", "cascade user one")
    store.add_user("u2", "cascade user two")
    store.add_agent("a1", "cascade agent one")
    thread_store(store).create_thread_row(
        "t1", user_id="u1", agent_id="a1", metadata=None, config={}
    )
    thread_store(store).create_thread_row(
        "t2", user_id="u2", agent_id="a1", metadata=None, config={}
    )
    # t1's children carry only the thread id: the thread row links them to u1
    store.add(
        ["cascade hello", "cascade reply"],
        "message",
        record_ids=["m-t1-1", "m-t1-2"],
        thread_ids="t1",
        roles=["user", "assistant"],
    )
    store.add(["cascade memory of t1"], "memory", record_ids="mem-t1", thread_ids="t1")
    # u1-scoped records outside t1
    store.add(["cascade memory of u1"], "memory", record_ids="mem-u1", user_ids="u1")
    store.add(["cascade fact of u1"], "fact", record_ids="fact-u1", user_ids="u1")
    store.add(
        ["cascade message of u1"],
        "message",
        record_ids="msg-u1-tx",
        thread_ids="tx",
        user_ids="u1",
        roles="user",
    )
    # other actors
    store.add(
        ["cascade hi two"],
        "message",
        record_ids="m-t2-1",
        thread_ids="t2",
        user_ids="u2",
        roles="user",
    )
    store.add(["cascade memory of t2"], "memory", record_ids="mem-t2", thread_ids="t2")
    store.add(["cascade memory of u2"], "memory", record_ids="mem-u2", user_ids="u2")
    store.add(["cascade memory of a1"], "guideline", record_ids="mem-a1", agent_ids="a1")
    store.add(["cascade unscoped"], "memory", record_ids="free")
    return store


U1_GONE = {
    ("user_profile", "u1"),
    ("message", "m-t1-1"),
    ("message", "m-t1-2"),
    ("memory", "mem-t1"),
    ("memory", "mem-u1"),
    ("fact", "fact-u1"),
    ("message", "msg-u1-tx"),
}
A1_GONE = {
    ("agent_profile", "a1"),
    ("message", "m-t1-1"),
    ("message", "m-t1-2"),
    ("memory", "mem-t1"),
    ("message", "m-t2-1"),
    ("memory", "mem-t2"),
    ("guideline", "mem-a1"),
}


@pytest.mark.parametrize(
    ("record_type", "actor", "gone", "threads_gone"),
    [
        ("user_profile", "u1", U1_GONE, {"t1"}),
        ("agent_profile", "a1", A1_GONE, {"t1", "t2"}),
    ],
    ids=["user", "agent"],
)
def test_profile_cascade(actors, record_type, actor, gone, threads_gone):
    before_all = everything(actors)
    kept_records = {
        (t, r.id): r for t in TYPES for r in actors.list(t, limit=None) if (t, r.id) not in gone
    }
    assert actors.delete(record_type, actor, cascade=True) == 1
    assert everything(actors) == before_all - gone
    assert searchable(actors) == before_all - gone
    for key, record in kept_records.items():
        assert actors.get(*key) == record, "other actors' records must be untouched"
    for thread in ("t1", "t2"):
        row = thread_store(actors).get_thread_row(thread)
        assert (row is None) == (thread in threads_gone)
    if "t1" in threads_gone:
        assert actors.list_thread_messages("t1") == []
    assert ids(actors.list_thread_messages("tx")) == ([] if actor == "u1" else ["msg-u1-tx"])


def test_cascade_runs_when_the_profile_row_is_missing(actors):
    assert actors.delete("user_profile", "u1") == 1  # profile only
    before = everything(actors)
    assert actors.delete("user_profile", "u1", cascade=True) == 0
    assert everything(actors) == before - U1_GONE
    assert thread_store(actors).get_thread_row("t1") is None
    assert thread_store(actors).get_thread_row("t2") is not None


def test_profile_delete_without_cascade_deletes_only_the_profile(actors):
    before = everything(actors)
    assert actors.delete("user_profile", "u1") == 1
    assert everything(actors) == before - {("user_profile", "u1")}
    assert thread_store(actors).get_thread_row("t1") is not None


# -- delete_thread (docs/store.md#reading-updating-deleting; docs/failure-modes.md#c16) ------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_c16_delete_thread_leaves_nothing_listable_or_searchable(make_store, strategy):
    store = make_store(
        search_strategy=strategy, embedder=HashingEmbedder(64, max_input_tokens=10)
    )  # 35-char chunks
    thread_store(store).create_thread_row(
        "t1", user_id="u1", agent_id=None, metadata=None, config={}
    )
    thread_store(store).create_thread_row(
        "t2", user_id="u1", agent_id=None, metadata=None, config={}
    )
    long_message = " ".join(f"walrus{i}" for i in range(200))
    store.add(
        [long_message, "walrus short"],
        "message",
        record_ids=["long", "short"],
        thread_ids="t1",
        user_ids="u1",
        roles="user",
    )
    store.add(["walrus memory"], "memory", record_ids="mem-t1", thread_ids="t1")
    store.add(["walrus fact"], "fact", record_ids="fact-t1", thread_ids="t1", user_ids="u1")
    store.add(
        ["walrus other thread"],
        "message",
        record_ids="other",
        thread_ids="t2",
        user_ids="u1",
        roles="user",
    )
    store.add(["walrus memory other"], "memory", record_ids="mem-t2", thread_ids="t2")
    store.add(["walrus unscoped"], "memory", record_ids="free", user_ids="u1")
    kept = {("message", "other"), ("memory", "mem-t2"), ("memory", "free")}
    kept_records = {key: store.get(*key) for key in kept}

    assert store.delete_thread("t1") == 1
    assert thread_store(store).get_thread_row("t1") is None
    assert store.list_thread_messages("t1") == []
    assert store.count_thread_messages("t1") == 0
    for t in TYPES:
        assert store.list(t, thread_id="t1") == []
    assert everything(store) == kept
    for query in ("walrus", "walrus0 walrus199", "walrus memory", "walrus fact"):
        assert {(r.record_type, r.id) for r, _ in store.search(query, 100)} <= kept
    assert {key: store.get(*key) for key in kept} == kept_records
    assert thread_store(store).get_thread_row("t2") is not None
    assert store.delete_thread("t1") == 0


def test_delete_thread_without_a_thread_row_still_removes_its_records(store):
    store.add(["orphan walrus"], "message", record_ids="m1", thread_ids="tx", roles="user")
    store.add(["orphan memory"], "memory", record_ids="mem", thread_ids="tx")
    store.add(["kept"], "memory", record_ids="kept", thread_ids="ty")
    assert store.delete_thread("tx") == 0
    assert store.list_thread_messages("tx") == []
    assert store.list("memory", thread_id="tx") == []
    assert [r.id for r, _ in store.search("orphan walrus", 10)] == ["kept"]


def test_delete_thread_record_type(store):
    thread_store(store).create_thread_row(
        "t1", user_id=None, agent_id=None, metadata=None, config={}
    )
    assert store.delete("thread", "t1") == 1
    assert thread_store(store).get_thread_row("t1") is None
    assert store.delete("thread", "t1") == 0


# -- delete_scoped (an oam addition) -----------------------------------------------------------------


def test_delete_scoped_checks_the_thread(store):
    store.add(["hi"], "message", record_ids="x", thread_ids="t1", roles="user")
    store.add(["f"], "fact", record_ids="f", thread_ids="t1")
    assert thread_store(store).delete_scoped("message", "x", thread_id="t2") == 0
    assert store.get("message", "x") is not None
    assert thread_store(store).delete_scoped("message", "x", thread_id="t1") == 1
    assert thread_store(store).delete_scoped("memory", "f", thread_id="t2") == 0
    assert thread_store(store).delete_scoped("memory", "f") == 1
    assert store.get("fact", "f") is None
    assert thread_store(store).delete_scoped("memory", "f") == 0


@pytest.mark.parametrize("family", ["fact", "user_profile", "thread", ""])
def test_delete_scoped_rejects_other_families(store, rejected, family):
    store.add(["f"], "fact", record_ids="f")
    with rejected(store):
        thread_store(store).delete_scoped(family, "f")
