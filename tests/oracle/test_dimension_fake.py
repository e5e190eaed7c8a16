"""The vector dimension a flexible ``VECTOR(*, FLOAT32)`` column learns, at the statement
level (docs/oracle.md#vector-dimension): the write that learns it locks the metadata,
reads the dimension recorded meanwhile and refuses another, before any row; the store
adopts the recorded one; a rolled-back write leaves nothing recorded.

Two store objects share one ``FakeConnection``; what the first committed reaches the
second through the scripted metadata read (the fake keeps no table contents).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from fakedb import FakeConnection, FakeDbError
from oracle_helpers import binds_of, parse_oracle, script_schema

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.oracle import OracleDBMemoryStore, sql
from oam_core.store.oracle.names import Names

N = Names("S1_")
LOCK = f"SELECT meta_value FROM {N.meta} WHERE meta_key = :meta_key FOR UPDATE"
READ = f"SELECT meta_value FROM {N.meta} WHERE meta_key = :meta_key"


def open_store(conn: FakeConnection, clock: Any, **kwargs: Any) -> OracleDBMemoryStore:
    return OracleDBMemoryStore(
        kwargs.pop("embedder", None), conn, memory_store_id="s1", clock=clock, **kwargs
    )


def flexible_schema(conn: FakeConnection) -> None:
    """An existing VECTOR schema with a flexible column and no dimension recorded."""
    script_schema(conn, N, dim=None, meta={"embedding_column": "flexible"})


def committed_meta(conn: FakeConnection) -> dict[str, str]:
    """Metadata rows MERGEd by committed transactions (the calls up to the last commit
    or rollback are one transaction)."""
    out: dict[str, str] = {}
    pending: dict[str, str] = {}
    for call in conn.calls:
        if call.kind == "executemany" and call.sql.startswith(f"MERGE INTO {N.meta}"):
            pending.update({r["meta_key"]: r["meta_value"] for r in call.binds})
        elif call.kind in ("commit", "rollback"):
            if call.kind == "commit":
                out.update(pending)
            pending = {}
    return out


def serve_meta(conn: FakeConnection, rows: dict[str, str]) -> None:
    """Answer the one-key metadata read from ``rows`` (what is committed now)."""

    def answer(_sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        key = binds["meta_key"]
        return [(rows[key],)] if key in rows else []

    conn.script(re.escape(READ) + "$", answer)


def reads_only(conn: FakeConnection) -> bool:
    """The calls since the last reset read (the id check, the lock, the dimension) and
    rolled back: nothing was written."""
    statements = conn.sql()
    return (
        statements[-2:] == [LOCK, READ]
        and all(s.startswith("SELECT") for s in statements)
        and conn.kinds()[-1] == "rollback"
        and "commit" not in conn.kinds()
    )


def vecs(n: int, dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def test_lock_and_read_statements_parse_and_bind_their_keys() -> None:
    lock, read = sql.lock_meta(N), sql.meta_value(N, "vector_dim")
    assert (lock.sql, dict(lock.binds)) == (LOCK, {"meta_key": "schema_version"})
    assert (read.sql, dict(read.binds)) == (READ, {"meta_key": "vector_dim"})
    for stmt in (lock, read):
        parse_oracle(stmt.sql)


def test_the_first_write_locks_reads_then_records_before_its_rows(
    conn: FakeConnection, clock: Any
) -> None:
    flexible_schema(conn)
    store = open_store(conn, clock)
    assert store.vector_dim is None
    serve_meta(conn, {})
    conn.reset()
    store.add(["four"], "memory", record_ids="m1", embeddings=vecs(1, 4))
    statements = conn.sql()
    lock, read = statements.index(LOCK), statements.index(READ)
    merge = next(i for i, s in enumerate(statements) if s.startswith(f"MERGE INTO {N.meta}"))
    first_insert = next(i for i, s in enumerate(statements) if s.startswith("INSERT"))
    assert lock < read < merge < first_insert
    assert [c.binds for c in conn.statements() if c.sql in (LOCK, READ)] == [
        {"meta_key": "schema_version"},
        {"meta_key": "vector_dim"},
    ]
    assert committed_meta(conn) == {"vector_dim": "4"}
    assert store.vector_dim == 4 and store._impl.recorded_dim == 4
    conn.reset()
    store.add(["four again"], "memory", embeddings=vecs(1, 4, seed=1))
    assert LOCK not in conn.sql() and not binds_of(conn, "^MERGE")  # recorded once


@pytest.mark.parametrize("shape", ["bulk", "lists"])
def test_a_second_store_object_is_refused_another_dimension_and_adopts_the_recorded_one(
    conn: FakeConnection, clock: Any, shape: str
) -> None:
    flexible_schema(conn)
    first = open_store(conn, clock)
    second = open_store(conn, clock)  # opened before any vector was written
    assert first.vector_dim is None and second.vector_dim is None
    serve_meta(conn, {})
    first.add(["alpha"], "memory", record_ids="a1", embeddings=vecs(1, 8))
    serve_meta(conn, committed_meta(conn))  # what the first store committed
    conn.reset()
    other = vecs(1, 4, seed=1)
    with pytest.raises(ValueError, match=r"dimension 4 .*dimension 8") as info:
        second.add(
            ["beta"],
            "memory",
            record_ids="b1",
            embeddings=other if shape == "bulk" else other.tolist(),
        )
    assert "another store object" in str(info.value)
    assert reads_only(conn)  # checked before any row; nothing written
    assert second.vector_dim == 8  # adopted
    conn.reset()
    with pytest.raises(ValueError, match="dimension"):  # now refused before the database
        second.add(["beta"], "memory", record_ids="b1", embeddings=other)
    assert conn.calls == []
    second.add(["beta"], "memory", record_ids="b1", embeddings=vecs(1, 8, seed=2))
    assert conn.sql().count(LOCK) == 1 and not binds_of(conn, "^MERGE")  # read, not rewritten
    (rows,) = binds_of(conn, f"^INSERT INTO {N.chunks}")
    assert len(rows[0]["embedding"]) == 8
    assert second._impl.recorded_dim == 8


def test_a_rolled_back_first_write_leaves_no_dimension_recorded(
    conn: FakeConnection, clock: Any
) -> None:
    flexible_schema(conn)
    store = open_store(conn, clock)
    serve_meta(conn, {})
    conn.reset()
    conn.fail(f"^INSERT INTO {N.chunks}", FakeDbError(1653, "unable to extend table"))
    with pytest.raises(Exception, match="unable to extend"):
        store.add(["four"], "memory", record_ids="m1", embeddings=vecs(1, 4))
    assert binds_of(conn, "^MERGE") == [[{"meta_key": "vector_dim", "meta_value": "4"}]]
    assert conn.kinds()[-1] == "rollback" and committed_meta(conn) == {}
    assert store.vector_dim is None and store._impl.recorded_dim is None
    # Another store object records 3 meanwhile: this one reads it again and adopts it.
    serve_meta(conn, {"vector_dim": "3"})
    conn.reset()
    with pytest.raises(ValueError, match=r"dimension 4 .*dimension 3"):
        store.add(["four"], "memory", record_ids="m1", embeddings=vecs(1, 4))
    assert reads_only(conn) and store.vector_dim == 3


@pytest.mark.parametrize("policy", ["REQUIRE_EXISTING", "CREATE_IF_NECESSARY"])
def test_a_store_that_knows_its_dimension_records_it_with_its_first_vectors(
    conn: FakeConnection, clock: Any, policy: str
) -> None:
    """An embedder's dimension known at open is not recorded on a flexible column by
    the open (its state was read outside any transaction): the first write with
    vectors records it under the same lock, or is refused."""
    flexible_schema(conn)
    store = open_store(conn, clock, embedder=HashingEmbedder(8), schema_policy=policy)
    assert store.vector_dim == 8 and store._impl.recorded_dim is None
    assert "vector_dim" not in committed_meta(conn)  # nothing recorded at open
    late = open_store(conn, clock, embedder=HashingEmbedder(4))
    serve_meta(conn, {})
    conn.reset()
    store.add(["eight"], "memory", record_ids="m1")
    statements = conn.sql()
    chunks = next(i for i, s in enumerate(statements) if s.startswith(f"INSERT INTO {N.chunks}"))
    assert statements.index(LOCK) < statements.index(READ) < chunks
    assert committed_meta(conn)["vector_dim"] == "8"
    serve_meta(conn, committed_meta(conn))
    conn.reset()
    with pytest.raises(ValueError, match=r"dimension 4 .*dimension 8"):
        late.add(["four"], "memory", record_ids="m2")
    assert not binds_of(conn, f"^INSERT INTO {N.chunks}") and "commit" not in conn.kinds()
    assert conn.kinds()[-1] == "rollback"


def test_a_fixed_column_reads_no_dimension_in_its_writes(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N)  # VECTOR(8, FLOAT32), recorded
    store = open_store(conn, clock, embedder=HashingEmbedder(8))
    conn.reset()
    store.add(["eight"], "memory", record_ids="m1")
    assert LOCK not in conn.sql() and READ not in conn.sql()


def test_a_keyword_store_feeds_a_flexible_column_its_embedders_dimension(
    conn: FakeConnection, clock: Any
) -> None:
    """A KEYWORD store keeps feeding the vector column a VECTOR store left; on a flexible
    column without a recorded dimension its embedder's dimension is the one it writes
    (and records), as on a column that recorded one."""
    script_schema(conn, N, dim=None, text_index=True, meta={"embedding_column": "flexible"})
    store = open_store(conn, clock, embedder=HashingEmbedder(8), search_strategy="KEYWORD")
    assert store.vector_dim == 8 and store._impl.recorded_dim is None
    serve_meta(conn, {})
    conn.reset()
    store.add(["pizza"], "memory", record_ids="m1")
    (rows,) = binds_of(conn, f"^INSERT INTO {N.chunks}")
    assert len(rows[0]["embedding"]) == 8
    assert committed_meta(conn)["vector_dim"] == "8"
