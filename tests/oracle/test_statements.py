"""Every generated Oracle statement: expected text, sqlglot (Oracle dialect) parse,
bind values and declared bind types (docs/oracle.md#how-the-store-talks-to-the-database)."""

from __future__ import annotations

import array
import dataclasses
import json
from typing import Any

import pytest
from oracle_helpers import NOW, parse_oracle
from test_filter_statements import OPERATOR_CASES

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import SEARCHABLE_TYPES
from oam_core.errors import SchemaError
from oam_core.filters import InvalidFilterError, matches, parse_filter
from oam_core.store.backend import Predicate
from oam_core.store.options import (
    MemoryRetentionConfig,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oam_core.store.oracle import ddl, schema, sql, windows
from oam_core.store.oracle import quoting as oracle_quoting
from oam_core.store.oracle.filter import OracleFilterCompiler
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.stmt import Stmt
from oam_core.store.text import query_terms

N = Names("S1_")
PRED = Predicate(
    record_types=SEARCHABLE_TYPES,
    now=NOW,
    user_id="u1",
    thread_id=None,
    metadata=parse_filter({"source": "slack", "tags": ["a"], "t": {"$array_contains": "x"}}),
)
LIST_PRED = Predicate(record_types=frozenset({"fact"}), now=NOW, agent_id="a1")
AT_PRED = dataclasses.replace(PRED, valid_at=NOW)


def all_sql_statements() -> list[Stmt]:
    naive = sql.naive_utc(NOW)
    return [
        *ddl.create_tables(N, 384),
        ddl.create_tables(N, None, flexible=True)[5],
        ddl.drop_table(N.chunks),
        ddl.drop_index(N.text_index),
        ddl.add_embedding_column(N, 384),
        *schema.inspect_statements(N).values(),
        sql.insert_records(N, "memory", []),
        sql.insert_records(N, "user_profile", []),
        sql.insert_chunks(N, [], True),
        sql.insert_chunks(N, [], False),
        sql.next_seq(N, "t"),
        sql.next_seq(N, None),
        sql.set_thread_seq(N, "t", 4),
        sql.lock_thread(N, "t"),
        *ddl.upgrade_steps(N, 1),
        sql.ids_to_pks(N, "agent_profile", ["a", "b"]),
        sql.fetch_row(N, "memory", "m"),
        sql.chunk_texts(N, "memory", 1),
        sql.record_expiry(N, "message", 1),
        sql.delete_chunks_of(N, "memory", 1),
        sql.update_record(N, "memory", 1, {"content": "x", "content_set": 1, "metadata": {}}),
        sql.update_chunk_expiry(N, "memory", 1, None),
        sql.find_pk(N, "memory", "m", "fact", "t1"),
        sql.delete_by_pk(N, "memory", 1),
        sql.find_pks(N, "memory", ["a", "b"], "fact", "t1"),
        sql.find_pks(N, "user_profile", ["a"], None, NOT_SET),
        sql.delete_chunks_of_pks(N, "memory", [1, 2]),
        sql.delete_by_pks(N, "memory", [1, 2]),
        *sql.delete_thread(N, "t"),
        sql.actor_threads(N, "agent_id", "a"),
        *sql.delete_actor_rows(N, "user_id", "u"),
        sql.insert_thread(N, {}),
        sql.thread_state_for_update(N, "t"),
        sql.update_thread(N, "t", {"config": {}, "state": {}}),
        *sql.purge(N, naive),
        sql.upsert_meta(N, []),
        sql.unembedded(N, 100),
        sql.unembedded(N, None),
        sql.list_records(N, LIST_PRED, 10, naive),
        sql.list_records(N, Predicate(record_types=frozenset({"thread"}), now=NOW), None, naive),
        sql.get_record(N, "memory", "m", "fact", naive),
        sql.get_record(N, "thread", "t", "thread", naive),
        sql.load_records(N, "message", [1, 2]),
        sql.count_messages(N, "t", naive),
        sql.thread_messages(N, "t", 3, 5, naive),
        sql.thread_messages(N, "t", 0, None, naive),
        sql.thread_messages_by_seq(N, "t", 3, 9, 100, False, naive),
        sql.thread_messages_by_seq(N, "t", None, 9, 5, True, naive),
        sql.thread_messages_by_seq(N, "t", None, None, None, False, naive),
        sql.get_thread(N, "t"),
        sql.list_threads(N, None, "a"),
        sql.rank_vector(N, array.array("f", [1.0]), 5, PRED),
        sql.rank_keyword(N, "{a} ACCUM {b}", 5, PRED),
        sql.hybrid_search("{}"),
        sql.hybrid_hits(N, "[]", PRED),
        # Validity windows (test_validity_statements.py): the filter and the writes.
        sql.rank_vector(N, array.array("f", [1.0]), 5, AT_PRED),
        sql.rank_keyword(N, "{a}", 5, AT_PRED),
        sql.hybrid_hits(N, "[]", AT_PRED),
        sql.list_records(N, dataclasses.replace(LIST_PRED, valid_at=NOW), 10, naive),
        sql.get_record(N, "memory", "m", None, naive),
        windows.record_window(N, "memory", 1),
        windows.update_chunk_windows(N, "memory", 1, {"valid_from": naive, "valid_until": None}),
        sql.update_record(N, "memory", 1, {"valid_until": naive}),
    ]


@pytest.mark.parametrize("stmt", all_sql_statements(), ids=lambda s: s.sql[:60])
def test_sql_parses_as_oracle(stmt: Stmt) -> None:
    assert not stmt.sql.rstrip().endswith(";")
    parse_oracle(stmt.sql)


def test_every_named_bind_is_supplied() -> None:
    import re

    for stmt in all_sql_statements():
        names = set(re.findall(r"(?<![:\w]):([a-z]\w*)", _strip_literals(stmt.sql)))
        given = set(stmt.binds)
        if not given:  # executemany templates and callers' bind dicts: checked elsewhere
            continue
        assert names <= given, (stmt.sql, names - given)
        assert set(stmt.types) <= given | set(sql.RECORD_TYPES) | {"chunk_text", "embedding"}


def _strip_literals(text: str) -> str:
    import re

    return re.sub(r"'[^']*'", "''", text)


# Oracle-specific forms sqlglot cannot parse: pinned by exact text instead.
def test_lock_table_exact_text() -> None:
    assert sql.lock_messages(N).sql == "LOCK TABLE S1_MESSAGES IN SHARE ROW EXCLUSIVE MODE"


def test_vector_column_and_indexes_exact_text() -> None:
    chunks = ddl.create_tables(N, 384)[5].sql
    assert chunks.endswith(
        "expires_at TIMESTAMP(6),\n  valid_from TIMESTAMP(6),\n  valid_until TIMESTAMP(6),\n"
        "  embedding VECTOR(384, FLOAT32)\n)"
    )
    assert "embedding" not in ddl.create_tables(N, None)[5].sql
    assert ddl.hnsw_index(N).sql == (
        "CREATE VECTOR INDEX S1_CHUNKS_VEC_IX ON S1_RECORD_CHUNKS (embedding)\n"
        "  ORGANIZATION INMEMORY NEIGHBOR GRAPH\n  DISTANCE COSINE\n"
        "  WITH TARGET ACCURACY 95\n  PARAMETERS (TYPE HNSW, NEIGHBORS 16, EFCONSTRUCTION 200)"
    )
    assert "ORGANIZATION NEIGHBOR PARTITIONS" in ddl.ivf_index(N).sql
    assert ddl.add_embedding_column(N, 3).sql == (
        "ALTER TABLE S1_RECORD_CHUNKS ADD (embedding VECTOR(3, FLOAT32))"
    )
    with pytest.raises(ValueError, match="vector_dim"):
        ddl.create_tables(N, 70000)


@pytest.mark.parametrize(
    ("sync", "clause"),
    [
        (SearchIndexSyncMode.ON_COMMIT, "SYNC (ON COMMIT)"),
        (SearchIndexSyncMode.MANUAL, "SYNC (MANUAL)"),
    ],
)
def test_text_index_sync_modes(sync: SearchIndexSyncMode, clause: str) -> None:
    assert ddl.text_index(N, sync).sql == (
        "CREATE INDEX S1_CHUNKS_TEXT_IX ON S1_RECORD_CHUNKS (chunk_text)\n"
        f"  INDEXTYPE IS CTXSYS.CONTEXT PARAMETERS ('{clause}')"
    )
    assert ddl.alter_text_sync(N, sync).sql == (
        f"ALTER INDEX S1_CHUNKS_TEXT_IX REBUILD PARAMETERS ('REPLACE METADATA {clause}')"
    )
    with pytest.raises(ValueError, match="HYBRID"):
        ddl.text_index(N, SearchIndexSyncMode.AUTO)


@pytest.mark.parametrize(
    ("sync", "maintenance"),
    [
        (SearchIndexSyncMode.ON_COMMIT, "MAINTENANCE MANUAL SYNC (ON COMMIT)"),
        (SearchIndexSyncMode.MANUAL, "MAINTENANCE MANUAL SYNC (MANUAL)"),
        (SearchIndexSyncMode.AUTO, "MAINTENANCE AUTO"),
    ],
)
def test_hybrid_index_maintenance(sync: SearchIndexSyncMode, maintenance: str) -> None:
    assert ddl.hybrid_index(N, sync).sql == (
        "CREATE HYBRID VECTOR INDEX S1_CHUNKS_HYBRID_IX ON S1_RECORD_CHUNKS (chunk_text)\n"
        f"  PARAMETERS ('VECTORIZER S1_OAM_VECTORIZER {maintenance}')"
    )


def test_plsql_blocks_take_binds() -> None:
    pref = ddl.create_vectorizer(N, "DOC_MODEL")
    assert pref.is_plsql and pref.sql.endswith("END;")
    assert "DBMS_VECTOR_CHAIN.VECTORIZER, JSON(:pref_params)" in pref.sql
    params = json.loads(pref.binds["pref_params"])
    assert params["model"] == "DOC_MODEL" and params["distance"] == "cosine"
    job = ddl.create_purge_job(N)
    assert "enabled => TRUE" in job.sql and job.binds["job_name"] == "S1_OAM_PURGE_JOB"
    assert ddl.sync_index("X").binds == {"idx_name": "X"}
    for stmt in (ddl.drop_vectorizer(N), ddl.drop_purge_job(N)):
        assert stmt.is_plsql and stmt.sql.endswith("END;")


def test_bind_types() -> None:
    assert sql.insert_records(N, "memory", []).types == {
        "content": "CLOB",
        "metadata": "JSON",
        "created_at": "TIMESTAMP",
        "expires_at": "TIMESTAMP",
        "valid_from": "TIMESTAMP",
        "valid_until": "TIMESTAMP",
    }
    assert sql.insert_chunks(N, [], True).types == {
        "chunk_text": "CLOB",
        "expires_at": "TIMESTAMP",
        "valid_from": "TIMESTAMP",
        "valid_until": "TIMESTAMP",
        "embedding": "VECTOR",
    }
    assert "embedding" not in sql.insert_chunks(N, [], False).sql
    assert sql.rank_vector(N, array.array("f", [1.0]), 1, PRED).types["qv"] == "VECTOR"
    assert sql.insert_thread(N, {}).types == {
        "metadata": "JSON",
        "config": "JSON",
        "state": "JSON",
        "created_at": "TIMESTAMP",
    }
    assert sql.update_thread(N, "t", {"state": {}}).types == {"state": "JSON"}


def test_ranking_queries_filter_before_fetch_first() -> None:
    for stmt in (
        sql.rank_vector(N, array.array("f", [1.0]), 5, PRED),
        sql.rank_keyword(N, "{a}", 5, PRED),
    ):
        head, tail = stmt.sql.rsplit("FETCH FIRST", 1)
        assert "c.user_id = :user_id" in head and "c.thread_id IS NULL" in head
        assert "JSON_EXISTS(r.metadata" in head and tail == " :k ROWS ONLY"
        assert stmt.binds["now"] == sql.naive_utc(NOW)
    kw = sql.rank_keyword(N, "{a}", 5, PRED).sql
    assert "CONTAINS(c.chunk_text, :q, 1) > 0" in kw and "SCORE(1) AS score" in kw


def test_metadata_filter_joins_each_family_table() -> None:
    stmt = sql.rank_vector(N, array.array("f", [1.0]), 5, PRED)
    for table in ("S1_MESSAGES", "S1_MEMORIES", "S1_ACTOR_PROFILES"):
        assert f"EXISTS (SELECT 1 FROM {table} r WHERE r.pk = c.record_pk" in stmt.sql
    only_memories = Predicate(record_types=frozenset({"fact"}), now=NOW, metadata=PRED.metadata)
    one = sql.rank_vector(N, array.array("f", [1.0]), 5, only_memories).sql
    assert "S1_MESSAGES" not in one and "S1_ACTOR_PROFILES" not in one


def test_text_query_escapes_terms() -> None:
    assert sql.text_query(["pizza", "near", "and", "1999"]) == (
        "{pizza} ACCUM {near} ACCUM {and} ACCUM {1999}"
    )
    assert sql.text_query(["a}b", "", "x-y"]) is None
    assert sql.text_query([f"t{i}" for i in range(100)]).count("ACCUM") == 63  # type: ignore[union-attr]


def test_text_query_of_a_dotted_capital_i_or_a_decomposed_accent_keeps_the_word() -> None:
    # "İ".lower() is i + U+0307 (a combining dot, not a letter): the word stays whole
    # and is searched at all (B57); a decomposed é stays inside its word.
    assert sql.text_query(query_terms("İstanbul İZMİR")) == "{istanbul} ACCUM {izmir}"
    assert sql.text_query(query_terms("Cafe\u0301 Straße")) == "{café} ACCUM {straße}"


# -- filter compiler ---------------------------------------------------------------------


CASES: list[tuple[dict[str, Any], str, dict[str, Any]]] = [
    (
        {"source": "slack"},
        """JSON_EXISTS(m, 'strict $?(@."source" == $v0)' PASSING :f0 AS "v0")""",
        {"f0": "slack"},
    ),
    ({"flag": True}, """JSON_EXISTS(m, 'strict $?(@."flag" == true)')""", {}),
    ({"gone": None}, """JSON_EXISTS(m, 'strict $?(@."gone" == null)')""", {}),
    (
        {"review": {"status": "open"}},
        """(JSON_EXISTS(m, 'strict $?(@."review".type() == "object")') AND """
        """JSON_EXISTS(m, 'strict $?(@."review"."status" == $v0)' PASSING :f0 AS "v0"))""",
        {"f0": "open"},
    ),
    (
        {"tags": ["prod", "urgent"]},
        """(JSON_EXISTS(m, 'strict $."tags"') AND JSON_EQUAL(JSON_QUERY(m, 'strict $."tags"'), """
        """JSON(:f0)))""",
        {"f0": '["prod", "urgent"]'},
    ),
    (
        {"tags": {"$array_contains": "prod"}},
        """JSON_EXISTS(m, 'lax $?(@."tags".type() == "array" && ((@."tags"[*] == $v0)))' """
        """PASSING :f0 AS "v0")""",
        {"f0": "prod"},
    ),
    (
        {"tags": {"$array_contains_any": ["a", 2]}},
        """JSON_EXISTS(m, 'lax $?(@."tags".type() == "array" && ((@."tags"[*] == $v0) || """
        """(@."tags"[*] == $v1)))' PASSING :f0 AS "v0", :f1 AS "v1")""",
        {"f0": "a", "f1": 2},
    ),
    (
        {"it's": {"$not": 1}},
        """NOT (JSON_EXISTS(m, 'strict $?(@."it''s" == $v0)' PASSING :f0 AS "v0"))""",
        {"f0": 1},
    ),
]


@pytest.mark.parametrize(("flt", "expected", "binds"), CASES + OPERATOR_CASES)
def test_filter_compiles_to_json_exists_with_passing(
    flt: dict[str, Any], expected: str, binds: dict[str, Any]
) -> None:
    comp = OracleFilterCompiler()
    assert comp.compile("m", parse_filter(flt)) == expected
    assert comp.binds == binds
    parse_oracle(f"SELECT 1 FROM t WHERE {expected}")


def test_filter_values_never_reach_sql_text() -> None:
    evil = "x' OR 1=1 --"
    comp = OracleFilterCompiler()
    text = comp.compile("m", parse_filter({"k": evil, "l": {"$array_contains": evil}}))
    assert evil not in text and list(comp.binds.values()) == [evil, evil]


@pytest.mark.parametrize("key", ['a"b', "a\\b", "a\nb"])
def test_filter_rejects_keys_the_path_cannot_quote(key: str) -> None:
    with pytest.raises(InvalidFilterError, match="cannot filter"):
        OracleFilterCompiler().compile("m", parse_filter({key: 1}))


def test_filter_semantics_match_the_reference_on_the_cases() -> None:
    # The SQL forms above encode the reference semantics (filters.matches); pin the
    # reference results the live suite compares against (C10, C11 in docs/failure-modes.md).
    tags = [{"tags": ["a", "b"]}, {"tags": ["a"]}, {"tags": ["b", "a"]}]
    assert [matches(m, parse_filter({"tags": ["a"]})) for m in tags] == [False, True, False]
    contains = parse_filter({"tags": {"$array_contains": "a"}})
    assert [matches(m, contains) for m in tags] == [True, True, True]
    assert matches({"tags": "a"}, parse_filter({"tags": {"$not": {"$array_contains": "a"}}}))


# -- schema planner ----------------------------------------------------------------------


def wanted(strategy: SearchStrategy = SearchStrategy.VECTOR, **kw: Any) -> schema.Wanted:
    base: dict[str, Any] = {
        "strategy": strategy,
        "sync": SearchIndexSyncMode.ON_COMMIT,
        "vector_dim": 8,
        "model": None,
        "retention": None,
    }
    base.update(kw)
    return schema.Wanted(**base)


def existing(**kw: Any) -> schema.SchemaState:
    meta = {
        "schema_version": str(ddl.SCHEMA_VERSION),
        "vector_dim": "8",
        "search_index_sync": "ON_COMMIT",
        "retention": schema.retention_json(MemoryRetentionConfig()),
    }
    meta.update(kw.pop("meta", {}))
    indexes = kw.pop("indexes", {N.vector_index})
    return schema.SchemaState(
        tables=frozenset(N.tables), indexes=frozenset(indexes), meta=meta, has_job=True, **kw
    )


def _sqls(plan: schema.Plan) -> list[str]:
    return [s if isinstance(s, str) else s.sql for s in plan.steps]


def test_plan_create_if_empty_per_strategy() -> None:
    empty = schema.SchemaState()
    vec = schema.plan_schema(SchemaPolicy.CREATE_IF_EMPTY, N, empty, wanted())
    assert _sqls(vec)[-2:] == [schema.VECTOR_INDEX, schema.PURGE_JOB]
    kw = schema.plan_schema(
        SchemaPolicy.CREATE_IF_EMPTY, N, empty, wanted(SearchStrategy.KEYWORD, vector_dim=None)
    )
    assert "CTXSYS.CONTEXT" in _sqls(kw)[-2] and schema.VECTOR_INDEX not in _sqls(kw)
    hy = schema.plan_schema(
        SchemaPolicy.CREATE_IF_EMPTY,
        N,
        empty,
        wanted(SearchStrategy.HYBRID, vector_dim=None, model="M"),
    )
    assert "CREATE_PREFERENCE" in _sqls(hy)[-3] and "HYBRID VECTOR INDEX" in _sqls(hy)[-2]
    assert hy.meta["hybrid_model"] == "M"


def test_plan_require_existing_never_runs_ddl() -> None:
    plan = schema.plan_schema(SchemaPolicy.REQUIRE_EXISTING, N, existing(), wanted())
    assert plan.steps == [] and plan.meta == {} and plan.vector_dim == 8


@pytest.mark.parametrize("policy", [SchemaPolicy.CREATE_IF_EMPTY, SchemaPolicy.REQUIRE_EXISTING])
def test_plan_refuses_one_dropped_table_naming_it_and_runs_no_ddl(policy: SchemaPolicy) -> None:
    """One table dropped from a current schema (the SQLite and PostgreSQL stores
    completed it silently; tests/conformance/test_store_partial_schema.py)."""
    state = existing()
    dropped = schema.SchemaState(
        tables=state.tables - {N.chunks},
        indexes=state.indexes,
        meta=state.meta,
        has_job=True,
    )
    with pytest.raises(SchemaError, match=rf"{N.chunks}.*missing.*CREATE_IF_NECESSARY"):
        schema.plan_schema(policy, N, dropped, wanted())
    plan = schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, dropped, wanted())
    assert [s.split()[2] for s in _sqls(plan) if s.startswith("CREATE TABLE")] == [N.chunks]


