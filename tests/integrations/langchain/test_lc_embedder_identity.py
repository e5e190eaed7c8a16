"""The embedder identity through the LangChain adapters (a fresh-user review): a
``LangChainEmbedder`` is recorded by its model's name, an ``oam`` embedder wrapped for
LangChain and back keeps its id, and ``OAMVectorStore`` takes the store's
``allow_embedder_change``. SQLite file and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_oam import LangChainEmbedder, OAMEmbeddings, OAMVectorStore

from oam_core import EmbedderMismatchError, OracleAgentMemory, SchemaError
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


def test_the_mismatch_error_offers_no_cli_flag_for_a_langchain_model(
    connection: str, tmp_path: Path
) -> None:
    """Trial 48, f04: the error said ``(CLI: --embedder langchain:ModelA:...)``, a
    value the CLI refuses; it now says the store opens from Python with that model,
    and the CLI, given another embedder, says the same."""
    first = OAMVectorStore(ModelA(size=8), connection=connection)
    first.add_texts(["apples and pears"], ids=["a"])
    first.close()
    with pytest.raises(EmbedderMismatchError) as raised:
        OAMVectorStore(ModelB(size=8), connection=connection)
    assert str(raised.value).endswith(
        "; open it with the same embedder (from Python only, with that LangChain "
        "embeddings model: the CLI cannot load it), or pass allow_embedder_change=True "
        "if the two produce the same vectors"
    )
    assert "--embedder" not in str(raised.value)
    with pytest.raises(SchemaError) as other_dimension:
        OAMVectorStore(ModelB(size=4), connection=connection, allow_embedder_change=True)
    assert "open it with the recorded embedder (from Python only, with that LangChain" in (
        str(other_dimension.value)
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    args = ["search", "apples", "--db", connection, "--embedder", "hashing/8"]
    cli = subprocess.run(
        [sys.executable, "-m", "oam_core.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert cli.returncode == 1
    assert "(from Python only, with that LangChain embeddings model" in cli.stderr
    assert "--embedder langchain:" not in cli.stderr
    keywords = subprocess.run(
        [sys.executable, "-m", "oam_core.cli", *args[:4], "--embedder", "none"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert keywords.returncode == 0 and "apples and pears" in keywords.stdout
