"""OAMStore, the LangGraph BaseStore on oam (issue 4 item 4): items, namespaces,
scope, search, filters, TTL, batches and async parity."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_oam import OAMStore
from langchain_oam.store import record_id
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from oam_core import InvalidArgumentError, OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import InvalidFilterError


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def oam_store(tmp_path: Path, clock: Clock) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(tmp_path / "lg.db", embedder=HashingEmbedder(64), clock=clock)


@pytest.fixture
def store(oam_store: SQLiteMemoryStore, clock: Clock) -> OAMStore:
    return OAMStore(oam_store, index={"fields": ["text"]}, user_index=1, clock=clock)


def fill(store: OAMStore) -> None:
    store.put(("memories", "alice"), "dog", {"text": "Alice's dog is called Biscuit", "n": 3})
    store.put(("memories", "alice"), "trip", {"text": "Alice flies to Lisbon in May", "n": 7})
    store.put(("memories", "bob"), "dog", {"text": "Bob has a dog named Rex", "n": 5})
    store.put(("settings",), "theme", {"text": "dark mode", "n": 1, "tags": ["ui", "dark"]})


def test_put_get_update_delete(store: OAMStore, clock: Clock) -> None:
    ns = ("memories", "alice")
    store.put(ns, "k1", {"text": "first", "nested": {"a": [1, 2]}})
    item = store.get(ns, "k1")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        ns,
        "k1",
        {"text": "first", "nested": {"a": [1, 2]}},
    )
    assert item.created_at == item.updated_at == clock.now
    clock.advance(minutes=5)
    store.put(ns, "k1", {"text": "second"})
    updated = store.get(ns, "k1")
    assert updated is not None and updated.value == {"text": "second"}
    assert updated.created_at == item.created_at
    assert updated.updated_at == clock.now
    assert store.get(ns, "other") is None
    assert store.get(("memories", "bob"), "k1") is None  # keys are per namespace
    store.delete(ns, "k1")
    assert store.get(ns, "k1") is None


def test_items_are_oam_records_scoped_by_namespace(
    store: OAMStore, oam_store: SQLiteMemoryStore
) -> None:
    fill(store)
    record = oam_store.get("memory", record_id(("memories", "alice"), "dog"))
    assert record is not None
    assert (record.user_id, record.content) == ("alice", "Alice's dog is called Biscuit")
    # oam's own user-scoped search sees the LangGraph memories of that user only
    hits = oam_store.search("dog", k=10, user_id="alice", exact_user_match=True)
    assert {r.id for r, _ in hits} == {
        record_id(("memories", "alice"), "dog"),
        record_id(("memories", "alice"), "trip"),
    }
    # and deleting the user through the client removes them
    client = OracleAgentMemory(store=oam_store, extract_memories=False)
    client.delete_user("alice")
    assert store.get(("memories", "alice"), "dog") is None
    assert store.get(("memories", "bob"), "dog") is not None


def test_search_namespace_prefix_query_and_limits(store: OAMStore) -> None:
    fill(store)
    assert {i.key for i in store.search(("memories", "alice"))} == {"dog", "trip"}
    assert {(i.namespace[1], i.key) for i in store.search(("memories",))} == {
        ("alice", "dog"),
        ("alice", "trip"),
        ("bob", "dog"),
    }
    assert len(store.search(())) == 4
    hits = store.search(("memories",), query="Which dog is called Biscuit?", limit=1)
    assert [(h.namespace, h.key) for h in hits] == [(("memories", "alice"), "dog")]
    assert hits[0].score is not None and 0.0 <= hits[0].score <= 1.0
    ranked = store.search(("memories",), query="dog Biscuit", limit=3)
    assert [h.score for h in ranked] == sorted([h.score or 0 for h in ranked], reverse=True)
    page = store.search(("memories",), limit=2, offset=1)
    assert len(page) == 2
    assert store.search(("nothing",), query="dog") == []


def test_filters_native_and_comparisons(store: OAMStore) -> None:
    fill(store)

    def keys(**kw: object) -> set[tuple[str, ...]]:
        return {(*i.namespace, i.key) for i in store.search((), **kw)}  # type: ignore[arg-type]

    assert keys(filter={"n": 5}) == {("memories", "bob", "dog")}
    assert keys(filter={"n": {"$eq": 5}}) == {("memories", "bob", "dog")}
    assert keys(filter={"n": {"$ne": 5}, "text": {"$ne": "dark mode"}}) == {
        ("memories", "alice", "dog"),
        ("memories", "alice", "trip"),
    }
    assert keys(filter={"n": {"$gt": 3}}) == {
        ("memories", "alice", "trip"),
        ("memories", "bob", "dog"),
    }
    assert keys(filter={"n": {"$gte": 3, "$lt": 7}}) == {
        ("memories", "alice", "dog"),
        ("memories", "bob", "dog"),
    }
    assert keys(filter={"tags": ["ui", "dark"]}) == {("settings", "theme")}
    # VECTOR search ranks every match of the filter (no relevance cut-off)
    ranked = store.search((), filter={"n": {"$lte": 3}}, query="Which dog is called Biscuit?")
    assert [(*i.namespace, i.key) for i in ranked] == [
        ("memories", "alice", "dog"),
        ("settings", "theme"),
    ]
    with pytest.raises(ValueError, match=r"unknown operator .\$regex"):
        store.search((), filter={"n": {"$regex": "x"}})


def test_same_results_as_langgraph_in_memory_store_for_filters(store: OAMStore) -> None:
    reference = InMemoryStore()
    fill(store)
    fill(reference)  # type: ignore[arg-type]
    for flt in ({"n": 5}, {"n": {"$gt": 2}}, {"n": {"$ne": 3}}, {"text": "dark mode"}):
        ours = {(i.namespace, i.key) for i in store.search((), filter=flt)}
        theirs = {(i.namespace, i.key) for i in reference.search((), filter=flt)}
        assert ours == theirs, flt


def test_list_namespaces(store: OAMStore) -> None:
    fill(store)
    store.put(("memories", "alice", "v1"), "x", {"text": "deep"})
    assert store.list_namespaces() == [
        ("memories", "alice"),
        ("memories", "alice", "v1"),
        ("memories", "bob"),
        ("settings",),
    ]
    assert store.list_namespaces(prefix=("memories",), max_depth=2) == [
        ("memories", "alice"),
        ("memories", "bob"),
    ]
    assert store.list_namespaces(suffix=("v1",)) == [("memories", "alice", "v1")]
    assert store.list_namespaces(prefix=("memories", "*")) == [
        ("memories", "alice"),
        ("memories", "alice", "v1"),
        ("memories", "bob"),
    ]
    assert store.list_namespaces(limit=1, offset=1) == [("memories", "alice", "v1")]


def test_index_false_and_fields() -> None:
    """A KEYWORD store ranks only indexed text; the other matches follow unscored,
    as InMemoryStore appends the items it holds no vectors for."""
    store = OAMStore(SQLiteMemoryStore(":memory:", search_strategy="KEYWORD"))
    store.put(("docs",), "hidden", {"text": "secret banana"}, index=False)
    store.put(("docs",), "title", {"title": "banana bread", "body": "flour"}, index=["title"])
    hits = store.search(("docs",), query="banana")
    assert [(h.key, h.score is not None) for h in hits] == [("title", True), ("hidden", False)]
    assert {i.key for i in store.search(("docs",))} == {"hidden", "title"}
    flour = store.search(("docs",), query="flour")  # body was not indexed
    assert [h.score for h in flour] == [None, None]
    assert store.search(("docs",), query="banana", limit=1)[0].key == "title"
    store.store.close()


def test_ttl_expires_and_refreshes_on_read(oam_store: SQLiteMemoryStore, clock: Clock) -> None:
    store = OAMStore(oam_store, clock=clock, ttl={"default_ttl": 30, "refresh_on_read": True})
    store.put(("s",), "short", {"text": "short lived"})
    store.put(("s",), "forever", {"text": "kept"}, ttl=None)
    clock.advance(minutes=20)
    assert store.get(("s",), "short") is not None  # read at +20 refreshes to +50
    clock.advance(minutes=25)
    assert store.get(("s",), "short", refresh_ttl=False) is not None
    clock.advance(minutes=10)  # +55 > +50
    assert store.get(("s",), "short") is None
    assert [i.key for i in store.search(("s",))] == ["forever"]
    assert store.purge_expired() == 1
    clock.advance(days=400)
    assert store.get(("s",), "forever") is not None


def test_ttl_longer_than_a_day_is_exact(oam_store: SQLiteMemoryStore, clock: Clock) -> None:
    store = OAMStore(oam_store, clock=clock)
    store.put(("s",), "k", {"text": "x"}, ttl=60 * 30)  # 30 hours
    clock.advance(hours=29, minutes=59)
    assert store.get(("s",), "k", refresh_ttl=False) is not None
    clock.advance(minutes=2)
    assert store.get(("s",), "k") is None


def test_batch_last_put_wins_and_results_align(store: OAMStore) -> None:
    results = store.batch(
        [
            PutOp(("b",), "k", {"v": 1}),
            PutOp(("b",), "k", {"v": 2}),
            PutOp(("b",), "gone", {"v": 0}),
            PutOp(("b",), "gone", None),
            GetOp(("b",), "k"),
            GetOp(("b",), "gone"),
            SearchOp(("b",)),
        ]
    )
    # reads see the store before the batch's puts (as InMemoryStore, PostgresStore)
    assert results == [None, None, None, None, None, None, []]
    assert store.get(("b",), "k").value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(("b",), "gone") is None
    assert [i.key for i in store.search(("b",))] == ["k"]


def test_async_parity(store: OAMStore) -> None:
    fill(store)

    async def run() -> tuple[object, ...]:
        await store.aput(("a",), "k", {"text": "async dog"})
        got = await store.aget(("a",), "k")
        found = await store.asearch(("memories",), query="dog Biscuit", limit=2)
        spaces = await store.alist_namespaces()
        await store.adelete(("a",), "k")
        return got, found, spaces, await store.aget(("a",), "k")

    got, found, spaces, gone = asyncio.run(run())
    assert got is not None and got.value == {"text": "async dog"}  # type: ignore[attr-defined]
    assert [(i.namespace, i.key) for i in found] == [  # type: ignore[attr-defined]
        (i.namespace, i.key) for i in store.search(("memories",), query="dog Biscuit", limit=2)
    ]
    assert ("a",) in spaces  # type: ignore[operator]
    assert gone is None


def test_invalid_namespaces_and_values_write_nothing(store: OAMStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(ValueError, match="JSON"):
        store.put(("a",), "k", {"v": float("nan")})
    with pytest.raises(ValueError, match="ttl"):
        store.batch([PutOp(("a",), "k", {"v": 1}, ttl=-1)])
    assert store.search(()) == []


@pytest.mark.parametrize(
    ("namespace", "key", "says"),
    [
        (("a",), "k\ud800", "key contains a lone surrogate (U+D800) at index 1"),
        (("a",), "k\x00", "key contains a NUL character (U+0000) at index 1"),
        (("a\ud800",), "k", "namespace[0] contains a lone surrogate (U+D800) at index 1"),
    ],
)
def test_keys_and_labels_no_store_can_hold_are_named(
    store: OAMStore, namespace: tuple[str, ...], key: str, says: str
) -> None:
    for attempt in (
        lambda: store.put(namespace, key, {"v": 1}),
        lambda: store.get(namespace, key),
        lambda: store.delete(namespace, key),
    ):
        with pytest.raises(InvalidArgumentError) as raised:
            attempt()
        assert str(raised.value).startswith(says)
    assert store.search(()) == []


@pytest.mark.parametrize("bad", [lambda item: True, "kind", ["kind"], 5])
def test_a_filter_that_is_not_a_dict_is_a_filter_error(store: OAMStore, bad: Any) -> None:
    fill(store)
    with pytest.raises(InvalidFilterError, match="filter must be a dict in the oam filter"):
        store.search(("docs",), filter=bad)


def test_list_namespaces_lists_current_items_only(
    oam_store: SQLiteMemoryStore, store: OAMStore
) -> None:
    store.put(("kept",), "k", {"v": 1})
    store.put(("ended",), "k", {"v": 2})
    memory = OracleAgentMemory(store=oam_store, extract_memories=False)
    assert memory.invalidate_memory(record_id(("ended",), "k")) is True
    # another writer's metadata under the same top-level key is not an item
    oam_store.add(["release notes"], "memory", metadata={"langgraph": {"version": "1.2"}})
    assert store.list_namespaces() == [("kept",)]
    assert store.get(("ended",), "k") is None


def test_own_store_with_langchain_embeddings() -> None:
    store = OAMStore(
        index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16), "fields": ["text"]}
    )
    store.put(("m",), "a", {"text": "apples"})
    store.put(("m",), "b", {"text": "bananas"})
    hits = store.search(("m",), query="apples", limit=2)
    assert [h.key for h in hits] == ["a", "b"]
    assert hits[0].score == 1.0  # the identical text
    store.close()


def test_without_an_index_the_query_is_ignored_as_in_memory_store() -> None:
    ours, anchor = OAMStore(), InMemoryStore()
    for store in (ours, anchor):
        store.put(("m",), "a", {"text": "the cat sat"})
        store.put(("m",), "b", {"text": "a dog barked"})
    got = {(h.key, h.score) for h in ours.search(("m",), query="dog")}
    assert got == {(h.key, h.score) for h in anchor.search(("m",), query="dog")}
    assert got == {("a", None), ("b", None)}
    ours.close()


def test_a_batch_of_puts_is_one_transaction(store: OAMStore) -> None:
    store.put(("t",), "keep", {"text": "kept"})
    with pytest.raises(ValueError):
        store.batch(
            [
                PutOp(("t",), "new", {"text": "fine"}),
                PutOp(("t",), "keep", {"text": "replaced"}),
                PutOp(("t",), "bad", {"text": "x", "n": float("inf")}),
            ]
        )
    assert store.get(("t",), "new") is None
    assert store.get(("t",), "keep").value == {"text": "kept"}  # type: ignore[union-attr]


# -- issue item 6: own-store ranking, negative pages, reads bounded by the page ------------

TEXTS = {
    "k1": "the weather in Lisbon is sunny",
    "k2": "Alice's dog is called Biscuit",
    "k3": "trains to Porto leave hourly",
    "k4": "green tea without sugar",
    "k5": "a dog named Rex barks at night",
}


def _scores(store: Any, query: str) -> list[tuple[str, float | None]]:
    return [(h.key, h.score) for h in store.search(("docs",), query=query, limit=5)]


@pytest.mark.parametrize("opened", ["own", "from_conn_string"])
def test_a_store_the_adapter_opens_ranks_by_vector_as_in_memory_store(opened: str) -> None:
    """Side by side with LangGraph's ``InMemoryStore`` on the same embedding function:
    the same order and the same cosine scores (a store the adapter opens itself
    searches by vector, not by the store's HYBRID fusion)."""
    index: Any = {"dims": 16, "embed": DeterministicFakeEmbedding(size=16), "fields": ["text"]}
    anchor = InMemoryStore(index=index)
    with contextlib.ExitStack() as stack:
        if opened == "own":
            ours = OAMStore(index=index)
            stack.callback(ours.close)
        else:
            ours = stack.enter_context(OAMStore.from_conn_string("sqlite://:memory:", index=index))
        for store in (anchor, ours):
            for key, text in TEXTS.items():
                store.put(("docs",), key, {"text": text})
        for query in ("dog", "Lisbon weather", "a dog named Rex barks at night"):
            want, got = _scores(anchor, query), _scores(ours, query)
            assert [k for k, _ in got] == [k for k, _ in want], query
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)