def test_plan_create_if_empty_on_an_incomplete_schema_fails() -> None:
    partial = schema.SchemaState(
        tables=frozenset({N.meta, N.threads}), meta={"schema_version": str(ddl.SCHEMA_VERSION)}
    )
    with pytest.raises(ValueError, match="incomplete or outdated"):
        schema.plan_schema(SchemaPolicy.CREATE_IF_EMPTY, N, partial, wanted())
    plan = schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, partial, wanted())
    created = [s.split()[2] for s in _sqls(plan) if s.startswith("CREATE TABLE")]
    assert created == [
        "S1_ACTOR_PROFILES",
        "S1_MESSAGES",
        "S1_MEMORIES",
        "S1_RECORD_CHUNKS",
        "S1_CHUNK_SOURCES",
    ]
    assert not any("S1_THREADS_USER_IX" in s for s in _sqls(plan))


def test_plan_newer_schema_fails() -> None:
    with pytest.raises(ValueError, match="Upgrade oam"):
        schema.plan_schema(
            SchemaPolicy.CREATE_IF_NECESSARY, N, existing(meta={"schema_version": "9"}), wanted()
        )


def test_plan_recreate_drops_everything_first() -> None:
    state = existing(indexes={N.vector_index, N.hybrid_index}, has_vectorizer=True)
    plan = schema.plan_schema(SchemaPolicy.RECREATE, N, state, wanted())
    steps = _sqls(plan)
    assert "DBMS_SCHEDULER.DROP_JOB" in steps[0]
    assert steps[1] == "DROP INDEX S1_CHUNKS_HYBRID_IX FORCE"
    assert steps[2] == "DROP TABLE S1_CHUNK_SOURCES CASCADE CONSTRAINTS PURGE"
    assert steps[3] == "DROP TABLE S1_RECORD_CHUNKS CASCADE CONSTRAINTS PURGE"
    assert "DROP_PREFERENCE" in steps[9]
    assert steps[10].startswith("CREATE TABLE S1_MEMORY_STORE_META")


