"""Batches of rows written by one ``INSERT ... SELECT ... FROM json_each(?)``
(docs/sqlite.md#writes).

``executemany`` runs the INSERT once per row: each run binds every value through
Python, opens the table's and each index's cursor, reads and writes the AUTOINCREMENT
counter and checks the foreign keys. Here a batch becomes one statement: the values
that vary go in one JSON array of rows (serialised by orjson, read back by SQLite's
``json_each`` in C), the values equal in every row are written as SQL literals or
bound once, and the vectors go in one BLOB that ``substr`` cuts into rows. A bulk add
is 4-7% faster (bench/README.md), and the statement stays small whatever the batch holds.

Only values JSON carries exactly go through it: ``str`` (no NUL), ``int`` within 64
bits and ``None``. A float that varies between rows (SQLite before 3.43 does not read
every decimal back to the same double), a bool, bytes other than the fixed-length BLOB
column, or an SQLite without ``->>`` (before 3.38) make ``plan`` return None, and the
caller binds the rows one by one as before. The rows stored are the same either way,
their keys included: each row's key is given (``first + index``), so the order in
which SQLite reads the array does not matter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import orjson

from oam_core.store.sqlite.bulk import literal

ROWS_PER_STATEMENT = 8192
"""Rows one statement writes at most: bounds the JSON text and the BLOB a statement
binds (about 2 MB and 12 MB at 384 dimensions)."""

MAX_STATEMENT_BYTES = 64 << 20
"""Bytes of JSON text and BLOB one statement binds at most (long texts, wide vectors):
a batch past it is cut into smaller statements, so SQLite's limit on one value
(``SQLITE_LIMIT_LENGTH``, 1 GB by default) is not reached where binding row by row
would not reach it, and the copies a statement holds stay small."""

_JSON_TYPES = frozenset({str, int, type(None)})
_INT64 = (-(2**63), 2**63 - 1)
_T = TypeVar("_T")

Span = tuple[int, int, _T | None]
"""``(start, stop, what)``: rows ``start`` to ``stop`` go in one statement built from
``what``, or, where ``what`` is None, are bound row by row."""


def supported(conn: sqlite3.Connection) -> bool:
    """Whether ``conn``'s SQLite has the JSON functions and the ``->>`` operator."""
    try:
        return bool(conn.execute("SELECT '[7]' ->> 0").fetchone()[0] == 7)
    except sqlite3.Error:
        return False


def max_bytes(conn: sqlite3.Connection) -> int:
    """``MAX_STATEMENT_BYTES``, or ``conn``'s own limit on one value when lower."""
    getlimit = getattr(conn, "getlimit", None)  # Python 3.11+
    if getlimit is None:
        return MAX_STATEMENT_BYTES
    return min(MAX_STATEMENT_BYTES, int(getlimit(getattr(sqlite3, "SQLITE_LIMIT_LENGTH", 0))))


def plans(
    table: str,
    key: str,
    first: int,
    names: Sequence[str],
    columns: Sequence[Sequence[Any]],
    vectors: tuple[str, npt.NDArray[np.float32]] | None = None,
    limit: int = MAX_STATEMENT_BYTES,
) -> list[Span[tuple[str, list[Any]]]]:
    """``plan`` of ``columns`` per ``ROWS_PER_STATEMENT`` rows, cut in halves until
    each statement binds at most ``limit`` bytes; a span JSON cannot carry, or a
    single row past ``limit``, comes with None (bind it row by row)."""

    def build(a: int, b: int) -> tuple[tuple[str, list[Any]], int] | None:
        part = [c[a:b] for c in columns]
        cut = None if vectors is None else (vectors[0], vectors[1][a:b])
        return _plan(table, key, first + a, names, part, cut)

    return _spans(len(columns[0]) if columns else 0, build, limit)


def arrays(values: Sequence[str | None], limit: int = MAX_STATEMENT_BYTES) -> list[Span[str]]:
    """``array`` of ``values`` per ``ROWS_PER_STATEMENT`` values, cut as ``plans``."""

    return _spans(len(values), lambda a, b: _array(values[a:b]), limit)


def _spans(
    n: int, build: Callable[[int, int], tuple[_T, int] | None], limit: int
) -> list[Span[_T]]:
    """Rows ``0`` to ``n`` as spans of at most ``ROWS_PER_STATEMENT`` rows whose
    ``build(start, stop)`` (a statement and the bytes it binds) stays within
    ``limit``, halving a span past it."""
    out: list[Span[_T]] = []

    def visit(a: int, b: int) -> None:
        built = build(a, b)
        if built is not None and built[1] > limit:
            if b - a > 1:
                mid = (a + b) // 2
                visit(a, mid)
                visit(mid, b)
                return
            built = None  # one row: bound as it is, as every row was before
        out.append((a, b, None if built is None else built[0]))

    for start in range(0, n, ROWS_PER_STATEMENT):
        visit(start, min(n, start + ROWS_PER_STATEMENT))
    return out


