"""Connections, transactions and statement execution for the Oracle store (docs/oracle.md).

A pool (anything with ``acquire``) lends one connection per call, so calls run
concurrently; the driver's exceptions leave every connection and unit of work mapped
onto ``oam_core.errors`` (``errors.py``). A raw connection is single-session mode: one lock serialises every
call of the store, which keeps the row locks and transaction assumptions of writes
intact (Oracle's SDK ``pool``; docs/oracle.md#opening-a-store). Each unit of work commits once on success and rolls
back on any error; DDL (implicit commits) never runs inside one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from oam_core.errors import InvalidArgumentError
from oam_core.store.oracle.errors import driver_exception, map_error
from oam_core.store.oracle.stmt import Stmt
from oam_core.store.sql.dialect import driver_errors


def _db_types() -> dict[str, Any]:
    import oracledb

    return {
        "VECTOR": oracledb.DB_TYPE_VECTOR,
        "JSON": oracledb.DB_TYPE_JSON,
        "CLOB": oracledb.DB_TYPE_CLOB,
        "TIMESTAMP": oracledb.DB_TYPE_TIMESTAMP,
    }


def _lob_as_text(cursor: Any, metadata: Any) -> Any:
    """Output type handler: fetch CLOBs as ``str`` (docs/oracle.md#bind-types)."""
    import oracledb

    if metadata.type_code is oracledb.DB_TYPE_CLOB:
        return cursor.var(oracledb.DB_TYPE_LONG, arraysize=cursor.arraysize)
    return None


class Session:
    """Hands out connections of a pool, or serialises a raw connection.

    Args:
        target: An ``oracledb`` pool (has ``acquire``) or connection.

    Raises:
        ValueError: for an object that is neither.
    """

    def __init__(self, target: Any) -> None:
        if target is None or not (hasattr(target, "acquire") or hasattr(target, "cursor")):
            raise InvalidArgumentError(
                f"pool must be an oracledb connection pool or connection, got {target!r}"
            )
        if type(target).__name__.startswith("Async"):
            raise InvalidArgumentError(
                f"pool must be a synchronous oracledb pool or connection, got "
                f"{type(target).__name__}; the store's *_async methods run it in a worker thread"
            )
        self.target = target
        self.where = f"Oracle Database {getattr(target, 'dsn', None) or ''}".rstrip()
        """Names the database in error messages."""
        self.is_pool = hasattr(target, "acquire")
        self.owned = False
        """True when the store created the pool (from a URL) and closes it."""
        self.lock = threading.RLock()

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection for one call (pool: acquired and released; raw: under the lock).
        The driver's exceptions leave it mapped (``errors.map_error``)."""
        with driver_errors(map_error, self.where):
            if self.is_pool:
                conn = self.target.acquire()
                try:
                    yield conn
                finally:
                    self.target.release(conn)
            else:
                with self.lock:
                    yield self.target

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A connection in one unit of work: commit once on success, roll back on error."""
        with self.connection() as conn:
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def close(self) -> None:
        """Close the pool if the store created it; a caller's pool or connection stays open."""
        if self.owned:
            self.owned = False
            self.target.close()


def run(conn: Any, stmt: Stmt) -> Any:
    """Execute ``stmt`` on a new cursor of ``conn``; ``rows`` use ``executemany``.

    Returns:
        The cursor (fetch from it; ``rowcount`` for DML).
    """
    cur = conn.cursor()
    cur.outputtypehandler = _lob_as_text
    names = set(stmt.rows[0]) if stmt.rows else set(stmt.binds)
    types = {k: v for k, v in stmt.types.items() if k in names}
    if types:
        db = _db_types()
        cur.setinputsizes(**{k: db[v] for k, v in types.items()})
    if stmt.rows:
        cur.executemany(stmt.sql, list(stmt.rows))
    elif stmt.binds:
        cur.execute(stmt.sql, dict(stmt.binds))
    else:
        cur.execute(stmt.sql)
    return cur


def run_batched(conn: Any, stmt: Stmt, batch_size: int) -> None:
    """``executemany`` of ``stmt.rows`` in slices of ``batch_size`` (256 by default, as in Oracle's SDK; docs/store.md#defaults)."""
    rows = list(stmt.rows)
    for i in range(0, len(rows), batch_size):
        run(conn, Stmt(stmt.sql, types=stmt.types, rows=rows[i : i + batch_size]))


def fetchall(conn: Any, stmt: Stmt) -> list[tuple[Any, ...]]:
    """Execute a query and return all rows."""
    return [tuple(r) for r in run(conn, stmt).fetchall()]


def fetchone(conn: Any, stmt: Stmt) -> tuple[Any, ...] | None:
    """Execute a query and return its first row, or None."""
    row = run(conn, stmt).fetchone()
    return None if row is None else tuple(row)


def chunked(values: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """Successive slices of at most ``size`` values."""
    for i in range(0, len(values), size):
        yield values[i : i + size]


def error_code(exc: BaseException) -> int | None:
    """The ORA- error number of an ``oracledb`` error (or of the one an ``OAMError``
    was mapped from), or None."""
    args = getattr(driver_exception(exc), "args", ())
    err = args[0] if args else None
    code = getattr(err, "code", None)
    return code if isinstance(code, int) else None