def test_plan_vector_store_on_a_keyword_schema_without_vectors() -> None:
    state = existing(meta={"vector_dim": ""}, indexes={N.text_index})
    with pytest.raises(ValueError, match="no embedding column"):
        schema.plan_schema(SchemaPolicy.REQUIRE_EXISTING, N, state, wanted())
    plan = schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, state, wanted())
    assert _sqls(plan) == [
        "ALTER TABLE S1_RECORD_CHUNKS ADD (embedding VECTOR(8, FLOAT32))",
        schema.VECTOR_INDEX,
    ]
    assert plan.meta == {
        "vector_dim": "8",
        "embedding_column": "fixed",
        "search_strategy": "VECTOR",
    }


def test_plan_hybrid_model_must_match() -> None:
    state = existing(indexes={N.hybrid_index}, meta={"hybrid_model": "OTHER"})
    with pytest.raises(ValueError, match="model OTHER"):
        schema.plan_schema(
            SchemaPolicy.CREATE_IF_NECESSARY,
            N,
            state,
            wanted(SearchStrategy.HYBRID, vector_dim=None, model="doc_model"),
        )


def test_plan_text_sync_change_needs_create_if_necessary() -> None:
    state = existing(indexes={N.vector_index, N.text_index})
    manual = wanted(SearchStrategy.KEYWORD, sync=SearchIndexSyncMode.MANUAL)
    with pytest.raises(ValueError, match="syncs ON_COMMIT"):
        schema.plan_schema(SchemaPolicy.REQUIRE_EXISTING, N, state, manual)
    plan = schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, state, manual)
    assert _sqls(plan) == [
        "ALTER INDEX S1_CHUNKS_TEXT_IX REBUILD PARAMETERS ('REPLACE METADATA SYNC (MANUAL)')"
    ]


