"""PostgreSQL-only rules: opening, schema policies and the version row (docs/postgres.md#opening, docs/store.md#schema-policies),
the HNSW path of VECTOR search, and the jsonb filter compiler against the reference
evaluator. The shared store semantics run in the other conformance files on every
back end, PostgreSQL included.
"""

from __future__ import annotations

from typing import Any

import _pg
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.filters import matches, parse_filter
from oam_core.memory.client import OracleAgentMemory
from oam_core.store.options import MemoryRetentionConfig, SchemaPolicy, SearchStrategy
from oam_core.store.postgres import schema as pg_schema
from oam_core.store.threads import thread_store

psycopg = pytest.importorskip("psycopg")
psycopg_pool = pytest.importorskip("psycopg_pool")


def _store(conninfo: str, **kwargs: Any) -> Any:
    from oam_core.store.postgres import PostgresMemoryStore

    kwargs.setdefault("embedder", HashingEmbedder(16))
    return PostgresMemoryStore(conninfo, **kwargs)


def _tables(conninfo: str) -> list[str]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
        ).fetchall()
    return [r[0] for r in rows]


# -- schema policies --------------------------------------------------------------------


def test_require_existing_is_the_default_and_writes_nothing(conninfo: str) -> None:
    with pytest.raises(ValueError, match=r"REQUIRE_EXISTING.*CREATE_IF_NECESSARY"):
        _store(conninfo)
    assert _tables(conninfo) == []


def test_create_if_empty_then_require_existing(conninfo: str) -> None:
    store = _store(conninfo, schema_policy="CREATE_IF_EMPTY")
    store.add(["kept"], "memory", record_ids="m1")
    store.close()
    assert _tables(conninfo) == ["chunk_sources", "chunk_stats", "chunks", "oam_meta", "records"]
    again = _store(conninfo)  # REQUIRE_EXISTING
    assert again.get("memory", "m1").content == "kept"
    again.close()
    again = _store(conninfo, schema_policy=SchemaPolicy.CREATE_IF_EMPTY)  # exists: reused
    assert again.get("memory", "m1").content == "kept"
    again.close()


def test_create_if_empty_refuses_a_partial_store(conninfo: str) -> None:
    _store(conninfo, schema_policy="CREATE_IF_NECESSARY").close()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP TABLE chunks CASCADE")  # and the links' reference to it
    with pytest.raises(ValueError, match=r"CREATE_IF_EMPTY.*part of an oam store"):
        _store(conninfo, schema_policy="CREATE_IF_EMPTY")
    _store(conninfo, schema_policy="CREATE_IF_NECESSARY").close()  # completes it
    assert _tables(conninfo) == ["chunk_sources", "chunk_stats", "chunks", "oam_meta", "records"]


def test_recreate_drops_the_data(conninfo: str) -> None:
    store = _store(conninfo, schema_policy="CREATE_IF_NECESSARY")
    store.add(["gone"], "memory", record_ids="m1")
    store.close()
    fresh = _store(conninfo, schema_policy="RECREATE")
    assert fresh.list("memory") == []
    fresh.close()


def test_memory_store_id_prefixes_every_object_and_isolates_stores(conninfo: str) -> None:
    a = _store(conninfo, schema_policy="CREATE_IF_NECESSARY", memory_store_id="alpha")
    b = _store(conninfo, schema_policy="CREATE_IF_NECESSARY", memory_store_id="beta")
    a.add(["in alpha"], "memory", record_ids="m1")
    assert b.get("memory", "m1") is None
    assert _tables(conninfo) == [
        "alpha_chunk_sources",
        "alpha_chunk_stats",
        "alpha_chunks",
        "alpha_oam_meta",
        "alpha_records",
        "beta_chunk_sources",
        "beta_chunk_stats",
        "beta_chunks",
        "beta_oam_meta",
        "beta_records",
    ]
    with psycopg.connect(conninfo) as conn:
        indexes = [
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            )
        ]
        configs = [r[0] for r in conn.execute("SELECT cfgname FROM pg_ts_config")]
    assert indexes and all(i.startswith(("alpha_", "beta_")) for i in indexes)
    assert "alpha_chunks_hnsw" in indexes and "alpha_chunks_tsv" in indexes
    assert {"alpha_oam_fts", "beta_oam_fts"} <= set(configs)
    a.close()
    b.close()
    with pytest.raises(ValueError, match="memory_store_id"):
        _store(conninfo, memory_store_id="1bad")


