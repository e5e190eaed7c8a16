"""OracleDBEmbedder statements and ``OracleAgentMemory(connection=oracledb pool)``
wiring (docs/oracle.md#opening-a-store; no database)."""

from __future__ import annotations

import array
from typing import Any

import numpy as np
import oracledb
import pytest
from fakedb import FakeConnection, FakePool
from oracle_helpers import script_schema

import oam_core
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.memory.client import OracleAgentMemory
from oam_core.store.oracle import OracleDBEmbedder, OracleDBMemoryStore
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.opener import pool_args


def test_embedder_runs_vector_embedding_per_text(conn: FakeConnection) -> None:
    conn.script(r"VECTOR_EMBEDDING", [(array.array("f", [1.0, 0.0, 2.0]),)])
    emb = OracleDBEmbedder(conn, "doc_model")
    out = emb.embed(["a", "b"])
    assert out.dtype == np.float32 and out.shape == (2, 3)
    assert emb.embedding_dimension == 3
    calls = conn.statements()
    assert [c.sql for c in calls] == [
        "SELECT VECTOR_EMBEDDING(DOC_MODEL USING :text AS DATA) FROM dual"
    ] * 2
    assert [c.binds for c in calls] == [{"text": "a"}, {"text": "b"}]
    assert not [c for c in conn.calls if c.kind == "setinputsizes"]  # VARCHAR2 binds


def test_embedder_cuts_text_to_the_varchar2_limit(conn: FakeConnection) -> None:
    conn.script(r"VECTOR_EMBEDDING", [(array.array("f", [1.0]),)])
    OracleDBEmbedder(conn, "m", dimension=1).embed(["é" * 3000])
    sent = conn.statements()[0].binds["text"]
    assert sent == "é" * 2000 and len(sent.encode("utf-8")) == 4000


def test_embedder_probes_its_dimension_once(conn: FakeConnection) -> None:
    conn.script(r"VECTOR_EMBEDDING", [(array.array("f", [0.5] * 4),)])
    emb = OracleDBEmbedder(conn, "owner.doc_model")
    assert emb.embedding_dimension == 4 and emb.embedding_dimension == 4
    assert len(conn.statements()) == 1
    assert emb.model == "OWNER.DOC_MODEL"


@pytest.mark.parametrize("model", ["", "1model", "m; DROP TABLE x", "a b", 'q"x'])
def test_embedder_rejects_bad_model_names(conn: FakeConnection, model: str) -> None:
    with pytest.raises(ValueError, match="model"):
        OracleDBEmbedder(conn, model)


def test_embedder_without_a_vector_raises(conn: FakeConnection) -> None:
    conn.script(r"VECTOR_EMBEDDING", [(None,)])
    with pytest.raises(ValueError, match="no embedding"):
        OracleDBEmbedder(conn, "m", dimension=3).embed(["x"])


def test_public_lazy_exports() -> None:
    assert oam_core.OracleDBMemoryStore is OracleDBMemoryStore
    assert oam_core.OracleDBEmbedder is OracleDBEmbedder
    from oam_core.core import OracleDBMemoryStore as core_store

    assert core_store is OracleDBMemoryStore


def test_client_builds_the_oracle_store_from_a_pool() -> None:
    pool = FakePool()
    script_schema(pool.conn, Names("S1_"))
    client = OracleAgentMemory(
        connection=pool, embedder=HashingEmbedder(8), memory_store_id="s1", extract_memories=False
    )
    store = client._store
    assert isinstance(store, OracleDBMemoryStore) and store.session.is_pool
    pool.conn.reset()
    client.add_memory("likes pizza", user_id="u1")
    assert pool.conn.kinds()[-1] == "commit"
    assert any("INSERT INTO S1_MEMORIES" in s for s in pool.conn.sql())
    client.close()


def test_client_default_policy_requires_an_existing_schema() -> None:
    with pytest.raises(ValueError, match="CREATE_IF_EMPTY"):
        OracleAgentMemory(connection=FakeConnection(), embedder=HashingEmbedder(8))


def test_client_rejects_prefix_and_id_together() -> None:
    with pytest.raises(ValueError, match="not both"):
        OracleAgentMemory(connection=FakeConnection(), table_name_prefix="A_", memory_store_id="b")


def test_oracle_url_opens_a_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    assert pool_args("oracle://oam:p%40ss@db.example:1522/FREEPDB1") == {
        "user": "oam",
        "password": "p@ss",
        "dsn": "db.example:1522/FREEPDB1",
        "min": 1,
        "max": 4,
        "increment": 1,
    }
    made: list[dict[str, Any]] = []

    class _Pool(FakePool):
        closed = False

        def close(self) -> None:
            self.closed = True

    pool = _Pool()
    script_schema(pool.conn, Names(""))

    def create_pool(**kwargs: Any) -> FakePool:
        made.append(kwargs)
        return pool

    monkeypatch.setattr(oracledb, "create_pool", create_pool)
    client = OracleAgentMemory.open(
        "oracle://oam:pw@localhost/FREEPDB1", embedder=HashingEmbedder(8), extract_memories=False
    )
    assert made[0]["dsn"] == "localhost:1521/FREEPDB1"
    client.close()
    assert pool.closed  # the store created this pool, so it closes it


@pytest.mark.parametrize("url", ["oracle://localhost/FREEPDB1", "oracle://u:p@host"])
def test_bad_oracle_urls(url: str) -> None:
    with pytest.raises(ValueError, match="oracle://user:password@host"):
        pool_args(url)


def test_async_driver_objects_are_rejected() -> None:
    fake = type("AsyncConnectionPool", (FakePool,), {})()
    with pytest.raises(ValueError, match="synchronous"):
        OracleDBMemoryStore(None, fake)


def test_store_and_embedder_on_one_raw_connection_share_one_lock(conn: FakeConnection) -> None:
    script_schema(conn, Names(""), dim=None, hybrid_index=True, vectorizer=True)
    emb = OracleDBEmbedder(conn, "doc_model", dimension=8)
    store = OracleDBMemoryStore(emb, conn, search_strategy="HYBRID")
    assert store.session is emb.session and store.session.lock is emb.session.lock