def test_plan_creates_a_missing_purge_job_only_when_allowed() -> None:
    state = schema.SchemaState(
        tables=frozenset(N.tables), indexes=frozenset({N.vector_index}), meta=existing().meta
    )
    assert schema.plan_schema(SchemaPolicy.REQUIRE_EXISTING, N, state, wanted()).steps == []
    assert _sqls(schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, state, wanted())) == [
        schema.PURGE_JOB
    ]


def test_btree_index_keys_fit_an_8k_block() -> None:
    # Each id column is VARCHAR2(512 CHAR) = 2048 bytes in AL32UTF8; the key limit of
    # an 8K block is 6398 bytes, so an index may hold at most one id-sized column.
    import re

    wide = {"id", "thread_id", "user_id", "agent_id"}
    stmts = [s.sql for s in ddl.create_tables(N, 8)]
    keys = [m.group(1) for s in stmts for m in [re.search(r"ON \w+ \(([^)]*)\)$", s)] if m]
    keys += [m for s in stmts for m in re.findall(r"UNIQUE \(([^)]*)\)", s)]
    assert len(keys) == 21  # 17 indexes + 4 unique constraints
    for key in keys:
        cols = [c.strip() for c in key.split(",")]
        assert sum(c in wide for c in cols) <= 1, key