def test_version_row_records_the_config(conninfo: str) -> None:
    retention = MemoryRetentionConfig(default_ttl_days=7)
    store = _store(
        conninfo,
        schema_policy="CREATE_IF_NECESSARY",
        search_strategy="HYBRID",
        memory_retention_config=retention,
    )
    store.close()
    with psycopg.connect(conninfo) as conn:
        meta = dict(conn.execute("SELECT key, value FROM oam_meta").fetchall())
    assert meta["schema_version"] == str(pg_schema.SCHEMA_VERSION)
    assert meta["vector_dim"] == "16"
    assert meta["search_strategy"] == "HYBRID"
    assert '"default_ttl_days": 7' in meta["retention"]
    again = _store(conninfo, embedder=None)  # config comes from the version row
    assert again.search_strategy is SearchStrategy.HYBRID
    assert again.vector_dim == 16
    assert again.memory_retention_config == retention
    again.close()


def test_another_dimension_is_a_clear_error(conninfo: str) -> None:
    _store(conninfo, schema_policy="CREATE_IF_NECESSARY", search_strategy="VECTOR").close()
    with pytest.raises(ValueError, match=r"dimension 16.*dimension 32"):
        _store(conninfo, embedder=HashingEmbedder(32))


def test_newer_and_outdated_schema_versions(conninfo: str) -> None:
    _store(conninfo, schema_policy="CREATE_IF_NECESSARY").close()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("UPDATE oam_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ValueError, match=r"version 99.*Upgrade oam"):
        _store(conninfo, schema_policy="CREATE_IF_NECESSARY")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("UPDATE oam_meta SET value = '0' WHERE key = 'schema_version'")
    with pytest.raises(ValueError, match=r"version 0, older.*CREATE_IF_NECESSARY"):
        _store(conninfo)
    with pytest.raises(ValueError, match="no upgrade from oam schema version 0"):
        _store(conninfo, schema_policy="CREATE_IF_NECESSARY")


def test_upgrade_path_applies_steps(conninfo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from oam_core.store.postgres import schema

    _store(conninfo, schema_policy="CREATE_IF_NECESSARY").close()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("UPDATE oam_meta SET value = '0' WHERE key = 'schema_version'")
    monkeypatch.setitem(
        schema.UPGRADES,
        0,
        lambda conn, p: conn.execute(f"CREATE INDEX {p}records_upgraded ON {p}records (role)"),
    )
    _store(conninfo, schema_policy="CREATE_IF_NECESSARY").close()
    with psycopg.connect(conninfo) as conn:
        version = conn.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(schema.SCHEMA_VERSION),)
        assert conn.execute("SELECT to_regclass('records_upgraded')").fetchone() != (None,)


def test_dimension_learned_from_the_first_vector_types_the_column(conninfo: str) -> None:
    store = _store(conninfo, embedder=None, schema_policy="CREATE_IF_NECESSARY")
    assert store.vector_dim is None
    store.add(["v"], "memory", record_ids="m1", embeddings=[[1.0, 0.0, 0.0]])
    assert store.vector_dim == 3
    with psycopg.connect(conninfo) as conn:
        typ = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
        ).fetchone()
    assert typ == ("vector(3)",)
    assert store.search(query_vector=[1.0, 0.0, 0.0], k=1)[0][0].id == "m1"
    store.close()
    with pytest.raises(ValueError, match="dimension 3"):
        _store(conninfo, embedder=None, vector_dim=4)


