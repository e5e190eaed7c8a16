"""Fixtures of the store conformance suite (docs/store.md, docs/filters.md).

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
    conninfo: a fresh empty schema on the PostgreSQL test server (PostgreSQL-only
        tests; skips without a server).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
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
    skip_reason: Callable[[], str | None] | None = None
    cleanup: Callable[[Any], None] | None = None


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


ORACLE_ENV = ("OAM_ORACLE_DSN", "OAM_ORACLE_USER", "OAM_ORACLE_PASSWORD")
_oracle_pool: list[Any] = []


def _oracle_skip_reason() -> str | None:
    missing = [v for v in ORACLE_ENV if not os.environ.get(v)]
    if missing:
        return f"live Oracle Database suite: set {', '.join(missing)} (docs/oracle.md)"
    try:
        import oracledb  # noqa: F401
    except ImportError:
        return "live Oracle Database suite: pip install 'oam[oracle]'"
    return None


def _open_oracle(tmp_path: Path, name: str, **kwargs: Any) -> Any:
    """A store in its own schema prefix, derived from the test and ``name`` (stable
    across runs, so RECREATE clears leftovers of an interrupted run)."""
    import oracledb

    from oam_core.store.options import SchemaPolicy
    from oam_core.store.oracle import OracleDBMemoryStore

    if not _oracle_pool:
        _oracle_pool.append(
            oracledb.create_pool(
                user=os.environ["OAM_ORACLE_USER"],
                password=os.environ["OAM_ORACLE_PASSWORD"],
                dsn=os.environ["OAM_ORACLE_DSN"],
                min=1,
                max=8,
                increment=1,
            )
        )
    from oam_core.apis._sentinel import NOT_SET
    from oam_core.store.oracle.names import resolve_prefix

    given = kwargs.pop("memory_store_id", None)
    resolve_prefix(NOT_SET, given)  # bad ids fail as they would in production
    key = f"{tmp_path.name}/{name}/{given or ''}"
    store_id = "T" + hashlib.sha1(key.encode()).hexdigest()[:12]
    first = key not in _oracle_opened
    _oracle_opened.add(key)
    policy = SchemaPolicy.RECREATE if first else SchemaPolicy.CREATE_IF_NECESSARY
    embedder = kwargs.pop("embedder", None)
    if str(kwargs.get("search_strategy", "")).upper().endswith("HYBRID"):
        # Seed 004: HYBRID needs an OracleDBEmbedder (the hybrid index's own model).
        model = os.environ.get("OAM_ORACLE_MODEL")
        if not model:
            pytest.skip("HYBRID on Oracle needs an in-database ONNX model: set OAM_ORACLE_MODEL")
        from oam_core.store.oracle import OracleDBEmbedder

        embedder = OracleDBEmbedder(_oracle_pool[0], model)
    return OracleDBMemoryStore(
        embedder, _oracle_pool[0], schema_policy=policy, memory_store_id=store_id, **kwargs
    )


_oracle_opened: set[str] = set()


def _drop_oracle(store: Any) -> None:
    store.drop_schema()


def _oracle_search_rows(
    store: Any, record_type: str, record_id: str
) -> list[tuple[str | None, bool]]:
    from oam_core.apis.records import family_of
    from oam_core.store.oracle.session import fetchall
    from oam_core.store.oracle.stmt import Stmt

    n = store.names
    family = family_of(record_type)
    has = "CASE WHEN c.embedding IS NULL THEN 0 ELSE 1 END" if store._local_vectors else "0"
    stmt = Stmt(
        f"SELECT c.chunk_text, {has} FROM {n.chunks} c JOIN {n.record_table(family)} r "
        "ON r.pk = c.record_pk AND c.record_family = :fam "
        "WHERE r.record_type = :rt AND r.id = :id ORDER BY c.seq, c.pk",
        {"fam": family, "rt": record_type, "id": record_id},
    )
    with store.session.connection() as conn:
        return [(text, bool(flag)) for text, flag in fetchall(conn, stmt)]


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
        BackendSpec(
            "oracle",
            _open_oracle,
            True,
            search_rows=_oracle_search_rows,
            skip_reason=_oracle_skip_reason,
            cleanup=_drop_oracle,
        ),
    )
}


# -- fixtures ----------------------------------------------------------------------


def unavailable_backends() -> dict[str, str]:
    """Back ends whose prerequisites are missing, with the reason (e.g. no live DSN)."""
    reasons = {spec.id: spec.skip_reason() for spec in BACKENDS.values() if spec.skip_reason}
    return {k: v for k, v in reasons.items() if v}


# An unavailable back end is left out of the parametrization (no time, no noise) and
# reported once by test_backend_available.py with its reason.
@pytest.fixture(params=[b for b in BACKENDS if b not in unavailable_backends()])
def backend(request: pytest.FixtureRequest) -> BackendSpec:
    if request.param == "postgres":
        try:
            _pg.server_uri()
        except _pg.ServerUnavailable as exc:
            pytest.skip(str(exc))
    return BACKENDS[request.param]


@pytest.fixture(params=list(BACKENDS))
def any_backend(request: pytest.FixtureRequest) -> BackendSpec:
    """Every back end of the table, available or not (test_backend_available.py)."""
    return BACKENDS[request.param]


@pytest.fixture
def conninfo() -> str:
    """A conninfo of a fresh empty schema on the session's PostgreSQL test server
    (PostgreSQL-only tests); skips when no server can start."""
    try:
        return _pg.conninfo_for(_pg.new_schema())
    except _pg.ServerUnavailable as exc:
        pytest.skip(str(exc))


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
        if backend.cleanup is not None:
            with contextlib.suppress(Exception):
                backend.cleanup(store)
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


TRANSFER_TARGETS = [
    b for b in ("sqlite-file", "postgres", "oracle") if b not in unavailable_backends()
]
"""Target back ends of the transfer tests (test_transfer.py): Oracle Database only
when the live suite is configured."""


@pytest.fixture(params=TRANSFER_TARGETS)
def make_target(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> Iterator[Callable[..., Any]]:
    """``make_target(name=..., **kwargs)`` opens a store on a second back end (each of
    ``TRANSFER_TARGETS`` in turn; default ``HashingEmbedder(64)`` and the ``clock``
    fixture), the target of a copy from the ``backend`` store."""
    if request.param == "postgres":
        try:
            _pg.server_uri()
        except _pg.ServerUnavailable as exc:
            pytest.skip(str(exc))
    spec = BACKENDS[request.param]
    opened: list[Any] = []

    def factory(*, name: str = "target.db", **kwargs: Any) -> Any:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("embedder", HashingEmbedder(64))
        store = spec.open(tmp_path, name, **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        if spec.cleanup is not None:
            with contextlib.suppress(Exception):
                spec.cleanup(store)
        with contextlib.suppress(Exception):
            store.close()