def test_plan_vector_store_without_dimension_gets_a_flexible_column() -> None:
    plan = schema.plan_schema(
        SchemaPolicy.CREATE_IF_EMPTY, N, schema.SchemaState(), wanted(vector_dim=None)
    )
    steps = _sqls(plan)
    assert "embedding VECTOR(*, FLOAT32)" in next(s for s in steps if "S1_RECORD_CHUNKS (" in s)
    assert schema.VECTOR_INDEX not in steps  # exact search; no index on a flexible column
    assert plan.meta["embedding_column"] == "flexible" and "vector_dim" not in plan.meta
    assert plan.local_vectors and plan.vector_dim is None
    learned = existing(meta={"embedding_column": "flexible", "vector_dim": "4"}, indexes=set())
    reopened = schema.plan_schema(
        SchemaPolicy.CREATE_IF_NECESSARY, N, learned, wanted(vector_dim=None)
    )
    assert reopened.vector_dim == 4 and reopened.local_vectors and reopened.steps == []
    with pytest.raises(ValueError, match="dimension 4"):
        schema.plan_schema(SchemaPolicy.REQUIRE_EXISTING, N, learned, wanted(vector_dim=3))
    assert ddl.add_embedding_column(N, None).sql == (
        "ALTER TABLE S1_RECORD_CHUNKS ADD (embedding VECTOR(*, FLOAT32))"
    )


