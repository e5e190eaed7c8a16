"""The real ``OracleDBMemoryStore`` driven through a recording fake connection
(the rules of docs/oracle.md and docs/store.md: transactions, batching, cascades,
policies; no database needed)."""

from __future__ import annotations

import array
import json
import threading
import time
from datetime import timedelta
from typing import Any

import numpy as np
import oracledb
import pytest
from fakedb import Call, FakeConnection, FakeDbError, FakePool
from oracle_helpers import NOW, binds_of, script_schema

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import DatabaseLockedError, StoreError
from oam_core.store.options import (
    MemoryRetentionConfig,
    SchemaPolicy,
    SearchStrategy,
)
from oam_core.store.oracle import OracleDBEmbedder, OracleDBMemoryStore
from oam_core.store.oracle.names import Names
from oam_core.store.threads import thread_store

N = Names("S1_")
DDL_WORDS = ("CREATE", "ALTER", "DROP", "BEGIN")


def open_store(conn: Any, clock: Any, **kwargs: Any) -> OracleDBMemoryStore:
    kwargs.setdefault("memory_store_id", "s1")
    embedder = kwargs.pop("embedder", HashingEmbedder(8))
    return OracleDBMemoryStore(embedder, conn, clock=clock, **kwargs)


def ddl_calls(conn: FakeConnection) -> list[str]:
    return [s for s in conn.sql() if s.lstrip().startswith(DDL_WORDS)]


def tx_calls(conn: FakeConnection) -> list[str]:
    """Kinds of calls after opening: execute/executemany/commit/rollback."""
    return conn.kinds()


# -- opening ----------------------------------------------------------------------------


def test_require_existing_opens_without_ddl_or_writes(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N)
    store = open_store(conn, clock)
    assert ddl_calls(conn) == []
    assert "commit" not in conn.kinds()
    assert all(s.lstrip().startswith("SELECT") for s in conn.sql())
    assert store.vector_dim == 8 and store.names.chunks == "S1_RECORD_CHUNKS"


def test_require_existing_is_the_default_and_fails_on_an_empty_schema(
    conn: FakeConnection, clock: Any
) -> None:
    with pytest.raises(ValueError, match="CREATE_IF_EMPTY"):
        open_store(conn, clock)
    assert ddl_calls(conn) == []