def plan(
    table: str,
    key: str,
    first: int,
    names: Sequence[str],
    columns: Sequence[Sequence[Any]],
    vectors: tuple[str, npt.NDArray[np.float32]] | None = None,
) -> tuple[str, list[Any]] | None:
    """The statement writing ``columns`` into ``table``, keys ``first`` on, or None.

    Args:
        table: The (prefixed) table name.
        key: Its key column; row ``i`` gets ``first + i``.
        first: The key of the first row.
        names: The other columns' names.
        columns: One sequence of values per name, all of the same length (the rows).
        vectors: ``(column, float32 C-contiguous array of shape (rows, dim))``: row
            ``i`` of the array goes into ``column`` of row ``i`` as a BLOB (bound as
            one BLOB that ``substr`` cuts).

    Returns:
        ``(sql, params)`` for ``execute``, or None when a value cannot go through
        JSON exactly (see the module docstring); nothing is written then.
    """
    planned = _plan(table, key, first, names, columns, vectors)
    return None if planned is None else planned[0]


def _plan(
    table: str,
    key: str,
    first: int,
    names: Sequence[str],
    columns: Sequence[Sequence[Any]],
    vectors: tuple[str, npt.NDArray[np.float32]] | None = None,
) -> tuple[tuple[str, list[Any]], int] | None:
    """``plan`` and the bytes of JSON text and BLOB its statement binds."""
    n = len(columns[0]) if columns else 0
    if n == 0:
        return None
    params: list[Any] = [first]
    blob_bytes = 0
    kept: list[str] = []
    exprs: list[str] = []
    varying: list[Sequence[Any]] = []
    if vectors is not None:
        name, matrix = vectors
        width = matrix.shape[1] * 4
        if matrix.shape[0] != n or not width or not matrix.flags.c_contiguous:
            return None
        params.append(matrix)  # bound through the buffer protocol, not copied
        blob_bytes = matrix.nbytes
        kept.append(name)
        exprs.append(f"substr(?{len(params)}, key * {width} + 1, {width})")
    for name, column in zip(names, columns, strict=True):
        first_value = column[0]
        # Equal to a str or None, a value is a str or None (``_same_types`` is for
        # numbers: ``1 == 1.0 == True``, which SQLite stores differently).
        if column.count(first_value) == n and (
            first_value is None or type(first_value) is str or _same_types(column)
        ):
            if first_value is None:
                continue  # the column's default, NULL
            if type(first_value) is int and not _INT64[0] <= first_value <= _INT64[1]:
                return None
            text = literal(first_value)
            kept.append(name)
            if text is not None:
                exprs.append(text)
            else:
                params.append(first_value)
                exprs.append(f"?{len(params)}")
            continue
        if not _jsonable(column):
            return None
        kept.append(name)
        exprs.append(f"value ->> {len(varying)}")
        varying.append(column)
    try:
        rows = orjson.dumps(list(zip(*varying, strict=True)) if varying else [0] * n)
    except orjson.JSONEncodeError:  # a lone surrogate
        return None
    params.append(rows.decode())
    sql = (
        f"INSERT INTO {table} ({', '.join([key, *kept])}) "
        f"SELECT {', '.join(['?1 + key', *exprs])} FROM json_each(?{len(params)})"
    )
    return (sql, params), len(rows) + blob_bytes


def array(values: Sequence[str | None]) -> str | None:
    """``values`` as a JSON array (``json_each`` gives row ``i`` as ``key`` ``i`` and
    its text as ``value``), or None when JSON would not carry them exactly."""
    given = _array(values)
    return None if given is None else given[0]


def _array(values: Sequence[str | None]) -> tuple[str, int] | None:
    """``array`` and its length in bytes."""
    if not _jsonable(values):
        return None
    try:
        text = orjson.dumps(list(values))
    except orjson.JSONEncodeError:  # a lone surrogate
        return None
    return text.decode(), len(text)


def _same_types(column: Sequence[Any]) -> bool:
    """Whether every value has one type."""
    return len(set(map(type, column))) == 1


def _jsonable(column: Sequence[Any]) -> bool:
    """Whether JSON carries every value of ``column`` exactly."""
    types = set(map(type, column))
    if not types <= _JSON_TYPES:
        return False
    if int in types:
        ints = column if len(types) == 1 else [v for v in column if type(v) is int]
        if min(ints) < _INT64[0] or max(ints) > _INT64[1]:
            return False
    if str in types:
        texts = column if len(types) == 1 else [v for v in column if type(v) is str]
        if "\x00" in "".join(texts):
            return False
    return True


def released(params: Sequence[Any]) -> list[Any]:
    """``params`` of a statement built here with an empty JSON array (the last one)
    and no BLOB: run with them, the statement writes nothing and lets go of the
    values it held."""
    return [None if isinstance(v, np.ndarray) else v for v in params[:-1]] + ["[]"]
