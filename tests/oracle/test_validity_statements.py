"""Validity windows in the Oracle store at the statement level
(docs/oracle.md#validity-windows): the columns and their upgrade, the backfill, the
``valid_at`` filter of every ranking statement before its top-k cut, the window
binds of writes, the decoding of reads, and a version-3 schema opened without DDL
whose statements never name the new columns (recording fake connection, fakedb.py)."""

from __future__ import annotations

import array
import dataclasses
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import oracledb
import pytest
from fakedb import FakeConnection, FakeDbError
from oracle_helpers import NOW, parse_oracle, script_schema

from oam_core.apis.records import SEARCHABLE_TYPES
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import SchemaError
from oam_core.store.backend import Predicate, StoredRow
from oam_core.store.options import MemoryRetentionConfig, SchemaPolicy
from oam_core.store.oracle import OracleDBMemoryStore, ddl, schema, sql, windows
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.rows import record_from_row

N = Names("S1_")
OLD = Names("S1_", windows=False)
AT = datetime(2025, 6, 1, 8, 30, tzinfo=timezone(timedelta(hours=2)))
AT_NAIVE = datetime(2025, 6, 1, 6, 30)
VALID = (
    "(c.valid_from IS NULL OR c.valid_from <= :valid_at) "
    "AND (c.valid_until IS NULL OR c.valid_until > :valid_at)"
)
QV = array.array("f", [1.0])


def pred(valid_at: datetime | None = AT, **kw: Any) -> Predicate:
    kw.setdefault("record_types", SEARCHABLE_TYPES)
    return Predicate(now=NOW, valid_at=valid_at, user_id="u1", **kw)


def ranking(n: Names, p: Predicate) -> dict[str, Any]:
    return {
        "vector": sql.rank_vector(n, QV, 5, p),
        "keyword": sql.rank_keyword(n, "{a}", 5, p),
        "hybrid": sql.hybrid_hits(n, "[]", p),
    }


def _names_window_column(text: str) -> bool:
    """Whether SQL text names a window column (``NULL AS valid_from`` does not)."""
    return re.search(r"valid_(from|until)", re.sub(r"NULL AS valid_\w+", "", text)) is not None


# -- DDL --------------------------------------------------------------------------------


def test_records_and_chunks_get_window_columns_of_the_expiry_type() -> None:
    tables = {s.sql.split()[2]: s.sql for s in ddl.create_tables(N, 8) if "CREATE TABLE" in s.sql}
    for name in ("S1_ACTOR_PROFILES", "S1_MESSAGES", "S1_MEMORIES", "S1_RECORD_CHUNKS"):
        text = tables[name]
        assert "  expires_at TIMESTAMP(6),\n  valid_from TIMESTAMP(6),\n" in text
        assert "  valid_until TIMESTAMP(6)" in text
    for name in ("S1_THREADS", "S1_MEMORY_STORE_META", "S1_CHUNK_SOURCES"):
        assert "valid_" not in tables[name]
    assert ddl.SCHEMA_VERSION == windows.WINDOW_VERSION == 4


def test_upgrade_from_3_adds_columns_then_backfills_then_copies_to_chunks() -> None:
    steps = [s.sql for s in ddl.upgrade_steps(N, 3)]
    assert steps == [
        "ALTER TABLE S1_ACTOR_PROFILES ADD (valid_from TIMESTAMP(6), valid_until TIMESTAMP(6))",
        "ALTER TABLE S1_MESSAGES ADD (valid_from TIMESTAMP(6), valid_until TIMESTAMP(6))",
        "ALTER TABLE S1_MEMORIES ADD (valid_from TIMESTAMP(6), valid_until TIMESTAMP(6))",
        "ALTER TABLE S1_RECORD_CHUNKS ADD (valid_from TIMESTAMP(6), valid_until TIMESTAMP(6))",
        windows.backfill_superseded(N).sql,
        windows.copy_to_chunks(N).sql,
    ]
    for text in steps:
        parse_oracle(text)
    assert all(not s.binds for s in ddl.upgrade_steps(N, 3))