def test_thread_messages_by_seq_is_keyed_by_seq_no() -> None:
    """Issue 14 (1): pages of a thread are read by seq_no range, never by OFFSET."""
    naive = sql.naive_utc(NOW)
    page = sql.thread_messages_by_seq(N, "t", 41, None, 100, False, naive)
    assert "OFFSET" not in page.sql
    assert page.sql.endswith(
        "AND r.seq_no > :after ORDER BY r.seq_no ASC, r.pk ASC FETCH FIRST :lim ROWS ONLY"
    )
    assert page.binds == {"thread_id": "t", "now": naive, "after": 41, "lim": 100}
    window = sql.thread_messages_by_seq(N, "t", None, 41, 7, True, naive)
    assert "AND r.seq_no <= :through ORDER BY r.seq_no DESC, r.pk DESC" in window.sql
    assert window.binds["through"] == 41 and window.binds["lim"] == 7


def test_seq_no_high_water_mark_statements() -> None:
    """Issue 14 (9): Oracle numbers messages after the thread's high-water mark too,
    not only after MAX(seq_no) of the messages left (a number freed by deleting the
    last message is never handed out again)."""
    stmt = sql.next_seq(N, "t1")
    assert stmt.sql == (
        "SELECT GREATEST(COALESCE((SELECT MAX(seq_no) FROM S1_MESSAGES "
        "WHERE thread_id = :thread_id), -1), "
        "COALESCE((SELECT MAX(seq_no) FROM S1_THREADS WHERE id = :thread_id), -1)) + 1 "
        "FROM dual"
    )
    assert stmt.binds == {"thread_id": "t1"}
    mark = sql.set_thread_seq(N, "t1", 7)
    assert mark.sql == "UPDATE S1_THREADS SET seq_no = :seq_no WHERE id = :thread_id"
    assert mark.binds == {"seq_no": 7, "thread_id": "t1"}
    threads = next(
        s for s in ddl.create_tables(N, 8) if s.sql.startswith("CREATE TABLE S1_THREADS")
    )
    assert "  seq_no NUMBER,\n" in threads.sql


