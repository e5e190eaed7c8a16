"""The SQLite ``Dialect`` of the shared SQL layer (``store/sql``), and how ``sqlite3``'s
exceptions map onto ``oam_core.errors`` (docs/errors.md).

Mapping, by SQLite's result code (``sqlite_errorcode``; its message where Python has
no code):

- ``SQLITE_BUSY``/``SQLITE_LOCKED`` (``database is locked``: another connection held
  the write lock past the busy timeout) -> ``DatabaseLockedError``;
- ``SQLITE_CANTOPEN`` (a missing directory, no permission, a directory given as
  the file) -> ``StoreConnectionError``;
- ``SQLITE_NOTADB``/``SQLITE_CORRUPT`` (not a SQLite file, or a damaged one) and
  every other ``sqlite3.Error`` -> ``StoreError``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from oam_core.errors import DatabaseLockedError, StoreClosedError, StoreConnectionError, StoreError
from oam_core.filters import Cond, check_width
from oam_core.store.sql.dialect import Dialect
from oam_core.store.sqlite.filter import SQLiteFilterCompiler

T = TypeVar("T")

_BUSY, _LOCKED, _CORRUPT, _CANTOPEN, _NOTADB = 5, 6, 11, 14, 26
"""SQLite's primary result codes (https://sqlite.org/rescode.html)."""


def _code(exc: sqlite3.Error) -> int | None:
    """The primary result code of ``exc`` (Python 3.11+), else from its message."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    text = str(exc)
    for code, words in (
        (_BUSY, "database is locked"),
        (_LOCKED, "table is locked"),
        (_CANTOPEN, "unable to open database"),
        (_NOTADB, "file is not a database"),
        (_CORRUPT, "malformed"),
    ):
        if words in text:
            return code
    return None


def map_error(exc: BaseException, where: str) -> Exception | None:
    """The ``oam_core.errors`` exception for a ``sqlite3`` exception (None for others).

    Args:
        exc: The exception raised by ``sqlite3``.
        where: The database path.
    """
    if not isinstance(exc, sqlite3.Error):
        return None
    if isinstance(exc, sqlite3.ProgrammingError) and "closed database" in str(exc):
        return StoreClosedError(f"the store on {where!r} was closed; open it again")
    code = _code(exc)
    if code in (_BUSY, _LOCKED):
        return DatabaseLockedError(
            f"SQLite database {where!r} is locked: another connection held it for "
            f"writing longer than this store waits ({exc}); retry when that writer is done"
        )
    if code == _CANTOPEN:
        return StoreConnectionError(
            f"cannot open SQLite database {where!r}: {exc}; check that its directory "
            "exists and can be written"
        )
    if code in (_NOTADB, _CORRUPT):
        return StoreError(
            f"{where!r} is not a SQLite database or is damaged ({exc}); restore it from a "
            "copy, or open another path"
        )
    return StoreError(f"SQLite error on {where!r}: {exc}")


IN_LIST = 500
"""Most values in one ``IN (...)`` list (SQLite allows 32766 parameters per statement)."""
FILTER_PARAMS = 32_000
"""Most values a metadata filter may bind: SQLite allows 32,766 parameters per
statement, and the query around the filter binds a few."""


class SQLiteDialect(Dialect):
    """SQLite: ``?`` parameters, ``IN`` lists of at most ``IN_LIST`` values,
    ``LIMIT -1`` for every row, metadata filters over the JSON text with
    ``json_each``; a write transaction (``BEGIN IMMEDIATE``) holds the whole file, so
    no row locks."""

    mark = "?"
    lock_row = ""

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN ({self.marks(len(values))})", list(values)

    def batches(self, values: Sequence[T]) -> Iterator[Sequence[T]]:
        for i in range(0, len(values), IN_LIST):
            yield values[i : i + IN_LIST]

    def metadata_filter(self, conditions: tuple[Cond, ...]) -> tuple[str, list[Any]]:
        compiler = SQLiteFilterCompiler()
        sql = compiler.compile("r.metadata", conditions)
        check_width(compiler.params, FILTER_PARAMS, "SQLite")
        return sql, compiler.params

    def limit(self, value: int | None) -> int | None:
        return -1 if value is None else value

    def unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    def map_error(self, exc: BaseException, where: str) -> Exception | None:
        return map_error(exc, where)


SQLITE = SQLiteDialect()