def test_unreachable_server_is_a_clear_error_without_the_password() -> None:
    from oam_core.errors import StoreConnectionError
    from oam_core.store.postgres import PostgresMemoryStore

    with pytest.raises(StoreConnectionError, match="cannot connect to PostgreSQL") as info:
        PostgresMemoryStore("postgresql://u:secret@/db?host=/nonexistent-dir-oam")
    assert not isinstance(info.value, ValueError)  # a connection failure is not a bad value
    assert "secret" not in str(info.value)
    with pytest.raises(ValueError, match="conninfo_or_pool"):
        PostgresMemoryStore(42)  # type: ignore[arg-type]


# -- the client over PostgreSQL (docs/concepts.md#opening) --------------------------------


def test_client_on_a_pool_a_connection_and_a_url(conninfo: str) -> None:
    from oam_core import PostgresMemoryStore

    pool = psycopg_pool.ConnectionPool(conninfo, min_size=1, max_size=4, open=True)
    try:
        client = OracleAgentMemory(
            connection=pool,
            embedder="hashing/16",
            schema_policy="CREATE_IF_NECESSARY",
            memory_store_id="s1",
            search_strategy="hybrid",
            extract_memories=False,
        )
        assert isinstance(client.store, PostgresMemoryStore)
        assert client.store.memory_store_id == "s1"
        assert client.store.search_strategy is SearchStrategy.HYBRID
        thread = client.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "my dog is called Moose"}])
        client.close()
        assert not pool.closed  # a borrowed pool stays open
    finally:
        pool.close()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        client = OracleAgentMemory(
            connection=conn, embedder="hashing/16", memory_store_id="s1", extract_memories=False
        )
        assert [m.content for m in client.get_thread("t1").get_messages()] == [
            "my dog is called Moose"
        ]
        client.close()
        assert not conn.closed
    url = conninfo.replace("postgresql://", "postgresql+psycopg://", 1)
    with OracleAgentMemory.open(
        url, embedder="hashing/16", memory_store_id="s1", extract_memories=False
    ) as client:
        hits = client.store.search("Moose", 1)
        assert hits[0][0].content == "my dog is called Moose"
    with pytest.raises(ValueError, match="REQUIRE_EXISTING"):
        OracleAgentMemory.open(
            conninfo,
            memory_store_id="absent",
            schema_policy="REQUIRE_EXISTING",
            extract_memories=False,
        )
    # open() creates a missing store (docs/postgres.md#opening); new stores are HYBRID.
    with OracleAgentMemory.open(
        conninfo, embedder="hashing/16", memory_store_id="fresh", extract_memories=False
    ) as client:
        assert client.store.search_strategy is SearchStrategy.HYBRID
        client.create_thread(thread_id="t1").add_messages([{"role": "user", "content": "hi"}])


def test_cli_on_postgresql(conninfo: str, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from oam_core.cli import app

    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        '{"role": "user", "content": "My dog Moose loves the beach"}\n'
        '{"role": "assistant", "content": "Moose sounds lovely"}\n'
    )
    runner = CliRunner()
    missing = runner.invoke(app, ["search", "Moose", "--db", conninfo, "--embedder", "hashing"])
    # a database without an oam store exits 2, as a SQLite file without one (docs/cli.md)
    assert missing.exit_code == 2 and "--schema-policy require_existing" in missing.output
    assert "create it with `oam ingest FILE --db ...`" in missing.output
    ingest = runner.invoke(app, ["ingest", str(chat), "--db", conninfo, "--embedder", "hashing"])
    assert ingest.exit_code == 0, ingest.output
    found = runner.invoke(app, ["search", "beach", "--db", conninfo, "--embedder", "hashing"])
    assert found.exit_code == 0, found.output
    assert "My dog Moose loves the beach" in found.output
    threads = runner.invoke(app, ["threads", "--db", conninfo])
    assert threads.exit_code == 0 and "2" in threads.output


# -- VECTOR through the HNSW index ------------------------------------------------------