def test_backfill_ends_superseded_memories_at_their_successors_created_at() -> None:
    assert windows.backfill_superseded(N).sql == (
        "UPDATE S1_MEMORIES r SET r.valid_until = (\n"
        "  SELECT s.created_at FROM S1_MEMORIES s WHERE s.id = JSON_VALUE(r.metadata, "
        """'$."$agent_memory"."superseded_by"' RETURNING VARCHAR2(4000) NULL ON ERROR))\n"""
        "WHERE r.valid_until IS NULL AND JSON_VALUE(r.metadata, "
        """'$."$agent_memory"."status"' RETURNING VARCHAR2(64) NULL ON ERROR) = 'invalid'"""
    )
    assert windows.copy_to_chunks(N).sql == (
        "UPDATE S1_RECORD_CHUNKS c SET c.valid_until = (\n"
        "  SELECT r.valid_until FROM S1_MEMORIES r WHERE r.pk = c.record_pk)\n"
        "WHERE c.record_family = 'memory' AND c.record_pk IN (\n"
        "  SELECT r.pk FROM S1_MEMORIES r WHERE r.valid_until IS NOT NULL)"
    )


def _state(version: str) -> schema.SchemaState:
    return schema.SchemaState(
        tables=frozenset(N.tables),
        indexes=frozenset({N.vector_index}),
        meta={
            "schema_version": version,
            "vector_dim": "8",
            "search_index_sync": "ON_COMMIT",
            "retention": schema.retention_json(MemoryRetentionConfig()),
        },
        has_job=True,
    )


def _wanted() -> schema.Wanted:
    from oam_core.store.options import SearchIndexSyncMode, SearchStrategy

    return schema.Wanted(SearchStrategy.VECTOR, SearchIndexSyncMode.ON_COMMIT, 8, None, None)


def test_plan_upgrades_version_3_in_place_only_when_allowed() -> None:
    plan = schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, _state("3"), _wanted())
    assert [s.sql for s in plan.steps if not isinstance(s, str)] == [
        s.sql for s in windows.upgrade(N)
    ]
    assert plan.meta["schema_version"] == "4" and plan.windows
    for policy in (SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_EMPTY):
        kept = schema.plan_schema(policy, N, _state("3"), _wanted())
        assert kept.steps == [] and kept.meta == {} and not kept.windows
        current = schema.plan_schema(policy, N, _state("4"), _wanted())
        assert current.windows
    with pytest.raises(SchemaError, match="outdated"):  # older ones still need the upgrade
        schema.plan_schema(SchemaPolicy.REQUIRE_EXISTING, N, _state("2"), _wanted())


# -- reads ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["vector", "keyword", "hybrid"])
def test_every_ranking_statement_filters_validity_before_the_top_k(kind: str) -> None:
    stmt = ranking(N, pred())[kind]
    head = stmt.sql.rsplit("FETCH FIRST", 1)[0]
    assert VALID in head
    assert stmt.binds["valid_at"] == AT_NAIVE  # aware -> naive UTC
    assert stmt.types["valid_at"] == "TIMESTAMP"
    parse_oracle(stmt.sql)
    unfiltered = ranking(N, pred(valid_at=None))[kind]
    assert "valid_" not in unfiltered.sql and "valid_at" not in unfiltered.binds


def test_list_filters_validity_and_get_does_not() -> None:
    facts = pred(record_types=frozenset({"fact"}))
    stmt = sql.list_records(N, facts, 10, sql.naive_utc(NOW))
    head = stmt.sql.rsplit("FETCH FIRST", 1)[0]
    assert VALID.replace("c.", "r.") in head
    assert stmt.binds["valid_at"] == AT_NAIVE and stmt.types["valid_at"] == "TIMESTAMP"
    every = sql.list_records(N, pred(None, record_types=frozenset({"fact"})), 10, NOW)
    assert "valid_at" not in every.sql
    threads = sql.list_records(N, pred(record_types=frozenset({"thread"})), 10, NOW)
    assert (
        "valid_at" not in threads.sql and "NULL AS valid_from, NULL AS valid_until" in threads.sql
    )
    got = sql.get_record(N, "memory", "m", "fact", sql.naive_utc(NOW))
    assert "valid_at" not in got.sql and "r.valid_from, r.valid_until FROM" in got.sql


def test_rows_decode_windows_as_normalized_iso() -> None:
    base = (1, "m1", "fact", "x", 1, None, None, None, "u", None, None, 0, None, AT_NAIVE, None)
    rec = record_from_row("memory", (*base, AT_NAIVE, datetime(2025, 7, 1, 0, 0, 0, 250000)))
    assert rec.valid_from == "2025-06-01T06:30:00+00:00"
    assert rec.valid_until == "2025-07-01T00:00:00.250000+00:00"
    open_rec = record_from_row("memory", (*base, None, None))
    assert open_rec.valid_from is None and open_rec.valid_until is None


