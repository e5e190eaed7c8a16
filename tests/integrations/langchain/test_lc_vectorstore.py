"""OAMVectorStore and OAMRetriever beyond the standard suites: score orientation,
k, deletes, filters, scope, upsert, metadata, MMR, async parity, persistence
(issue 4 items 2, 3 and 5; C09-C13, C15, C18)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_oam import LangChainEmbedder, OAMEmbeddings, OAMRetriever, OAMVectorStore
from pydantic import ValidationError

from oam_core import InvalidArgumentError, OracleAgentMemory, SearchStrategy, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.threads import thread_store


class MapEmbeddings(Embeddings):
    """Texts with fixed vectors (unknown texts: a fixed far-away vector)."""

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = table
        self.dim = len(next(iter(table.values())))

    def _vec(self, text: str) -> list[float]:
        return [float(x) for x in self.table.get(text, [0.0] * (self.dim - 1) + [1.0])]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


GEOMETRY = MapEmbeddings(
    {
        "query": [1, 0, 0, 0],
        "same": [1, 0, 0, 0],
        "near": [0.99, 0.14, 0, 0],
        "side": [0.6, 0, 0.8, 0],
        "orthogonal": [0, 1, 0, 0],
        "opposite": [-1, 0, 0, 0],
    }
)


@pytest.fixture
def vs() -> OAMVectorStore:
    return OAMVectorStore(GEOMETRY)


def test_relevance_orientation_and_threshold(vs: OAMVectorStore) -> None:  # C12, C29
    """Relevance is langchain-core's cosine convention (PGVector's ``1 - distance``):
    the cosine similarity, so an opposite vector scores -1 and LangChain warns about
    it exactly as it does for PGVector."""
    vs.add_texts(["same", "orthogonal", "opposite"], ids=["s", "o", "x"])
    with pytest.warns(UserWarning, match="Relevance scores must be between 0 and 1"):
        scored = vs.similarity_search_with_relevance_scores("query", k=3)
    assert [(d.id, s) for d, s in scored] == [("s", 1.0), ("o", 0.0), ("x", -1.0)]
    with pytest.warns(UserWarning, match="Relevance scores"):
        kept = vs.similarity_search_with_relevance_scores("query", k=3, score_threshold=0.9)
    assert [d.id for d, _ in kept] == ["s"]
    distances = vs.similarity_search_with_score("query", k=3)
    assert [round(d, 5) for _, d in distances] == [0.0, 1.0, 2.0]


def test_keyword_store_relevance_in_unit_range() -> None:
    db = SQLiteMemoryStore(":memory:", search_strategy=SearchStrategy.KEYWORD)
    vs = OAMVectorStore(DeterministicFakeEmbedding(size=4), store=db)
    vs.add_texts(["red apple pie", "green apple", "blue car"], ids=["1", "2", "3"])
    scored = vs.similarity_search_with_relevance_scores("apple pie", k=3)
    assert [d.id for d, _ in scored] == ["1", "2"]
    assert scored[0][1] == 1.0 and 0.0 <= scored[1][1] < 1.0


def test_k_larger_than_data_and_mmr(vs: OAMVectorStore) -> None:  # C13
    vs.add_texts(["same", "near", "side"])
    assert len(vs.similarity_search("query", k=10)) == 3
    assert len(vs.similarity_search("query", k=100_000)) == 3
    assert len(vs.max_marginal_relevance_search("query", k=10, fetch_k=20)) == 3
    # MMR picks among the fetch_k candidates, as InMemoryVectorStore: never more
    assert len(vs.max_marginal_relevance_search("query", k=3, fetch_k=2)) == 2
    with pytest.raises(ValueError, match="k"):
        vs.similarity_search("query", k=0)


def test_mmr_prefers_diversity(vs: OAMVectorStore) -> None:
    vs.add_texts(["same", "near", "side"], ids=["same", "near", "side"])
    assert [d.id for d in vs.similarity_search("query", k=2)] == ["same", "near"]
    picked = vs.max_marginal_relevance_search("query", k=2, fetch_k=3, lambda_mult=0.25)
    assert [d.id for d in picked] == ["same", "side"]
    by_vector = vs.max_marginal_relevance_search_by_vector([1, 0, 0, 0], k=2, lambda_mult=0.25)
    assert [d.id for d in by_vector] == ["same", "side"]
    with pytest.raises(ValueError, match="lambda_mult"):
        vs.max_marginal_relevance_search("query", lambda_mult=1.5)


def test_delete_never_deletes_everything(vs: OAMVectorStore) -> None:  # C15
    ids = vs.add_texts(["same", "near", "side", "orthogonal", "opposite"])
    assert vs.delete([]) is True
    with pytest.raises(ValueError, match="every document"):
        vs.delete(None)
    with pytest.raises(ValueError, match="bare string"):
        vs.delete(ids[0])  # type: ignore[arg-type]
    assert len(vs.get_by_ids(ids)) == 5
    vs.delete([ids[1], ids[3], "unknown"])
    assert [d.id for d in vs.get_by_ids(ids)] == [ids[0], ids[2], ids[4]]


def test_by_vector_and_dimension_mismatch(vs: OAMVectorStore) -> None:  # C09
    vs.add_texts(["same", "side"], ids=["a", "b"])
    assert [d.id for d in vs.similarity_search_by_vector([0.6, 0, 0.8, 0], k=1)] == ["b"]
    with pytest.raises(ValueError, match=r"3.*4|4.*3"):
        vs.similarity_search_by_vector([1.0, 0.0, 0.0], k=1)
    assert len(vs.similarity_search("query", k=5)) == 2


FILTER_CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"kind": "doc"}, {"a", "b"}),
    ({"src": {"kind": "doc"}}, {"a"}),  # C10 nested subset
    ({"src": {"kind": "pdf"}}, set()),
    ({"tags": ["a"]}, {"b"}),  # C11 list equality
    ({"tags": {"$array_contains": "a"}}, {"a", "b", "c"}),
    ({"tags": {"$array_contains_any": ["b", "z"]}}, {"a", "c"}),
    ({"kind": {"$not": "doc"}}, {"c", "d"}),
    ({"flag": True}, {"c"}),  # True never equals 1
    ({"flag": 1}, {"d"}),
]


def _filter_store() -> OAMVectorStore:
    vs = OAMVectorStore(DeterministicFakeEmbedding(size=8))
    vs.add_texts(
        ["alpha", "beta", "gamma", "delta"],
        [
            {"kind": "doc", "tags": ["a", "b"], "src": {"kind": "doc", "n": 1}},
            {"kind": "doc", "tags": ["a"]},
            {"kind": "note", "tags": ["b", "a"], "flag": True},
            {"flag": 1},
        ],
        ids=["a", "b", "c", "d"],
    )
    return vs


@pytest.mark.parametrize(("flt", "expected"), FILTER_CASES)
def test_filters_sync_and_async_agree(flt: dict[str, Any], expected: set[str]) -> None:
    vs = _filter_store()
    assert {d.id for d in vs.similarity_search("alpha", k=10, filter=flt)} == expected
    got = asyncio.run(vs.asimilarity_search("alpha", k=10, filter=flt))
    assert {d.id for d in got} == expected
    mmr = vs.max_marginal_relevance_search("alpha", k=10, filter=flt)
    assert {d.id for d in mmr} == expected


def test_filter_before_top_k() -> None:
    vs = _filter_store()
    assert [d.id for d in vs.similarity_search("alpha", k=1, filter={"flag": 1})] == ["d"]


def test_invalid_filter_is_an_error_not_unfiltered() -> None:
    vs = _filter_store()
    with pytest.raises(ValueError):
        vs.similarity_search("alpha", k=4, filter={"kind": {"$regex": "d.*"}})
    with pytest.raises(ValueError):
        vs.similarity_search("alpha", k=4, filter={"$or": []})
    # InMemoryVectorStore's callable filter and other non-dicts: a filter error naming it
    for bad in (lambda doc: True, "kind", ["kind"], 5):
        with pytest.raises(ValueError, match="filter must be a dict in the oam filter"):
            vs.similarity_search("alpha", k=4, filter=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="filter must be a dict in the oam filter"):
            vs.as_retriever(search_kwargs={"filter": bad}).invoke("alpha")


def test_metadata_round_trips_exactly_without_internal_keys() -> None:
    db = SQLiteMemoryStore(":memory:", embedder=HashingEmbedder(16))
    vs = OAMVectorStore(OAMEmbeddings(db.embedder), store=db)  # type: ignore[arg-type]
    meta = {"a": 1, "nested": {"x": [1, 2.5, None, "s"]}, "ok": False}
    vs.add_texts(["text"], [meta], ids=["m1"])
    assert vs.get_by_ids(["m1"]) == [Document(id="m1", page_content="text", metadata=meta)]
    # a record written by oam itself (the extraction pipeline's path), with
    # library-reserved provenance that callers cannot write
    from oam_core.apis.batch import PendingRecordBatch

    thread_store(db).create_thread_row("t")
    extracted = PendingRecordBatch(
        texts=["extracted"],
        record_type="memory",
        record_ids=["m2"],
        thread_ids="t",
        metadata={"topic": "t", "$agent_memory": {"source_message_ids": ["x"]}},
    )
    assert thread_store(db).commit_thread_pass(
        "t", expected_state={}, state={}, batches=[extracted]
    ) == ["m2"]
    assert vs.get_by_ids(["m2"])[0].metadata == {"topic": "t"}
    assert vs.similarity_search("extracted", k=1)[0].metadata == {"topic": "t"}
    with pytest.raises(ValueError, match="reserved"):
        vs.add_texts(["x"], [{"$agent_memory": {}}])
    with pytest.raises(ValueError):
        vs.add_texts(["x"], [{"bad": float("nan")}])
    assert len(db.list("memory")) == 2


def test_upsert_and_scope_isolation(tmp_path: Path) -> None:
    db = SQLiteMemoryStore(tmp_path / "scoped.db")
    alice = OAMVectorStore(GEOMETRY, store=db, user_id="alice")
    bob = OAMVectorStore(GEOMETRY, store=db, user_id="bob")
    everyone = OAMVectorStore(GEOMETRY, store=db)
    alice.add_texts(["same"], [{"v": 1}], ids=["a1"])
    alice.add_texts(["near"], [{"v": 2}], ids=["a1"])  # upsert
    bob.add_texts(["side"], ids=["b1"])
    assert [(d.page_content, d.metadata) for d in alice.get_by_ids(["a1"])] == [("near", {"v": 2})]
    assert len(db.list("memory")) == 2
    assert db.get("memory", "a1").user_id == "alice"  # type: ignore[union-attr]
    assert [d.id for d in alice.similarity_search("query", k=5)] == ["a1"]
    assert {d.id for d in everyone.similarity_search("query", k=5)} == {"a1", "b1"}
    assert bob.get_by_ids(["a1"]) == []
    bob.delete(["a1"])  # not bob's: left alone
    assert alice.get_by_ids(["a1"]) != []
    with pytest.raises(ValueError, match="outside"):
        bob.add_texts(["x"], ids=["a1"])
    assert alice.get_by_ids(["a1"])[0].page_content == "near"
    db.add(["a fact"], "fact", record_ids="f1")
    with pytest.raises(ValueError, match="fact record outside"):
        everyone.add_texts(["x"], ids=["f1"])  # would silently replace the fact
    assert db.get("fact", "f1") is not None
    with pytest.raises(ValueError, match="duplicate"):
        alice.add_texts(["x", "y"], ids=["d", "d"])
    assert db.get("memory", "d") is None


def test_duplicate_ids_error_names_the_first_few_and_the_count(vs: OAMVectorStore) -> None:
    ids = [f"id-{i:05d}" for i in range(9000)] * 2
    with pytest.raises(ValueError, match="duplicate ids") as raised:
        vs.add_texts(["x"] * len(ids), ids=ids)
    message = str(raised.value)
    assert "'id-00000'" in message and "(9000 ids)" in message
    assert "'id-08999'" not in message
    assert len(message) < 300


@pytest.mark.parametrize("own_embedder", [True, False])
def test_empty_text_is_stored_but_never_found(own_embedder: bool) -> None:
    emb = DeterministicFakeEmbedding(size=6)
    vs = (
        OAMVectorStore(emb)
        if own_embedder
        else OAMVectorStore(emb, store=SQLiteMemoryStore(":memory:"))
    )
    vs.add_texts(["", "x"], ids=["e", "x"])
    assert vs.get_by_ids(["e"]) == [Document(id="e", page_content="", metadata={})]
    assert [d.id for d in vs.similarity_search("x", k=5)] == ["x"]


def test_connection_persists_and_from_texts(tmp_path: Path) -> None:
    path = tmp_path / "docs.db"
    emb = DeterministicFakeEmbedding(size=8)
    first = OAMVectorStore.from_texts(
        ["foo", "bar"], emb, [{"n": 1}, {"n": 2}], ids=["1", "2"], connection=str(path)
    )
    first.close()
    again = OAMVectorStore(emb, connection=f"sqlite:///{path}")
    assert [d.id for d in again.similarity_search("bar", k=1)] == ["2"]
    again.close()
    made = asyncio.run(OAMVectorStore.afrom_texts(["x"], emb, ids=["x1"], record_type="fact"))
    assert made.store.get("fact", "x1") is not None
    with pytest.raises(ValueError, match="record_type"):
        OAMVectorStore(emb, record_type="message")
    with pytest.raises(ValueError, match="both"):
        OAMVectorStore(emb, store=made.store, connection=":memory:")


def test_async_twins_match_sync(vs: OAMVectorStore) -> None:  # C18
    async def run() -> list[Any]:
        ids = await vs.aadd_texts(["same", "near", "side"], ids=["1", "2", "3"])
        return [
            ids,
            await vs.asimilarity_search_with_score("query", k=3),
            await vs.asimilarity_search_with_relevance_scores("query", k=3),
            await vs.asimilarity_search_by_vector([1, 0, 0, 0], k=2),
            await vs.amax_marginal_relevance_search("query", k=2, lambda_mult=0.25),
            await vs.aget_by_ids(["3", "1"]),
            await vs.adelete(["2"]),
            await vs.asimilarity_search("query", k=3),
        ]

    ids, scored, relevance, by_vec, mmr, got, deleted, after = asyncio.run(run())
    assert ids == ["1", "2", "3"]
    assert [(d.id, round(x, 4)) for d, x in scored] == [("1", 0.0), ("2", 0.0099), ("3", 0.4)]
    assert [d.id for d, _ in relevance] == ["1", "2", "3"]
    assert [d.id for d in by_vec] == ["1", "2"]
    assert [d.id for d in mmr] == ["1", "3"]
    assert [d.id for d in got] == ["3", "1"]
    assert deleted is True
    assert [d.id for d in after] == [d.id for d in vs.similarity_search("query", k=3)] == ["1", "3"]


def test_embedding_wrappers_round_trip() -> None:
    lc = DeterministicFakeEmbedding(size=12)
    embedder = LangChainEmbedder(lc)
    assert embedder.embedding_dimension == 12
    docs = embedder.embed(["a", "b"])
    assert docs.shape == (2, 12) and docs.dtype.name == "float32"
    back = OAMEmbeddings(embedder)
    assert back.embed_query("a") == pytest.approx(lc.embed_query("a"), abs=1e-6)
    assert asyncio.run(back.aembed_documents(["a"]))[0] == pytest.approx(
        lc.embed_documents(["a"])[0], abs=1e-6
    )
    assert LangChainEmbedder(GEOMETRY).embedding_dimension == 4  # measured by one probe
    with pytest.raises(ValueError, match="embeddings"):
        LangChainEmbedder(object())  # type: ignore[arg-type]


# ------------------------------------------------------------------- retriever


@pytest.fixture
def client() -> OracleAgentMemory:
    store = SQLiteMemoryStore(":memory:", embedder=HashingEmbedder(64))
    memory = OracleAgentMemory(store=store, extract_memories=False)
    memory.add_memory("Alice's dog is called Biscuit.", user_id="alice", metadata={"topic": "pets"})
    memory.add_memory(
        "Alice flies to Lisbon in May.", user_id="alice", metadata={"topic": "travel"}
    )
    memory.add_memory("Alice drinks tea.", user_id="alice", metadata={"topic": "food"})
    memory.add_memory("Bob's dog is called Rex.", user_id="bob", metadata={"topic": "pets"})
    thread = memory.create_thread(thread_id="t1", user_id="alice")
    thread.add_messages([{"role": "user", "content": "My dog Biscuit loves the beach."}])
    return memory


def test_retriever_k_at_construction_and_per_call(client: OracleAgentMemory) -> None:
    retriever = OAMRetriever(client, k=2, user_id="alice")
    assert len(retriever.invoke("dog")) == 2
    assert len(retriever.invoke("dog", k=1)) == 1
    assert len(retriever.invoke("dog", k=4)) == 4
    assert len(OAMRetriever(store=client.store, k=3).invoke("dog")) == 3
    with pytest.raises(ValueError):
        OAMRetriever(client, k=0)
    with pytest.raises(ValueError, match="k"):
        retriever.invoke("dog", k=0)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"k": 0}, r"\bk must be an int >= 1, got 0"),
        ({"search_type": "mmr", "fetch_k": 0}, r"\bfetch_k must be an int >= 1, got 0"),
        ({"fetch_k": -3}, r"\bfetch_k must be an int >= 1, got -3"),
    ],
)
def test_retriever_names_the_argument_that_is_wrong(
    client: OracleAgentMemory, options: dict[str, Any], named: str
) -> None:
    # pydantic's ValidationError (a ValueError), as LangChain's retrievers raise it
    with pytest.raises(ValidationError, match=named) as info:
        OAMRetriever(client, **options)
    if "fetch_k" in options:
        assert "\nk must" not in str(info.value) and " k must" not in str(info.value)
    mmr = OAMRetriever(client, search_type="mmr")
    with pytest.raises(InvalidArgumentError, match=r"\bfetch_k must be an int >= 1"):
        mmr.invoke("dog", fetch_k=0)


def test_retriever_scope_types_and_filter(client: OracleAgentMemory) -> None:
    alice_mem = OAMRetriever(client, user_id="alice", record_types=frozenset({"memory"}), k=10)
    assert {d.page_content for d in alice_mem.invoke("dog")} == {
        "Alice's dog is called Biscuit.",
        "Alice flies to Lisbon in May.",
        "Alice drinks tea.",
    }
    pets = OAMRetriever(client, k=10, filter={"topic": "pets"})
    assert {d.page_content for d in pets.invoke("dog")} == {
        "Alice's dog is called Biscuit.",
        "Bob's dog is called Rex.",
    }
    travel = pets.invoke("dog", filter={"topic": "travel"})
    assert [{k: v for k, v in d.metadata.items() if k != "oam"} for d in travel] == [
        {"topic": "travel"}
    ]
    in_thread = OAMRetriever(client, thread_id="t1", k=10).invoke("beach")
    assert [d.page_content for d in in_thread] == ["My dog Biscuit loves the beach."]
    assert set(in_thread[0].metadata) == {"oam"}  # no oam-internal keys ($message, ...)
    assert in_thread[0].metadata["oam"]["record_type"] == "message"
    assert in_thread[0].metadata["oam"]["thread_id"] == "t1"


def test_retriever_threshold_and_mmr(client: OracleAgentMemory) -> None:
    loose = OAMRetriever(
        client, k=10, search_type="similarity_score_threshold", score_threshold=0.0
    )
    strict = OAMRetriever(
        client, k=10, search_type="similarity_score_threshold", score_threshold=0.99
    )
    assert len(loose.invoke("Alice drinks tea.")) == 5  # 4 memories + 1 message
    assert [d.page_content for d in strict.invoke("Alice drinks tea.")] == ["Alice drinks tea."]
    mmr = OAMRetriever(client, k=2, search_type="mmr", fetch_k=10, user_id="alice")
    assert len(mmr.invoke("dog")) == 2


def test_threshold_search_needs_a_threshold_like_langchain(client: OracleAgentMemory) -> None:
    """review F7: as langchain-core's VectorStoreRetriever, a threshold search without
    a threshold is a ValueError when the retriever is made."""
    from langchain_core.vectorstores import InMemoryVectorStore, VectorStoreRetriever

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    with pytest.raises(ValueError, match="score_threshold"):
        VectorStoreRetriever(vectorstore=store, search_type="similarity_score_threshold")
    with pytest.raises(ValueError, match="needs score_threshold"):
        OAMRetriever(client, search_type="similarity_score_threshold")
    with pytest.raises(ValueError, match="needs score_threshold"):
        OAMRetriever(client, search_type="similarity_score_threshold", score_threshold=None)


def test_retriever_async_matches_sync(client: OracleAgentMemory) -> None:
    retriever = OAMRetriever(client, k=3, user_id="alice")
    assert asyncio.run(retriever.ainvoke("dog")) == retriever.invoke("dog")
    assert asyncio.run(retriever.ainvoke("dog", k=1)) == retriever.invoke("dog", k=1)


def test_retriever_argument_errors(client: OracleAgentMemory) -> None:
    with pytest.raises(ValueError, match="needs"):
        OAMRetriever()
    with pytest.raises(ValueError, match="not both"):
        OAMRetriever(client, store=client.store)
    with pytest.raises(ValueError):
        OAMRetriever(client, search_type="fuzzy")
    with pytest.raises(TypeError, match="unexpected"):
        OAMRetriever(client).invoke("dog", top_n=3)


def test_the_distance_kind_comes_from_the_store_results() -> None:
    """The adapter reads what each distance measures from the result (its ``kind``)
    instead of guessing it from the strategy: a HYBRID store's text query returns
    fused distances, its query vector cosine ones, a VECTOR store's query long enough
    to be searched in parts cosine ones too (docs/store.md#search-strategies)."""
    from langchain_oam._search import SearchScope, search_steps

    from oam_core.steps import run_sync

    long_query = "the park puppy and the trainer walked along the river in the morning sun"
    kinds = {}
    for strategy in ("VECTOR", "HYBRID"):
        store = SQLiteMemoryStore(
            ":memory:",
            embedder=HashingEmbedder(64, max_input_tokens=12),
            search_strategy=strategy,
        )
        store.add(["the park puppy", "a puppy trainer by the river"], "memory")
        scope = SearchScope(record_types=frozenset({"memory"}))
        for label, kwargs in (
            ("short", {"query": "park"}),
            ("long", {"query": long_query}),
            ("vector", {"vector": store.embedder.embed(["park"], is_query=True)[0]}),
        ):
            hits = run_sync(search_steps(store, scope, 2, **kwargs))
            kinds[strategy, label] = {kind for _, _, kind in hits}
        store.close()
    assert kinds == {
        ("VECTOR", "short"): {"cosine"},
        ("VECTOR", "long"): {"cosine"},
        ("VECTOR", "vector"): {"cosine"},
        ("HYBRID", "short"): {"normalized"},
        ("HYBRID", "long"): {"normalized"},
        ("HYBRID", "vector"): {"cosine"},
    }
