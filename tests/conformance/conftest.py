"""Fixtures of the store conformance suite (SPEC §2-§4, §10; seed 004).

Every test here runs once per back end in ``BACKENDS``. A back end is one entry in
that table: how to open a store, whether two store objects can share its storage,
and (optionally) how to dump its raw rows so that "nothing was written" checks can
see search rows too. ``postgres`` runs on a real server from ``pgserver`` (``_pg.py``),
one schema per test and store name; it skips, with the reason, when no server can start.

Fixtures:
    backend: the ``BackendSpec`` of the current param id.
    clock: a ``FakeClock`` (aware UTC datetimes) injected into every store.
    make_store: ``make_store(**kwargs)`` opens a store of the current back end
        (default: ``HashingEmbedder(64)`` and the ``clock`` fixture). ``name=``
        picks the storage (same name = same file, for reopening).
    store: ``make_store()``.
    snapshot: ``snapshot(store)`` returns the store's complete visible state.
    rejected: ``with rejected(store, match=...): ...`` expects a ValueError and
        asserts the store is unchanged afterwards.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import _pg
import pytest

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.sqlite import SQLiteMemoryStore

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
"""The fake clock's start time."""

LISTED_TYPES = (
    "message",
    "memory",
    "guideline",
    "fact",
    "preference",
    "user_profile",
    "agent_profile",
)


class FakeClock:
    """A controllable store clock: calling it returns ``clock.now`` (aware UTC).

    ``clock.advance(days=8)`` moves it forward, so TTL tests need not sleep.
    """

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        """Move the clock forward by ``timedelta(**delta)``; return the new time."""
        self.now = self.now + timedelta(**delta)
        return self.now

    def set(self, when: datetime) -> None:
        self.now = when


# -- back end table -------------------------------------------------------------------

RawRows = dict[str, list[tuple[Any, ...]]]


@dataclass(frozen=True)
class BackendSpec:
    """How the suite drives one back end.

    Attributes:
        id: pytest param id.
        open: ``open(tmp_path, name, **kwargs)`` returns a new store object; the same
            ``name`` reaches the same storage when ``shared_storage`` is true.
        shared_storage: Two store objects opened with one ``name`` share their data
            (False for private in-memory stores).
        dump: Raw rows of every table (records, search rows), or None when the back
            end offers no such view; used only to assert "nothing written".
        search_rows: ``(store, record_type, record_id) -> [(chunk_text, has_vector)]``,
            the record's search rows in order, or None when not inspectable.
    """

    id: str
    open: Callable[..., Any]
    shared_storage: bool
    dump: Callable[[Any], RawRows] | None = None
    search_rows: Callable[[Any, str, str], list[tuple[str | None, bool]]] | None = None


def _sqlite_conn(store: Any) -> tuple[sqlite3.Connection, str, Any]:
    impl = store._impl  # test-only peek at the raw database
    return impl.conn, impl.p, impl.lock


def _sqlite_dump(store: Any) -> RawRows:
    conn, p, lock = _sqlite_conn(store)
    with lock:
        return {
            table: conn.execute(f"SELECT * FROM {p}{table} ORDER BY pk").fetchall()
            for table in ("records", "chunks")
        }


def _sqlite_search_rows(
    store: Any, record_type: str, record_id: str
) -> list[tuple[str | None, bool]]:
    conn, p, lock = _sqlite_conn(store)
    with lock:
        rows = conn.execute(
            f"SELECT c.text, c.embedding IS NOT NULL FROM {p}chunks c "
            f"JOIN {p}records r ON c.record_pk = r.pk "
            "WHERE r.record_type = ? AND r.id = ? ORDER BY c.seq, c.pk",
            (record_type, record_id),
        ).fetchall()
    return [(text, bool(has)) for text, has in rows]


def _open_sqlite_file(tmp_path: Path, name: str, **kwargs: Any) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(str(tmp_path / name), **kwargs)


