"""``OAMVectorStore``: node round trip, embeddings given or computed, deletes (never
"delete all" by accident), scope, scores, async twins, and a ``VectorStoreIndex``
retriever end to end (modelled on llama-index-core's own vector-store tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import (
    Document,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import (
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)
from llama_index_oam import OAMEmbedding, OAMVectorStore

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder


def node(i: int, doc: str = "d1", **metadata: object) -> TextNode:
    n = TextNode(
        id_=f"n{i}",
        text=f"text number {i}",
        metadata={"i": i, **metadata},
        embedding=[1.0, i / 10, 0.0],
    )
    n.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    return n


def ids(vs: OAMVectorStore, **kwargs: object) -> list[str]:
    return [n.node_id for n in vs.get_nodes(**kwargs)]  # type: ignore[arg-type]


def test_node_round_trip(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    original = TextNode(
        id_="a",
        text="The capital of France is Paris.",
        metadata={"city": "Paris", "nested": {"k": [1, 2]}},
        excluded_embed_metadata_keys=["nested"],
        embedding=[0.1, 0.2, 0.3],
        relationships={
            NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc-1"),
            NodeRelationship.NEXT: RelatedNodeInfo(node_id="b"),
        },
    )
    assert vs.add([original]) == ["a"]
    (back,) = vs.get_nodes(["a"])
    assert back is not original
    assert back.node_id == "a"
    assert back.get_content() == "The capital of France is Paris."
    assert back.metadata == {"city": "Paris", "nested": {"k": [1, 2]}}
    assert back.excluded_embed_metadata_keys == ["nested"]
    assert back.ref_doc_id == "doc-1"
    assert back.relationships[NodeRelationship.NEXT].node_id == "b"
    record = store.get("memory", "a")
    assert record is not None and record.content == "The capital of France is Paris."
    assert record.metadata is not None and record.metadata["city"] == "Paris"


def test_records_not_written_by_the_adapter_read_as_text_nodes(store: SQLiteMemoryStore) -> None:
    store.add(
        ["plain memory"], "memory", record_ids="m1", metadata={"k": "v"}, embeddings=[[1.0, 0.0]]
    )
    vs = OAMVectorStore(store)
    (n,) = vs.get_nodes()
    assert (n.node_id, n.get_content(), n.metadata) == ("m1", "plain memory", {"k": "v"})
    got = vs.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=1))
    assert got.ids == ["m1"]


def test_scores_are_similarities_best_first(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add(
        [
            TextNode(id_="same", text="x", embedding=[1.0, 0.0]),
            TextNode(id_="orth", text="y", embedding=[0.0, 1.0]),
            TextNode(id_="opp", text="z", embedding=[-1.0, 0.0]),
        ]
    )
    got = vs.query(VectorStoreQuery(query_embedding=[2.0, 0.0], similarity_top_k=10))
    assert got.ids == ["same", "orth", "opp"]
    assert got.similarities == pytest.approx([1.0, 0.0, -1.0], abs=1e-6)
    assert [n.node_id for n in got.nodes or []] == got.ids


def test_k_larger_than_data(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add([node(i) for i in range(3)])
    for k in (10, 100000):
        got = vs.query(VectorStoreQuery(query_embedding=[1.0, 0.0, 0.0], similarity_top_k=k))
        assert len(got.ids or []) == 3


def test_store_embedder_computes_missing_embeddings(embedded_store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(embedded_store)
    vs.add(
        [
            TextNode(id_="p", text="pizza with basil and mozzarella"),
            TextNode(id_="t", text="train timetable to Berlin"),
        ]
    )
    got = vs.query(VectorStoreQuery(query_str="basil pizza", similarity_top_k=1))
    assert got.ids == ["p"]


def test_node_without_embedding_and_no_embedder_is_rejected(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    with pytest.raises(ValueError, match="'late' has no embedding"):
        vs.add([node(1), TextNode(id_="late", text="no vector")])
    assert ids(vs) == []  # nothing written


def test_duplicate_ids_in_one_call_write_nothing(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add([node(1)])
    with pytest.raises(ValueError):
        vs.add([node(3), node(3)])
    assert ids(vs) == ["n1"]


def test_adding_a_stored_id_replaces_the_node(store: SQLiteMemoryStore) -> None:
    """LlamaIndex vector stores replace nodes with the same id (docs/failure-modes.md#c30)."""
    vs = OAMVectorStore(store)
    vs.add([node(1), node(2)])
    changed = node(1, topic="new")
    assert vs.add([node(3), changed]) == ["n3", "n1"]
    assert sorted(ids(vs)) == ["n1", "n2", "n3"]
    (n1,) = vs.get_nodes(["n1"])
    assert n1.metadata == {"i": 1, "topic": "new"}


def test_wrong_dimension_names_both(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add([node(1)])
    with pytest.raises(ValueError, match=r"dimension 2 .*dimension 3"):
        vs.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=1))
    assert ids(vs) == ["n1"]


