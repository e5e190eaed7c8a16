"""LangGraph's documented ``BaseStore`` behaviours, one table run against both
``OAMStore`` and LangGraph's own ``InMemoryStore``: every difference between the two
shows up as a failing row (issue 13).

Each row is a function of a ``Subject`` (the store under test and a way to move its
clock) and asserts concrete values: items and their timestamps, namespaces and
prefixes, ``max_depth``, pagination, filters, vector search scores (computed here
from the embedding model, so both stores must return LangGraph's cosine
similarity), ``index=False`` items, batches, TTL (where the store supports it) and
the async API.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_oam import OAMStore
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from oam_core import SQLiteMemoryStore

EMB = DeterministicFakeEmbedding(size=16)
INDEX: Any = {"dims": 16, "embed": EMB, "fields": ["text"]}


class Clock:
    """The OAM store's injected clock (InMemoryStore reads the wall clock)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Subject:
    """One store under test: ``make(index)`` opens it (with the shared ``INDEX`` when
    ``index`` is true); ``advance(minutes)`` moves its clock (None: it has none)."""

    name: str
    make: Callable[..., BaseStore]
    advance: Callable[[float], None] | None


@pytest.fixture(params=["OAMStore", "InMemoryStore"])
def subject(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Subject]:
    opened: list[Any] = []
    if request.param == "InMemoryStore":
        yield Subject(
            "InMemoryStore",
            lambda index=False, **kw: InMemoryStore(index=INDEX if index else None),
            None,
        )
        return
    clock = Clock()

    def make(index: bool = False, **kwargs: Any) -> BaseStore:
        db = SQLiteMemoryStore(tmp_path / f"s{len(opened)}.db", clock=clock)
        opened.append(db)
        return OAMStore(db, index=INDEX if index else None, clock=clock, **kwargs)

    def advance(minutes: float) -> None:
        clock.now += timedelta(minutes=minutes)

    yield Subject("OAMStore", make, advance)
    for db in opened:
        db.close()


def cosine(query: str, text: str) -> float:
    q = np.asarray(EMB.embed_query(query))
    d = np.asarray(EMB.embed_documents([text])[0])
    return float(q @ d / (np.linalg.norm(q) * np.linalg.norm(d)))


def keys(items: list[Any]) -> list[tuple[str, ...]]:
    return [(*i.namespace, i.key) for i in items]


# -- rows ---------------------------------------------------------------------------------


def put_then_get(s: Subject) -> None:
    """``get`` returns the item put: namespace tuple, key, value, aware timestamps."""
    store = s.make()
    store.put(("users", "u1"), "prefs", {"theme": "dark", "n": [1, 2]})
    item = store.get(("users", "u1"), "prefs")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        ("users", "u1"),
        "prefs",
        {"theme": "dark", "n": [1, 2]},
    )
    assert item.created_at.tzinfo is not None and item.created_at <= item.updated_at


def get_missing(s: Subject) -> None:
    """A missing key, or the key in another namespace, is None."""
    store = s.make()
    store.put(("a",), "k", {"v": 1})
    assert store.get(("a",), "other") is None
    assert store.get(("b",), "k") is None