def _open_sqlite_memory(tmp_path: Path, name: str, **kwargs: Any) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(":memory:", **kwargs)


def _open_postgres(tmp_path: Path, name: str, **kwargs: Any) -> Any:
    """A ``PostgresMemoryStore`` in a schema of its own per (test, name)."""
    from oam_core.store.postgres import PostgresMemoryStore

    kwargs.setdefault("schema_policy", "CREATE_IF_NECESSARY")
    return PostgresMemoryStore(_pg.schema_conninfo((str(tmp_path), name)), **kwargs)


def _pg_dump(store: Any) -> RawRows:
    impl = store._impl  # test-only peek at the raw database
    with impl.reading() as conn:
        return {
            table: conn.execute(f"SELECT * FROM {impl.p}{table} ORDER BY pk").fetchall()
            for table in ("records", "chunks")
        }


def _pg_search_rows(store: Any, record_type: str, record_id: str) -> list[tuple[str | None, bool]]:
    impl = store._impl
    with impl.reading() as conn:
        rows = conn.execute(
            f"SELECT c.text, c.embedding IS NOT NULL FROM {impl.p}chunks c "
            f"JOIN {impl.p}records r ON c.record_pk = r.pk "
            "WHERE r.record_type = %s AND r.id = %s ORDER BY c.seq, c.pk",
            (record_type, record_id),
        ).fetchall()
    return [(text, bool(has)) for text, has in rows]


BACKENDS: dict[str, BackendSpec] = {
    spec.id: spec
    for spec in (
        BackendSpec("sqlite-file", _open_sqlite_file, True, _sqlite_dump, _sqlite_search_rows),
        BackendSpec("sqlite-memory", _open_sqlite_memory, False, _sqlite_dump, _sqlite_search_rows),
        BackendSpec("postgres", _open_postgres, True, _pg_dump, _pg_search_rows),
    )
}


# -- fixtures ----------------------------------------------------------------------


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> BackendSpec:
    if request.param == "postgres":
        try:
            _pg.server_uri()
        except _pg.ServerUnavailable as exc:
            pytest.skip(str(exc))
    return BACKENDS[request.param]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_store(
    backend: BackendSpec, tmp_path: Path, clock: FakeClock
) -> Iterator[Callable[..., Any]]:
    opened: list[Any] = []

    def factory(*, name: str = "s.db", **kwargs: Any) -> Any:
        kwargs.setdefault("clock", clock)
        if "embedder" not in kwargs:
            kwargs["embedder"] = HashingEmbedder(64)
        store = backend.open(tmp_path, name, **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        with contextlib.suppress(Exception):
            store.close()


@pytest.fixture
def store(make_store: Callable[..., Any]) -> Any:
    return make_store()


@pytest.fixture
def snapshot(backend: BackendSpec) -> Callable[[Any], dict[str, Any]]:
    """``snapshot(store)``: every visible record of every type, plus raw rows."""

    def take(store: Any) -> dict[str, Any]:
        state: dict[str, Any] = {t: store.list(t, limit=None) for t in LISTED_TYPES}
        if backend.dump is not None:
            state["raw"] = backend.dump(store)
        return state

    return take


@pytest.fixture
def rejected(snapshot: Callable[[Any], dict[str, Any]]) -> Callable[..., Any]:
    """``with rejected(store, match=None): call()`` — ValueError, store unchanged."""

    @contextlib.contextmanager
    def check(store: Any, match: str | None = None) -> Iterator[None]:
        before = snapshot(store)
        with pytest.raises(ValueError, match=match):
            yield
        assert snapshot(store) == before, "a rejected call changed the store"

    return check


@pytest.fixture
def search_rows(backend: BackendSpec) -> Callable[[Any, str, str], list[tuple[str | None, bool]]]:
    """``search_rows(store, record_type, id)`` → ``[(chunk_text, has_vector), ...]``."""
    if backend.search_rows is None:
        pytest.skip(f"{backend.id} does not expose its search rows")
    return backend.search_rows
