"""The embedder identity through the LangChain adapters (a fresh-user review): a
``LangChainEmbedder`` is recorded by its model's name, an ``oam`` embedder wrapped for
LangChain and back keeps its id, and ``OAMVectorStore`` takes the store's
``allow_embedder_change``. SQLite file and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_oam import LangChainEmbedder, OAMEmbeddings, OAMVectorStore

from oam_core import EmbedderMismatchError, OracleAgentMemory
from oam_core.embedders.hashing import HashingEmbedder


class ModelA(DeterministicFakeEmbedding):
    model: str = "fake-model-a"


class ModelB(DeterministicFakeEmbedding):
    model_name: str = "org/fake-model-b"


@pytest.fixture(params=["sqlite", "postgres"])
def connection(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "vs.db")
    url: str = request.getfixturevalue("pg_url")
    return url


def test_the_id_names_the_langchain_model() -> None:
    assert LangChainEmbedder(ModelA(size=8)).embedder_id == "langchain:ModelA:fake-model-a"
    assert LangChainEmbedder(ModelB(size=8)).embedder_id == "langchain:ModelB:org/fake-model-b"
    plain = LangChainEmbedder(DeterministicFakeEmbedding(size=8))
    assert plain.embedder_id == "langchain:DeterministicFakeEmbedding"


def test_an_oam_embedder_wrapped_and_unwrapped_keeps_its_id(connection: str) -> None:
    inner = HashingEmbedder(16)
    round_trip = LangChainEmbedder(OAMEmbeddings(inner))
    assert round_trip.embedder_id == "hashing/16"
    assert round_trip.embedding_dimension == 16
    vs = OAMVectorStore(OAMEmbeddings(inner), connection=connection)
    vs.add_texts(["the cat sleeps on the piano"], ids=["c"])
    assert vs.store.embedder_identity is not None
    assert vs.store.embedder_identity.embedder_id == "hashing/16"
    vs.close()
    with OracleAgentMemory(
        connection=connection, embedder="hashing/16", extract_memories=False
    ) as memory:  # the library opens it with the same embedder by its own name
        [(record, _)] = memory.store.search("cat piano", 1)
        assert record.id == "c"


def test_vector_store_passes_allow_embedder_change_through(connection: str) -> None:
    first = OAMVectorStore(ModelA(size=8), connection=connection)
    first.add_texts(["apples"], ids=["a"])
    first.close()
    with pytest.raises(EmbedderMismatchError) as raised:
        OAMVectorStore(ModelB(size=8), connection=connection)
    message = str(raised.value)
    assert "'langchain:ModelA:fake-model-a' (8 dimensions)" in message
    assert "'langchain:ModelB:org/fake-model-b' (8 dimensions)" in message
    changed = OAMVectorStore(ModelB(size=8), connection=connection, allow_embedder_change=True)
    assert [d.id for d in changed.get_by_ids(["a"])] == ["a"]
    changed.close()
    store = OAMVectorStore(ModelA(size=8)).store
    with pytest.raises(ValueError, match="allow_embedder_change applies to connection="):
        OAMVectorStore(ModelA(size=8), store=store, allow_embedder_change=True)
    store.close()
