"""Lost server sessions on PostgreSQL (docs/postgres.md#lost-connections): after the
server ended the pool's connections (a restart, ``pg_terminate_backend``, an idle
timeout), the next calls succeed; a read whose connection dies after it was taken
from the pool runs once more on another; a write on a dead connection fails with
``StoreConnectionError`` and applies nothing. Sessions are ended from a separate admin
connection of the real test server (``_pg.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import Any

import pytest

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import StoreConnectionError
from oam_core.store.options import SearchStrategy
from oam_core.store.threads import thread_store

psycopg = pytest.importorskip("psycopg")


def _store(conninfo: Any) -> Any:
    from oam_core.store.postgres import PostgresMemoryStore

    return PostgresMemoryStore(
        conninfo, embedder=HashingEmbedder(16), schema_policy="CREATE_IF_NECESSARY"
    )


def _terminate(conninfo: str, pids: list[int]) -> None:
    """End the server sessions ``pids`` and wait (up to 5 s) until they are gone."""
    with psycopg.connect(conninfo, autocommit=True) as admin:
        for pid in pids:
            ended = admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,)).fetchone()
            assert ended == (True,)


def _pool_pids(store: Any, n: int) -> list[int]:
    """Take ``n`` connections of the store's pool at once (so it holds ``n`` idle ones
    afterwards) and return their server process ids."""
    with ExitStack() as stack:
        conns = [stack.enter_context(store._impl.pool.connection()) for _ in range(n)]
        pids = []
        for conn in conns:
            with suppress(psycopg.OperationalError):  # one held from before may be dead
                pids.append(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        return pids


@pytest.mark.parametrize("given", ["url", "caller's pool"])
def test_every_call_succeeds_after_the_server_ended_the_idle_connections(
    conninfo: str, given: str
) -> None:
    from psycopg_pool import ConnectionPool

    pool = None
    if given == "url":
        store = _store(conninfo)
    else:
        pool = ConnectionPool(conninfo, min_size=1, max_size=4, open=True)
        store = _store(pool)
    store.add(["the blue kettle"], "memory", record_ids="m1")
    thread_store(store).create_thread_row("T", user_id="u")
    for call in (
        lambda: store.search("kettle", 1)[0][0].id,
        lambda: store.get("memory", "m1").content,
        lambda: store.add(["a red teapot"], "memory", record_ids="m2")[0],
        lambda: [r.id for r in store.list("memory")],
    ):
        pids = _pool_pids(store, 3)
        _terminate(conninfo, pids)
        assert call() in ("m1", "the blue kettle", "m2", ["m1", "m2"])
    assert store.search("teapot", 1)[0][0].id == "m2"
    store.close()
    if pool is not None:
        pool.close()


@contextmanager
def _killing_after_the_check(conninfo: str) -> Iterator[list[int]]:
    """While active, the first connection the store takes from its pool passes the
    store's check, then the server ends its session (before the call's first
    statement); yields the process ids of the connections checked, in order."""
    from oam_core.store.postgres import backend

    real = backend._alive
    checked: list[int] = []

    def alive(conn: Any) -> bool:
        ok = real(conn)
        checked.append(conn.info.backend_pid)
        if len(checked) == 1:
            _terminate(conninfo, checked)
        return ok

    backend._alive = alive
    try:
        yield checked
    finally:
        backend._alive = real


@contextmanager
def _killing_after_checkout(store: Any, conninfo: str) -> Iterator[list[int]]:
    """While active, the server ends the session of the first connection the store
    takes from its pool, after the store took it (and after the store's check where
    it checks: writes and ``reading``; ``read`` runs without one) and before the
    call's first statement; yields the process ids of the connections taken, in order."""
    pool = store._impl.pool
    real = pool.connection
    taken: list[int] = []

    @contextmanager
    def connection(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with real(*args, **kwargs) as conn:
            if conn.closed:
                yield conn
                return
            taken.append(conn.info.backend_pid)
            if len(taken) == 1:
                _terminate(conninfo, taken)
            yield conn

    pool.connection = connection
    try:
        yield taken
    finally:
        del pool.connection


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_a_read_whose_connection_died_after_checkout_runs_once_more(
    conninfo: str, strategy: str
) -> None:
    store = _store(conninfo)
    store.add(["the blue kettle", "a red teapot"], "memory", record_ids=["m1", "m2"])
    store.search_strategy = SearchStrategy.parse(strategy)
    want = [(r.id, d) for r, d in store.search("teapot", 2)]
    with _killing_after_checkout(store, conninfo) as taken:
        assert [(r.id, d) for r, d in store.search("teapot", 2)] == want
    assert len(taken) >= 2 and taken[1] != taken[0]
    with _killing_after_checkout(store, conninfo) as taken:
        assert store.get("memory", "m1").content == "the blue kettle"
        assert [r.id for r in store.list("memory")] == ["m1", "m2"]
    assert len(taken) >= 2 and taken[1] != taken[0]
    store.close()


def test_a_write_on_a_dead_connection_fails_cleanly_and_applies_nothing(conninfo: str) -> None:
    store = _store(conninfo)
    store.add(["kept"], "memory", record_ids="m0")
    with (
        _killing_after_the_check(conninfo),
        pytest.raises(StoreConnectionError, match="cannot connect"),
    ):
        store.add(["lost", "lost too"], "memory", record_ids=["m1", "m2"])
    assert [r.id for r in store.list("memory")] == ["m0"]
    assert store.add(["again"], "memory", record_ids="m1") == ["m1"]
    assert sorted(r.id for r in store.list("memory")) == ["m0", "m1"]
    store.close()


def test_a_session_ended_in_the_middle_of_a_write_leaves_nothing(
    conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records are inserted, then the server ends the session before the search
    rows are: the server rolls the transaction back, the caller gets
    ``StoreConnectionError``, and the next write works."""
    from oam_core.store.postgres import backend

    store = _store(conninfo)
    real = backend.PgTx.insert_chunk_columns
    ended: list[int] = []

    def ending(self: Any, *args: Any, **kwargs: Any) -> None:
        if not ended:
            ended.append(self.c.info.backend_pid)
            _terminate(conninfo, ended)
        real(self, *args, **kwargs)

    monkeypatch.setattr(backend.PgTx, "insert_chunk_columns", ending)
    with pytest.raises(StoreConnectionError):
        store.add(["half"], "memory", record_ids="m1")
    assert ended and store.list("memory") == []
    with psycopg.connect(conninfo) as conn:
        assert conn.execute("SELECT count(*) FROM records").fetchone() == (0,)
    assert store.add(["whole"], "memory", record_ids="m1") == ["m1"]
    assert store.get("memory", "m1").content == "whole"
    store.close()


@pytest.mark.parametrize("server", ["up", "gone", "full"])
def test_a_pool_timeout_tells_a_busy_pool_from_a_server_gone_away(
    conninfo: str, monkeypatch: pytest.MonkeyPatch, server: str
) -> None:
    """No pooled connection came in time (injected ``PoolTimeout``): one direct
    connection attempt tells the two causes apart, a busy pool (``DatabaseLockedError``)
    from a server that cannot be reached (``StoreConnectionError``); a server that
    refuses the attempt at its connection limit answers, so its pool is busy."""
    from psycopg_pool import PoolTimeout

    from oam_core.errors import DatabaseLockedError
    from oam_core.store.postgres import backend as pg_backend

    store = _store(conninfo)
    try:
        store.add(["pears"], "memory", record_ids=["p"])
        pool = store._impl.pool

        @contextmanager
        def no_connection(timeout: float | None = None) -> Iterator[Any]:
            raise PoolTimeout("couldn't get a connection after 30.00 sec")
            yield  # pragma: no cover

        monkeypatch.setattr(pool, "connection", no_connection)
        if server != "up":
            why = "connection refused" if server == "gone" else "sorry, too many clients already"

            def refused(*args: Any, **kwargs: Any) -> Any:
                raise psycopg.OperationalError(why)

            monkeypatch.setattr(pg_backend.psycopg, "connect", refused)
        expected = StoreConnectionError if server == "gone" else DatabaseLockedError
        with pytest.raises(expected) as raised:
            store.search("pears", k=1)
        if server == "gone":
            assert "cannot connect to PostgreSQL" in str(raised.value)
            assert "connection refused" in str(raised.value)
        monkeypatch.undo()
        assert [r.id for r, _ in store.search("pears", k=1)] == ["p"]
    finally:
        store.close()


def test_calls_fail_fast_when_the_server_is_gone() -> None:
    """The real server stops under a live store: every call raises
    ``StoreConnectionError`` at once instead of after the pool's 30 s wait for a
    connection (a bound far below 30 s, not a speed figure)."""
    import _pg

    try:
        server, uri = _pg.own_server()
    except _pg.ServerUnavailable as exc:
        pytest.skip(str(exc))
    store = _store(uri)
    try:
        store.add(["pears"], "memory", record_ids=["p"])
        assert store.search("pears", k=1)[0][0].id == "p"
        server.cleanup()  # stops the server
        calls = {
            "search": lambda: store.search("pears", k=1),
            "add": lambda: store.add(["plums"], "memory"),
            "get": lambda: store.get("memory", "p"),
            "search again": lambda: store.search("pears", k=1),
        }
        for name, call in calls.items():
            started = time.monotonic()
            with pytest.raises(StoreConnectionError, match="cannot connect"):
                call()
            took = time.monotonic() - started
            assert took < 15, f"{name} took {took:.1f} s"
    finally:
        store.close()


def test_a_busy_pool_is_waited_for_past_the_first_check(conninfo: str) -> None:
    """The pool's only connection is held by another call for longer than the store
    waits before its direct check (``FIRST_WAIT_S``): the server answers that check,
    so the call waits on and gets the connection when it is handed back."""
    import threading

    from psycopg_pool import ConnectionPool

    from oam_core.store.postgres import backend as pg_backend

    pool = ConnectionPool(conninfo, min_size=1, max_size=1, timeout=20, open=True)
    store = _store(pool)
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with pool.connection():
            taken.set()
            release.wait(10)

    try:
        store.add(["pears"], "memory", record_ids=["p"])
        holder = threading.Thread(target=hold)
        holder.start()
        assert taken.wait(10)
        threading.Timer(pg_backend.FIRST_WAIT_S * 2.5, release.set).start()
        assert [r.id for r, _ in store.search("pears", k=1)] == ["p"]
        assert release.is_set()  # it waited for the held connection
        holder.join(10)
    finally:
        release.set()
        store.close()
        pool.close()


def test_a_write_waiting_on_another_sessions_row_lock_raises_database_locked(
    conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's default lock_timeout is 0: a write blocked by a session idle in a
    transaction waited as long as that session lived. The store's own pool bounds
    the wait (``LOCK_TIMEOUT_S``, lowered here) and the call raises, writing nothing;
    a lock_timeout the conninfo sets is kept."""
    from oam_core.errors import DatabaseLockedError
    from oam_core.store.postgres import store as pg_store

    monkeypatch.setattr(pg_store, "LOCK_TIMEOUT_S", 0.5)
    store = _store(conninfo)
    try:
        (rid,) = store.add(["Alice lives in Lisbon"], "memory")
        with store._impl.pool.connection() as pooled:
            assert pooled.execute("SHOW lock_timeout").fetchone()[0] == "500ms"
        with psycopg.connect(conninfo) as holder:
            holder.execute(f"SELECT 1 FROM {store._impl.p}records WHERE id = %s FOR UPDATE", (rid,))
            started = time.monotonic()
            with pytest.raises(DatabaseLockedError):
                store.update("memory", rid, text="Alice lives in Berlin")
            assert time.monotonic() - started < 20  # bounded: it waited for ever before
            holder.rollback()
        assert store.get("memory", rid).content == "Alice lives in Lisbon"
    finally:
        store.close()
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    params["options"] = f"{params.get('options', '')} -c lock_timeout=7s".strip()
    kept = _store(psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items()}))
    try:
        with kept._impl.pool.connection() as pooled:
            assert pooled.execute("SHOW lock_timeout").fetchone()[0] == "7s"
    finally:
        kept.close()