@pytest.mark.parametrize(
    ("call", "name", "value"),
    [
        (lambda s: s.search(("p",), limit=-1), "limit", -1),
        (lambda s: s.search(("p",), offset=-1), "offset", -1),
        (lambda s: s.search(("p",), query="item", limit=-2), "limit", -2),
        (lambda s: s.search(("p",), query="item", offset=-1), "offset", -1),
        (lambda s: s.list_namespaces(limit=-1), "limit", -1),
        (lambda s: s.list_namespaces(offset=-3), "offset", -3),
    ],
    ids=["search-limit", "search-offset", "query-limit", "query-offset", "ns-limit", "ns-offset"],
)
def test_negative_limit_or_offset_raises_naming_it(
    store: OAMStore, call: Any, name: str, value: int
) -> None:
    """A negative ``limit``/``offset`` raises ``InvalidArgumentError`` naming the
    argument and the value (``offset=-1`` listed the oldest item)."""
    for i in range(3):
        store.put(("p",), f"k{i}", {"text": f"item {i}"})
    with pytest.raises(InvalidArgumentError, match=rf"{name}.*{value}"):
        call(store)
    # a batch holding such a read writes nothing either
    with pytest.raises(InvalidArgumentError):
        store.batch([PutOp(("p",), "new", {"text": "x"}), SearchOp(("p",), offset=-1)])
    assert store.get(("p",), "new") is None


