"""LangChain and LangGraph users switching to ``oam`` (issue 13): each scenario written
as a LangChain user writes it, against the store they came from where one exists
(C tags: docs/failure-modes.md).

* item 1: ``langchain_core.indexing.index`` with incremental cleanup, equal to
  ``InMemoryVectorStore``'s results.
* item 2 / C27: a history opened with another user's id reads and clears
  nothing.
* item 3 / C28: ``RunnableWithMessageHistory`` over a client that cannot
  write fails on the call, never answers with nothing stored.
* item 4: PGVector / Chroma style filters on ``similarity_search`` and the retriever.
* item 5: MMR on a KEYWORD store.
* item 8: a fresh PostgreSQL database through ``connection=`` and
  ``OAMStore.from_conn_string``.
* item 9 / C29: relevance equal to langchain-core's cosine convention
  (InMemoryVectorStore's similarity, PGVector's ``1 - distance``).
* item 11: retriever documents carry score, record type and timestamps; datetimes in
  LangGraph items; ``session_id=`` and ``connection=`` on the history.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.indexing import InMemoryRecordManager, index
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_oam import OAMChatMessageHistory, OAMRetriever, OAMStore, OAMVectorStore

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import InvalidArgumentError

EMB = DeterministicFakeEmbedding(size=16)

# -- item 1: the indexing API -----------------------------------------------------------


def _run_index(vs: VectorStore, docs: list[Document], rm: InMemoryRecordManager) -> Any:
    return index(docs, rm, vs, cleanup="incremental", source_id_key="source", key_encoder="sha256")


def _contents(vs: VectorStore) -> list[str]:
    return sorted(d.page_content for d in vs.similarity_search("x", k=100))


def test_indexing_api_incremental_equals_in_memory_vector_store() -> None:
    docs = [
        Document(page_content="kittens purr", metadata={"source": "cats.txt"}),
        Document(page_content="cats nap all day", metadata={"source": "cats.txt"}),
        Document(page_content="dogs fetch sticks", metadata={"source": "dogs.txt"}),
    ]
    changed = [
        Document(page_content="kittens purr loudly", metadata={"source": "cats.txt"}),
        Document(page_content="cats nap all day", metadata={"source": "cats.txt"}),
    ]
    ours, anchor = OAMVectorStore(EMB), InMemoryVectorStore(EMB)
    results: dict[str, list[Any]] = {"ours": [], "anchor": []}
    for name, vs in (("ours", ours), ("anchor", anchor)):
        rm = InMemoryRecordManager(namespace=f"test/{name}")
        rm.create_schema()
        results[name].append(_run_index(vs, docs, rm))
        results[name].append(_run_index(vs, docs, rm))
        results[name].append(_run_index(vs, changed, rm))
    assert results["ours"] == results["anchor"]
    assert results["ours"][0] == {
        "num_added": 3,
        "num_updated": 0,
        "num_skipped": 0,
        "num_deleted": 0,
    }
    assert results["ours"][1]["num_skipped"] == 3
    assert results["ours"][2] == {
        "num_added": 1,
        "num_updated": 0,
        "num_skipped": 1,
        "num_deleted": 1,
    }
    assert (
        _contents(ours)
        == _contents(anchor)
        == [
            "cats nap all day",
            "dogs fetch sticks",
            "kittens purr loudly",
        ]
    )


# -- item 9 / C29: relevance on the anchors' scale ------------------------------------------


def test_c29_relevance_equals_in_memory_vector_store_similarity() -> None:
    texts = ["apples and pears", "a red car", "pears", "the stock market", "apple pie"]
    ours, anchor = OAMVectorStore(EMB), InMemoryVectorStore(EMB)
    ours.add_texts(texts, ids=[str(i) for i in range(5)])
    anchor.add_texts(texts, ids=[str(i) for i in range(5)])
    want = anchor.similarity_search_with_score("pears", k=5)  # cosine similarity
    with pytest.warns(UserWarning, match="Relevance scores"):  # a negative cosine, as PGVector
        got = ours.similarity_search_with_relevance_scores("pears", k=5)
    assert [d.id for d, _ in got] == [d.id for d, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
    # similarity_search_with_score is PGVector's: the cosine distance, and its relevance
    # is langchain-core's cosine convention applied to it
    distances = ours.similarity_search_with_score("pears", k=5)
    assert [VectorStore._cosine_relevance_score_fn(d) for _, d in distances] == pytest.approx(
        [s for _, s in want], abs=1e-6
    )


def test_c29_a_threshold_means_the_same_as_with_the_anchor() -> None:
    texts = ["apples and pears", "a red car", "pears", "the stock market", "apple pie"]
    ours, anchor = OAMVectorStore(EMB), InMemoryVectorStore(EMB)
    ours.add_texts(texts)
    anchor.add_texts(texts)
    threshold = 0.2
    want = [
        d.page_content for d, s in anchor.similarity_search_with_score("pears", 5) if s >= threshold
    ]
    retriever = ours.as_retriever(
        search_type="similarity_score_threshold",
        search_kwargs={"k": 5, "score_threshold": threshold},
    )
    with pytest.warns(UserWarning, match="Relevance scores"):
        got = [d.page_content for d in retriever.invoke("pears")]
    assert got == want and 0 < len(got) < len(texts)


# -- item 4: PGVector / Chroma filters -----------------------------------------------------

PGVECTOR_DOCS = [
    ("1", "there are cats in the pond", {"id": 1, "location": "pond", "topic": "animals"}),
    ("2", "ducks are also found in the pond", {"id": 2, "location": "pond", "topic": "animals"}),
    (
        "3",
        "fresh apples are available at the market",
        {"id": 3, "location": "market", "topic": "food"},
    ),
    ("4", "the market also sells fresh oranges", {"id": 4, "location": "market", "topic": "food"}),
    ("5", "the new art exhibit is fascinating", {"id": 5, "location": "museum", "topic": "art"}),
    (
        "6",
        "a sculpture exhibit is also at the museum",
        {"id": 6, "location": "museum", "topic": "art"},
    ),
    (
        "7",
        "a new coffee shop opened on Main Street",
        {"id": 7, "location": "Main Street", "topic": "food"},
    ),
    (
        "8",
        "the book club meets at the library",
        {"id": 8, "location": "library", "topic": "reading"},
    ),
    (
        "9",
        "the library hosts a weekly story time",
        {"id": 9, "location": "library", "topic": "reading"},
    ),
    (
        "10",
        "a cooking class for beginners",
        {"id": 10, "location": "community center", "topic": "classes"},
    ),
]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"id": {"$in": [1, 5, 2, 9]}}, ["1", "2", "5", "9"]),
        ({"id": {"$nin": [1, 5, 2, 9]}}, ["10", "3", "4", "6", "7", "8"]),
        ({"id": {"$gte": 8}}, ["10", "8", "9"]),
        ({"id": {"$gt": 3, "$lte": 5}}, ["4", "5"]),
        ({"location": {"$ne": "pond"}, "id": {"$lt": 5}}, ["3", "4"]),
        (
            {"$and": [{"id": {"$in": [1, 5, 2, 9]}}, {"location": {"$in": ["pond", "market"]}}]},
            ["1", "2"],
        ),
        ({"$or": [{"topic": "art"}, {"location": {"$eq": "library"}}]}, ["5", "6", "8", "9"]),
        ({"topic": {"$exists": False}}, []),
        ({"$not": {"topic": {"$in": ["food", "animals", "art"]}}}, ["10", "8", "9"]),
    ],
)
def test_pgvector_style_filters(flt: dict[str, Any], expected: list[str]) -> None:
    vs = OAMVectorStore(EMB)
    vs.add_texts(
        [t for _, t, _ in PGVECTOR_DOCS],
        [m for _, _, m in PGVECTOR_DOCS],
        ids=[i for i, _, _ in PGVECTOR_DOCS],
    )
    got = sorted(d.id or "" for d in vs.similarity_search("kitty", k=10, filter=flt))
    assert got == expected
    one = vs.similarity_search("kitty", k=1, filter=flt)  # filtered before the top-k cut
    assert len(one) == min(1, len(expected))
    retriever = vs.as_retriever(search_kwargs={"k": 10, "filter": flt})
    assert sorted(d.id or "" for d in retriever.invoke("kitty")) == expected


def test_bad_filters_name_the_operator_before_any_query() -> None:
    vs = OAMVectorStore(EMB)
    vs.add_texts(["a"], [{"n": 1}])
    with pytest.raises(ValueError, match=r"\$in.*5"):
        vs.similarity_search("a", filter={"n": {"$in": 5}})
    with pytest.raises(ValueError, match=r"\$like"):
        vs.similarity_search("a", filter={"n": {"$like": "a%"}})


# -- item 5: MMR on a KEYWORD store --------------------------------------------------------


def test_mmr_on_a_keyword_store() -> None:
    store = SQLiteMemoryStore(":memory:", search_strategy="KEYWORD")
    vs = OAMVectorStore(EMB, store=store)
    vs.add_texts(
        ["apple pie recipe", "apple pie recipe", "apple orchard tour", "car repair"],
        ids=["a", "b", "c", "d"],
    )
    picked = vs.max_marginal_relevance_search("apple", k=2, fetch_k=10, lambda_mult=0.1)
    assert len(picked) == 2
    assert {d.id for d in picked} & {"a", "b"} and "c" in {d.id for d in picked}
    assert "d" not in {d.id for d in picked}  # not a keyword match: never a candidate
    retriever = vs.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 10})
    assert len(retriever.invoke("apple")) == 2
    with pytest.raises(ValueError, match="KEYWORD store"):
        vs.max_marginal_relevance_search_by_vector(EMB.embed_query("apple"), k=2)


# -- items 2, 3, 11: chat history ---------------------------------------------------------------


# RunnableWithMessageHistory is deprecated in langchain-core 1.x (LangGraph persistence
# replaces it) but still what most chat code written for LangChain uses.
_DEPRECATED_RWMH = pytest.mark.filterwarnings(
    "ignore:RunnableWithMessageHistory is deprecated:DeprecationWarning"
)


def _chain(memory: OracleAgentMemory) -> RunnableWithMessageHistory:
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=["Nice to meet you, Ada!", "You are Ada."])
    return RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: OAMChatMessageHistory(memory, session_id=session_id, user_id="ada"),
        input_messages_key="question",
        history_messages_key="history",
    )


@_DEPRECATED_RWMH
def test_runnable_with_message_history_round_trip(tmp_path: Path) -> None:
    memory = OracleAgentMemory(connection=str(tmp_path / "c.db"), extract_memories=False)
    chain = _chain(memory)
    config: Any = {"configurable": {"session_id": "s1"}}
    assert chain.invoke({"question": "I'm Ada."}, config=config).content == "Nice to meet you, Ada!"
    chain.invoke({"question": "Who am I?"}, config=config)
    stored = [m.content for m in memory.get_thread("s1").get_messages()]
    assert stored == ["I'm Ada.", "Nice to meet you, Ada!", "Who am I?", "You are Ada."]
    memory.close()


@_DEPRECATED_RWMH
def test_c28_a_client_that_cannot_write_fails_the_call_not_silently(tmp_path: Path) -> None:
    memory = OracleAgentMemory(connection=str(tmp_path / "c.db"))  # extraction on, no LLM
    chain = _chain(memory)
    with pytest.raises(ValueError, match="no LLM"):
        chain.invoke({"question": "I'm Ada."}, config={"configurable": {"session_id": "s1"}})
    assert memory.get_thread_row("s1") is None
    assert memory.store.list("message") == []
    memory.close()


def test_c27_another_users_history_reads_and_clears_nothing(
    memory: OracleAgentMemory,
) -> None:
    mine = OAMChatMessageHistory(memory, "s1", user_id="ada")
    mine.add_messages([HumanMessage("my secret"), AIMessage("noted")])
    with pytest.raises(ValueError, match="belongs to user_id 'ada'"):
        OAMChatMessageHistory(memory, "s1", user_id="mallory")
    # a history made before the thread existed is refused on read and clear too
    early = OAMChatMessageHistory(memory, "s2", user_id="mallory")
    OAMChatMessageHistory(memory, "s2", user_id="ada").add_messages([HumanMessage("ada's")])
    with pytest.raises(ValueError, match="belongs to user_id 'ada'"):
        early.messages  # noqa: B018
    with pytest.raises(ValueError, match="belongs to user_id 'ada'"):
        early.clear()
    assert [m.content for m in OAMChatMessageHistory(memory, "s2", user_id="ada").messages] == [
        "ada's"
    ]
    assert [m.content for m in mine.messages] == ["my secret", "noted"]


def test_history_session_id_and_connection_string(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    history = OAMChatMessageHistory(session_id="s1", connection=url)
    history.add_messages([HumanMessage("hello"), AIMessage("hi")])
    assert history.session_id == "s1"
    history.close()
    again = OAMChatMessageHistory(session_id="s1", connection=url)
    assert [m.content for m in again.messages] == ["hello", "hi"]
    again.close()
    with pytest.raises(ValueError, match="same thread"):
        OAMChatMessageHistory(session_id="a", thread_id="b", connection=url)


# -- item 11: retriever metadata -----------------------------------------------------------------


def test_retriever_documents_carry_score_type_and_time(memory: OracleAgentMemory) -> None:
    memory.add_memory("Ada's cat is called Tom.", user_id="ada")
    (doc,) = OAMRetriever(memory, k=1, user_id="ada").invoke("Ada's cat is called Tom.")
    facts = doc.metadata["oam"]
    assert facts["record_type"] == "memory" and facts["user_id"] == "ada"
    assert facts["score"] == pytest.approx(1.0, abs=1e-6)
    assert datetime.fromisoformat(facts["created_at"]).tzinfo is not None


# -- item 11: datetimes in LangGraph items ------------------------------------------------------


def test_datetime_values_are_stored_as_iso_text() -> None:
    store = OAMStore()
    when = datetime(2026, 3, 1, 12, 30, tzinfo=timezone.utc)
    store.put(("events",), "e1", {"at": when, "day": when.date(), "n": 1})
    item = store.get(("events",), "e1")
    assert item is not None
    assert item.value == {"at": "2026-03-01T12:30:00+00:00", "day": "2026-03-01", "n": 1}
    with pytest.raises(ValueError, match="JSON"):
        store.put(("events",), "e2", {"x": object()})
    with pytest.raises(ValueError, match="JSON"):
        store.put(("events",), "e3", {"x": math.inf})
    store.close()


# -- item 8: fresh PostgreSQL ---------------------------------------------------------------------


def test_vector_store_creates_its_tables_on_a_fresh_postgres(pg_url: str) -> None:
    vs = OAMVectorStore(EMB, connection=pg_url)
    try:
        vs.add_texts(["apples", "cars"], ids=["a", "c"])
        assert vs.similarity_search("apples", k=1)[0].id == "a"
    finally:
        vs.close()


def test_langgraph_store_from_conn_string_on_a_fresh_postgres(pg_url: str) -> None:
    index_config: Any = {"dims": 16, "embed": EMB, "fields": ["text"]}
    with OAMStore.from_conn_string(pg_url, index=index_config) as store:
        store.setup()
        store.put(("docs",), "d1", {"text": "Python tutorial"})
        store.put(("docs",), "d2", {"text": "TypeScript guide"})
        hits = store.search(("docs",), query="Python tutorial", limit=1)
        assert [h.key for h in hits] == ["d1"] and hits[0].score == pytest.approx(1.0, abs=1e-6)
    with OAMStore.from_conn_string(pg_url, index=index_config) as again:
        assert again.get(("docs",), "d2").value == {"text": "TypeScript guide"}  # type: ignore[union-attr]


def test_store_ttl_sweeper_runs_and_stops(tmp_path: Path) -> None:
    import threading

    swept = threading.Event()
    store = OAMStore(
        SQLiteMemoryStore(tmp_path / "s.db", embedder=HashingEmbedder(8)),
        ttl={"default_ttl": 10, "sweep_interval_minutes": 60},
    )
    real = store.store.purge_expired

    def purge() -> int:
        swept.set()
        return real()

    store.store.purge_expired = purge  # type: ignore[method-assign]
    future = store.start_ttl_sweeper()
    assert store.start_ttl_sweeper() is future  # one sweeper
    assert swept.wait(timeout=30)  # the first sweep runs at once
    assert store.stop_ttl_sweeper(timeout=30)
    assert future.result(timeout=30) is None
    no_ttl = OAMStore()
    assert no_ttl.start_ttl_sweeper().done()
    store.store.close()


@pytest.mark.parametrize("minutes", [math.inf, 1e300, 1e12, -1, 0, math.nan, True, "5"])
def test_store_ttl_sweeper_interval_is_checked_at_the_call(tmp_path: Path, minutes: object) -> None:
    # an infinite or huge interval overflowed inside the sweeper thread (Event.wait)
    store = OAMStore(
        SQLiteMemoryStore(tmp_path / "s.db", embedder=HashingEmbedder(8)),
        ttl={"default_ttl": 10},
    )
    try:
        with pytest.raises(InvalidArgumentError, match=r"^sweep_interval_minutes must be"):
            store.start_ttl_sweeper(minutes)  # type: ignore[arg-type]
        assert store._sweeper is None  # nothing started
        with pytest.raises(InvalidArgumentError, match=r"ttl\['sweep_interval_minutes'\]"):
            OAMStore(store.store, ttl={"default_ttl": 10, "sweep_interval_minutes": minutes})  # type: ignore[typeddict-item]
        future = store.start_ttl_sweeper(1e6)  # large but waitable
        assert store.stop_ttl_sweeper(timeout=30) and future.result(timeout=30) is None
    finally:
        store.store.close()


# -- trial 42: what JSON cannot hold as stored is named as the caller's argument ----------


def test_an_int_past_64_bits_is_named_as_the_callers_argument_and_writes_nothing() -> None:
    """docs/langchain.md: an integer must fit in signed 64 bits (SQLite reads a larger
    JSON integer as a float); the error names ``metadatas[0]``, the message's field
    or the item's ``value``, not the store's internal ``metadata[0]``."""
    big = 2**64
    with OracleAgentMemory(
        connection=":memory:", embedder="hashing/16", extract_memories=False
    ) as memory:
        vs = OAMVectorStore(DeterministicFakeEmbedding(size=16), store=memory.store)
        with pytest.raises(ValueError, match=r"^metadatas\[0\]: integer 18446744073709551616 "):
            vs.add_texts(["x"], [{"h": big}], ids=["x"])
        assert vs.get_by_ids(["x"]) == []
        vs.add_texts(["x"], [{"h": 2**63 - 1, "t": (1, 2)}], ids=["x"])
        assert vs.get_by_ids(["x"])[0].metadata == {"h": 2**63 - 1, "t": [1, 2]}

        history = OAMChatMessageHistory(memory, "t1")
        with pytest.raises(
            ValueError, match=r"^messages\[1\]\.additional_kwargs\['h'\]: integer 1844"
        ):
            history.add_messages(
                [HumanMessage("ok"), HumanMessage("hi", additional_kwargs={"h": big})]
            )
        assert history.messages == []

        store = OAMStore(memory)
        with pytest.raises(ValueError, match=r"^value\['n'\]: integer -9223372036854775809 "):
            store.put(("a",), "k", {"n": {"h": -(2**63) - 1}})
        assert store.get(("a",), "k") is None
        with pytest.raises(ValueError, match=r"^value\['n'\]\['t'\] contains a NUL character"):
            store.put(("a",), "k", {"n": {"t": "pdf\x00text"}})
        assert store.get(("a",), "k") is None
        store.put(("a",), "k", {1: "x", "n": {2: "y"}})
        item = store.get(("a",), "k")
        assert item is not None and item.value == {"1": "x", "n": {"2": "y"}}


# -- trial 43: a NUL or lone surrogate is named as the caller's argument -------------------


@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"])
def test_a_nul_or_lone_surrogate_is_named_as_the_callers_argument_and_writes_nothing(
    bad: str,
) -> None:
    """docs/langchain.md: a NUL or a lone surrogate in a text, id, metadata or message
    field is an ``InvalidArgumentError`` naming the field as the caller passed it
    (``texts[0]``, ``ids[1]``, ``metadatas[1]['k']``,
    ``messages[1].additional_kwargs['a']``), not the store's ``contents[0]``,
    ``record_ids[0]``, ``metadata[1]`` or the stored message layout; nothing is written."""
    what = r"a NUL character \(U\+0000\)" if "\x00" in bad else r"a lone surrogate \(U\+D800\)"
    with OracleAgentMemory(
        connection=":memory:", embedder="hashing/16", extract_memories=False
    ) as memory:
        vs = OAMVectorStore(DeterministicFakeEmbedding(size=16), store=memory.store)
        cases: list[tuple[str, Any]] = [
            (r"texts\[1\]", lambda: vs.add_texts(["ok", bad], ids=["x", "y"])),
            (r"ids\[1\]", lambda: vs.add_texts(["ok", "ab"], ids=["x", bad])),
            (
                r"metadatas\[1\]\['k'\]",
                lambda: vs.add_texts(["ok", "ab"], [{}, {"k": bad}], ids=["x", "y"]),
            ),
            (
                r"metadatas\[0\]\['k'\]\[1\]",
                lambda: vs.add_texts(["ok"], [{"k": ["ok", bad]}], ids=["x"]),
            ),
        ]
        for name, write in cases:
            with pytest.raises(ValueError, match=rf"^{name} contains {what} at index 1; "):
                write()
        with pytest.raises(ValueError, match=rf"^texts\[0\] contains {what} "):
            vs.add_documents([Document(page_content=bad)], ids=["x"])
        assert vs.get_by_ids(["x", "y"]) == []
        assert memory.store.list("memory") == []

        history = OAMChatMessageHistory(memory, "t1")
        message = HumanMessage("hi", additional_kwargs={"a": bad})
        with pytest.raises(
            ValueError, match=rf"^messages\[1\]\.additional_kwargs\['a'\] contains {what} "
        ):
            history.add_messages([HumanMessage("ok"), message])
        with pytest.raises(ValueError, match=rf"^messages\[0\]\.content contains {what} "):
            history.add_messages([HumanMessage(bad)])
        assert history.messages == []
        assert memory.store.list("thread") == []
        vs.add_texts(["ok"], [{"k": "a\\u0000b"}], ids=["z"])  # a backslash, not a NUL
        assert vs.get_by_ids(["z"])[0].metadata == {"k": "a\\u0000b"}
