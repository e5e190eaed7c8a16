"""Driver errors leave the store as ``oam_core.errors`` types (docs/errors.md), mapped at
the back-end boundary with the driver's exception as ``__cause__``; schema problems
at open are ``SchemaError`` / ``EmbedderMismatchError`` (ValueErrors).

The generic tests run on every back end of the suite; the rest provoke each mapping
for real: a SQLite file locked by a second connection in ``BEGIN IMMEDIATE``, a file
in a missing directory, a file that is not a database, an unreachable PostgreSQL
server, a pool with no free connection, a table lock held past ``lock_timeout``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import _pg
import pytest

from oam_core import OracleAgentMemory
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import (
    DatabaseLockedError,
    EmbedderMismatchError,
    OAMError,
    SchemaError,
    StoreConnectionError,
    StoreError,
)
from oam_core.store.sqlite import SQLiteMemoryStore
from oam_core.store.sqlite import backend as sqlite_backend

# -- every back end ---------------------------------------------------------------------


def _drop_chunks(store: Any, backend_id: str) -> None:
    """Break the store behind its back: drop the table of search rows."""
    impl = store._impl  # test-only: the raw database
    if backend_id.startswith("sqlite"):
        with impl.lock:
            impl.conn.execute(f"DROP TABLE {impl.p}chunks")
    else:
        with impl.reading() as conn:
            conn.execute(f"DROP TABLE {impl.p}chunks CASCADE")


def test_a_database_failure_is_a_store_error_and_writes_nothing(backend: Any, store: Any) -> None:
    if backend.id == "oracle":
        pytest.skip("the live Oracle suite does not drop tables under a store")
    store.add(["kept"], "memory", record_ids="m0")
    _drop_chunks(store, backend.id)
    with pytest.raises(StoreError) as info:
        store.add(["lost"], "memory", record_ids="m1")
    assert not isinstance(info.value, (StoreConnectionError, DatabaseLockedError))
    assert "chunks" in str(info.value)
    cause = info.value.__cause__
    assert cause is not None and type(cause).__module__.split(".")[0] in ("sqlite3", "psycopg")
    assert [r.id for r in store.list("memory")] == ["m0"]  # the record row rolled back


def test_another_dimension_at_open_is_a_schema_error(
    backend: Any, make_store: Callable[..., Any]
) -> None:
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage does not outlive the store object")
    make_store(name="dim.db", embedder=HashingEmbedder(8)).add(["x"], "memory")
    with pytest.raises(SchemaError, match="dimension 8") as info:
        make_store(name="dim.db", embedder=None, vector_dim=4)
    assert isinstance(info.value, ValueError) and not isinstance(info.value, EmbedderMismatchError)


def test_another_embedder_at_open_is_an_embedder_mismatch(
    backend: Any, make_store: Callable[..., Any]
) -> None:
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage does not outlive the store object")
    make_store(name="emb.db", embedder=HashingEmbedder(8)).add(["x"], "memory")
    with pytest.raises(EmbedderMismatchError, match="hashing") as info:
        make_store(name="emb.db", embedder=HashingEmbedder(16))
    assert isinstance(info.value, SchemaError) and isinstance(info.value, ValueError)


# -- SQLite -------------------------------------------------------------------------------


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores opened from here on wait 0.1 s (not 30 s) for another writer."""
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT_S", 0.1)


@pytest.fixture
def writer_holding(tmp_path: Path) -> Iterator[Callable[[Path], sqlite3.Connection]]:
    """``hold(path)``: a second connection that holds ``path``'s write lock
    (``BEGIN IMMEDIATE``) until the test ends."""
    held: list[sqlite3.Connection] = []

    def hold(path: Path) -> sqlite3.Connection:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        held.append(other)
        return other

    yield hold
    for other in held:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()


@pytest.mark.usefixtures("short_busy_timeout")
def test_sqlite_a_file_locked_by_another_writer_is_database_locked(
    tmp_path: Path, writer_holding: Callable[[Path], sqlite3.Connection]
) -> None:
    path = tmp_path / "locked.db"
    store = SQLiteMemoryStore(path, embedder=HashingEmbedder(8))
    store.add(["before"], "memory", record_ids="m0")
    other = writer_holding(path)
    with pytest.raises(DatabaseLockedError, match="is locked") as info:
        store.add(["during"], "memory", record_ids="m1")
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, OAMError)
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    assert "database is locked" in str(info.value.__cause__)
    assert [r.id for r in store.list("memory")] == ["m0"]  # reads go on (WAL)
    other.execute("ROLLBACK")
    store.add(["after"], "memory", record_ids="m2")  # the store is usable again
    assert [r.id for r in store.list("memory")] == ["m0", "m2"]
    store.close()


