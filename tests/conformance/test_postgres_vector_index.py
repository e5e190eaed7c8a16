"""Embedders of more than 2,000 dimensions on PostgreSQL (docs/postgres.md#vector-index):
pgvector's HNSW index takes at most 2,000 ``vector`` dimensions, so the store indexes
``embedding::halfvec(dim)`` (up to 4,000, pgvector 0.7 and later) and orders its index
queries by that same expression; on an older pgvector it creates no index, warns, and
ranks exactly. The test runs whichever the test server's pgvector supports
(``pgserver`` ships 0.6.2: no index) and checks the plan with EXPLAIN.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import numpy as np
import pytest

from oam_core.embedders.hashing import HashingEmbedder

psycopg = pytest.importorskip("psycopg")

DIM = 3072  # text-embedding-3-large


class _Recording:
    """A connection that records every statement it runs (and runs it)."""

    def __init__(self, conn: Any, log: list[tuple[str, Any]]) -> None:
        self._conn = conn
        self._log = log

    def execute(self, sql: str, params: Any = None) -> Any:
        self._log.append((sql, params))
        return self._conn.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _plan(conninfo: str, sql: str, params: Any) -> str:
    """The plan of ``sql``, with sequential scans priced out (on a small table the
    planner would scan anyway): it names the HNSW index only if the query's
    ordering expression is the indexed one."""
    with psycopg.connect(conninfo) as conn:
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            conn.execute(f"SET {setting} = off")
        rows = conn.execute("EXPLAIN " + sql, params).fetchall()
    return "\n".join(r[0] for r in rows)


def test_a_3072_dimension_embedder_adds_searches_and_uses_the_index_it_can(
    conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oam_core.store.postgres import PostgresMemoryStore, backend
    from oam_core.store.postgres.schema import ann_kind

    with psycopg.connect(conninfo) as conn:
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0]
    expected = ann_kind(DIM, tuple(int(p) for p in version.split(".")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = PostgresMemoryStore(
            conninfo,
            embedder=HashingEmbedder(DIM),
            search_strategy="VECTOR",
            schema_policy="CREATE_IF_NECESSARY",
        )
    said = [str(w.message) for w in caught if "3072 dimensions" in str(w.message)]
    texts = [f"note {i} about topic{i}" for i in range(30)] + ["the blue kettle whistles"]
    store.add(texts, "memory", record_ids=[f"m{i}" for i in range(31)])
    with psycopg.connect(conninfo) as conn:
        assert conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
        ).fetchone() == (f"vector({DIM})",)
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes "
            "WHERE schemaname = current_schema() AND indexname = 'chunks_hnsw'"
        ).fetchone()
    log: list[tuple[str, Any]] = []
    real = backend.PgBackend._rank_one

    def recording(self: Any, conn: Any, *args: Any) -> Any:
        return real(self, cast(Any, _Recording(conn, log)), *args)

    monkeypatch.setattr(backend.PgBackend, "_rank_one", recording)
    store._impl.exact_below = 0  # the index path wherever there is an index
    exact = store.search("blue kettle", 3)
    assert exact[0][0].id == "m30"
    ranking = [(sql, params) for sql, params in log if "ORDER BY" in sql and "qv" in sql]
    assert ranking
    plan = _plan(conninfo, *ranking[0])
    if expected == "halfvec":  # pgvector 0.7 and later
        assert said == []
        assert index is not None and f"halfvec({DIM})" in index[0]
        assert "halfvec_cosine_ops" in index[0]
        assert "chunks_hnsw" in plan, plan
        store._impl.exact_below = 10**9
        assert [r.id for r, _ in store.search("blue kettle", 3)] == [r.id for r, _ in exact]
    else:  # pgserver's pgvector 0.6: no index can hold 3,072 dimensions
        assert expected is None
        assert index is None
        assert len(said) == 1 and "docs/postgres.md#vector-index" in said[0]
        assert "chunks_hnsw" not in plan
    # The distance is the full-precision cosine distance either way.
    vectors = HashingEmbedder(DIM).embed(["blue kettle", "the blue kettle whistles"])
    a, b = (np.asarray(v, dtype=np.float64) for v in vectors)
    want = 1 - float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert exact[0][1] == pytest.approx(want, abs=1e-6)
    store.close()


def test_the_index_statement_fits_the_dimension_and_the_pgvector_version() -> None:
    from oam_core.store.postgres.schema import ann_kind, hnsw_index

    assert ann_kind(None, (0, 8, 0)) is None
    assert ann_kind(2000, (0, 6, 2)) == "vector"
    assert ann_kind(2001, (0, 6, 2)) is None
    assert ann_kind(3072, (0, 7, 0)) == "halfvec"
    assert ann_kind(4000, (0, 8, 1)) == "halfvec"
    assert ann_kind(4001, (0, 8, 1)) is None
    assert hnsw_index("p_", "halfvec", 3072) == (
        "CREATE INDEX IF NOT EXISTS p_chunks_hnsw ON p_chunks "
        "USING hnsw (((embedding)::halfvec(3072)) halfvec_cosine_ops)"
    )
    assert hnsw_index("p_", None, 5000) is None


def test_without_its_halfvec_index_the_store_ranks_exactly(conninfo: str) -> None:
    """A store over 2,000 dimensions whose halfvec index is missing (dropped, or
    pgvector upgraded after the store was made) ranks exactly until an open with
    CREATE_IF_NECESSARY builds the index (pgvector 0.7 and later only)."""
    from oam_core.store.postgres import PostgresMemoryStore
    from oam_core.store.postgres.schema import ann_kind, pgvector_version

    with psycopg.connect(conninfo) as conn:
        if ann_kind(DIM, pgvector_version(conn)) != "halfvec":
            pytest.skip("the test server's pgvector has no halfvec (0.7 and later)")
    store = PostgresMemoryStore(
        conninfo, embedder=HashingEmbedder(DIM), schema_policy="CREATE_IF_NECESSARY"
    )
    store.add(["the blue kettle whistles", "a red teapot"], "memory", record_ids=["m1", "m2"])
    assert store._impl.ann == "halfvec"
    store.close()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP INDEX chunks_hnsw")
    again = PostgresMemoryStore(conninfo, embedder=HashingEmbedder(DIM))
    assert again._impl.ann is None
    again._impl.exact_below = 0
    assert [r.id for r, _ in again.search("red teapot", 1)] == ["m2"]
    again.close()
    rebuilt = PostgresMemoryStore(
        conninfo, embedder=HashingEmbedder(DIM), schema_policy="CREATE_IF_NECESSARY"
    )
    assert rebuilt._impl.ann == "halfvec"
    rebuilt.close()
