"""python-oracledb errors mapped at the store boundary (docs/errors.md), statement level:
the fake connection raises driver-shaped errors on chosen statements."""

from __future__ import annotations

from typing import Any

import oracledb
import pytest
from fakedb import FakeConnection, FakeDbError, FakePool
from oracle_helpers import script_schema

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import (
    DatabaseLockedError,
    OAMError,
    StoreClosedError,
    StoreConnectionError,
    StoreError,
)
from oam_core.store.oracle import OracleDBMemoryStore
from oam_core.store.oracle.errors import full_code, is_oracledb_error, map_error
from oam_core.store.oracle.names import Names

N = Names("S1_")


def _store(target: Any, clock: Any) -> OracleDBMemoryStore:
    return OracleDBMemoryStore(HashingEmbedder(8), target, clock=clock, memory_store_id="s1")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (FakeDbError(54, "resource busy and acquire with NOWAIT specified"), DatabaseLockedError),
        (
            FakeDbError(30006, "resource busy; acquire with WAIT timeout expired"),
            DatabaseLockedError,
        ),
        (FakeDbError(60, "deadlock detected while waiting for resource"), DatabaseLockedError),
        (FakeDbError(0, "timed out waiting for the pool", "DPY-4005"), DatabaseLockedError),
        (FakeDbError(12541, "Cannot connect. No listener"), StoreConnectionError),
        (FakeDbError(1017, "invalid credential or not authorized"), StoreConnectionError),
        (FakeDbError(3113, "end-of-file on communication channel"), StoreConnectionError),
        (FakeDbError(0, "cannot connect to database", "DPY-6005"), StoreConnectionError),
        (FakeDbError(0, "connection pool is not open", "DPY-1002"), StoreClosedError),
        (FakeDbError(1400, "cannot insert NULL"), StoreError),
        (FakeDbError(942, "table or view does not exist"), StoreError),
    ],
)
def test_each_driver_error_maps_to_its_class(error: FakeDbError, kind: type[Exception]) -> None:
    mapped = map_error(error, "Oracle Database db:1521/FREE")
    assert type(mapped) is kind
    assert full_code(error) in str(mapped) and "db:1521/FREE" in str(mapped)


def test_only_driver_errors_are_mapped() -> None:
    assert map_error(ValueError("mine"), "db") is None
    assert map_error(RuntimeError("ORA-00054"), "db") is None
    # The real driver's classes are told apart by their module, as the fake's are.
    assert is_oracledb_error(oracledb.DatabaseError("x"))
    assert is_oracledb_error(FakeDbError(1, "x"))


def test_a_lock_timeout_in_a_write_is_database_locked_and_rolled_back(
    conn: FakeConnection, clock: Any
) -> None:
    script_schema(conn, N)
    store = _store(conn, clock)
    conn.reset()
    conn.fail("INSERT INTO S1_MEMORIES", FakeDbError(30006, "resource busy; WAIT timeout"))
    with pytest.raises(DatabaseLockedError, match="ORA-30006") as info:
        store.add(["x"], "memory", record_ids="m1")
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, OAMError)
    assert isinstance(info.value.__cause__, FakeDbError)
    assert conn.kinds()[-1] == "rollback" and "commit" not in conn.kinds()


def test_a_lost_connection_in_a_read_is_a_connection_error(
    conn: FakeConnection, clock: Any
) -> None:
    script_schema(conn, N)
    store = _store(conn, clock)
    conn.fail("FROM S1_MEMORIES", FakeDbError(3113, "end-of-file on communication channel"))
    with pytest.raises(StoreConnectionError, match="ORA-03113") as info:
        store.get("memory", "m1")
    assert isinstance(info.value, ConnectionError)


def test_a_pool_timeout_is_database_locked(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N)
    pool = FakePool(conn)
    store = _store(pool, clock)
    pool.acquire_error = FakeDbError(0, "timed out waiting for the connection pool", "DPY-4005")
    with pytest.raises(DatabaseLockedError, match="DPY-4005"):
        store.list("memory")
    assert pool.acquired == pool.released  # nothing was held
    assert store.list("memory") == []  # the next call gets a connection again


def test_an_unreachable_database_at_open_is_a_connection_error(clock: Any) -> None:
    pool = FakePool(FakeConnection())
    pool.acquire_error = FakeDbError(12541, "Cannot connect. No listener at host db port 1521")
    with pytest.raises(StoreConnectionError, match="ORA-12541") as info:
        _store(pool, clock)
    assert isinstance(info.value, ConnectionError) and not isinstance(info.value, ValueError)
