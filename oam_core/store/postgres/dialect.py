"""The PostgreSQL ``Dialect`` of the shared SQL layer (``store/sql``), and how psycopg's
exceptions map onto ``oam_core.errors`` (docs/errors.md).

Mapping, by SQLSTATE where the server sent one:

- a connection that cannot be made or was lost (no SQLSTATE, class ``08``,
  ``28`` bad credentials, ``3D000`` no such database, ``57P01``-``57P03`` server
  shutting down or starting) -> ``StoreConnectionError``;
- ``55P03`` lock not available (``lock_timeout``), ``40P01`` deadlock, and
  ``psycopg_pool.PoolTimeout`` (no pooled connection free in time) ->
  ``DatabaseLockedError``;
- class ``22`` data exceptions (text or JSON holding NUL characters) ->
  ``InvalidArgumentError``: the value cannot be stored, nothing was written;
- libpq refusing a statement with more than 65,535 parameters (an
  ``OperationalError`` without SQLSTATE, raised before anything is sent; the
  connection stays good) -> ``InvalidArgumentError``: retrying cannot help;
- any other ``psycopg.Error`` -> ``StoreError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg_pool import PoolClosed, PoolTimeout

from oam_core.errors import (
    DatabaseLockedError,
    InvalidArgumentError,
    StoreClosedError,
    StoreConnectionError,
    StoreError,
)
from oam_core.filters import Cond, check_width
from oam_core.store.postgres.filter import PgFilterCompiler
from oam_core.store.sql.dialect import Dialect

T = TypeVar("T")

FILTER_PARAMS = 65_000
"""Most values a metadata filter may bind: libpq sends at most 65,535 parameters with
a statement, and the query around the filter binds a few."""
_CONNECTION_STATES = ("08", "28", "3D000", "57P01", "57P02", "57P03")
_LOCK_STATES = ("55P03", "40P01")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


_NUL_STATES = ("22021", "22P05")
"""SQLSTATEs of text PostgreSQL cannot hold: a character not in the encoding's
repertoire (NUL in text) and an untranslatable character (``\\u0000`` in jsonb)."""


_TOO_MANY_PARAMS = "number of parameters must be between"
"""libpq's message for a statement binding more than 65,535 parameters."""


def map_error(exc: BaseException, where: str) -> Exception | None:
    """The ``oam_core.errors`` exception for a psycopg exception (None for others).

    Args:
        exc: The exception raised by psycopg or psycopg_pool.
        where: Names the database (``PostgreSQL host=... dbname=...``, the password
            hidden).
    """
    if isinstance(exc, PoolTimeout):
        return DatabaseLockedError(
            f"no connection of the pool to {where} became free in time ({_one_line(exc)}); "
            "raise the pool's max_size or timeout, or end the calls that hold connections"
        )
    if isinstance(exc, PoolClosed):
        return StoreClosedError(f"the store on {where} was closed; open it again")
    if not isinstance(exc, psycopg.Error):
        return None
    state = exc.sqlstate or ""
    if state in _NUL_STATES:
        return InvalidArgumentError(
            f"{where} cannot store this value (PostgreSQL text and JSON may not contain "
            f"NUL characters): {exc}"
        )
    if isinstance(exc, psycopg.DataError) or state.startswith("22"):
        return InvalidArgumentError(f"{where} cannot store this value: {_one_line(exc)}")
    if not state and _TOO_MANY_PARAMS in str(exc):
        return InvalidArgumentError(
            f"{where}: the query binds more values than PostgreSQL takes in one statement "
            f"({_one_line(exc)}); pass fewer values at once"
        )
    if state.startswith(_LOCK_STATES):
        return DatabaseLockedError(
            f"{where}: a lock held by another transaction was not had in time "
            f"({_one_line(exc)}); retry, or raise lock_timeout"
        )
    if state.startswith(_CONNECTION_STATES) or (
        not state and isinstance(exc, psycopg.OperationalError)
    ):
        return StoreConnectionError(f"cannot connect to {where}: {_one_line(exc)}")
    return StoreError(f"database error on {where}: {_one_line(exc)}")


class PostgresDialect(Dialect):
    """PostgreSQL with pgvector: ``%s`` parameters, a list bound as one array
    (``= ANY(%s)``), ``LIMIT NULL`` for every row, metadata filters over the
    generated ``jsonb`` column, and row locks (``FOR UPDATE``) for the rows a write
    reads."""

    mark = "%s"
    lock_row = " FOR UPDATE"

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s)", [list(values)]

    def batches(self, values: Sequence[T]) -> Iterator[Sequence[T]]:
        if values:
            yield values

    def metadata_filter(self, conditions: tuple[Cond, ...]) -> tuple[str, list[Any]]:
        compiler = PgFilterCompiler()
        sql = compiler.compile("r.meta", conditions)
        check_width(compiler.params, FILTER_PARAMS, "PostgreSQL")
        return sql, compiler.params

    def limit(self, value: int | None) -> int | None:
        return value

    def unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, psycopg.errors.UniqueViolation)

    def map_error(self, exc: BaseException, where: str) -> Exception | None:
        return map_error(exc, where)


POSTGRES = PostgresDialect()
