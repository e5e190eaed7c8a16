"""Bad arguments to the LlamaIndex adapters: each is an ``InvalidArgumentError`` (or the
documented ``ConfigurationError``) naming the argument and the value, raised before
anything is read, written or deleted (docs/errors.md, docs/llama_index.md). Found by a
fresh-user trial (trial 48: f01, f05, f06; f08: a HYBRID store's warning about
``alpha``)."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode
from llama_index_oam import OAMDBChatStore, OAMVectorStore

from oam_core import OracleAgentMemory, SearchStrategy, SQLiteMemoryStore
from oam_core.errors import ConfigurationError, InvalidArgumentError


def nodes_of(vs: OAMVectorStore) -> list[str]:
    return sorted(n.node_id for n in vs.get_nodes())


@pytest.fixture
def lettered(store: SQLiteMemoryStore) -> OAMVectorStore:
    """Nodes "doc-7" and the one-letter "d", "o", "c" that a string split into
    characters would hit."""
    vs = OAMVectorStore(store)
    vs.add(
        [
            TextNode(id_=i, text=f"node {i}", embedding=[1.0, float(n)])
            for n, i in enumerate(["doc-7", "d", "o", "c"])
        ]
    )
    return vs


def test_a_bare_string_as_node_ids_is_refused_and_nothing_is_deleted(
    lettered: OAMVectorStore,
) -> None:
    """f05: ``delete_nodes("doc-7")`` deleted the nodes "d", "o" and "c"."""
    bare = r"^node_ids must be a list of ids, got the bare string 'doc-7'$"
    with pytest.raises(InvalidArgumentError, match=bare):
        lettered.delete_nodes("doc-7")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=bare):
        asyncio.run(lettered.adelete_nodes("doc-7"))  # type: ignore[arg-type]
    assert nodes_of(lettered) == ["c", "d", "doc-7", "o"]
    with pytest.raises(InvalidArgumentError, match=bare):
        lettered.get_nodes("doc-7")  # type: ignore[arg-type]
    lettered.delete_nodes(["doc-7"])
    assert nodes_of(lettered) == ["c", "d", "o"]


@pytest.mark.parametrize("field", ["node_ids", "doc_ids"])
def test_a_bare_string_as_query_ids_is_refused(lettered: OAMVectorStore, field: str) -> None:
    query = VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=5, **{field: "doc-7"})
    with pytest.raises(
        InvalidArgumentError, match=rf"^query\.{field} must be a list of ids, got the bare string"
    ):
        lettered.query(query)
    listed = VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=5, node_ids=["doc-7"])
    assert lettered.query(listed).ids == ["doc-7"]


@pytest.fixture
def hybrid(embedded_store: SQLiteMemoryStore) -> OAMVectorStore:
    vs = OAMVectorStore(embedded_store)
    vs.add([TextNode(id_=f"n{i}", text=t) for i, t in enumerate(["red apples", "red cars"])])
    return vs


def test_a_query_mode_given_as_its_string_is_the_enum(hybrid: OAMVectorStore) -> None:
    """f01: ``VectorStoreQuery`` is a plain dataclass, so ``mode="text_search"`` stays a
    str; LlamaIndex's stores compare it with ``==``. It raised AttributeError."""
    assert hybrid.client.search_strategy is SearchStrategy.HYBRID
    for mode in ["text_search", VectorStoreQueryMode.TEXT_SEARCH]:
        with pytest.raises(
            ConfigurationError,
            match=r"^query mode 'text_search' needs a store opened with search_strategy=KEYWORD",
        ):
            hybrid.query(VectorStoreQuery(query_str="red", mode=mode))  # type: ignore[arg-type]
    for mode in ["sparse", "svm", VectorStoreQueryMode.SPARSE]:
        with pytest.raises(InvalidArgumentError, match=r"^query mode '\w+' is not supported"):
            hybrid.query(VectorStoreQuery(query_str="red", mode=mode))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"^query mode 'bogus' is not one of \["):
        hybrid.query(VectorStoreQuery(query_str="red", mode="bogus"))  # type: ignore[arg-type]
    for served in ["hybrid", "mmr", "default"]:
        by_str = hybrid.query(VectorStoreQuery(query_str="red apples", mode=served))  # type: ignore[arg-type]
        by_enum = hybrid.query(
            VectorStoreQuery(query_str="red apples", mode=VectorStoreQueryMode(served))
        )
        assert by_str.ids == by_enum.ids == ["n0"]


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"mmr_prefetch_k": "5"}, r"^mmr_prefetch_k must be an int >= 1 or None, got '5'$"),
        ({"mmr_prefetch_k": -5}, r"^mmr_prefetch_k must be an int >= 1 or None, got -5$"),
        ({"mmr_prefetch_k": True}, r"^mmr_prefetch_k must be an int >= 1 or None, got True$"),
        ({"mmr_prefetch_factor": "2"}, r"^mmr_prefetch_factor must be a finite number > 0"),
        ({"mmr_prefetch_factor": 0}, r"^mmr_prefetch_factor must be a finite number > 0"),
    ],
)
def test_mmr_prefetch_options_are_named(
    hybrid: OAMVectorStore, kwargs: dict[str, object], named: str
) -> None:
    """f01/f06: ``"5"`` was a TypeError, ``-5`` silently taken as ``k``."""
    query = VectorStoreQuery(query_str="red", mode=VectorStoreQueryMode.MMR, similarity_top_k=1)
    with pytest.raises(InvalidArgumentError, match=named):
        hybrid.query(query, **kwargs)
    assert len(hybrid.query(query, mmr_prefetch_k=2).ids or []) == 1
    assert len(hybrid.query(query, mmr_prefetch_factor=1.5).ids or []) == 1