def test_versions_fetch_is_locked_and_reads_the_window() -> None:
    stmt = sql.fetch_row(N, "memory", "m1")
    assert stmt.sql.endswith("WHERE r.id = :id FOR UPDATE")
    assert "r.expires_at, r.valid_from, r.valid_until FROM S1_MEMORIES r" in stmt.sql


# -- writes -----------------------------------------------------------------------------


def test_window_binds_and_chunk_copy() -> None:
    assert windows.binds(N, AT, None) == {"valid_from": AT_NAIVE, "valid_until": None}
    assert windows.binds(OLD, None, None) == {}
    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):
        windows.binds(OLD, AT, None)
    copy = windows.update_chunk_windows(N, "memory", 7, {"valid_until": AT_NAIVE, "content": "x"})
    assert copy.sql == (
        "UPDATE S1_RECORD_CHUNKS SET valid_until = :valid_until "
        "WHERE record_family = :family AND record_pk = :pk"
    )
    assert copy.binds == {"valid_until": AT_NAIVE, "family": "memory", "pk": 7}
    assert copy.types == {"valid_until": "TIMESTAMP"}
    for stmt in (sql.insert_records(N, "memory", []), sql.insert_chunks(N, [], False)):
        assert ":valid_from, :valid_until" in stmt.sql
        assert stmt.types["valid_from"] == stmt.types["valid_until"] == "TIMESTAMP"


@pytest.fixture
def store(conn: FakeConnection, clock: Any) -> OracleDBMemoryStore:
    script_schema(conn, N)
    s = OracleDBMemoryStore(HashingEmbedder(8), conn, clock=clock, memory_store_id="s1")
    conn.reset()
    return s


def _row(pk: int = 7) -> StoredRow:
    return StoredRow(
        key=("memory", pk),
        family="memory",
        record_type="fact",
        content="x",
        timestamp=None,
        metadata=None,
        created_at=NOW,
        scope=(None, "u1", None),
        id="m1",
    )