def test_hnsw_path_matches_exact_ranking_and_keeps_filtered_results(conninfo: str) -> None:
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(600, 16)).astype(np.float32)
    store = _store(conninfo, embedder=None, vector_dim=16, schema_policy="CREATE_IF_NECESSARY")
    store.add(
        [f"r{i}" for i in range(600)],
        "memory",
        record_ids=[f"r{i}" for i in range(600)],
        embeddings=list(vecs),
        user_ids=["rare" if i % 100 == 0 else "common" for i in range(600)],
    )
    queries = rng.normal(size=(20, 16)).astype(np.float32)
    exact = [[r.id for r, _ in store.search(query_vector=q, k=10)] for q in queries]
    store._impl.exact_below = 0  # force the index path
    approx = [[r.id for r, _ in store.search(query_vector=q, k=10)] for q in queries]
    recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx, exact, strict=True)])
    assert recall >= 0.95
    # A selective scope leaves too few index candidates: the exact rerun finds them all.
    rare = store.search(query_vector=queries[0], k=10, user_id="rare", exact_user_match=True)
    assert sorted(r.id for r, _ in rare) == sorted(f"r{i}" for i in range(0, 600, 100))
    # k matching records exist among many others: the filtered index query returns k,
    # the exact top k of that user.
    few = [f"f{i}" for i in range(12)]
    store.add(
        few, "memory", record_ids=few, embeddings=list(rng.normal(size=(12, 16))), user_ids="few"
    )
    for q in queries[:5]:
        got = [
            r.id
            for r, _ in store.search(query_vector=q, k=10, user_id="few", exact_user_match=True)
        ]
        store._impl.exact_below = 10**9
        want = [
            r.id
            for r, _ in store.search(query_vector=q, k=10, user_id="few", exact_user_match=True)
        ]
        store._impl.exact_below = 0
        assert len(got) == 10 and got == want
    store.close()


# -- the jsonb filter compiler against the reference evaluator ---------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.0, 2.5, -0.0]),
    st.sampled_from(["a", "b", "", "ü"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["x", "y", "a b"]), inner, max_size=2),
    ),
    max_leaves=6,
)
_docs = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(["k", "tags", "n", "o"]), _values, max_size=3)
)
_ops = st.one_of(
    _values,
    st.builds(lambda v: {"$array_contains": v}, _scalars),
    st.builds(lambda v: {"$array_contains_any": v}, st.lists(_scalars, min_size=1, max_size=2)),
    st.builds(lambda v: {"$not": v}, _values),
    st.builds(lambda v: {"$not": {"$array_contains": v}}, _scalars),
    st.builds(lambda v: {"o": v}, _values),
)
_filters = st.dictionaries(st.sampled_from(["k", "tags", "n", "o"]), _ops, min_size=1, max_size=2)


@pytest.fixture(scope="module")
def filter_store() -> Any:
    try:
        conninfo = _pg.conninfo_for(_pg.new_schema())
    except _pg.ServerUnavailable as exc:
        pytest.skip(str(exc))
    store = _store(conninfo, embedder=None, schema_policy="CREATE_IF_NECESSARY")
    yield store
    store.close()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(_docs, min_size=1, max_size=6), flt=_filters)
def test_compiled_filters_agree_with_the_reference(
    filter_store: Any, docs: list[Any], flt: dict[str, Any]
) -> None:
    store = filter_store
    with store._impl.transaction() as tx:
        tx.c.execute("DELETE FROM records")
    ids = store.add(
        ["x"] * len(docs),
        "memory",
        record_ids=[f"d{i}" for i in range(len(docs))],
        metadata=docs,
    )
    got = sorted(r.id for r in store.list("memory", metadata_filter=flt))
    want = sorted(i for i, d in zip(ids, docs, strict=True) if matches(d, parse_filter(flt)))
    assert got == want, (docs, flt)


def test_nul_characters_are_a_clear_error_and_write_nothing(conninfo: str) -> None:
    """PostgreSQL text cannot hold NUL and jsonb cannot hold \\u0000: a ValueError,
    raised with the transaction rolled back (SQLite stores both; a documented gap)."""
    store = _store(conninfo, schema_policy="CREATE_IF_NECESSARY")
    with pytest.raises(ValueError, match="NUL"):
        store.add(["fine", "a\x00b"], "memory", record_ids=["m1", "m2"])
    with pytest.raises(ValueError, match="NUL"):
        store.add(["fine"], "memory", record_ids="m3", metadata={"k": "a\x00"})
    assert store.list("memory") == []
    store.close()