@pytest.mark.usefixtures("short_busy_timeout")
def test_sqlite_opening_a_file_another_writer_holds_is_database_locked(
    tmp_path: Path, writer_holding: Callable[[Path], sqlite3.Connection]
) -> None:
    path = tmp_path / "new.db"
    writer_holding(path)  # the schema cannot be created meanwhile
    with pytest.raises(DatabaseLockedError) as info:
        SQLiteMemoryStore(path)
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)


def test_sqlite_a_file_that_cannot_be_opened_is_a_connection_error(tmp_path: Path) -> None:
    path = tmp_path / "no-such-dir" / "s.db"
    with pytest.raises(StoreConnectionError, match="cannot open SQLite database") as info:
        SQLiteMemoryStore(path)
    assert isinstance(info.value, ConnectionError) and not isinstance(info.value, ValueError)
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    assert str(path) in str(info.value)
    assert not path.parent.exists()


def test_sqlite_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a SQLite database or is damaged") as info:
        SQLiteMemoryStore(path)
    assert not isinstance(info.value, (StoreConnectionError, ValueError))
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)
    assert path.read_bytes() == before  # left alone


def test_sqlite_a_newer_schema_is_a_schema_error(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    SQLiteMemoryStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE oam_meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(SchemaError, match=r"schema version 99.*Upgrade oam"):
        SQLiteMemoryStore(path)


def test_sqlite_require_existing_without_a_file_is_a_schema_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="REQUIRE_EXISTING"):
        OracleAgentMemory(
            connection=str(tmp_path / "absent.db"),
            schema_policy="REQUIRE_EXISTING",
            embedder=None,
            extract_memories=False,
        )


# -- PostgreSQL ---------------------------------------------------------------------------


def test_postgres_an_unreachable_server_is_a_connection_error() -> None:
    psycopg = pytest.importorskip("psycopg")
    from oam_core.store.postgres import PostgresMemoryStore

    with pytest.raises(StoreConnectionError, match="cannot connect to PostgreSQL") as info:
        PostgresMemoryStore("postgresql://u:secret@/db?host=/nonexistent-dir-oam")
    assert isinstance(info.value, ConnectionError) and not isinstance(info.value, ValueError)
    assert isinstance(info.value.__cause__, psycopg.OperationalError)
    assert "secret" not in str(info.value)


def test_postgres_no_free_pooled_connection_is_database_locked(conninfo: str) -> None:
    pool_mod = pytest.importorskip("psycopg_pool")
    from oam_core.store.postgres import PostgresMemoryStore

    PostgresMemoryStore(conninfo, schema_policy="CREATE_IF_NECESSARY").close()
    pool = pool_mod.ConnectionPool(conninfo, min_size=1, max_size=1, timeout=0.2, open=True)
    try:
        store = PostgresMemoryStore(pool)
        # The pool's only connection is taken:
        with pool.connection(), pytest.raises(DatabaseLockedError, match="pool") as info:
            store.list("memory")
        assert isinstance(info.value.__cause__, pool_mod.PoolTimeout)
        assert store.list("memory") == []  # free again
        store.close()
    finally:
        pool.close()


def test_postgres_a_lock_held_past_lock_timeout_is_database_locked(conninfo: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    from oam_core.store.postgres import PostgresMemoryStore

    schema = _pg.new_schema()
    options = quote(f"-c search_path={schema},public -c lock_timeout=200")
    short = f"{_pg.server_uri()}&options={options}"
    store = PostgresMemoryStore(short, schema_policy="CREATE_IF_NECESSARY")
    store.add(["before"], "memory", record_ids="m0")
    with psycopg.connect(_pg.conninfo_for(schema)) as other:
        other.execute("LOCK TABLE records IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(DatabaseLockedError, match="lock") as info:
            store.add(["during"], "memory", record_ids="m1")
        assert isinstance(info.value.__cause__, psycopg.errors.LockNotAvailable)
        other.rollback()
    assert [r.id for r in store.list("memory")] == ["m0"]
    store.close()


def test_postgres_require_existing_on_an_empty_schema_is_a_schema_error(conninfo: str) -> None:
    from oam_core.store.postgres import PostgresMemoryStore

    with pytest.raises(SchemaError, match="REQUIRE_EXISTING"):
        PostgresMemoryStore(conninfo)