def test_delete_by_ref_doc_id(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add([node(1, "d1"), node(2, "d2"), node(3, "d1")])
    vs.delete("d1")
    assert ids(vs) == ["n2"]
    vs.delete("unknown")
    assert ids(vs) == ["n2"]


def test_delete_nodes_never_deletes_everything_by_accident(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add([node(i, color="red" if i % 2 else "blue") for i in range(5)])
    vs.delete_nodes([])
    vs.delete_nodes([], MetadataFilters(filters=[]))
    assert len(ids(vs)) == 5
    with pytest.raises(ValueError, match="clear"):
        vs.delete_nodes()
    with pytest.raises(ValueError, match="clear"):
        vs.delete_nodes(None, MetadataFilters(filters=[]))
    assert len(ids(vs)) == 5
    vs.delete_nodes(["n0", "missing"])
    assert ids(vs) == ["n1", "n2", "n3", "n4"]
    red = MetadataFilters(filters=[MetadataFilter(key="color", value="red")])
    vs.delete_nodes(["n1", "n2"], red)  # ids AND filter: only n1
    assert ids(vs) == ["n2", "n3", "n4"]
    vs.delete_nodes([], red)  # [] = no id restriction
    assert ids(vs) == ["n2", "n4"]
    vs.clear()
    assert ids(vs) == []


def test_get_nodes_empty_ids_is_no_filter_and_ids_keep_order(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add([node(i) for i in range(4)])
    assert ids(vs, node_ids=[]) == ["n0", "n1", "n2", "n3"]
    assert ids(vs, node_ids=None) == ["n0", "n1", "n2", "n3"]
    assert ids(vs, node_ids=["n3", "nX", "n1", "n3"]) == ["n3", "n1"]


def test_query_node_ids_and_doc_ids_restrict_before_top_k(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add([node(i, "even" if i % 2 == 0 else "odd") for i in range(20)])
    q = [1.0, 0.0, 0.0]
    everything = vs.query(VectorStoreQuery(query_embedding=q, similarity_top_k=20, node_ids=[]))
    assert len(everything.ids or []) == 20
    by_id = vs.query(
        VectorStoreQuery(query_embedding=q, similarity_top_k=2, node_ids=["n19", "n7", "n12"])
    )
    assert by_id.ids == ["n7", "n12"]
    by_doc = vs.query(VectorStoreQuery(query_embedding=q, similarity_top_k=3, doc_ids=["odd"]))
    assert by_doc.ids == ["n1", "n3", "n5"]


def test_scope_keeps_stores_apart(store: SQLiteMemoryStore) -> None:
    alice = OAMVectorStore(store, user_id="alice")
    bob = OAMVectorStore(store, user_id="bob", record_type="fact")
    everyone = OAMVectorStore(store)
    alice.add([node(1)])
    bob.add([node(2)])
    assert ids(alice) == ["n1"] and ids(bob) == ["n2"]
    assert ids(everyone) == ["n1"]  # record_type memory, any user
    q = VectorStoreQuery(query_embedding=[1.0, 0.2, 0.0], similarity_top_k=5)
    assert alice.query(q).ids == ["n1"]
    assert bob.get_nodes(["n1"]) == []
    bob.delete_nodes(["n1"])  # not bob's: untouched
    alice.clear()
    assert ids(alice) == [] and ids(bob) == ["n2"]
    record = store.get("fact", "n2")
    assert record is not None and record.user_id == "bob"


def test_query_needs_something_to_rank(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    with pytest.raises(ValueError, match="query_embedding or a non-blank query_str"):
        vs.query(VectorStoreQuery(similarity_top_k=1))
    with pytest.raises(ValueError, match="mode 'svm' is not supported"):
        vs.query(
            VectorStoreQuery(
                query_embedding=[1.0], similarity_top_k=1, mode=VectorStoreQueryMode.SVM
            )
        )


def test_constructor_validation(store: SQLiteMemoryStore, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        OAMVectorStore()
    with pytest.raises(ValueError, match="exactly one"):
        OAMVectorStore(store, connection=":memory:")
    with pytest.raises(ValueError, match="record_type"):
        OAMVectorStore(store, record_type="message")
    with pytest.raises(ValueError, match="user_id"):
        OAMVectorStore(store, user_id=" ")
    vs = OAMVectorStore(connection=str(tmp_path / "own.db"))
    vs.add([node(1)])
    vs.close()
    reopened = SQLiteMemoryStore(tmp_path / "own.db")
    assert OAMVectorStore(reopened).get_nodes()[0].node_id == "n1"
    reopened.close()


def test_keyword_store_ranks_query_text_without_embed_model(db_path: Path) -> None:
    kw = SQLiteMemoryStore(db_path, search_strategy="KEYWORD")
    vs = OAMVectorStore(kw)
    assert vs.is_embedding_query is False
    vs.add([TextNode(id_="a", text="apples and pears"), TextNode(id_="b", text="trains")])
    got = vs.query(VectorStoreQuery(query_str="pears", similarity_top_k=5))
    assert got.ids == ["a"]
    kw.close()


def test_async_twins_match_sync(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    q = VectorStoreQuery(query_embedding=[1.0, 0.3, 0.0], similarity_top_k=3)

    async def run() -> None:
        assert await vs.async_add([node(i) for i in range(6)]) == [f"n{i}" for i in range(6)]
        sync_result = vs.query(q)
        async_result = await vs.aquery(q)
        assert async_result.ids == sync_result.ids == ["n3", "n4", "n2"]
        assert [n.node_id for n in await vs.aget_nodes(["n5"])] == ["n5"]
        await vs.adelete_nodes(["n5"])
        await vs.adelete("d1")
        assert await vs.aget_nodes() == []
        await vs.async_add([node(9)])
        await vs.aclear()
        assert vs.get_nodes() == []

    asyncio.run(run())


def test_retriever_end_to_end(embedded_store: SQLiteMemoryStore) -> None:
    """``VectorStoreIndex.from_vector_store(...).as_retriever()`` with LlamaIndex
    computing embeddings through ``OAMEmbedding`` and filters applied by the store."""
    embed_model = OAMEmbedding(HashingEmbedder(64))
    vs = OAMVectorStore(embedded_store, user_id="u1")
    index = VectorStoreIndex.from_vector_store(vs, embed_model=embed_model)
    docs = [
        Document(text="Paris is the capital of France.", metadata={"topic": "geo"}, id_="d1"),
        Document(text="Pizza Margherita has basil.", metadata={"topic": "food"}, id_="d2"),
        Document(text="Berlin is the capital of Germany.", metadata={"topic": "geo"}, id_="d3"),
    ]
    for doc in docs:
        index.insert(doc)
    retriever = index.as_retriever(similarity_top_k=2)
    hits = retriever.retrieve("capital of France")
    assert hits[0].node.get_content() == "Paris is the capital of France."
    assert hits[0].score is not None and hits[0].score > (hits[1].score or 0)
    food = index.as_retriever(
        similarity_top_k=5,
        filters=MetadataFilters(filters=[MetadataFilter(key="topic", value="food")]),
    ).retrieve("capital of France")
    assert [h.node.get_content() for h in food] == ["Pizza Margherita has basil."]
    index.delete_ref_doc("d1")
    rest = retriever.retrieve("capital of France")
    assert "Paris is the capital of France." not in [h.node.get_content() for h in rest]
    # The nodes are oam memories of user u1, visible to the oam client too.
    client = OracleAgentMemory(store=embedded_store)
    found = client.search("basil", user_id="u1", record_types={"memory"}, k=1)
    assert found[0][0].content == "Pizza Margherita has basil."


def test_oam_embedding_matches_the_store_embedder() -> None:
    embedder = HashingEmbedder(32)
    model = OAMEmbedding(embedder)
    text = "custard tarts in Belem"
    assert model.get_text_embedding(text) == pytest.approx(embedder.embed([text])[0].tolist())
    query = embedder.embed([text], is_query=True)[0].tolist()
    assert model.get_query_embedding(text) == pytest.approx(query)
    assert asyncio.run(model.aget_query_embedding(text)) == pytest.approx(query)
    assert len(model.get_text_embedding_batch(["a", "b", "c"])) == 3
    with pytest.raises(ValueError, match="IEmbedder"):
        OAMEmbedding("hashing")  # type: ignore[arg-type]


def test_retriever_over_a_keyword_store_ranks_the_query_text(db_path: Path) -> None:
    """A KEYWORD store needs no real embed model: the retriever's query text is ranked
    by the store (BM25, docs/store.md#keyword-search) even though LlamaIndex embeds nodes with a mock."""
    kw = SQLiteMemoryStore(db_path, search_strategy="KEYWORD")
    index = VectorStoreIndex.from_vector_store(
        OAMVectorStore(kw), embed_model=MockEmbedding(embed_dim=4)
    )
    for text in ["apples and pears are fruit", "trains run on rails", "pears grow on trees"]:
        index.insert(Document(text=text))
    hits = index.as_retriever(similarity_top_k=5).retrieve("pears")
    assert sorted(h.node.get_content() for h in hits) == [
        "apples and pears are fruit",
        "pears grow on trees",
    ]
    assert all(h.score is not None and 0.0 <= h.score <= 1.0 for h in hits)
    kw.close()


def test_metadata_json_cannot_hold_is_named_by_node_id_and_writes_nothing(
    store: SQLiteMemoryStore,
) -> None:
    """docs/llama_index.md#vector-store: an integer must fit in signed 64 bits (SQLite
    reads a larger JSON integer as a float); the error names the node, not the store's
    internal ``metadata[0]``. A tuple reads back as a list."""
    vs = OAMVectorStore(store)
    ok = TextNode(id_="ok", text="fine", embedding=[1.0, 0.0])
    big = TextNode(id_="big", text="x", metadata={"h": 2**64}, embedding=[1.0, 0.0])
    with pytest.raises(ValueError, match=r"^node 'big' metadata: integer 18446744073709551616 "):
        vs.add([ok, big])
    assert vs.get_nodes(["ok", "big"]) == []
    vs.add(
        [TextNode(id_="t", text="x", metadata={"t": (1, 2), "h": -(2**63)}, embedding=[1.0, 0.0])]
    )
    assert vs.get_nodes(["t"])[0].metadata == {"t": [1, 2], "h": -(2**63)}


@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"], ids=["nul", "surrogate"])
def test_a_nul_or_lone_surrogate_is_named_by_node_id_and_writes_nothing(
    store: SQLiteMemoryStore, bad: str
) -> None:
    """docs/llama_index.md#vector-store: a NUL or lone surrogate in a node's text, id or
    metadata is an ``InvalidArgumentError`` naming the node (``node 'n1' text``,
    ``node 'n1' metadata['m']``), not the store's ``index_texts[0]`` or
    ``metadata[1]``; nothing of the call is written."""
    what = (
        r"a NUL character \(U\+0000\) at index 1"
        if "\x00" in bad
        else r"a lone surrogate \(U\+D800\) at index 1"
    )
    vs = OAMVectorStore(store)
    ok = TextNode(id_="ok", text="fine", embedding=[1.0, 0.0])
    cases = [
        (r"node 'n1' text", TextNode(id_="n1", text=bad, embedding=[1.0, 0.0])),
        (
            r"node 'n1' metadata\['m'\]\[0\]",
            TextNode(id_="n1", text="x", metadata={"m": [bad]}, embedding=[1.0, 0.0]),
        ),
        (
            r"node id 'a\\x00b'" if "\x00" in bad else r"node id 'a\\ud800b'",
            TextNode(id_=bad, text="x", embedding=[1.0, 0.0]),
        ),
    ]
    for name, node in cases:
        with pytest.raises(ValueError, match=rf"^{name} contains {what}; "):
            vs.add([ok, node])
    assert vs.get_nodes(["ok", "n1", bad]) == []
    assert store.list("memory") == []
    vs.add([TextNode(id_="t", text="a\\u0000b", metadata={"m": "\\u0000"}, embedding=[1.0, 0.0])])
    [back] = vs.get_nodes(["t"])  # a backslash and u0000 is text, not a NUL
    assert (back.get_content(), back.metadata) == ("a\\u0000b", {"m": "\\u0000"})
