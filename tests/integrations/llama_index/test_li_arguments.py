"""Bad arguments to the LlamaIndex adapters: each is an ``InvalidArgumentError`` (or the
documented ``ConfigurationError``) naming the argument and the value, raised before
anything is read, written or deleted (docs/errors.md, docs/llama_index.md). Found by a
fresh-user trial (trial 48: f01, f05, f06)."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index_oam import OAMVectorStore

from oam_core import SQLiteMemoryStore
from oam_core.errors import InvalidArgumentError


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
