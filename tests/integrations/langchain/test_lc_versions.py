"""The LangChain and LangGraph adapters read current memories only (docs/versions.md,
docs/langchain.md#versions-of-a-memory): a memory replaced by ``update_memory`` or
ended by ``invalidate_memory`` is not returned by the retriever, the vector store or
the LangGraph store, and k results come back when k current ones exist."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import anyio
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_oam import OAMRetriever, OAMStore, OAMVectorStore
from langchain_oam.store import record_id

from oam_core import OracleAgentMemory


def _memory() -> OracleAgentMemory:
    return OracleAgentMemory(connection=":memory:", embedder="hashing/64", extract_memories=False)


def test_the_retriever_returns_no_superseded_memory() -> None:
    with _memory() as memory:
        old = memory.add_memory("Alice lives in Lisbon by the river", user_id="alice")
        for n in range(6):
            old = memory.update_memory(old, f"Alice lives in Lisbon flat {n} by the river")
        current = memory.update_memory(old, "Alice lives in Berlin now", reason="moved")
        trains = memory.add_memory("Alice likes trains by the river", user_id="alice")
        retriever = OAMRetriever(memory, k=2, user_id="alice", record_types={"memory"})
        docs = retriever.invoke("Alice lives in Lisbon by the river")
        assert sorted(d.id or "" for d in docs) == sorted([current, trains])
        adocs = anyio.run(retriever.ainvoke, "Alice lives in Lisbon by the river")
        assert sorted(d.id or "" for d in adocs) == sorted([current, trains])
        memory.invalidate_memory(trains)
        assert [d.id for d in retriever.invoke("trains by the river")] == [current]


def test_the_vector_store_returns_no_superseded_memory() -> None:
    with _memory() as memory:
        vs = OAMVectorStore(DeterministicFakeEmbedding(size=64), store=memory.store)
        [old] = vs.add_texts(["The office is in Lisbon"], ids=["office"])
        new = memory.update_memory(old, "The office is in Porto", reason="moved")
        found = vs.similarity_search("The office is in Lisbon", k=4)
        assert [d.id for d in found] == [new]
        scored = vs.similarity_search_with_relevance_scores("office", k=4)
        assert [d.id for d, _ in scored] == [new]
        got = vs.get_by_ids([old, new])  # by id too: only the version that holds
        assert [(d.id, d.page_content) for d in got] == [(new, "The office is in Porto")]
        assert [d.id for d in anyio.run(vs.aget_by_ids, [old, new])] == [new]


def test_the_langgraph_store_returns_no_invalidated_item() -> None:
    with _memory() as memory:
        store = OAMStore(memory)
        store.put(("memories", "alice"), "car", {"text": "Alice has a red car"})
        store.put(("memories", "alice"), "dog", {"text": "Alice's dog is Biscuit"})
        memory.invalidate_memory(record_id(("memories", "alice"), "car"), reason="sold")
        ranked = store.search(("memories",), query="Alice has a red car")
        assert [i.key for i in ranked] == ["dog"]
        listed = store.search(("memories",))  # no query: the unranked listing
        assert [i.key for i in listed] == ["dog"]
        assert store.get(("memories", "alice"), "car") is None  # as search: ended
        dog = store.get(("memories", "alice"), "dog")
        assert dog is not None and dog.value == {"text": "Alice's dog is Biscuit"}


def test_a_document_with_a_future_timestamp_is_read_and_found_at_once() -> None:
    """Trial 48 f09: ``timestamps`` is the document's event time (a meeting in 2030);
    the validity window used to start there, so ``add_texts`` returned the id while
    ``get_by_ids`` and every search left the document out until 2030, and LangChain's
    indexing API, holding the id, never added it again."""
    with _memory() as memory:
        vs = OAMVectorStore(DeterministicFakeEmbedding(size=16), store=memory.store)
        future, past = "2030-05-01T09:00:00+00:00", "2020-01-01T00:00:00+00:00"
        ids = vs.add_texts(
            ["Team offsite in Lisbon", "Budget review"], ids=["f", "p"], timestamps=[future, past]
        )
        assert ids == ["f", "p"]
        assert [d.id for d in vs.get_by_ids(["f", "p"])] == ["f", "p"]
        assert vs.similarity_search("Team offsite in Lisbon", k=1)[0].id == "f"
        assert {d.id for d in vs.similarity_search("Budget review", k=5)} == {"f", "p"}
        stored = memory.store.get("memory", "f")
        assert stored is not None
        assert (stored.timestamp, stored.valid_from, stored.valid_until) == (future, None, None)
        asyncio.run(vs.aadd_texts(["Offsite moved"], ids=["f"], timestamps=future))
        assert [d.page_content for d in vs.get_by_ids(["f"])] == ["Offsite moved"]


def test_a_langgraph_item_is_read_at_once_when_its_clock_runs_ahead() -> None:
    """Trial 48 f09 in the LangGraph store: an item's TTL anchor is a record timestamp
    computed on ``OAMStore``'s clock. With that clock ahead of the store's (one given
    to ``OAMStore`` only), the anchor lay in the store's future and the window
    starting there hid the item from ``get`` and ``search``."""
    with _memory() as memory:
        ahead = OAMStore(memory, clock=lambda: memory.store.clock_now() + timedelta(days=30))
        ahead.put(("memories",), "k", {"text": "Alice has a red car"}, ttl=60)
        item = ahead.get(("memories",), "k", refresh_ttl=False)
        assert item is not None and item.value == {"text": "Alice has a red car"}
        assert [i.key for i in ahead.search(("memories",))] == ["k"]
        stored = memory.store.get("memory", record_id(("memories",), "k"))
        assert stored is not None and stored.valid_from is None