def put_replaces(s: Subject) -> None:
    """A second put of the same (namespace, key) replaces the value."""
    store = s.make()
    store.put(("a",), "k", {"v": 1, "old": True})
    first = store.get(("a",), "k")
    store.put(("a",), "k", {"v": 2})
    second = store.get(("a",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2} and second.updated_at >= first.updated_at


def delete_removes(s: Subject) -> None:
    """``delete`` and a put of None remove the item from get and search."""
    store = s.make()
    store.put(("a",), "k1", {"v": 1})
    store.put(("a",), "k2", {"v": 2})
    store.delete(("a",), "k1")
    store.batch([PutOp(("a",), "k2", None)])
    assert store.get(("a",), "k1") is None and store.get(("a",), "k2") is None
    assert store.search(("a",)) == []


def search_by_prefix(s: Subject) -> None:
    """``search`` returns the items whose namespace starts with the prefix labels."""
    store = s.make()
    store.put(("a", "b"), "1", {"v": 1})
    store.put(("a", "c"), "2", {"v": 2})
    store.put(("ab",), "3", {"v": 3})
    store.put(("d",), "4", {"v": 4})
    assert sorted(keys(store.search(("a",)))) == [("a", "b", "1"), ("a", "c", "2")]
    assert keys(store.search(("a", "b"))) == [("a", "b", "1")]
    assert len(store.search(())) == 4
    assert store.search(("x",)) == []


def search_without_query_has_no_score(s: Subject) -> None:
    """Listing (no query) gives ``SearchItem`` s whose score is None."""
    store = s.make(index=True)
    store.put(("a",), "1", {"text": "x"})
    (item,) = store.search(("a",))
    assert item.score is None and item.value == {"text": "x"}


def search_pagination(s: Subject) -> None:
    """``limit``/``offset`` page through every match once; the default limit is 10."""
    store = s.make()
    for i in range(12):
        store.put(("p",), f"k{i:02d}", {"i": i})
    pages = [store.search(("p",), limit=5, offset=o) for o in (0, 5, 10)]
    assert [len(p) for p in pages] == [5, 5, 2]
    assert sorted(k for p in pages for k in keys(p)) == [("p", f"k{i:02d}") for i in range(12)]
    assert len(store.search(("p",))) == 10
    assert store.search(("p",), offset=12) == []


FILTER_ITEMS = {
    "r1": {"color": "red", "n": 1, "meta": {"kind": "doc", "lang": "en"}},
    "r2": {"color": "red", "n": 2, "meta": {"kind": "pdf", "lang": "en"}},
    "b3": {"color": "blue", "n": 3, "meta": {"kind": "doc", "lang": "de"}},
    "g4": {"color": "green", "n": 4, "meta": {"kind": "doc", "lang": "en"}},
}


def _filtered(store: BaseStore, flt: dict[str, Any]) -> list[str]:
    return sorted(i.key for i in store.search(("f",), filter=flt))


def search_filters(s: Subject) -> None:
    """Filters: exact values, nested objects (subset), and ``$eq $ne $gt $gte $lt
    $lte``, several conditions ANDed."""
    store = s.make()
    for key, value in FILTER_ITEMS.items():
        store.put(("f",), key, value)
    assert _filtered(store, {"color": "red"}) == ["r1", "r2"]
    assert _filtered(store, {"meta": {"kind": "doc"}}) == ["b3", "g4", "r1"]
    assert _filtered(store, {"n": {"$eq": 2}}) == ["r2"]
    assert _filtered(store, {"color": {"$ne": "red"}}) == ["b3", "g4"]
    assert _filtered(store, {"n": {"$gt": 2}}) == ["b3", "g4"]
    assert _filtered(store, {"n": {"$gte": 2, "$lt": 4}}) == ["b3", "r2"]
    assert _filtered(store, {"n": {"$lte": 1}}) == ["r1"]
    assert _filtered(store, {"color": "red", "meta": {"lang": "en"}, "n": {"$gt": 1}}) == ["r2"]
    assert _filtered(store, {"color": "purple"}) == []


TEXTS = {
    "cats": "cats purr on warm mats",
    "dogs": "dogs fetch sticks in parks",
    "cars": "fast cars on race tracks",
    "tea": "green tea and black tea",
}


def vector_search_scores(s: Subject) -> None:
    """With an index, a query ranks items by LangGraph's cosine similarity of the
    query and item vectors (the same values in every store)."""
    store = s.make(index=True)
    for key, text in TEXTS.items():
        store.put(("docs",), key, {"text": text})
    hits = store.search(("docs",), query="cats purr on warm mats", limit=4)
    want = sorted(
        ((cosine("cats purr on warm mats", t), k) for k, t in TEXTS.items()), reverse=True
    )
    assert [h.key for h in hits] == [k for _, k in want]
    assert [h.score for h in hits] == pytest.approx([w for w, _ in want], abs=1e-5)
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)


def vector_search_with_filter_and_limit(s: Subject) -> None:
    """The filter applies before ``limit``: the best filtered match comes back even
    when better unfiltered matches exist."""
    store = s.make(index=True)
    for key, text in TEXTS.items():
        store.put(
            ("docs",), key, {"text": text, "kind": "pet" if key in ("cats", "dogs") else "other"}
        )
    query = "cats purr on warm mats"
    hits = store.search(("docs",), query=query, filter={"kind": "other"}, limit=1)
    best = max(("cars", "tea"), key=lambda k: cosine(query, TEXTS[k]))
    assert [h.key for h in hits] == [best]
    assert hits[0].score == pytest.approx(cosine(query, TEXTS[best]), abs=1e-5)


