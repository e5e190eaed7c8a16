"""The shared SQL layer without a database: one statement, two dialects, and each
dialect's driver-error map (docs/errors.md). The conformance suite runs the same
statements on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone

import pytest

from oam_core.apis._sentinel import NOT_SET
from oam_core.errors import (
    DatabaseLockedError,
    InvalidArgumentError,
    StoreClosedError,
    StoreConnectionError,
    StoreError,
)
from oam_core.filters import parse_filter
from oam_core.store.backend import Predicate, message_window
from oam_core.store.sql import statements as st
from oam_core.store.sqlite.dialect import IN_LIST, SQLITE

psycopg = pytest.importorskip("psycopg")
psycopg_pool = pytest.importorskip("psycopg_pool")

from oam_core.store.postgres.dialect import POSTGRES  # noqa: E402

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def test_a_list_binds_as_in_on_sqlite_and_as_one_array_on_postgres() -> None:
    ids = [f"id{i}" for i in range(3)]
    lite = st.existing_ids(SQLITE, "p_", "memory", ids)
    assert lite.sql == "SELECT id FROM p_records WHERE family = ? AND id IN (?, ?, ?)"
    assert list(lite.params) == ["memory", *ids]
    pg = st.existing_ids(POSTGRES, "p_", "memory", ids)
    assert pg.sql == "SELECT id FROM p_records WHERE family = %s AND id = ANY(%s)"
    assert list(pg.params) == ["memory", ids]


def test_batches_keep_sqlite_under_its_parameter_limit() -> None:
    ids = list(range(2 * IN_LIST + 1))
    assert [len(b) for b in SQLITE.batches(ids)] == [IN_LIST, IN_LIST, 1]
    assert [len(b) for b in POSTGRES.batches(ids)] == [len(ids)]
    assert list(SQLITE.batches([])) == [] and list(POSTGRES.batches([])) == []


def test_no_limit_is_minus_one_on_sqlite_and_null_on_postgres() -> None:
    lite = st.thread_messages(SQLITE, "", "t", NOW, 2, None)
    pg = st.thread_messages(POSTGRES, "", "t", NOW, 2, None)
    assert lite.sql.endswith("ORDER BY seq_no, pk LIMIT ? OFFSET ?")
    assert list(lite.params)[-2:] == [-1, 2]
    assert pg.sql.endswith("ORDER BY seq_no, pk LIMIT %s OFFSET %s")
    assert list(pg.params)[-2:] == [None, 2]


def test_rows_read_inside_a_write_are_locked_where_the_database_is_not() -> None:
    assert st.fetch_row(POSTGRES, "", "memory", "m1").sql.endswith(" FOR UPDATE")
    assert "FOR UPDATE" not in st.fetch_row(SQLITE, "", "memory", "m1").sql
    assert st.thread_state(POSTGRES, "", "t").sql.endswith(" FOR UPDATE")


def test_the_metadata_filter_runs_on_each_dialects_json_column() -> None:
    pred = Predicate(
        record_types=frozenset({"memory"}),
        now=NOW,
        user_id="u1",
        metadata=parse_filter({"topic": "food"}),
    )
    lite_sql, lite_params = st.where(SQLITE, pred, "c", records=False)
    pg_sql, pg_params = st.where(POSTGRES, pred, "c", records=False)
    assert "json_extract(r.metadata, ?)" in lite_sql and "r.meta ->" in pg_sql
    assert lite_params[:3] == ["memory", NOW.timestamp(), "u1"]
    assert pg_params[:3] == [["memory"], NOW.timestamp(), "u1"]
    assert '$."topic"' in lite_params and "topic" in pg_params  # bound, never in the text
    assert "topic" not in lite_sql and "topic" not in pg_sql


def test_next_seq_reads_the_messages_and_the_threads_high_water_mark() -> None:
    scoped = st.next_seq(SQLITE, "", "t1")
    assert "thread_id = ?" in scoped.sql and list(scoped.params) == ["t1", "t1"]
    unscoped = st.next_seq(POSTGRES, "", None)
    assert "thread_id IS NULL" in unscoped.sql and list(unscoped.params) == [None]


def test_update_record_copies_a_new_expiry_to_the_search_rows() -> None:
    stmts = st.update_record(SQLITE, "", 7, {"content": "x", "expires_at": NOW})
    assert [s.sql for s in stmts] == [
        "UPDATE records SET content = ?, expires_at = ? WHERE pk = ?",
        "UPDATE chunks SET expires_at = ? WHERE record_pk = ?",
    ]
    assert list(stmts[1].params) == [NOW.timestamp(), 7]
    with pytest.raises(ValueError, match="role"):
        st.update_record(SQLITE, "", 7, {"role": "user"})


def test_the_thread_update_writes_nothing_when_nothing_is_given() -> None:
    assert st.update_thread(POSTGRES, "", "t", NOT_SET, NOT_SET) is None
    stmt = st.update_thread(POSTGRES, "", "t", NOT_SET, {"n": 1})
    assert stmt is not None and stmt.sql.startswith("UPDATE records SET state = %s")


@pytest.mark.parametrize(
    ("start", "end", "count", "window"),
    [
        (None, None, 5, (0, None)),
        (1, 3, 5, (1, 2)),
        (-2, None, 5, (3, 2)),
        (None, -1, 5, (0, 4)),
        (3, 3, 5, None),
        (-1, -3, 5, None),
    ],
)
def test_message_window_slices_like_a_list(
    start: int | None, end: int | None, count: int, window: tuple[int, int | None] | None
) -> None:
    calls: list[int] = []

    def counted() -> int:
        calls.append(1)
        return count

    assert message_window(start, end, counted) == window
    if window is not None:
        offset, limit = window
        stop = None if limit is None else offset + limit
        assert list(range(count))[offset:stop] == list(range(count))[start:end]
    assert bool(calls) == any(b is not None and b < 0 for b in (start, end))


# -- the driver-error maps ----------------------------------------------------------------


def _sqlite_error(cls: type[sqlite3.Error], message: str, code: int | None) -> sqlite3.Error:
    exc = cls(message)
    if code is not None:
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize("code", [5, 6, 517, None])  # BUSY, LOCKED, BUSY_SNAPSHOT, by text
def test_sqlite_busy_and_locked_are_database_locked(code: int | None) -> None:
    exc = _sqlite_error(sqlite3.OperationalError, "database is locked", code)
    assert type(SQLITE.map_error(exc, "/data/m.db")) is DatabaseLockedError


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (
            _sqlite_error(sqlite3.OperationalError, "unable to open database file", 14),
            StoreConnectionError,
        ),
        (
            _sqlite_error(sqlite3.OperationalError, "unable to open database file", None),
            StoreConnectionError,
        ),
        (_sqlite_error(sqlite3.DatabaseError, "file is not a database", 26), StoreError),
        (_sqlite_error(sqlite3.DatabaseError, "database disk image is malformed", 11), StoreError),
        (_sqlite_error(sqlite3.OperationalError, "no such table: chunks", 1), StoreError),
        (sqlite3.ProgrammingError("Cannot operate on a closed database."), StoreClosedError),
    ],
)
def test_sqlite_errors_map_by_result_code(exc: sqlite3.Error, kind: type[Exception]) -> None:
    mapped = SQLITE.map_error(exc, "/data/m.db")
    assert type(mapped) is kind and "/data/m.db" in str(mapped)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (psycopg.OperationalError("connection refused"), StoreConnectionError),
        (psycopg.errors.InvalidPassword("password authentication failed"), StoreConnectionError),
        (psycopg.errors.AdminShutdown("terminating connection"), StoreConnectionError),
        (
            psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"),
            DatabaseLockedError,
        ),
        (psycopg.errors.DeadlockDetected("deadlock detected"), DatabaseLockedError),
        (psycopg_pool.PoolTimeout("couldn't get a connection after 30 sec"), DatabaseLockedError),
        (psycopg.errors.CharacterNotInRepertoire("invalid byte sequence"), InvalidArgumentError),
        (psycopg.errors.UndefinedTable("relation does not exist"), StoreError),
        (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), StoreError),
    ],
)
def test_postgres_errors_map_by_sqlstate(exc: Exception, kind: type[Exception]) -> None:
    mapped = POSTGRES.map_error(exc, "PostgreSQL host=db")
    assert type(mapped) is kind and "PostgreSQL host=db" in str(mapped)


def test_only_the_drivers_own_errors_are_mapped() -> None:
    for dialect in (SQLITE, POSTGRES):
        assert dialect.map_error(ValueError("mine"), "db") is None
        assert dialect.map_error(KeyError("mine"), "db") is None
    assert SQLITE.map_error(psycopg.OperationalError("x"), "db") is None
    assert POSTGRES.map_error(sqlite3.OperationalError("x"), "db") is None


def test_the_sqlite_store_keeps_its_import_paths() -> None:
    import oam_core
    import oam_core.store.sqlite as package
    from oam_core.store.sqlite.store import SQLiteMemoryStore

    assert package.SQLiteMemoryStore is oam_core.SQLiteMemoryStore is SQLiteMemoryStore
    assert package.__all__ == ["SQLiteMemoryStore"]