def test_similarity_top_k_must_be_an_int_or_none(lettered: OAMVectorStore) -> None:
    """f06: ``similarity_top_k="2"`` was a TypeError; None is every match, as in
    ``SimpleVectorStore`` (whose ``get_top_k_embeddings`` keeps all for None)."""
    with pytest.raises(InvalidArgumentError, match=r"^similarity_top_k must be an int, got '2'$"):
        lettered.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k="2"))  # type: ignore[arg-type]
    every = lettered.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=None))  # type: ignore[arg-type]
    assert sorted(every.ids or []) == ["c", "d", "doc-7", "o"]


def test_add_refuses_what_is_not_a_node_and_writes_nothing(store: SQLiteMemoryStore) -> None:
    """f06: ``add(["text"])`` was an AttributeError."""
    vs = OAMVectorStore(store)
    good = TextNode(id_="n1", text="x", embedding=[1.0, 0.0])
    with pytest.raises(
        InvalidArgumentError, match=r"^nodes\[1\] must be a LlamaIndex node, got 'text'$"
    ):
        vs.add([good, "text"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match=r"^nodes must be a list of nodes, got the bare"):
        vs.add("text")  # type: ignore[arg-type]
    assert vs.get_nodes() == []


def test_a_chat_store_status_is_checked_even_for_an_unknown_key(
    memory: OracleAgentMemory,
) -> None:
    """f06: ``status="bogus"`` was a bare ValueError from ``MessageStatus()``, and for a
    key without messages it was not looked at."""
    db = OAMDBChatStore(memory)
    asyncio.run(db.add_message("chat", ChatMessage(role="user", content="hi")))
    read = r"^status must be a MessageStatus \('active', 'archived'\) or None, got 'bogus'$"
    for key in ["chat", "new-key"]:
        with pytest.raises(InvalidArgumentError, match=read):
            asyncio.run(db.get_messages(key, status="bogus"))  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match=read):
            asyncio.run(db.count_messages(key, status="bogus"))  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match=read):
            asyncio.run(db.delete_messages(key, status="bogus"))  # type: ignore[arg-type]
    write = r"^status must be a MessageStatus \('active', 'archived'\), got "
    new = ChatMessage(role="user", content="x")
    for bad in ["bogus", None]:
        with pytest.raises(InvalidArgumentError, match=write):
            asyncio.run(db.add_message("chat", new, status=bad))  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match=write):
            asyncio.run(db.set_messages("chat", [new], status=bad))  # type: ignore[arg-type]
    assert memory.get_thread_row("new-key") is None
    assert [m.content for m in asyncio.run(db.get_messages("chat", status="active"))] == ["hi"]  # type: ignore[arg-type]


HYBRID_TEXTS = [
    "The quarterly revenue report for ACME-4471",
    "revenue growth and quarterly profit",
    "ACME-4471 invoice",
    "cats and dogs",
    "profit margins this quarter",
]


def test_alpha_is_ignored_by_a_hybrid_store_with_one_warning(
    embedded_store: SQLiteMemoryStore,
) -> None:
    """f08: ``alpha``, ``sparse_top_k`` and ``hybrid_top_k`` (PGVector's, Qdrant's
    hybrid weights) were ignored without a word. They stay accepted; ``alpha`` warns
    once per vector store, saying why and what ranks by one list only."""
    vs = OAMVectorStore(embedded_store)
    vs.add([TextNode(id_=f"n{i}", text=t) for i, t in enumerate(HYBRID_TEXTS)])

    def query(**options: object) -> list[str]:
        q = VectorStoreQuery(query_str="ACME-4471 revenue", similarity_top_k=3, **options)  # type: ignore[arg-type]
        return vs.query(q).ids or []

    fused = query(mode="hybrid")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning without alpha
        assert query(mode="hybrid", sparse_top_k=1, hybrid_top_k=1) == fused
    with pytest.warns(
        UserWarning, match=r"^VectorStoreQuery\.alpha=0\.0 is ignored: a HYBRID"
    ) as seen:
        assert query(mode="hybrid", alpha=0.0) == fused
    assert 'searching_with("VECTOR")' in str(seen[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per vector store
        assert query(mode="hybrid", alpha=1.0) == query(alpha=0.5) == fused
        with embedded_store.searching_with("VECTOR"):  # the advice: nothing fused
            by_vector = OAMVectorStore(embedded_store)
            assert by_vector.query(VectorStoreQuery(query_str="x", alpha=1.0)).ids
    with pytest.warns(UserWarning, match=r"alpha=1\.0 is ignored"):
        OAMVectorStore(embedded_store).query(VectorStoreQuery(query_str="x", alpha=1.0))
