"""LlamaIndex users switching to ``oam`` (issue 13): each scenario written as a
LlamaIndex user writes it, against the store they came from where one exists
(C tags: docs/failure-modes.md).

* item 5: MMR, hybrid and text-search query modes through ``VectorStoreIndex``;
  MMR equal to ``SimpleVectorStore``'s for the same vectors.
* item 6: ``ChatMemoryBuffer.from_defaults(chat_store=OAMChatStore(...))``.
* item 7 / C30: an ``IngestionPipeline`` run twice replaces, atomically.
* item 8: ``OAMVectorStore(connection="postgresql://...")`` on a fresh database.
* C29: similarities equal ``SimpleVectorStore``'s for the same vectors.
* C27: a chat store of another user can neither read nor clear a thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode
from llama_index_oam import OAMChatStore, OAMEmbedding, OAMVectorStore

from oam_core import OracleAgentMemory, OracleContextCard, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder

TEXTS = [
    "The cat sat on the warm mat by the fire.",
    "A cat slept on the mat near the fireplace.",
    "Cats love warm mats and sleeping by fires.",
    "The stock market fell sharply on Monday.",
    "Investors sold shares as markets dropped.",
    "A recipe for lemon cake with fresh berries.",
]


def _embed_model() -> OAMEmbedding:
    return OAMEmbedding(HashingEmbedder(64))


def _docs() -> list[Document]:
    return [Document(text=t, id_=f"doc{i}") for i, t in enumerate(TEXTS)]


def _index(vector_store: Any) -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        _docs(),
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=_embed_model(),
    )


def _hits(index: VectorStoreIndex, query: str, **kwargs: Any) -> list[tuple[str, float]]:
    found = index.as_retriever(**kwargs).retrieve(query)
    return [(n.node.get_content(), float(n.score or 0.0)) for n in found]


# -- C29: the similarity scale of LlamaIndex's own store --------------------------------


def test_c29_similarities_equal_simple_vector_store(store: SQLiteMemoryStore) -> None:
    ours = _hits(_index(OAMVectorStore(store)), "a cat on a mat", similarity_top_k=4)
    anchor = _hits(_index(SimpleVectorStore()), "a cat on a mat", similarity_top_k=4)
    assert [t for t, _ in ours] == [t for t, _ in anchor]
    assert [s for _, s in ours] == pytest.approx([s for _, s in anchor], abs=1e-6)


def test_c29_identical_and_orthogonal_vectors(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add(
        [
            TextNode(id_="same", text="a", embedding=[1.0, 0.0, 0.0]),
            TextNode(id_="ortho", text="b", embedding=[0.0, 1.0, 0.0]),
            TextNode(id_="opposite", text="c", embedding=[-1.0, 0.0, 0.0]),
        ]
    )
    got = vs.query(VectorStoreQuery(query_embedding=[1.0, 0.0, 0.0], similarity_top_k=3))
    assert got.ids == ["same", "ortho", "opposite"]
    assert got.similarities == pytest.approx([1.0, 0.0, -1.0], abs=1e-6)


# -- item 5: query modes -----------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0.2, 0.5, 0.9])
def test_mmr_mode_equals_simple_vector_store(store: SQLiteMemoryStore, threshold: float) -> None:
    kwargs: dict[str, Any] = {
        "similarity_top_k": 3,
        "vector_store_query_mode": "mmr",
        "vector_store_kwargs": {"mmr_threshold": threshold},
    }
    ours = _hits(_index(OAMVectorStore(store, embed_model=_embed_model())), "cat mat", **kwargs)
    anchor = _hits(_index(SimpleVectorStore()), "cat mat", **kwargs)
    assert [t for t, _ in ours] == [t for t, _ in anchor]
    assert [s for _, s in ours] == pytest.approx([s for _, s in anchor], abs=1e-5)


def test_mmr_mode_with_the_store_embedder_and_a_clear_error_without_one(
    tmp_path: Any,
) -> None:
    embedded = SQLiteMemoryStore(tmp_path / "e.db", embedder=HashingEmbedder(64))
    ours = _hits(
        _index(OAMVectorStore(embedded)),
        "cat mat",
        similarity_top_k=2,
        vector_store_query_mode="mmr",
    )
    assert len(ours) == 2 and "cat" in ours[0][0].lower()
    plain = OAMVectorStore(SQLiteMemoryStore(tmp_path / "p.db"))
    index = _index(plain)
    with pytest.raises(ValueError, match="embed_model"):
        index.as_retriever(vector_store_query_mode="mmr").retrieve("cat")


def test_mmr_mode_on_a_keyword_store(tmp_path: Any) -> None:
    store = SQLiteMemoryStore(tmp_path / "k.db", search_strategy="KEYWORD")
    vs = OAMVectorStore(store, embed_model=_embed_model())
    vs.add([TextNode(id_=f"t{i}", text=t) for i, t in enumerate(TEXTS)])
    got = vs.query(
        VectorStoreQuery(query_str="cat mat", similarity_top_k=2, mode=VectorStoreQueryMode.MMR)
    )
    assert len(got.ids or []) == 2 and set(got.ids or []) <= {"t0", "t1", "t2"}


def test_hybrid_mode_on_a_hybrid_store_and_a_named_error_elsewhere(
    tmp_path: Any, store: SQLiteMemoryStore
) -> None:
    hybrid = SQLiteMemoryStore(
        tmp_path / "h.db", embedder=HashingEmbedder(64), search_strategy="HYBRID"
    )
    index = _index(OAMVectorStore(hybrid))
    hits = _hits(index, "stock market", similarity_top_k=2, vector_store_query_mode="hybrid")
    assert {t for t, _ in hits} == {TEXTS[3], TEXTS[4]}
    vector_only = _index(
        OAMVectorStore(
            SQLiteMemoryStore(
                tmp_path / "v.db", embedder=HashingEmbedder(64), search_strategy="VECTOR"
            )
        )
    )
    with pytest.raises(
        ValueError, match=r"'hybrid' needs a store opened with search_strategy=HYBRID"
    ):
        vector_only.as_retriever(vector_store_query_mode="hybrid").retrieve("market")


def test_text_search_mode_on_a_keyword_store(tmp_path: Any) -> None:
    vs = OAMVectorStore(SQLiteMemoryStore(tmp_path / "k.db", search_strategy="KEYWORD"))
    vs.add([TextNode(id_=f"t{i}", text=t) for i, t in enumerate(TEXTS)])
    got = vs.query(
        VectorStoreQuery(
            query_str="lemon cake", similarity_top_k=1, mode=VectorStoreQueryMode.TEXT_SEARCH
        )
    )
    assert got.ids == ["t5"]


# -- item 7 / C30: re-ingestion -----------------------------------------------------------


def test_c30_ingestion_pipeline_run_twice_replaces(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), _embed_model()],
        vector_store=vs,
    )
    first = pipeline.run(documents=_docs())
    second = pipeline.run(documents=_docs())  # the cache hands back the same node ids
    assert sorted(n.node_id for n in second) == sorted(n.node_id for n in first)
    stored = vs.get_nodes()
    assert sorted(n.node_id for n in stored) == sorted(n.node_id for n in first)
    assert sorted(n.get_content() for n in stored) == sorted(TEXTS)


def test_c30_a_failed_re_ingestion_leaves_the_old_nodes(store: SQLiteMemoryStore) -> None:
    vs = OAMVectorStore(store)
    vs.add(
        [
            TextNode(id_="a", text="old a", embedding=[1.0, 0.0]),
            TextNode(id_="b", text="old b", embedding=[0.0, 1.0]),
        ]
    )
    with pytest.raises(ValueError, match="dimension"):
        vs.add(
            [
                TextNode(id_="a", text="new a", embedding=[1.0, 0.0]),
                TextNode(id_="b", text="new b", embedding=[0.0, 1.0, 0.0]),
            ]
        )
    assert sorted(n.get_content() for n in vs.get_nodes()) == ["old a", "old b"]


def test_a_node_id_of_another_scope_is_not_replaced(store: SQLiteMemoryStore) -> None:
    alice = OAMVectorStore(store, user_id="alice")
    bob = OAMVectorStore(store, user_id="bob")
    alice.add([TextNode(id_="n1", text="alice's", embedding=[1.0, 0.0])])
    with pytest.raises(ValueError, match="outside this vector store"):
        bob.add([TextNode(id_="n1", text="bob's", embedding=[1.0, 0.0])])
    assert [n.get_content() for n in alice.get_nodes()] == ["alice's"]


# -- item 8: a fresh PostgreSQL database ------------------------------------------------------


def test_connection_creates_the_store_on_a_fresh_postgres(pg_url: str) -> None:
    vs = OAMVectorStore(connection=pg_url)
    try:
        hits = _hits(_index(vs), "stock market", similarity_top_k=3)
        anchor = _hits(_index(SimpleVectorStore()), "stock market", similarity_top_k=3)
        assert [t for t, _ in hits] == [t for t, _ in anchor]
        assert [s for _, s in hits] == pytest.approx([s for _, s in anchor], abs=1e-6)
    finally:
        vs.close()
    again = OAMVectorStore(connection=pg_url, schema_policy="REQUIRE_EXISTING")
    try:
        assert len(again.get_nodes()) == len(TEXTS)
    finally:
        again.close()


def test_schema_policy_require_existing_on_a_fresh_database_is_a_clear_error(
    pg_url: str,
) -> None:
    with pytest.raises(ValueError):
        OAMVectorStore(connection=pg_url, schema_policy="REQUIRE_EXISTING")


# -- item 6 and C27: ChatMemoryBuffer over OAMChatStore ------------------------------------


def test_chat_memory_buffer_over_oam_chat_store(memory: OracleAgentMemory) -> None:
    buffer = ChatMemoryBuffer.from_defaults(
        chat_store=OAMChatStore(memory, user_id="ada"), chat_store_key="s1", token_limit=1000
    )
    buffer.put(ChatMessage(role="user", content="My cat is called Tom."))
    buffer.put(ChatMessage(role="assistant", content="Nice to meet Tom!"))
    again = ChatMemoryBuffer.from_defaults(
        chat_store=OAMChatStore(memory, user_id="ada"), chat_store_key="s1"
    )
    assert [(m.role.value, m.content) for m in again.get()] == [
        ("user", "My cat is called Tom."),
        ("assistant", "Nice to meet Tom!"),
    ]
    thread = memory.get_thread("s1")
    assert thread.user_id == "ada"
    assert [m.content for m in thread.get_messages()] == [
        "My cat is called Tom.",
        "Nice to meet Tom!",
    ]
    again.reset()
    assert again.get_all() == []


def test_chat_store_base_contract(memory: OracleAgentMemory) -> None:
    store = OAMChatStore(memory)
    store.set_messages("k", [ChatMessage(role="user", content=c) for c in ("a", "b", "c")])
    store.add_message("k", ChatMessage(role="user", content="x"), idx=1)
    assert [m.content for m in store.get_messages("k")] == ["a", "x", "b", "c"]
    assert store.delete_message("k", 0).content == "a"  # type: ignore[union-attr]
    assert store.delete_last_message("k").content == "c"  # type: ignore[union-attr]
    assert store.get_keys() == ["k"]
    assert [m.content for m in store.delete_messages("k") or []] == ["x", "b"]
    assert store.get_messages("k") == [] and store.delete_messages("k") is None


def test_c27_another_users_chat_store_cannot_read_or_clear(memory: OracleAgentMemory) -> None:
    OAMChatStore(memory, user_id="ada").add_message(
        "s1", ChatMessage(role="user", content="secret")
    )
    mallory = OAMChatStore(memory, user_id="mallory")
    with pytest.raises(ValueError, match="belongs to user_id 'ada'"):
        mallory.get_messages("s1")
    with pytest.raises(ValueError, match="belongs to user_id 'ada'"):
        mallory.delete_messages("s1")
    with pytest.raises(ValueError, match="belongs to user_id 'ada'"):
        mallory.add_message("s1", ChatMessage(role="user", content="hi"))
    assert mallory.get_keys() == []
    assert [m.content for m in OAMChatStore(memory, user_id="ada").get_messages("s1")] == ["secret"]


def test_vectors_round_trip_scores_are_cosine(store: SQLiteMemoryStore) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(20, 8))
    query = rng.normal(size=8)
    anchor = SimpleVectorStore()
    ours = OAMVectorStore(store)
    nodes = [
        TextNode(id_=f"n{i}", text=f"t{i}", embedding=v.tolist()) for i, v in enumerate(vectors)
    ]
    anchor.add([n.model_copy() for n in nodes])
    ours.add(nodes)
    q = VectorStoreQuery(query_embedding=query.tolist(), similarity_top_k=5)
    a, o = anchor.query(q), ours.query(q)
    assert o.ids == a.ids
    assert o.similarities == pytest.approx(a.similarities, abs=1e-6)


# -- item 10: the memory block keeps its memories under a small budget ------------------------


def test_memory_block_keeps_the_memory_when_the_budget_holds_it_alone(
    memory: OracleAgentMemory, event_loop: Any
) -> None:
    import asyncio

    from llama_index.core.utils import get_tokenizer
    from llama_index_oam import OAMMemoryBlock

    fact = "Ada's cat Tom is allergic to fish."
    memory.add_memory(fact, user_id="ada", agent_id="helper")
    block = OAMMemoryBlock(memory, user_id="ada", agent_id="helper", fallback_message_count=20)
    chatter = [
        ChatMessage(
            role="user" if i % 2 == 0 else "assistant",
            content=f"turn {i} about gardening, soil and compost",
        )
        for i in range(20)
    ]

    async def go() -> tuple[str, str | None]:
        await block.aput(chatter, session_id="s1")
        card = await block.aget(
            [ChatMessage(role="user", content="what may Tom eat, fish?")], session_id="s1"
        )
        # Memory asks for a card so much shorter that what is left holds the memory
        # alone (with a few tokens to spare), not the memory and the transcript;
        # tokens as Memory counts them.
        tokens = get_tokenizer()
        alone = len(tokens(OracleContextCard(relevant_results=_first_result(block, card)).content))
        return card, await block.atruncate(card, len(tokens(card)) - alone - 5)

    card, shorter = asyncio.run(go())
    assert fact in card and "gardening" in card
    assert shorter is not None and "gardening" not in shorter
    assert "allergic to fish" in shorter and "(truncated)" not in shorter


def _first_result(block: Any, content: str) -> list[Any]:
    return [block._cards[content][0].relevant_results[0][0]]