def test_create_if_necessary_recreates_a_dropped_index(conninfo: str) -> None:
    _store(conninfo, schema_policy="CREATE_IF_NECESSARY").close()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP INDEX chunks_hnsw")
    _store(conninfo).close()  # REQUIRE_EXISTING: no DDL
    with psycopg.connect(conninfo) as conn:
        assert conn.execute("SELECT to_regclass('chunks_hnsw')").fetchone() == (None,)
    _store(conninfo, schema_policy="CREATE_IF_NECESSARY").close()
    with psycopg.connect(conninfo) as conn:
        assert conn.execute("SELECT to_regclass('chunks_hnsw')::text").fetchone() == (
            "chunks_hnsw",
        )


def test_cli_uses_the_strategy_a_library_store_was_created_with(
    conninfo: str, tmp_path: Any
) -> None:
    """A store the library created with VECTOR is searched and extended by the CLI
    without --strategy (found by a fresh-user review)."""
    from typer.testing import CliRunner

    from oam_core.cli import app
    from oam_core.embedders.hashing import HashingEmbedder
    from oam_core.store.postgres import PostgresMemoryStore

    store = PostgresMemoryStore(
        conninfo,
        embedder=HashingEmbedder(64),
        schema_policy="CREATE_IF_NECESSARY",
        search_strategy="VECTOR",
    )
    assert store.search_strategy.value == "VECTOR"
    store.close()
    chat = tmp_path / "c.jsonl"
    chat.write_text('{"role": "user", "content": "My cat sleeps on the piano"}\n', encoding="utf-8")
    runner = CliRunner()
    args = ["--db", conninfo, "--embedder", "hashing"]
    ingest = runner.invoke(app, ["ingest", str(chat), *args])
    assert ingest.exit_code == 0, ingest.output
    found = runner.invoke(app, ["search", "cat piano", *args])
    assert found.exit_code == 0 and "piano" in found.stdout, found.output
    # another strategy is used (every store has the indexes all strategies need)
    forced = runner.invoke(app, ["search", "cat", *args, "--strategy", "hybrid"])
    assert forced.exit_code == 0 and "piano" in forced.stdout, forced.output


def test_c22_a_thread_write_holds_the_thread_against_deletes(
    conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/failure-modes.md#c22 on PostgreSQL: inside ``add_to_thread``'s transaction, right after
    the row check, another session cannot take the thread's lock that
    ``delete_thread`` and the cascading actor deletes take first, so a delete waits
    for the write (and then removes its records too) instead of leaving orphans."""
    from oam_core.apis.batch import PendingRecordBatch
    from oam_core.store.postgres import backend
    from oam_core.store.postgres.schema import lock_key

    store = _store(conninfo, schema_policy="CREATE_IF_NECESSARY")
    thread_store(store).create_thread_row("T", user_id="u")
    probes: list[bool] = []
    real = backend.PgTx.hold_thread

    def probing(self: Any, thread_id: str) -> bool:
        held = real(self, thread_id)
        key = lock_key("oam-thread", self.p, thread_id)
        with psycopg.connect(conninfo, autocommit=True) as other:
            got = other.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            probes.append(bool(got and got[0]))
            if got and got[0]:
                other.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return held

    monkeypatch.setattr(backend.PgTx, "hold_thread", probing)
    batch = PendingRecordBatch(texts=["x"], record_type="memory", thread_ids="T")
    ids = thread_store(store).add_to_thread("T", [batch])
    assert probes == [False]  # held during the write
    monkeypatch.undo()
    assert store.delete("user_profile", "u", cascade=True) == 0
    assert store.get("memory", ids[0]) is None and thread_store(store).get_thread_row("T") is None
    store.close()