def vector_search_paginates(s: Subject) -> None:
    """``offset`` skips the best-ranked matches."""
    store = s.make(index=True)
    for key, text in TEXTS.items():
        store.put(("docs",), key, {"text": text})
    ranked = [h.key for h in store.search(("docs",), query="tea", limit=4)]
    assert [h.key for h in store.search(("docs",), query="tea", limit=2, offset=1)] == ranked[1:3]


def query_without_an_index_is_ignored(s: Subject) -> None:
    """Without an index configuration a query ranks nothing: every match is listed,
    unscored."""
    store = s.make()
    store.put(("m",), "a", {"text": "the cat sat"})
    store.put(("m",), "b", {"text": "a dog barked"})
    hits = store.search(("m",), query="dog")
    assert sorted((h.key, h.score) for h in hits) == [("a", None), ("b", None)]


def index_false_items_come_unscored(s: Subject) -> None:
    """An item put with ``index=False`` is still listed and follows the ranked
    items of a query with score None."""
    store = s.make(index=True)
    store.put(("docs",), "ranked", {"text": "cats purr"})
    store.put(("docs",), "plain", {"text": "cats purr"}, index=False)
    hits = store.search(("docs",), query="cats purr", limit=10)
    assert [(h.key, h.score is None) for h in hits] == [("ranked", False), ("plain", True)]
    assert store.get(("docs",), "plain") is not None


def index_fields_per_put(s: Subject) -> None:
    """``put(index=[...])`` indexes those fields instead of the configured ones."""
    store = s.make(index=True)
    store.put(("docs",), "k", {"text": "unrelated words", "title": "cats purr"}, index=["title"])
    (hit,) = store.search(("docs",), query="cats purr", limit=1)
    assert hit.score == pytest.approx(1.0, abs=1e-6)


def list_namespaces_all_sorted(s: Subject) -> None:
    """``list_namespaces`` returns each namespace once, sorted."""
    store = s.make()
    for ns in [("b", "x"), ("a", "y", "z"), ("a", "x"), ("a", "x")]:
        store.put(ns, f"k{len(ns)}", {"v": 1})
    assert store.list_namespaces() == [("a", "x"), ("a", "y", "z"), ("b", "x")]


def list_namespaces_prefix_suffix_wildcard(s: Subject) -> None:
    """Prefix and suffix conditions, with ``*`` matching any one label."""
    store = s.make()
    for ns in [
        ("users", "u1", "prefs"),
        ("users", "u2", "prefs"),
        ("users", "u1", "notes"),
        ("docs", "d1"),
    ]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces(prefix=("users",)) == [
        ("users", "u1", "notes"),
        ("users", "u1", "prefs"),
        ("users", "u2", "prefs"),
    ]
    assert store.list_namespaces(suffix=("prefs",)) == [
        ("users", "u1", "prefs"),
        ("users", "u2", "prefs"),
    ]
    assert store.list_namespaces(prefix=("users", "*", "notes")) == [("users", "u1", "notes")]
    assert store.list_namespaces(prefix=("users",), suffix=("notes",)) == [("users", "u1", "notes")]


def list_namespaces_max_depth_and_pages(s: Subject) -> None:
    """``max_depth`` truncates namespaces (then deduplicates); limit/offset page."""
    store = s.make()
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("f",)]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "e"), ("f",)]
    assert store.list_namespaces(max_depth=1) == [("a",), ("f",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "e")]


def batch_results_align(s: Subject) -> None:
    """``batch`` returns one result per op, in order; puts return None."""
    store = s.make()
    store.put(("a",), "old", {"v": 0})
    results = store.batch(
        [
            PutOp(("a",), "new", {"v": 1}),
            GetOp(("a",), "old"),
            SearchOp(("a",)),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("a",)),)),
        ]
    )
    assert results[0] is None
    assert results[1] is not None and results[1].value == {"v": 0}  # type: ignore[union-attr]
    assert isinstance(results[2], list) and isinstance(results[3], list)
    assert results[3] == [("a",)]
    assert store.get(("a",), "new") is not None