def test_the_cli_exits_2_for_a_database_the_server_does_not_have(conninfo: str) -> None:
    """A PostgreSQL URL naming a database the server lacks is the same mistake as a
    missing SQLite file (exit code 2, docs/cli.md#commands); a server that cannot be
    reached at all is another failure (exit code 1)."""
    from urllib.parse import quote

    from typer.testing import CliRunner

    from oam_core.cli import app

    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    user, host, port = params["user"], params["host"], params.get("port", 5432)
    missing = f"postgresql://{user}@/oam_no_such_db?host={host}&port={port}"
    runner = CliRunner()
    for command in (["threads"], ["mcp", "--user", "u"], ["serve"]):
        result = runner.invoke(app, [*command, "--db", missing])
        assert result.exit_code == 2, (command, result.output)
        assert 'database "oam_no_such_db" does not exist' in result.stderr
        assert "Traceback" not in result.output
    # a database that exists but holds no oam store (this test's empty schema): 2 too
    options = quote(params["options"], safe="")
    empty = f"postgresql://{user}@/{params['dbname']}?host={host}&port={port}&options={options}"
    for command in (["threads"], ["mcp", "--user", "u"]):
        result = runner.invoke(app, [*command, "--db", empty])
        assert result.exit_code == 2, (command, result.output)
        assert "has no oam store" in result.stderr
    gone = f"postgresql://{user}@/postgres?host=/nonexistent-socket-dir"
    result = runner.invoke(app, ["threads", "--db", gone])
    assert result.exit_code == 1, result.output
    assert "cannot connect to PostgreSQL" in result.stderr