def test_plan_upgrades_a_version_1_schema() -> None:
    """The schema upgrade step: version 1 has no THREADS.seq_no; CREATE_IF_NECESSARY
    adds it and records version 2; REQUIRE_EXISTING refuses the outdated schema."""
    old = existing(meta={"schema_version": "1"})
    with pytest.raises(
        ValueError, match=r"outdated \(schema version is '1'\).*CREATE_IF_NECESSARY"
    ):
        schema.plan_schema(SchemaPolicy.REQUIRE_EXISTING, N, old, wanted())
    plan = schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, old, wanted())
    legacy = oracle_quoting.legacy_context_rows(N).sql
    to_4 = [s.sql for s in windows.upgrade(N)]
    assert _sqls(plan) == ["ALTER TABLE S1_THREADS ADD (seq_no NUMBER)", legacy, *to_4]
    assert plan.meta["schema_version"] == "4" == str(ddl.SCHEMA_VERSION)
    current = schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, existing(), wanted())
    assert "ALTER TABLE S1_THREADS ADD (seq_no NUMBER)" not in _sqls(current)
    assert legacy not in _sqls(current)
    with pytest.raises(ValueError, match="no upgrade from oam schema version 0"):
        ddl.upgrade_steps(N, 0)


def test_plan_upgrades_a_version_2_schema() -> None:
    """Version 2 has no CHUNK_SOURCES: CREATE_IF_NECESSARY creates it (table, then its
    index) and deletes the context rows that do not say what they quote."""
    tables = frozenset(t for t in N.tables if t != N.chunk_sources)
    old = dataclasses.replace(existing(meta={"schema_version": "2"}), tables=tables)
    plan = schema.plan_schema(SchemaPolicy.CREATE_IF_NECESSARY, N, old, wanted())
    steps = _sqls(plan)
    created = [i for i, s in enumerate(steps) if s.startswith("CREATE TABLE S1_CHUNK_SOURCES")]
    index = [i for i, s in enumerate(steps) if "S1_CHUNK_SOURCES_SRC_IX" in s]
    legacy = steps.index(oracle_quoting.legacy_context_rows(N).sql)
    assert created and index and created[0] < index[0] < legacy
    assert "REFERENCES S1_MESSAGES (pk) ON DELETE CASCADE" in steps[created[0]]
    assert steps[legacy + 1 :] == [s.sql for s in windows.upgrade(N)]
    assert plan.meta["schema_version"] == "4"