def batch_reads_see_the_store_before_its_puts(s: Subject) -> None:
    """Reads in a batch see the store as it was before the batch's puts."""
    store = s.make()
    results = store.batch([PutOp(("a",), "k", {"v": 1}), GetOp(("a",), "k"), SearchOp(("a",))])
    assert results[1] is None and results[2] == []
    assert store.get(("a",), "k") is not None


def batch_last_put_wins(s: Subject) -> None:
    """Of several puts of one key in a batch, the last wins (a None deletes)."""
    store = s.make()
    store.batch([PutOp(("a",), "k", {"v": 1}), PutOp(("a",), "k", {"v": 2})])
    assert store.get(("a",), "k").value == {"v": 2}  # type: ignore[union-attr]
    store.batch([PutOp(("a",), "k", {"v": 3}), PutOp(("a",), "k", None)])
    assert store.get(("a",), "k") is None


def invalid_namespaces(s: Subject) -> None:
    """Empty namespaces, empty labels, labels with a period and the root label
    ``langgraph`` are ``InvalidNamespaceError`` s; nothing is written."""
    store = s.make()
    for ns in [(), ("a", ""), ("a.b",), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == []


def ttl(s: Subject) -> None:
    """With TTL support, an item expires ``ttl`` minutes after its last write or read
    (reads refresh it); without, a put with a TTL raises NotImplementedError."""
    store = s.make(ttl={"refresh_on_read": True})
    if not store.supports_ttl:
        with pytest.raises(NotImplementedError):
            store.put(("t",), "k", {"v": 1}, ttl=5)
        return
    assert s.advance is not None
    store.put(("t",), "short", {"v": 1}, ttl=5)
    store.put(("t",), "kept", {"v": 2}, ttl=None)
    s.advance(4)
    assert store.get(("t",), "short") is not None  # refreshes to 4 + 5
    s.advance(4)
    listed = store.search(("t",), refresh_ttl=False)  # at 8: alive, not refreshed
    assert sorted(i.key for i in listed) == ["kept", "short"]
    s.advance(2)
    assert store.get(("t",), "short") is None
    assert store.get(("t",), "kept") is not None


def async_api_equals_sync(s: Subject) -> None:
    """The async methods give the sync results."""
    store = s.make(index=True)

    async def go() -> tuple[Any, ...]:
        await store.aput(("a", "b"), "k", {"text": "cats purr"})
        await store.aput(("a", "c"), "j", {"text": "dogs bark"})
        item = await store.aget(("a", "b"), "k")
        hits = await store.asearch(("a",), query="cats purr", limit=2)
        spaces = await store.alist_namespaces(prefix=("a",))
        await store.adelete(("a", "c"), "j")
        return item, hits, spaces, await store.aget(("a", "c"), "j")

    item, hits, spaces, gone = asyncio.run(go())
    assert item is not None and item.value == store.get(("a", "b"), "k").value  # type: ignore[union-attr]
    assert [h.key for h in hits] == ["k", "j"]
    assert [h.score for h in hits] == pytest.approx(
        [1.0, cosine("cats purr", "dogs bark")], abs=1e-5
    )
    assert spaces == [("a", "b"), ("a", "c")] and gone is None


ROWS: list[Callable[[Subject], None]] = [
    put_then_get,
    get_missing,
    put_replaces,
    delete_removes,
    search_by_prefix,
    search_without_query_has_no_score,
    search_pagination,
    search_filters,
    vector_search_scores,
    vector_search_with_filter_and_limit,
    vector_search_paginates,
    query_without_an_index_is_ignored,
    index_false_items_come_unscored,
    index_fields_per_put,
    list_namespaces_all_sorted,
    list_namespaces_prefix_suffix_wildcard,
    list_namespaces_max_depth_and_pages,
    batch_results_align,
    batch_reads_see_the_store_before_its_puts,
    batch_last_put_wins,
    invalid_namespaces,
    ttl,
    async_api_equals_sync,
]


@pytest.mark.parametrize("row", ROWS, ids=[r.__name__ for r in ROWS])
def test_documented_behaviour(subject: Subject, row: Callable[[Subject], None]) -> None:
    row(subject)