def test_update_row_sets_the_window_and_copies_it_to_the_search_rows(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    with store._impl.transaction() as tx:
        tx.update_row(_row(), {"valid_until": AT, "metadata": '{"k": 1}'})
    record, chunks = [c for c in conn.statements() if c.sql.startswith("UPDATE")]
    assert record.sql == (
        "UPDATE S1_MEMORIES SET valid_until = :valid_until, metadata = :metadata WHERE pk = :pk"
    )
    assert record.binds == {"valid_until": AT_NAIVE, "metadata": {"k": 1}, "pk": 7}
    assert chunks.sql.startswith("UPDATE S1_RECORD_CHUNKS SET valid_until = :valid_until ")
    assert chunks.binds["valid_until"] == AT_NAIVE
    sizes = [c.sizes for c in conn.calls if c.kind == "setinputsizes"]
    assert sizes[0]["valid_until"] is oracledb.DB_TYPE_TIMESTAMP
    assert conn.kinds()[-1] == "commit"


def test_replace_chunks_copies_the_records_window(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    from oam_core.store.planning import ChunkPlan

    conn.script(r"SELECT valid_from, valid_until FROM S1_MEMORIES", [(AT_NAIVE, None)])
    with store._impl.transaction() as tx:
        tx.replace_chunks(_row(), [ChunkPlan("new text", None)])
    (rows,) = [c.binds for c in conn.statements("executemany") if "S1_RECORD_CHUNKS" in c.sql]
    assert rows[0]["valid_from"] == AT_NAIVE and rows[0]["valid_until"] is None


def test_search_passes_valid_at_into_the_ranking_query(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    store._impl.rank_vector([QV * 8], 3, pred())
    (call,) = [c for c in conn.statements() if "VECTOR_DISTANCE" in c.sql]
    assert VALID in call.sql and call.binds["valid_at"] == AT_NAIVE


# -- opening ------------------------------------------------------------------------------


def _open(conn: FakeConnection, clock: Any, **kw: Any) -> OracleDBMemoryStore:
    return OracleDBMemoryStore(HashingEmbedder(8), conn, clock=clock, memory_store_id="s1", **kw)


def test_first_writable_open_upgrades_and_commits_the_backfill(
    conn: FakeConnection, clock: Any
) -> None:
    script_schema(conn, N, meta={"schema_version": "3"})
    store = _open(conn, clock, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    texts = conn.sql()
    upgrade = [s.sql for s in windows.upgrade(N)]
    at = [texts.index(u) for u in upgrade]
    assert at == sorted(at)
    kinds = conn.kinds()
    # The backfill (DML) is committed before the metadata records version 4.
    copy = max(i for i, c in enumerate(conn.calls) if c.sql == upgrade[-1])
    meta = next(i for i, c in enumerate(conn.calls) if c.sql.startswith("MERGE INTO S1_MEMORY"))
    assert any(c.kind == "commit" for c in conn.calls[copy:meta]) and "rollback" not in kinds
    (rows,) = [c.binds for c in conn.statements() if c.sql.startswith("MERGE INTO S1_MEMORY")]
    assert {r["meta_key"]: r["meta_value"] for r in rows}["schema_version"] == "4"
    assert store.names.windows


def test_an_interrupted_upgrade_runs_again(conn: FakeConnection, clock: Any) -> None:
    """DDL commits at once: the columns added before a failure are there on the rerun."""
    script_schema(conn, N, meta={"schema_version": "3"})
    conn.fail(
        "ALTER TABLE S1_ACTOR_PROFILES ADD \\(valid_from",
        FakeDbError(1430, "column being added already exists in table"),
    )
    _open(conn, clock, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert windows.copy_to_chunks(N).sql in conn.sql()
    conn.fail("ALTER TABLE S1_MEMORIES ADD", FakeDbError(1031, "insufficient privileges"))
    with pytest.raises(Exception, match="ORA-01031"):
        _open(conn, clock, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)


def _memory_row(pk: int) -> tuple[Any, ...]:
    return (pk, f"m{pk}", "fact", "pizza", 1, None, None, None, "u1", None, None, 0, None, AT_NAIVE)


def test_version_3_opened_without_ddl_reads_and_writes_without_naming_the_columns(
    conn: FakeConnection, clock: Any
) -> None:
    script_schema(conn, N, meta={"schema_version": "3"})
    store = _open(conn, clock)
    assert not store.names.windows and not any(s.startswith("ALTER") for s in conn.sql())
    old_row = (*_memory_row(3), None, None, None)  # expires_at, then NULL windows
    conn.script(r"WHERE r.pk IN", [old_row])
    conn.script(r"VECTOR_DISTANCE", [("memory", 3, 0.25)])
    conn.script(r"FROM S1_MEMORIES r WHERE r.record_type = :record_type", [old_row])
    conn.script(r"FROM S1_MEMORIES r WHERE r.id = :id AND", [old_row])
    fetched = (1, "fact", "a fact", 1, None, 0, None, AT_NAIVE, None, "u1", None, None)
    conn.script(r"WHERE r.id = :id FOR UPDATE", [(*fetched, None, None)])
    store.add(["a fact"], "fact", user_ids="u1", record_ids="f1")
    assert store.update("fact", "f1", text="another fact") == 1
    hits = store._impl.rank_vector([QV * 8], 3, pred())  # a time is asked for: ignored
    assert hits == [[(("memory", 3), 0.25)]]
    listed = store._impl.list(pred(record_types=frozenset({"fact"})), 5)
    assert [r.valid_from for r in listed] == [None]
    got = store.get("fact", "m3")
    assert got is not None and got.valid_until is None
    store.delete("fact", "f1")
    assert conn.sql() and not [s for s in conn.sql() if _names_window_column(s)]
    conn.reset()
    with store._impl.transaction() as tx, pytest.raises(SchemaError, match="version 3"):
        tx.update_row(_row(), {"valid_until": AT})
    assert not [c for c in conn.statements() if c.sql.startswith("UPDATE")]
    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):  # valid_from = timestamp
        store.add(["moved"], "fact", record_ids="f9", timestamps="2025-06-01T06:30:00Z")
    assert not [c for c in conn.statements() if c.sql.startswith("INSERT")]
    assert conn.kinds()[-1] == "rollback"


def test_statements_on_an_old_schema_name_no_window_column() -> None:
    p = pred()
    naive = sql.naive_utc(NOW)
    stmts = [
        *ranking(OLD, p).values(),
        sql.list_records(OLD, pred(record_types=frozenset({"fact"})), 5, naive),
        sql.get_record(OLD, "memory", "m", "fact", naive),
        sql.load_records(OLD, "memory", [1]),
        sql.thread_messages(OLD, "t", 0, None, naive),
        sql.thread_messages_by_seq(OLD, "t", None, None, None, False, naive),
        sql.fetch_row(OLD, "memory", "m"),
        sql.insert_records(OLD, "memory", []),
        sql.insert_chunks(OLD, [], True),
    ]
    from oam_core.store.oracle import dump

    stmts.append(dump.page(OLD, "memory", None, 10, None))
    for stmt in stmts:
        assert not _names_window_column(stmt.sql), stmt.sql
        assert "valid_at" not in stmt.binds and not set(stmt.types) & set(windows.COLUMNS)
    with pytest.raises(ValueError, match="cannot update columns"):
        sql.update_record(OLD, "memory", 1, {"valid_until": None})
    assert dataclasses.replace(OLD, windows=True) == N


# -- the store API on Oracle (store/base.py, store/versions.py) ---------------------------


def _inserted(conn: FakeConnection, table: str) -> list[dict[str, Any]]:
    return [r for c in conn.statements("executemany") if f"INTO {table} " in c.sql for r in c.binds]


def test_add_writes_the_window_to_the_record_and_its_search_rows(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    until = AT + timedelta(days=10)
    store.add(
        ["I live in Lisbon"],
        "fact",
        user_ids="u1",
        record_ids="f1",
        valid_from=AT,
        valid_until=until,
    )
    (record,) = _inserted(conn, "S1_MEMORIES")
    (chunk,) = _inserted(conn, "S1_RECORD_CHUNKS")
    expected = (AT_NAIVE, AT_NAIVE + timedelta(days=10))
    assert (record["valid_from"], record["valid_until"]) == expected
    assert (chunk["valid_from"], chunk["valid_until"]) == expected
    sizes = [c.sizes for c in conn.calls if c.kind == "setinputsizes"]
    assert all(s["valid_from"] is oracledb.DB_TYPE_TIMESTAMP for s in sizes)
    conn.reset()
    store.add(["hello"], "message", thread_ids="t1", roles="user", record_ids="m1")
    (message,) = _inserted(conn, "S1_MESSAGES")
    assert message["valid_from"] is None and message["valid_until"] is None


def test_a_timestamp_gives_valid_from(conn: FakeConnection, store: OracleDBMemoryStore) -> None:
    store.add(["I moved"], "memory", record_ids="f2", timestamps="2025-06-01T06:30:00Z")
    (record,) = _inserted(conn, "S1_MEMORIES")
    assert record["valid_from"] == AT_NAIVE and record["valid_until"] is None


def test_search_filters_current_by_default_and_as_asked(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    def ranked() -> list[Any]:
        calls = [c for c in conn.statements() if "VECTOR_DISTANCE" in c.sql]
        conn.reset()
        return calls

    store.search("pizza", k=3)
    (call,) = ranked()
    assert VALID in call.sql and call.binds["valid_at"] == sql.naive_utc(NOW)
    store.search("pizza", k=3, as_of=AT)
    assert ranked()[0].binds["valid_at"] == AT_NAIVE
    store.search("pizza", k=3, as_of=None)
    assert "valid_at" not in ranked()[0].sql
    store.list("fact", as_of="2025-06-01T06:30:00Z")
    (listed,) = [c for c in conn.statements() if "FROM S1_MEMORIES r WHERE" in c.sql]
    assert listed.binds["valid_at"] == AT_NAIVE


def _fetched(meta: dict[str, Any] | None, valid_from: datetime | None) -> tuple[Any, ...]:
    import json

    text = None if meta is None else json.dumps(meta)
    return (7, "fact", "x", 1, None, 0, text, AT_NAIVE, None, "u1", None, None, valid_from, None)


def test_fetch_reads_the_window_as_aware_times(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.script(r"WHERE r.id = :id FOR UPDATE", [_fetched(None, AT_NAIVE)])
    with store._impl.transaction() as tx:
        row = tx.fetch_locked("memory", "m1")
    assert row is not None
    assert row.valid_from == AT and row.valid_until is None
    (call,) = [c for c in conn.statements() if "FOR UPDATE" in c.sql]
    assert call.binds == {"id": "m1"}


def test_supersede_reads_both_rows_locked_then_ends_the_old_window(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    from oam_core.store.versions import VersionChange, apply_changes

    rows = {"old": (3, None), "new": (4, AT_NAIVE)}

    def fetch(_sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        pk, start = rows[binds["id"]]
        return [(pk, *_fetched(None, start)[1:])]

    conn.script(r"WHERE r.id = :id FOR UPDATE", fetch)
    with store._impl.transaction() as tx:
        done = apply_changes(store.runtime, tx, [VersionChange("supersede", "old", "new")])
    assert [(c.target_id, c.at) for c in done] == [("old", AT)]
    texts = conn.sql()
    locked = [i for i, t in enumerate(texts) if t.endswith("WHERE r.id = :id FOR UPDATE")]
    first_update = next(i for i, t in enumerate(texts) if t.startswith("UPDATE"))
    assert len(locked) == 2 and max(locked) < first_update
    ended = next(c for c in conn.statements() if c.sql.startswith("UPDATE S1_MEMORIES SET valid"))
    assert ended.binds["pk"] == 3 and ended.binds["valid_until"] == AT_NAIVE
    assert '"superseded_by": "new"' in json_text(ended.binds["metadata"])
    copied = next(c for c in conn.statements() if c.sql.startswith("UPDATE S1_RECORD_CHUNKS"))
    assert copied.binds == {"valid_until": AT_NAIVE, "family": "memory", "pk": 3}
    assert conn.kinds()[-1] == "commit"


def json_text(value: Any) -> str:
    import json

    return json.dumps(value)


def test_get_in_family_is_one_query_over_every_memory_type(
    conn: FakeConnection, store: OracleDBMemoryStore
) -> None:
    conn.script(r"FROM S1_MEMORIES r WHERE r.id = :id", [(*_memory_row(5), None, AT_NAIVE, None)])
    got = store._impl.get_in_family("memory", "m5", NOW)
    assert got is not None and got.valid_from == "2025-06-01T06:30:00+00:00"
    (call,) = conn.statements()
    assert ":record_type" not in call.sql and call.binds == {"id": "m5", "now": sql.naive_utc(NOW)}
    profile = sql.get_record(N, "user_profile", "u", None, NOW)
    assert "r.record_type = :family_type" in profile.sql


def test_dump_and_restore_keep_the_window(conn: FakeConnection, store: OracleDBMemoryStore) -> None:
    conn.script(
        r"FROM S1_MEMORIES r WHERE r.pk > :after",
        lambda _s, b: (
            [(*_memory_row(5), None, AT_NAIVE, AT_NAIVE + timedelta(days=1))]
            if b["after"] == -1
            else []
        ),
    )
    rows, _ = store._impl.dump_page(None, 10, None)
    (row,) = [r for r in rows if r.id == "m5"]
    assert (row.valid_from, row.valid_until) == (AT, AT + timedelta(days=1))
    conn.reset()
    with store._impl.transaction() as tx:
        tx.restore([row], 10)
    (record,) = _inserted(conn, "S1_MEMORIES")
    assert (record["valid_from"], record["valid_until"]) == (
        AT_NAIVE,
        AT_NAIVE + timedelta(days=1),
    )
    conn.reset()
    with store._impl.transaction() as tx:
        tx.n = OLD  # type: ignore[attr-defined]  # as a version-3 schema opened without DDL
        with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):
            tx.restore([row], 10)
    assert not conn.statements("executemany")


def test_import_of_a_dump_writes_the_windows(
    conn: FakeConnection, store: OracleDBMemoryStore, tmp_path: Any
) -> None:
    from oam_core import SQLiteMemoryStore, export_store, import_store

    path = tmp_path / "d.jsonl"
    with SQLiteMemoryStore(
        str(tmp_path / "s.db"), embedder=HashingEmbedder(8), clock=lambda: NOW
    ) as source:
        source.add(["Lisbon"], "fact", record_ids="f1", valid_from=AT, valid_until=NOW)
        source.add(["Berlin"], "fact", record_ids="f2")
        export_store(source, path)
    import_store(store, path)
    records = {r["id"]: r for r in _inserted(conn, "S1_MEMORIES")}
    assert (records["f1"]["valid_from"], records["f1"]["valid_until"]) == (
        AT_NAIVE,
        sql.naive_utc(NOW),
    )
    assert records["f2"]["valid_from"] is None and records["f2"]["valid_until"] is None
    chunks = _inserted(conn, "S1_RECORD_CHUNKS")
    assert sorted((c["valid_from"] is None, c["valid_until"] is None) for c in chunks) == [
        (False, False),
        (True, True),
    ]
