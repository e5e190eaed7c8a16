"""Narrow INSERT statements for batches of rows (docs/sqlite.md#writes).

stdlib ``sqlite3`` binds every parameter of every row through Python, about 0.2 µs a
value: for a batch of records most of a row's columns are NULL (no thread, no agent,
no expiry) or the same for every row (family, type, creation time, often the user),
and binding them costs more than SQLite's own work on the row. ``narrow_insert``
leaves out the columns NULL in every row (the column default, NULL, fills them) and
writes the ones equal in every row as SQL literals, so only the columns that vary are
bound. The rows stored are the same as with a full INSERT.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

MAX_LITERAL_CHARS = 256
"""A value equal in every row is written into the SQL only up to this length, in
characters; a longer one stays bound."""


def literal(value: object) -> str | None:
    """``value`` as an SQLite literal, or None when it stays bound.

    Only exact ``int`` and ``str`` (up to ``MAX_LITERAL_CHARS``, no NUL) become
    literals; strings are quoted by doubling ``'``, the one escape an SQL string
    literal has. Floats stay bound: SQLite before 3.43 does not round every decimal
    literal to the nearest double, so an expiry time written as text could be
    stored one unit in the last place off.
    """
    if type(value) is int:
        return str(value)
    if type(value) is str and len(value) <= MAX_LITERAL_CHARS and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'"
    return None


def narrow_insert(
    table: str,
    names: Sequence[str],
    columns: Sequence[Sequence[Any]],
    bound: Collection[str] = (),
) -> tuple[str, list[tuple[Any, ...]]]:
    """The INSERT of a batch into ``table`` binding only the columns that vary.

    Args:
        table: The table's (prefixed) name.
        names: Column names.
        columns: One sequence of values per name, all of the same length (the rows);
            None for NULL.
        bound: Columns always bound as they are (values ``==`` cannot compare, such
            as numpy vectors bound as BLOBs).

    Returns:
        ``(sql, params)`` for ``executemany``: ``params`` holds, per row, the values
        of the columns that are still bound. With fewer than two rows every column
        is bound, so a single-row write reuses one cached statement.
    """
    n = len(columns[0]) if columns else 0
    if n < 2:
        marks = ", ".join("?" * len(names))
        rows = list(zip(*columns, strict=True))
        return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", rows
    kept_names: list[str] = []
    values: list[str] = []
    kept: list[Sequence[Any]] = []
    for name, column in zip(names, columns, strict=True):
        if name not in bound:
            first = column[0]
            if first is None and column.count(None) == n and (kept_names or name != names[-1]):
                continue  # (the last column stays when all others were left out)
            text = literal(first)
            if (
                text is not None
                and column.count(first) == n
                and (type(first) is str or _same_types(column))
            ):
                kept_names.append(name)
                values.append(text)
                continue
        kept_names.append(name)
        values.append("?")
        kept.append(column)
    sql = f"INSERT INTO {table} ({', '.join(kept_names)}) VALUES ({', '.join(values)})"
    return sql, list(zip(*kept, strict=True)) if kept else [()] * n


def _same_types(column: Sequence[Any]) -> bool:
    """Whether every value has the first one's type (``1 == 1.0 == True``, but
    SQLite stores them differently)."""
    t = type(column[0])
    return all(type(v) is t for v in column)