def test_plan_reopening_with_another_strategy_is_recorded_or_refused_by_name() -> None:
    """Issue 14 (9): a strategy the schema's indexes serve reopens (under any policy:
    a metadata write, no DDL) and is recorded; one they cannot serve is refused
    naming the strategy."""
    hybrid = existing(
        indexes={N.vector_index, N.hybrid_index},
        meta={"hybrid_model": "M", "search_strategy": "HYBRID"},
    )
    for strategy in (SearchStrategy.KEYWORD, SearchStrategy.VECTOR):
        plan = schema.plan_schema(
            SchemaPolicy.REQUIRE_EXISTING, N, hybrid, wanted(strategy=strategy)
        )
        assert plan.steps == [] and plan.meta == {"search_strategy": strategy.value}
    same = schema.plan_schema(
        SchemaPolicy.REQUIRE_EXISTING,
        N,
        hybrid,
        wanted(strategy=SearchStrategy.HYBRID, model="M"),
    )
    assert same.meta == {}
    vector_only = existing()  # no text or hybrid index
    with pytest.raises(ValueError, match=r"SearchStrategy\.KEYWORD is incompatible"):
        schema.plan_schema(
            SchemaPolicy.REQUIRE_EXISTING, N, vector_only, wanted(strategy=SearchStrategy.KEYWORD)
        )
    fresh = schema.plan_schema(SchemaPolicy.CREATE_IF_EMPTY, N, schema.SchemaState(), wanted())
    assert fresh.meta["search_strategy"] == "VECTOR"
