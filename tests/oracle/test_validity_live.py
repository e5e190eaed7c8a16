"""Validity windows against a real Oracle Database 23ai
(docs/oracle.md#validity-windows). Runs only when ``OAM_ORACLE_DSN``,
``OAM_ORACLE_USER`` and ``OAM_ORACLE_PASSWORD`` are set (docs/oracle.md#running-the-live-tests-against-oracle-database-free):
a version-3 schema is made by dropping the window columns of a fresh one, read
without DDL, then upgraded in place by the first ``CREATE_IF_NECESSARY`` open."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.backend import Predicate
from oam_core.store.options import SchemaPolicy
from oam_core.store.oracle import OracleDBMemoryStore, sql
from oam_core.store.oracle.session import fetchall, run
from oam_core.store.oracle.stmt import Stmt

_ENV = ("OAM_ORACLE_DSN", "OAM_ORACLE_USER", "OAM_ORACLE_PASSWORD")
pytestmark = pytest.mark.skipif(
    any(not os.environ.get(v) for v in _ENV),
    reason=f"live Oracle Database tests: set {', '.join(_ENV)} (docs/oracle.md)",
)
STORE_ID = "TVALIDITY27"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def pool() -> Iterator[Any]:
    import oracledb

    p = oracledb.create_pool(
        user=os.environ["OAM_ORACLE_USER"],
        password=os.environ["OAM_ORACLE_PASSWORD"],
        dsn=os.environ["OAM_ORACLE_DSN"],
        min=1,
        max=2,
        increment=1,
    )
    yield p
    p.close(force=True)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _open(pool: Any, clock: Clock, policy: SchemaPolicy) -> OracleDBMemoryStore:
    return OracleDBMemoryStore(
        HashingEmbedder(8), pool, schema_policy=policy, memory_store_id=STORE_ID, clock=clock
    )


def _exec(store: OracleDBMemoryStore, stmt: Stmt) -> list[tuple[Any, ...]]:
    with store.session.transaction() as conn:
        cur = run(conn, stmt)
        return [tuple(r) for r in cur.fetchall()] if stmt.sql.startswith("SELECT") else []


def _make_version_3(pool: Any, clock: Clock) -> None:
    """A fresh store with an old memory superseded (in its reserved metadata) by a new
    one, then the window columns dropped and the version set back to 3."""
    store = _open(pool, clock, SchemaPolicy.RECREATE)
    store.add(["I live in Lisbon"], "fact", user_ids="ana", record_ids="old")
    clock.now = T0 + timedelta(days=30)
    store.add(["I live in Berlin"], "fact", user_ids="ana", record_ids="new")
    n = store.names
    reserved = {"$agent_memory": {"status": "invalid", "superseded_by": "new", "reason": "moved"}}
    _exec(
        store,
        Stmt(
            f"UPDATE {n.memories} SET metadata = JSON(:m) WHERE id = 'old'",
            {"m": json.dumps(reserved)},
        ),
    )
    with store.session.connection() as conn:
        for table in (n.profiles, n.messages, n.memories, n.chunks):
            run(conn, Stmt(f"ALTER TABLE {table} DROP (valid_from, valid_until)"))
    _exec(store, sql.upsert_meta(n, [{"meta_key": "schema_version", "meta_value": "3"}]))
    store.close()


def _rank(store: OracleDBMemoryStore, at: datetime | None) -> list[str]:
    query = HashingEmbedder(8).embed(["I live in"], is_query=True)[0]
    pred = Predicate(record_types=frozenset({"fact"}), now=T0, user_id="ana", valid_at=at)
    (hits,) = store._impl.rank_vector([query], 5, pred)
    return sorted(str(r.id) for r in store._impl.load([key for key, _ in hits]).values())


def test_version_3_is_read_without_ddl_then_upgraded_in_place(pool: Any) -> None:
    clock = Clock()
    _make_version_3(pool, clock)
    old_schema = _open(pool, clock, SchemaPolicy.REQUIRE_EXISTING)
    try:
        assert not old_schema.names.windows
        got = old_schema.get("fact", "old")
        assert got is not None and got.valid_until is None
        assert _rank(old_schema, T0 + timedelta(days=60)) == ["new", "old"]  # no windows yet
        old_schema.add(["I like tea"], "fact", user_ids="ana", record_ids="tea")
    finally:
        old_schema.close()

    store = _open(pool, clock, SchemaPolicy.CREATE_IF_NECESSARY)
    try:
        assert store.names.windows
        old, new = store.get("fact", "old"), store.get("fact", "new")
        assert old is not None and new is not None
        assert old.valid_until is not None and new.created_at is not None
        assert datetime.fromisoformat(old.valid_until) == datetime.fromisoformat(new.created_at)
        assert old.valid_from is None and new.valid_until is None
        n = store.names
        chunk_ends = _exec(
            store,
            Stmt(
                f"SELECT c.valid_until FROM {n.chunks} c JOIN {n.memories} r "
                "ON r.pk = c.record_pk AND c.record_family = 'memory' WHERE r.id = 'old'"
            ),
        )
        assert [r[0] for r in chunk_ends] == [T0.replace(tzinfo=None) + timedelta(days=30)]
        assert _rank(store, T0 + timedelta(days=60)) == ["new", "tea"]
        assert _rank(store, T0 + timedelta(days=1)) == ["new", "old", "tea"]  # no valid_from
        assert _rank(store, None) == ["new", "old", "tea"]
        version = _exec(store, sql.meta_value(n, "schema_version"))
        assert version == [("4",)]
    finally:
        store.drop_schema()
        store.close()


def test_windows_round_trip_through_update_row(pool: Any) -> None:
    clock = Clock()
    store = _open(pool, clock, SchemaPolicy.RECREATE)
    try:
        store.add(["I own a car"], "fact", user_ids="ana", record_ids="car")
        end = T0 + timedelta(days=3, microseconds=500)
        with store._impl.transaction() as tx:
            row = tx.fetch("memory", "car")
            assert row is not None
            tx.update_row(row, {"valid_from": T0, "valid_until": end})
        got = store.get("fact", "car")
        assert got is not None
        assert (got.valid_from, got.valid_until) == (
            "2026-01-01T00:00:00+00:00",
            "2026-01-04T00:00:00.000500+00:00",
        )
        assert _rank(store, T0 + timedelta(days=2)) == ["car"]
        assert _rank(store, end) == []
        assert _chunk_windows(store) == [(T0.replace(tzinfo=None), end.replace(tzinfo=None))]
    finally:
        store.drop_schema()
        store.close()


def _chunk_windows(store: OracleDBMemoryStore) -> list[tuple[Any, ...]]:
    """``(valid_from, valid_until)`` of every memory search row, as stored."""
    chunks = store.names.chunks
    with store.session.connection() as conn:
        return fetchall(
            conn,
            Stmt(f"SELECT valid_from, valid_until FROM {chunks} WHERE record_family = 'memory'"),
        )