def test_create_if_empty_creates_the_vector_schema_in_order(
    conn: FakeConnection, clock: Any
) -> None:
    open_store(conn, clock, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    ddl = ddl_calls(conn)
    tables = [s.split()[2] for s in ddl if s.startswith("CREATE TABLE")]
    assert tables == [
        "S1_MEMORY_STORE_META",
        "S1_THREADS",
        "S1_ACTOR_PROFILES",
        "S1_MESSAGES",
        "S1_MEMORIES",
        "S1_RECORD_CHUNKS",
        "S1_CHUNK_SOURCES",
    ]
    assert "embedding VECTOR(8, FLOAT32)" in next(s for s in ddl if "S1_RECORD_CHUNKS (" in s)
    vec = [s for s in ddl if s.startswith("CREATE VECTOR INDEX")]
    assert len(vec) == 1 and "ORGANIZATION INMEMORY NEIGHBOR GRAPH" in vec[0]
    assert "DISTANCE COSINE" in vec[0]
    assert not any("CTXSYS.CONTEXT" in s or "HYBRID" in s for s in ddl)
    assert any("DBMS_SCHEDULER.CREATE_JOB" in s for s in ddl)
    meta = binds_of(conn, r"^MERGE INTO S1_MEMORY_STORE_META")
    assert len(meta) == 1
    stored = {r["meta_key"]: r["meta_value"] for r in meta[0]}
    assert stored["vector_dim"] == "8" and stored["schema_version"] == "4"
    assert json.loads(stored["retention"]) == {"default_ttl_days": None, "max_ttl_days": None}
    # DDL runs before (outside) the one metadata transaction.
    assert conn.kinds()[-2:] == ["executemany", "commit"]


def test_purge_job_without_privilege_warns_and_continues(conn: FakeConnection, clock: Any) -> None:
    conn.fail("DBMS_SCHEDULER.CREATE_JOB", FakeDbError(27486, "insufficient privileges"))
    with pytest.warns(UserWarning, match="CREATE JOB"):
        store = open_store(conn, clock, schema_policy="create_if_empty")
    assert store.vector_dim == 8


def test_purge_job_deletes_expired_chunks_and_records(conn: FakeConnection, clock: Any) -> None:
    open_store(conn, clock, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    (job,) = binds_of(conn, "DBMS_SCHEDULER.CREATE_JOB")
    assert job["job_name"] == "S1_OAM_PURGE_JOB"
    action = job["job_action"]
    assert action.index("S1_RECORD_CHUNKS") < action.index("S1_MESSAGES")
    assert "expires_at <= SYS_EXTRACT_UTC(SYSTIMESTAMP)" in action and "COMMIT" in action


def test_hnsw_without_vector_pool_falls_back_to_ivf(conn: FakeConnection, clock: Any) -> None:
    conn.fail("ORGANIZATION INMEMORY", FakeDbError(51962, "vector memory area is out of space"))
    with pytest.warns(UserWarning, match="IVF"):
        open_store(conn, clock, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    assert any("ORGANIZATION NEIGHBOR PARTITIONS" in s for s in ddl_calls(conn))


def test_other_ddl_errors_propagate(conn: FakeConnection, clock: Any) -> None:
    conn.fail("CREATE TABLE S1_THREADS", FakeDbError(1031, "insufficient privileges"))
    with pytest.raises(StoreError, match="ORA-01031") as info:
        open_store(conn, clock, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    assert isinstance(info.value.__cause__, FakeDbError)  # mapped at the session boundary


def test_create_if_necessary_upgrades_vector_to_keyword(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N)
    open_store(
        conn,
        clock,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.KEYWORD,
        vector_dim=8,
    )
    assert ddl_calls(conn) == [
        "CREATE INDEX S1_CHUNKS_TEXT_IX ON S1_RECORD_CHUNKS (chunk_text)\n"
        "  INDEXTYPE IS CTXSYS.CONTEXT PARAMETERS ('SYNC (ON COMMIT)')"
    ]


def test_create_if_necessary_upgrades_to_hybrid(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N, text_index=True)
    emb = OracleDBEmbedder(conn, "doc_model", dimension=8)
    open_store(
        conn,
        clock,
        embedder=emb,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.HYBRID,
    )
    ddl = ddl_calls(conn)
    assert ddl[0] == "DROP INDEX S1_CHUNKS_TEXT_IX FORCE"
    assert "DBMS_VECTOR_CHAIN.CREATE_PREFERENCE" in ddl[1]
    assert ddl[2] == (
        "CREATE HYBRID VECTOR INDEX S1_CHUNKS_HYBRID_IX ON S1_RECORD_CHUNKS (chunk_text)\n"
        "  PARAMETERS ('VECTORIZER S1_OAM_VECTORIZER MAINTENANCE MANUAL SYNC (ON COMMIT)')"
    )
    (pref,) = binds_of(conn, "CREATE_PREFERENCE")
    assert pref["pref_name"] == "S1_OAM_VECTORIZER"
    assert json.loads(pref["pref_params"])["model"] == "DOC_MODEL"
    meta = {r["meta_key"]: r["meta_value"] for r in binds_of(conn, "^MERGE")[0]}
    assert meta["hybrid_model"] == "DOC_MODEL"


def test_incompatible_strategy_on_existing_schema_fails_at_start(
    conn: FakeConnection, clock: Any
) -> None:
    script_schema(conn, N)
    with pytest.raises(ValueError, match="KEYWORD is incompatible"):
        open_store(conn, clock, search_strategy="KEYWORD")
    emb = OracleDBEmbedder(conn, "doc_model", dimension=8)
    with pytest.raises(ValueError, match="HYBRID is incompatible"):
        open_store(conn, clock, embedder=emb, search_strategy="HYBRID")
    assert ddl_calls(conn) == []


def test_keyword_store_uses_an_existing_hybrid_index(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N, dim=None, hybrid_index=True, vectorizer=True)
    store = open_store(conn, clock, embedder=None, search_strategy="KEYWORD")
    assert ddl_calls(conn) == []
    conn.reset()
    store.search("pizza party", k=3)
    (call,) = [c for c in conn.statements() if "CONTAINS" in c.sql]
    assert call.binds["q"] == "{pizza} ACCUM {party}"


def test_dimension_mismatch_fails_at_start(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N, dim=8)
    with pytest.raises(ValueError, match=r"dimension 8.*dimension 4"):
        open_store(conn, clock, embedder=HashingEmbedder(4))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"search_strategy": "KEYWORD", "search_index_sync": "AUTO"}, "AUTO"),
        ({"search_strategy": "HYBRID"}, "OracleDBEmbedder"),
        ({"table_name_prefix": "X_", "memory_store_id": "s1"}, "not both"),
        ({"memory_store_id": "1abc"}, "memory_store_id"),
        ({"memory_store_id": "a" * 17}, "memory_store_id"),
        ({"memory_store_id": "a-b"}, "memory_store_id"),
        ({"search_index_sync": "SOMETIMES"}, "search_index_sync"),
        ({"schema_policy": "NEVER"}, "schema_policy"),
    ],
)
def test_bad_options_fail_before_any_sql(
    conn: FakeConnection, clock: Any, kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        open_store(conn, clock, **kwargs)
    assert conn.calls == []


def test_table_name_prefix_is_deprecated_but_works(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, Names("APP_"))
    with pytest.warns(DeprecationWarning, match="memory_store_id"):
        store = OracleDBMemoryStore(HashingEmbedder(8), conn, table_name_prefix="app_", clock=clock)
    assert store.names.messages == "APP_MESSAGES"


def test_retention_config_lives_in_schema_metadata(conn: FakeConnection, clock: Any) -> None:
    stored = json.dumps({"default_ttl_days": 7, "max_ttl_days": 30}, sort_keys=True)
    script_schema(conn, N, meta={"retention": stored})
    store = open_store(conn, clock)
    assert store.memory_retention_config == MemoryRetentionConfig(7, 30)
    with pytest.raises(ValueError, match="differs from the stored"):
        open_store(conn, clock, memory_retention_config=MemoryRetentionConfig(1, 2))
    conn.reset()
    updated = open_store(
        conn,
        clock,
        memory_retention_config=MemoryRetentionConfig(max_ttl_days=3),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    )
    assert updated.memory_retention_config == MemoryRetentionConfig(None, 3)
    (rows,) = binds_of(conn, "^MERGE")
    assert rows == [
        {
            "meta_key": "retention",
            "meta_value": json.dumps({"default_ttl_days": None, "max_ttl_days": 3}, sort_keys=True),
        },
        # a schema from before the strategy was recorded gets it when it may be written
        {"meta_key": "search_strategy", "meta_value": "VECTOR"},
    ]
    assert ddl_calls(conn) == []  # existing rows' expiry is not rewritten


# -- writes -----------------------------------------------------------------------------


@pytest.fixture
def store(conn: FakeConnection, clock: Any) -> OracleDBMemoryStore:
    script_schema(conn, N)
    s = open_store(conn, clock)
    conn.reset()
    return s


def _sizes_before(conn: FakeConnection, index: int) -> dict[str, Any]:
    prev = conn.calls[index - 1]
    assert prev.kind == "setinputsizes"
    return prev.sizes


def test_add_with_300_chunks_batches_256_in_one_transaction(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    chunks = [f"chunk {i}" for i in range(300)]
    ids = store.add(
        ["a long memory"],
        "memory",
        index_texts=[chunks],
        record_ids="m1",
        metadata={"source": "slack", "n": 1},
    )
    assert ids == ["m1"]
    calls = [c for c in conn.calls if c.kind != "setinputsizes"]
    kinds = [c.kind for c in calls]
    assert kinds.count("commit") == 1 and kinds[-1] == "commit" and "rollback" not in kinds
    batches = [c for c in conn.statements("executemany") if "S1_RECORD_CHUNKS" in c.sql]
    assert [len(b.binds) for b in batches] == [256, 44]
    assert [r["seq"] for b in batches for r in b.binds] == list(range(300))
    first = batches[0].binds[0]
    assert isinstance(first["embedding"], array.array) and first["embedding"].typecode == "f"
    assert len(first["embedding"]) == 8
    assert first["chunk_text"] == "chunk 0" and first["record_family"] == "memory"
    i = conn.calls.index(batches[0])
    assert _sizes_before(conn, i) == {
        "chunk_text": oracledb.DB_TYPE_CLOB,
        "expires_at": oracledb.DB_TYPE_TIMESTAMP,
        "valid_from": oracledb.DB_TYPE_TIMESTAMP,
        "valid_until": oracledb.DB_TYPE_TIMESTAMP,
        "embedding": oracledb.DB_TYPE_VECTOR,
    }
    (rec,) = [c for c in conn.statements("executemany") if "INSERT INTO S1_MEMORIES" in c.sql]
    assert rec.binds[0]["metadata"] == {"source": "slack", "n": 1}
    sizes = _sizes_before(conn, conn.calls.index(rec))
    assert sizes["metadata"] is oracledb.DB_TYPE_JSON and sizes["content"] is oracledb.DB_TYPE_CLOB
    assert sizes["created_at"] is oracledb.DB_TYPE_TIMESTAMP


def test_batch_size_store_kwarg(conn: FakeConnection, store: OracleDBMemoryStore) -> None:
    store.add([f"m{i}" for i in range(250)], "memory", batch_size=100)
    recs = [c for c in conn.statements("executemany") if "INSERT INTO S1_MEMORIES" in c.sql]
    assert [len(c.binds) for c in recs] == [100, 100, 50]
    assert conn.kinds().count("commit") == 1


def test_failure_mid_add_rolls_back_and_commits_nothing(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.fail("INSERT INTO S1_RECORD_CHUNKS", FakeDbError(1400, "cannot insert NULL"))
    with pytest.raises(StoreError, match="cannot insert NULL"):
        store.add(["x"], "memory", record_ids="m1")
    assert conn.kinds()[-1] == "rollback" and "commit" not in conn.kinds()
    assert any("INSERT INTO S1_MEMORIES" in s for s in conn.sql())  # the record went first
    conn.reset()
    assert store.add(["x"], "memory", record_ids="m1") == ["m1"]  # nothing was kept
    assert conn.kinds()[-1] == "commit"


def test_rejected_add_touches_nothing(conn: FakeConnection, store: OracleDBMemoryStore) -> None:
    with pytest.raises(ValueError, match="dimension"):
        store.add(["x"], "memory", embeddings=[[1.0, 2.0]])
    assert conn.calls == []


def test_existing_id_is_rejected_inside_the_transaction(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    store.add(["x"], "memory", record_ids="m1")
    conn.reset()
    with pytest.raises(ValueError, match="already exist"):
        store.add(["y"], "memory", record_ids="m1")
    assert conn.kinds()[-1] == "rollback"
    assert not conn.statements("executemany")


def test_messages_get_per_thread_sequence_numbers(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.script(r"SELECT GREATEST\(COALESCE\(\(SELECT MAX\(seq_no\)", [(5,)])
    store.add(["a", "b"], "message", roles="user", thread_ids="t1")
    assert conn.sql()[1] == "LOCK TABLE S1_MESSAGES IN SHARE ROW EXCLUSIVE MODE"
    (rows,) = binds_of(conn, "INSERT INTO S1_MESSAGES")
    assert [r["seq_no"] for r in rows] == [5, 6]
    assert [r["content_set"] for r in rows] == [1, 1]
    # the high-water mark moves with the numbers handed out, in the same transaction
    mark = [c for c in conn.calls if c.sql.startswith("UPDATE S1_THREADS SET seq_no")]
    assert [c.binds for c in mark] == [{"seq_no": 6, "thread_id": "t1"}]
    assert conn.kinds()[-1] == "commit"


def test_empty_strings_survive_oracle_null(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    store.add([""], "memory", record_ids="m1")
    (rows,) = binds_of(conn, "INSERT INTO S1_MEMORIES")
    assert rows[0]["content"] == "" and rows[0]["content_set"] == 1
    with pytest.raises(ValueError, match="timestamps must be an ISO-8601"):
        store.add(["x"], "memory", record_ids="m2", timestamps="")  # not a time (docs/store.md)
    # Oracle hands '' back as NULL; the flags restore it.
    row = (1, "m1", "memory", None, 1, None, None, None, None, None, None, 1, None, _dt(), None)
    row += (None, None)  # the validity window
    conn.script(r"FROM S1_MEMORIES r WHERE r.id = :id", [row])
    rec = store.get("memory", "m1")
    assert rec is not None and rec.content == ""


def _dt() -> Any:
    from datetime import datetime

    return datetime(2026, 3, 1, 12, 0, 0)


def test_update_text_is_one_transaction(conn: FakeConnection, store: OracleDBMemoryStore) -> None:
    row = (7, "memory", "old", 1, None, 0, '{"k": 1}', _dt(), None, None, None, None, None, None)
    conn.script(
        r"FROM S1_MEMORIES r WHERE r.id = :id AND|FROM S1_MEMORIES r WHERE r.id = :id FOR", [row]
    )
    assert store.update("memory", "m1", text="new text") == 1
    sql = conn.sql()
    assert "FOR UPDATE" in sql[0]
    assert any(s.startswith("UPDATE S1_MEMORIES SET content = :content") for s in sql)
    assert any(s.startswith("DELETE FROM S1_RECORD_CHUNKS") for s in sql)
    assert conn.kinds().count("commit") == 1


# -- deletes ----------------------------------------------------------------------------


def test_delete_thread_cascades_in_one_transaction(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.rowcount("DELETE FROM S1_THREADS", 1)
    assert store.delete_thread("t1") == 1
    assert conn.sql() == [
        # the row lock first (docs/failure-modes.md#c22): a writer holding it commits before the
        # deletes below run, and they see its rows
        "SELECT id FROM S1_THREADS WHERE id = :thread_id FOR UPDATE",
        # the rows quoting its messages (none elsewhere today; store/quotes.py)
        "DELETE FROM S1_RECORD_CHUNKS WHERE pk IN (SELECT chunk_pk FROM S1_CHUNK_SOURCES "
        "WHERE source_pk IN (SELECT pk FROM S1_MESSAGES WHERE thread_id = :thread_id))",
        "DELETE FROM S1_RECORD_CHUNKS WHERE record_family IN ('message', 'memory') "
        "AND thread_id = :thread_id",
        "DELETE FROM S1_MESSAGES WHERE thread_id = :thread_id",
        "DELETE FROM S1_MEMORIES WHERE thread_id = :thread_id",
        "DELETE FROM S1_THREADS WHERE id = :thread_id",
    ]
    assert conn.kinds()[-1] == "commit" and conn.kinds().count("commit") == 1


def test_delete_records_of_many_ids_is_a_few_statements_per_500(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    """``delete_records`` finds, unquotes and deletes 500 ids per statement, not one
    id at a time (docs/filters.md#long-lists)."""
    known = {f"m{i}": 100 + i for i in range(0, 1_200, 2)}

    def pks(sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(known[v],) for k, v in binds.items() if k.startswith("i") and v in known]

    conn.script(r"SELECT pk FROM S1_MESSAGES WHERE id IN", pks)
    conn.rowcount("DELETE FROM S1_MESSAGES WHERE pk IN", 7)
    ids = [f"m{i}" for i in range(1_200)]
    assert store.delete_records("message", ids, thread_id="t1") == 21
    sql = conn.sql()
    assert len(sql) == 3 * 4, sql
    assert sql[0].startswith("SELECT pk FROM S1_MESSAGES WHERE id IN (:i0, :i1, ")
    assert sql[0].endswith(
        ", :i499) AND record_type = :record_type AND thread_id = :thread_id FOR UPDATE"
    )
    assert sql[1].startswith(
        "DELETE FROM S1_RECORD_CHUNKS WHERE pk IN (SELECT chunk_pk FROM S1_CHUNK_SOURCES "
        "WHERE source_pk IN (SELECT pk FROM S1_MESSAGES WHERE pk IN (:p0, "
    )
    assert sql[2].startswith(
        "DELETE FROM S1_RECORD_CHUNKS WHERE record_family = :family AND record_pk IN (:p0, "
    )
    assert sql[3].startswith("DELETE FROM S1_MESSAGES WHERE pk IN (:p0, :p1, ")
    deleted = [c.binds for c in conn.statements() if c.sql.startswith("DELETE FROM S1_MESSAGES")]
    assert sorted(v for b in deleted for v in b.values()) == sorted(known.values())
    assert conn.kinds().count("commit") == 1


def test_c22_thread_writes_hold_the_row_in_their_transaction(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    """docs/failure-modes.md#c22 (statement level): ``add_to_thread`` locks the thread row, then
    writes, in one transaction; a missing row is an error with a rollback."""
    from oam_core.apis.batch import PendingRecordBatch

    batch = PendingRecordBatch(texts=["x"], record_type="memory", thread_ids="t1")
    conn.script(r"SELECT id FROM S1_THREADS WHERE id = :thread_id FOR UPDATE", [("t1",)])
    thread_store(store).add_to_thread("t1", [batch])
    sql = conn.sql()
    assert sql[0] == "SELECT id FROM S1_THREADS WHERE id = :thread_id FOR UPDATE"
    assert any(s.startswith("INSERT INTO S1_MEMORIES") for s in sql)
    assert conn.kinds().count("commit") == 1 and conn.kinds()[-1] == "commit"
    conn.reset()
    conn.script(r"SELECT id FROM S1_THREADS WHERE id = :thread_id FOR UPDATE", [])
    with pytest.raises(ValueError, match="thread 't1' does not exist"):
        thread_store(store).add_to_thread("t1", [batch])
    assert conn.kinds()[-1] == "rollback" and not conn.statements("executemany")


def test_delete_user_cascade_is_one_transaction_even_without_profile(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.script(r"SELECT id FROM S1_THREADS WHERE user_id", [("t1",), ("t2",)])
    assert store.delete("user_profile", "u1", cascade=True) == 0  # profile row missing
    sql = conn.sql()
    assert sql[0].startswith("SELECT pk FROM S1_ACTOR_PROFILES WHERE id = :id AND record_type")
    assert sum(s == "DELETE FROM S1_THREADS WHERE id = :thread_id" for s in sql) == 2
    assert sql[-3:] == [
        "DELETE FROM S1_RECORD_CHUNKS WHERE record_family IN ('message', 'memory') "
        "AND user_id = :actor_id",
        "DELETE FROM S1_MESSAGES WHERE user_id = :actor_id",
        "DELETE FROM S1_MEMORIES WHERE user_id = :actor_id",
    ]
    assert conn.kinds().count("commit") == 1 and conn.kinds()[-1] == "commit"


def test_failing_cascade_rolls_back_everything(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.script(r"SELECT id FROM S1_THREADS WHERE agent_id", [("t1",)])
    conn.fail("DELETE FROM S1_MEMORIES WHERE agent_id", FakeDbError(60, "deadlock detected"))
    with pytest.raises(DatabaseLockedError, match="deadlock"):
        store.delete("agent_profile", "a1", cascade=True)
    assert conn.kinds()[-1] == "rollback" and "commit" not in conn.kinds()


def test_purge_expired_deletes_chunks_first(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.rowcount("DELETE FROM S1_MESSAGES WHERE expires_at", 2)
    conn.rowcount("DELETE FROM S1_MEMORIES WHERE expires_at", 3)
    assert store.purge_expired() == 5
    assert conn.sql()[0] == "DELETE FROM S1_RECORD_CHUNKS WHERE expires_at <= :now"
    assert conn.statements()[0].binds["now"] == _dt()
    # then the rows quoting an expired message (store/quotes.py), before the messages
    quoting = conn.statements()[1]
    assert "S1_CHUNK_SOURCES WHERE source_pk IN (SELECT pk FROM S1_MESSAGES WHERE " in quoting.sql
    assert quoting.binds["now"] == _dt()
    assert conn.sql()[2].startswith("DELETE FROM S1_MESSAGES WHERE expires_at")


# -- reads and search -------------------------------------------------------------------


def _record_row(pk: int, rid: str) -> tuple[Any, ...]:
    return (
        *(pk, rid, "memory", "pizza", 1, None, None, None, None, None, None, 0, None, _dt(), None),
        *(None, None),  # the validity window
    )


def test_vector_search_filters_before_the_top_k(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.script(r"VECTOR_DISTANCE", [("memory", 3, 0.25)])
    conn.script(r"WHERE r.pk IN", [_record_row(3, "m3")])
    out = store.search(
        "pizza", k=2, user_id="u1", exact_user_match=True, metadata_filter={"source": "slack"}
    )
    assert [(r.id, d) for r, d in out] == [("m3", 0.25)]
    (call,) = [c for c in conn.statements() if "VECTOR_DISTANCE" in c.sql]
    assert "VECTOR_DISTANCE(c.embedding, :qv, COSINE)" in call.sql
    where, tail = call.sql.split("GROUP BY")
    assert "c.user_id = :user_id" in where and "JSON_EXISTS(r.metadata" in where
    assert "(c.expires_at IS NULL OR c.expires_at > :now)" in where
    assert tail.endswith("FETCH FIRST :k ROWS ONLY")
    assert call.binds["qv"].typecode == "f" and call.binds["f0"] == "slack"
    # k + 1 rows: one more shows whether a tie crosses the k-th place (store/search.py)
    assert call.binds["now"] == _dt() and call.binds["k"] == 3
    sizes = _sizes_before(conn, conn.calls.index(call))
    assert sizes["qv"] is oracledb.DB_TYPE_VECTOR and sizes["now"] is oracledb.DB_TYPE_TIMESTAMP


def test_list_returns_oldest_first_and_decodes_rows(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    meta = json.dumps({"a": 0.1, "b": [1, True]})
    rows = [(*_record_row(2, "m2")[:12], meta, _dt(), None, None, None), _record_row(1, "m1")]
    conn.script(r"ORDER BY r.pk DESC", rows)
    out = store.list("memory", limit=2)
    assert [r.id for r in out] == ["m1", "m2"]
    assert out[1].metadata == {"a": 0.1, "b": [1, True]}
    assert out[0].created_at == "2026-03-01T12:00:00.000000+00:00"
    (call,) = conn.statements()
    assert call.binds["lim"] == 2 and call.sql.endswith("FETCH FIRST :lim ROWS ONLY")


def _hybrid_store(conn: FakeConnection, clock: Any) -> OracleDBMemoryStore:
    script_schema(conn, N, dim=None, hybrid_index=True, vectorizer=True)
    emb = OracleDBEmbedder(conn, "doc_model", dimension=8)
    s = open_store(conn, clock, embedder=emb, search_strategy=SearchStrategy.HYBRID)
    conn.reset()
    return s


def test_hybrid_search_uses_dbms_hybrid_vector(conn: FakeConnection, clock: Any) -> None:
    store = _hybrid_store(conn, clock)
    assert store.vector_dim is None  # no local vectors: the hybrid index embeds
    hits = [{"rowid": "AAA", "score": 80.0}, {"rowid": "AAB", "score": 40.0}]
    conn.script(r"DBMS_HYBRID_VECTOR.SEARCH", [(json.dumps(hits),)])
    conn.script(r"JSON_TABLE\(:hits", [("memory", 1, 80.0), ("memory", 2, 40.0)])
    conn.script(r"WHERE r.pk IN", [_record_row(1, "m1"), _record_row(2, "m2")])
    out = store.search("pizza party?", k=2)
    assert [(r.id, d) for r, d in out] == [("m1", 0.0), ("m2", 0.5)]
    (call,) = [c for c in conn.statements() if "DBMS_HYBRID_VECTOR" in c.sql]
    assert call.sql == "SELECT DBMS_HYBRID_VECTOR.SEARCH(JSON(:req)) FROM dual"
    req = json.loads(call.binds["req"])
    assert req == {
        "hybrid_index_name": "S1_CHUNKS_HYBRID_IX",
        "vector": {"search_text": "pizza party?"},
        "text": {"contains": "{pizza} ACCUM {party}"},
        "search_fusion": "UNION",
        "search_scorer": "RRF",
        # The index ranks the head every k shares (fusion.depth, 50): topN = 4 * 50.
        "return": {"values": ["rowid", "score"], "topN": 200},
    }
    assert not any("VECTOR_EMBEDDING" in s for s in conn.sql())  # the DB embeds the query


def test_hybrid_index_ranking_gets_the_speaker_signal(conn: FakeConnection, clock: Any) -> None:
    """The query's signal lists (store/fusion.py) fuse onto the hybrid index's
    ranking as they do onto the vector and keyword lists of the other back ends: the
    named speaker's turn is lifted over the index's first hit; its distance is then
    a fused one (store/fusion.py)."""
    store = _hybrid_store(conn, clock)
    hits = [{"rowid": "AAA", "score": 80.0}, {"rowid": "AAB", "score": 40.0}]
    conn.script(r"DBMS_HYBRID_VECTOR.SEARCH", [(json.dumps(hits),)])
    conn.script(r"JSON_TABLE\(:hits", [("memory", 1, 80.0), ("memory", 2, 40.0)])

    def spoken(pk: int, rid: str, name: str) -> tuple[Any, ...]:
        row = list(_record_row(pk, rid))
        row[12] = json.dumps({"$message": {"name": name}})
        return tuple(row)

    conn.script(r"WHERE r.pk IN", [spoken(1, "m1", "Ana"), spoken(2, "m2", "Ben")])
    out = store.search("What pizza did Ben order?", k=2)
    assert [r.id for r, _ in out] == ["m2", "m1"]
    # Index list weight 2, speaker list weight 1/3, RRF k = 5: best possible 7/3 / 6.
    best = (2 + 1 / 3) / 6
    assert [d for _, d in out] == pytest.approx(
        [1 - (2 / 7 + 1 / 3 / 6) / best, 1 - (2 / 6) / best]
    )
    assert [d.kind.value for _, d in out] == ["fused", "fused"]


def test_hybrid_search_grows_top_n_until_filtered_hits_fill_k(
    conn: FakeConnection, clock: Any
) -> None:
    store = _hybrid_store(conn, clock)
    # A full first answer (topN 200: 4 x the 50 results every k shares) that the
    # filter empties, then a short second one.
    many = [{"rowid": f"R{i}", "score": 50.0} for i in range(200)]
    answers = iter([[(json.dumps(many),)], [(json.dumps(many[:10]),)]])
    conn.script(r"DBMS_HYBRID_VECTOR.SEARCH", lambda sql, b: next(answers))
    filtered = iter([[], [("memory", 9, 50.0)]])
    conn.script(r"JSON_TABLE\(:hits", lambda sql, b: next(filtered))
    conn.script(r"WHERE r.pk IN", [_record_row(9, "m9")])
    out = store.search("pizza", k=1, metadata_filter={"source": "slack"})
    assert [r.id for r, _ in out] == ["m9"]
    reqs = [json.loads(c.binds["req"]) for c in conn.statements() if "HYBRID_VECTOR" in c.sql]
    assert [r["return"]["topN"] for r in reqs] == [200, 800]


def test_hybrid_query_vector_goes_to_the_index(conn: FakeConnection, clock: Any) -> None:
    store = _hybrid_store(conn, clock)
    conn.script(r"DBMS_HYBRID_VECTOR.SEARCH", [("[]",)])
    assert store.search(query_vector=[0.5] * 8, k=3) == []
    req = json.loads(conn.statements()[0].binds["req"])
    assert req["vector"] == {"search_vector": "[" + ",".join(["0.5"] * 8) + "]"}
    with pytest.raises(ValueError, match="dimension 3"):
        store.search(query_vector=[0.5] * 3, k=3)


def test_manual_sync_runs_ctx_ddl_outside_a_transaction(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N, dim=None, text_index=True, meta={"search_index_sync": "MANUAL"})
    store = open_store(
        conn, clock, embedder=None, search_strategy="KEYWORD", search_index_sync="MANUAL"
    )
    conn.reset()
    store.sync_search_index()
    assert conn.statements()[-1].sql == "BEGIN\n  CTX_DDL.SYNC_INDEX(:idx_name);\nEND;"
    assert conn.statements()[-1].binds == {"idx_name": "S1_CHUNKS_TEXT_IX"}
    assert "commit" not in conn.kinds()


# -- sessions ---------------------------------------------------------------------------


class _SlowConnection(FakeConnection):
    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.max_active = 0
        self.guard = threading.Lock()

    def cursor(self) -> Any:
        cur = super().cursor()
        original = cur.execute

        def execute(sql: str, binds: Any = None) -> None:
            with self.guard:
                self.active += 1
                self.max_active = max(self.max_active, self.active)
            time.sleep(0.01)
            original(sql, binds)
            with self.guard:
                self.active -= 1

        cur.execute = execute  # type: ignore[method-assign]
        return cur


def test_raw_connection_calls_are_serialised(clock: Any) -> None:
    conn = _SlowConnection()
    script_schema(conn, N)
    store = open_store(conn, clock)
    threads = [threading.Thread(target=store.list, args=("memory",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert conn.max_active == 1


def test_pool_lends_a_connection_per_call(clock: Any) -> None:
    pool = FakePool()
    script_schema(pool.conn, N)
    store = open_store(pool, clock)
    before = pool.acquired
    store.add(["x"], "memory")
    store.list("memory")
    assert pool.acquired == before + 2 and pool.released == pool.acquired


def test_calls_record_types() -> None:
    assert Call("commit").kind == "commit"


def test_unique_violation_from_a_concurrent_writer_is_a_value_error(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.fail("INSERT INTO S1_MEMORIES", FakeDbError(1, "unique constraint violated"))
    with pytest.raises(ValueError, match="already exist"):
        store.add(["x"], "memory", record_ids="m1")
    assert conn.kinds()[-1] == "rollback" and "commit" not in conn.kinds()


def test_schema_without_oracle_text_opens_a_vector_store(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N)
    conn.fail("FROM ctx_user_preferences", FakeDbError(942, "table or view does not exist"))
    assert open_store(conn, clock).vector_dim == 8


def test_hybrid_store_needs_no_dimension_probe(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N, dim=None, hybrid_index=True, vectorizer=True)
    emb = OracleDBEmbedder(conn, "doc_model")  # dimension unknown
    open_store(conn, clock, embedder=emb, search_strategy="HYBRID")
    assert not any("VECTOR_EMBEDDING" in s for s in conn.sql())


def test_keyword_store_feeds_an_existing_vector_column(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N, text_index=True)
    store = open_store(conn, clock, search_strategy="KEYWORD")
    conn.reset()
    store.add(["pizza"], "memory")
    (rows,) = binds_of(conn, "INSERT INTO S1_RECORD_CHUNKS")
    assert rows[0]["embedding"] is not None and len(rows[0]["embedding"]) == 8
    with pytest.raises(ValueError, match=r"dimension 8.*is 4"):
        open_store(conn, clock, search_strategy="KEYWORD", embedder=HashingEmbedder(4))


def test_keyword_store_without_vector_column_stores_text_rows(
    conn: FakeConnection, clock: Any
) -> None:
    script_schema(conn, N, dim=None, text_index=True)
    store = open_store(conn, clock, search_strategy="KEYWORD")
    assert store.vector_dim is None
    conn.reset()
    store.add(["pizza"], "memory", embeddings=[[1.0, 2.0, 3.0]])
    (rows,) = binds_of(conn, "INSERT INTO S1_RECORD_CHUNKS")
    assert "embedding" not in rows[0] and rows[0]["chunk_text"] == "pizza"


def test_thread_rows_bind_json_and_compare_and_set(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    thread_store(store).create_thread_row("t1", user_id="u1", metadata={"a": 1}, config={"k": 2})
    (ins,) = [c for c in conn.statements() if c.sql.startswith("INSERT INTO S1_THREADS")]
    assert ins.binds["metadata"] == {"a": 1} and ins.binds["config"] == {"k": 2}
    assert ins.binds["state"] == {} and ins.binds["created_at"] == _dt()
    sizes = _sizes_before(conn, conn.calls.index(ins))
    assert sizes["config"] is oracledb.DB_TYPE_JSON
    conn.reset()
    conn.script(r"SELECT JSON_SERIALIZE\(state RETURNING CLOB\)", [('{"w": 1}',)])
    assert thread_store(store).update_thread_row("t1", state={"w": 2}, expected_state={"w": 0}) == 0
    assert not any(s.startswith("UPDATE") for s in conn.sql())
    conn.rowcount("UPDATE S1_THREADS", 1)
    assert thread_store(store).update_thread_row("t1", state={"w": 2}, expected_state={"w": 1}) == 1
    (upd,) = [c for c in conn.statements() if c.sql.startswith("UPDATE S1_THREADS")]
    assert upd.binds == {"state": {"w": 2}, "id": "t1"}


def test_async_twin_runs_the_same_transaction(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    import asyncio

    ids = asyncio.run(store.add_async(["x"], "memory", record_ids="m1"))
    assert ids == ["m1"] and conn.kinds().count("commit") == 1


def test_flexible_column_learns_its_dimension_inside_the_first_write(
    conn: FakeConnection, clock: Any
) -> None:
    store = open_store(conn, clock, embedder=None, schema_policy="CREATE_IF_EMPTY")
    assert any("embedding VECTOR(*, FLOAT32)" in s for s in ddl_calls(conn))
    assert store.vector_dim is None
    conn.reset()
    store.add(["four"], "memory", record_ids="m1", embeddings=[[1.0, 0.0, 0.0, 0.0]])
    sql = conn.sql()
    meta = sql.index(next(s for s in sql if s.startswith("MERGE INTO S1_MEMORY_STORE_META")))
    chunks = sql.index(next(s for s in sql if s.startswith("INSERT INTO S1_RECORD_CHUNKS")))
    assert meta < chunks and conn.kinds().count("commit") == 1
    assert binds_of(conn, "^MERGE")[0] == [{"meta_key": "vector_dim", "meta_value": "4"}]
    assert store.vector_dim == 4
    conn.reset()
    with pytest.raises(ValueError, match=r"(?s)(?=.*\b4\b)(?=.*\b3\b)"):
        store.add(["three"], "memory", embeddings=[[1.0, 0.0, 0.0]])
    assert conn.calls == []
    store.add(["four again"], "memory", embeddings=[[0.0, 1.0, 0.0, 0.0]])
    assert not binds_of(conn, "^MERGE")  # learned once


def test_a_failed_first_write_records_the_dimension_again(conn: FakeConnection, clock: Any) -> None:
    store = open_store(conn, clock, embedder=None, schema_policy="CREATE_IF_EMPTY")
    conn.reset()
    conn.fail("^INSERT INTO S1_RECORD_CHUNKS", FakeDbError(1653, "unable to extend table"))
    with pytest.raises(Exception, match="unable to extend"):
        store.add(["four"], "memory", record_ids="m1", embeddings=[[1.0, 0.0, 0.0, 0.0]])
    assert store.vector_dim is None  # rolled back with the write
    conn.reset()
    store.add(["four"], "memory", record_ids="m1", embeddings=[[1.0, 0.0, 0.0, 0.0]])
    assert binds_of(conn, "^MERGE")[0] == [{"meta_key": "vector_dim", "meta_value": "4"}]
    assert store.vector_dim == 4


def test_keyword_query_of_only_stopwords_finds_nothing(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N, text_index=True)
    store = open_store(conn, clock, search_strategy="KEYWORD")
    conn.fail("CONTAINS", FakeDbError(29902, "DRG-10817: CONTAINS term consists of stopword"))
    assert store.search("the of", k=3) == []
    conn.fail("CONTAINS", FakeDbError(29902, "DRG-10599: column is not indexed"))
    with pytest.raises(StoreError, match="DRG-10599"):
        store.search("pizza", k=3)


# -- rows that quote other messages (store/quotes.py) -------------------------------------


def test_add_links_quoting_rows_and_leaves_out_one_quoting_a_missing_message(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    from oam_core.store.quotes import QuotingChunk

    conn.script(r"SELECT id, pk, expires_at FROM S1_MESSAGES WHERE id IN", [("old", 3, None)])
    store.add(
        ["first", "reply"],
        "message",
        record_ids=["a", "b"],
        index_texts=[
            ["first", QuotingChunk("old\nfirst", ["old"])],
            ["reply", QuotingChunk("first\nreply", ["a"]), QuotingChunk("gone\nreply", ["gone"])],
        ],
    )
    (lookup,) = [c for c in conn.statements() if "pk, expires_at FROM S1_MESSAGES" in c.sql]
    assert sorted(lookup.binds.values()) == ["gone", "old"] and "FOR UPDATE" in lookup.sql
    chunks = [c for c in conn.statements("executemany") if "INTO S1_RECORD_CHUNKS" in c.sql]
    texts = [r["chunk_text"] for c in chunks for r in c.binds]
    assert texts == ["first", "old\nfirst", "reply", "first\nreply"]  # "gone" left out
    (links,) = [c for c in conn.statements("executemany") if "INTO S1_CHUNK_SOURCES" in c.sql]
    first, reply = links.binds
    assert (first["source_pk"], first["record_family"], first["seq"]) == (3, "message", 1)
    assert (reply["record_family"], reply["seq"]) == ("message", 1)
    assert links.binds[1]["source_pk"] == links.binds[0]["record_pk"]  # "a" quoted by "b"
    assert links.binds[1]["record_pk"] != links.binds[0]["record_pk"]
    assert conn.kinds().count("commit") == 1


def test_delete_of_a_message_deletes_the_rows_quoting_it_first(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.script(r"SELECT pk FROM S1_MESSAGES WHERE id = :id", [(5,)])
    conn.rowcount("DELETE FROM S1_MESSAGES WHERE pk", 1)
    assert store.delete("message", "m5") == 1
    sql = conn.sql()
    quoting = sql.index(
        "DELETE FROM S1_RECORD_CHUNKS WHERE pk IN "
        "(SELECT chunk_pk FROM S1_CHUNK_SOURCES WHERE source_pk = :pk)"
    )
    assert quoting < sql.index("DELETE FROM S1_MESSAGES WHERE pk = :pk")


def test_a_new_ttl_clamps_the_quoting_rows_to_the_earliest_expiry(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    row = (7, "message", "old", 1, None, 0, None, _dt(), "t1", None, None, None, None, None)
    conn.script(r"FROM S1_MESSAGES r WHERE r.id = :id", [row])
    conn.script(
        r"SELECT c.pk, c.record_family, c.record_pk FROM S1_RECORD_CHUNKS", [(40, "message", 8)]
    )
    conn.script(r"SELECT expires_at FROM S1_MESSAGES WHERE pk", [(None,)])
    conn.script(r"SELECT m.expires_at FROM S1_CHUNK_SOURCES", [(_dt(),)])
    assert store.update("message", "m7", ttl_days=1) == 1
    (clamp,) = [
        c
        for c in conn.statements()
        if c.sql.startswith("UPDATE S1_RECORD_CHUNKS SET expires_at = :expires_at WHERE pk")
    ]
    assert clamp.binds == {"expires_at": _dt(), "chunk_pk": 40}


# -- stored row vectors (the feedback vector list, store/vectorlists.py) ------------------


def test_row_vectors_reads_each_familys_rows_in_order(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    later, earlier = NOW + timedelta(days=1), NOW - timedelta(seconds=1)
    rows = [
        (11, 7, "own", array.array("f", [1.0, 0.0]), None),
        (12, 7, "context", array.array("f", [0.5, 0.5]), later.replace(tzinfo=None)),
        (13, 8, "no vector", None, None),
        (14, 8, "expired", array.array("f", [0.0, 1.0]), earlier.replace(tzinfo=None)),
    ]
    conn.script(
        r"SELECT c\.pk, c\.record_pk, c\.chunk_text, c\.embedding",
        lambda sql, binds: rows if binds["fam"] == "message" else [],
    )
    keys = [("message", 7), ("message", 8), ("memory", 9)]
    got = store.runtime.backend.row_vectors(keys, NOW)
    assert set(got) == {("message", 7)}
    assert [v.tolist() for v in got[("message", 7)]] == [[1.0, 0.0], [0.5, 0.5]]
    assert all(v.dtype == np.float32 for v in got[("message", 7)])
    sql = [s for s in conn.sql() if "c.embedding" in s]
    assert len(sql) == 2  # one statement per family
    assert all("ORDER BY c.record_pk, c.seq" in s and ":fam" in s for s in sql)
    assert binds_of(conn, r"c\.embedding") == [
        {"fam": "message", "p0": 7, "p1": 8},
        {"fam": "memory", "p0": 9},
    ]
    assert conn.kinds().count("commit") == 0