def _count_rows_read(monkeypatch: pytest.MonkeyPatch, oam_store: SQLiteMemoryStore) -> list[int]:
    """Rows each read statement of the store returns (the listing reads go through
    ``fetch_all``)."""
    counts: list[int] = []
    backend = oam_store.runtime.backend
    original = backend.fetch_all

    def counting(stmt: Any) -> list[Any]:
        rows = original(stmt)
        counts.append(len(rows))
        return rows

    monkeypatch.setattr(backend, "fetch_all", counting)
    return counts


def test_listing_a_page_reads_only_the_rows_the_page_needs(
    oam_store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """The latest 10 of 400 items: the listing reads 10 rows (offset 20: 30), newest
    first; with a query whose ranking reaches fewer items than the page, the
    unranked ones that fill it come from a bounded read too."""
    store = OAMStore(oam_store, index={"fields": ["text"]}, clock=clock)
    for start in range(0, 400, 100):
        clock.advance(seconds=1)
        store.batch(
            [PutOp(("big",), f"k{i:03d}", {"text": f"note {i}"}) for i in range(start, start + 100)]
        )
    clock.advance(seconds=1)
    store.put(("big",), "plain", {"text": "no index"}, index=False)
    counts = _count_rows_read(monkeypatch, oam_store)
    page = store.search(("big",), limit=10)
    assert [h.key for h in page] == ["plain", *[f"k{i:03d}" for i in range(399, 390, -1)]]
    assert sum(counts) == 10
    counts.clear()
    later = store.search(("big",), limit=10, offset=20)
    assert [h.key for h in later] == [f"k{i:03d}" for i in range(380, 370, -1)]
    assert sum(counts) <= 30
    counts.clear()
    hits = store.search(
        ("big",), query="note 7", limit=10, filter={"text": {"$in": ["note 7", "no index"]}}
    )
    assert [(h.key, h.score is None) for h in hits] == [("k007", False), ("plain", True)]
    assert sum(counts) <= 10 + 10


def test_postgres_store_ranks_pages_and_refuses_negative_pages_as_in_memory_store(
    pg_url: str,
) -> None:
    """The same checks on PostgreSQL (``from_conn_string``), side by side with
    ``InMemoryStore``: vector order and scores, the newest page read alone, and a
    negative offset refused."""
    index: Any = {"dims": 16, "embed": DeterministicFakeEmbedding(size=16), "fields": ["text"]}
    anchor = InMemoryStore(index=index)
    with OAMStore.from_conn_string(pg_url, index=index) as ours:
        for store in (anchor, ours):
            for key, text in TEXTS.items():
                store.put(("docs",), key, {"text": text})
        want, got = _scores(anchor, "dog"), _scores(ours, "dog")
        assert [k for k, _ in got] == [k for k, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
        for i in range(30):
            ours.put(("many",), f"m{i:02d}", {"text": f"note {i}"})
        listed: list[int] = []
        original = ours.store.list

        def counting(*args: Any, **kwargs: Any) -> list[Any]:
            rows = original(*args, **kwargs)
            listed.append(len(rows))
            return rows

        ours.store.list = counting  # type: ignore[method-assign]
        page = ours.search(("many",), limit=5, offset=5)
        assert [h.key for h in page] == [f"m{i:02d}" for i in range(24, 19, -1)]
        assert listed == [10]
        with pytest.raises(InvalidArgumentError, match="offset"):
            ours.search(("many",), offset=-1)


def test_every_write_marks_the_item_as_managed_and_reads_never_show_the_mark(
    oam_store: SQLiteMemoryStore, clock: Clock
) -> None:
    """The mark keeps the chat's extraction pass off the item
    (docs/memory-pipeline.md#records-managed-by-their-writer); it lives in the
    record's reserved metadata, never in the item."""
    store = OAMStore(
        oam_store, index={"fields": ["text"]}, ttl={"default_ttl": 60}, user_index=1, clock=clock
    )
    ns = ("memories", "alice")
    store.put(ns, "a", {"text": "Alice's dog is Biscuit"})
    store.batch([PutOp(ns, "b", {"text": "Alice flies to Lisbon"}, ttl=None)])
    asyncio.run(store.aput(ns, "c", {"text": "Alice likes tea"}))
    store.put(ns, "a", {"text": "Alice's dog is Rex"})  # a second put of a key
    clock.advance(minutes=30)
    assert store.get(ns, "a", refresh_ttl=True) is not None  # a TTL refresh writes too
    for key in "abc":
        record = oam_store.get("memory", record_id(ns, key))
        assert record is not None and record.metadata is not None
        assert record.metadata["$agent_memory"] == {"managed": True}
    items = [store.get(ns, "a"), *store.search(ns), *store.search(ns, query="Alice")]
    assert all(i is not None and set(i.value) == {"text"} for i in items)
    assert {i.key for i in store.search(ns, filter={"text": "Alice likes tea"})} == {"c"}
