"""Metadata values held by key, so that a VECTOR search's string-equality filter is
an array lookup (docs/filters.md#how-it-runs, docs/sqlite.md#metadata-filters).

A search with ``metadata_filter={"cat": c}`` and no scope selects its candidate
records with one scan of the ``records`` table (``sqlite/candidates.py``). Each new
value of ``c`` is a new scan, and a workload that cycles through a key's values pays
one for each (20 values of a 5 % filter: 20 scans of 25-35 ms CPU at 100k records,
the slow twentieth of the searches). ``Columns`` reads the key once instead: on the
second scan of one key (any value) in one database state it groups every record of
the search's record types by the text value at that key (``json_extract`` with the
filter's own path, in SQL: ``GROUP BY`` on the value), and keeps, per value, the
record keys. A filter on that key is then a dictionary lookup.

Filters answered here: one or more top-level keys (``PATH_KEY``, ANDed), each equal
to a string or ``$in`` a list of strings, searched without a thread, user or agent
scope. The SQL filter matches exactly the records whose value at the key is JSON
text equal to the string (``sqlite/filter.py``: ``json_extract ... IS ?``, or
``json_type`` text and ``=``, both with the BINARY collation), and the groups are
those of the same ``json_extract`` with the same collation, so the record sets are
equal. Any other filter (numbers, ``$not``, ``$or``, ranges, arrays, a scope: the
scoped scan reads only that scope's records) runs in SQL as before.

Valid for one database state, as the filter results (``candidates.FilterCache``):
any committed write empties the held columns before the next search uses them.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core.apis._sentinel import NOT_SET
from oam_core.filters import Cond, Equals, Field, In
from oam_core.store.backend import Predicate
from oam_core.store.sqlite.filter import PATH_KEY
from oam_core.store.sqlite.scoped import record_scope, scope_terms

__all__ = ["MAX_COLUMNS", "MAX_KEYS", "Columns", "string_tests"]

IntArray = npt.NDArray[np.int64]

MAX_COLUMNS = 8
"""Keys whose values a ``Columns`` holds (least recently used dropped first)."""
MAX_KEYS = 4_000_000
"""Record keys a ``Columns`` holds over all its columns (int64: 32 MB); a larger
column is not kept."""
MAX_VALUES = 100_000
"""Distinct values of a key beyond which its column is not kept (a key unique per
record: one array per record would cost more than the scans it saves)."""

Version = tuple[int, int]
_ColumnKey = tuple[str, str, tuple[tuple[type, Any], ...]]
"""``(metadata key, record-type SQL, its parameters)``."""


def string_tests(conditions: tuple[Cond, ...]) -> list[tuple[str, tuple[str, ...]]] | None:
    """``[(key, strings)]`` when ``conditions`` is a conjunction of top-level keys each
    equal to a string or ``$in`` a list of strings (a record passes when, for every
    key, its value there is one of the strings); None for any other filter."""
    tests: list[tuple[str, tuple[str, ...]]] = []
    for cond in conditions:
        if not isinstance(cond, Field) or not PATH_KEY.fullmatch(cond.key):
            return None
        atom = cond.atom
        if isinstance(atom, Equals):
            values: tuple[Any, ...] = (atom.value,)
        elif isinstance(atom, In):
            values = atom.values
        else:
            return None
        if not values or not all(isinstance(v, str) for v in values):
            return None
        tests.append((cond.key, values))
    return tests or None


@dataclass
class _Column:
    """The records of one key: per text value, their record keys (unsorted)."""

    groups: dict[str, IntArray]
    size: int


class Columns:
    """Metadata columns of one connection, for one database state (module docstring).

    Args:
        max_columns: Most keys held.
        max_keys: Most record keys held over all columns.
        max_values: Most distinct values of a held key.
    """

    def __init__(
        self,
        max_columns: int = MAX_COLUMNS,
        max_keys: int = MAX_KEYS,
        max_values: int = MAX_VALUES,
    ) -> None:
        self.max_columns = max_columns
        self.max_keys = max_keys
        self.max_values = max_values
        self.version: Version | None = None
        self.columns: OrderedDict[_ColumnKey, _Column] = OrderedDict()
        self.misses: dict[_ColumnKey, int] = {}
        self.refused: set[_ColumnKey] = set()
        self.size = 0
        self.builds = 0  # columns read since creation (tests and benchmarks read it)

    def clear(self) -> None:
        """Drop every column and count."""
        self.columns.clear()
        self.misses.clear()
        self.refused.clear()
        self.size = 0

    def records(
        self, conn: sqlite3.Connection, version: Version, p: str, pred: Predicate
    ) -> IntArray | None:
        """The keys of the records of ``pred``'s types that pass ``pred.metadata``
        (unsorted, no duplicates), or None when the filter is not one answered here
        or its key is not held yet (the caller runs the SQL filter).

        Args:
            conn: The store's connection, in the search's read transaction.
            version: ``(PRAGMA data_version, total_changes)`` read in it.
            p: The table prefix.
            pred: The search's predicate (``metadata`` set).

        Raises:
            sqlite3.Error: from reading a column (the caller maps it).
        """
        if version != self.version:
            self.clear()
            self.version = version
        if pred.metadata is NOT_SET or pred.metadata is None or scope_terms(pred):
            return None
        tests = string_tests(pred.metadata)
        if tests is None:
            return None
        type_sql, type_params = record_scope(pred)
        scope = (type_sql, tuple((type(v), v) for v in type_params))
        found: IntArray | None = None
        for key, values in tests:
            column = self._column(conn, p, (key, *scope), type_params)
            if column is None:
                return None
            parts = [column.groups[v] for v in dict.fromkeys(values) if v in column.groups]
            got = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            found = got if found is None else np.intersect1d(found, got, assume_unique=True)
        return found

    def _column(
        self, conn: sqlite3.Connection, p: str, ckey: _ColumnKey, type_params: list[Any]
    ) -> _Column | None:
        """The held column of ``ckey``; read on the second call that misses it in
        this state (the first runs the SQL filter alone); None when not held."""
        column = self.columns.get(ckey)
        if column is not None:
            self.columns.move_to_end(ckey)
            return column
        if ckey in self.refused:
            return None
        self.misses[ckey] = self.misses.get(ckey, 0) + 1
        if self.misses[ckey] < 2:
            return None
        column = read_column(conn, p, ckey[0], ckey[1], type_params, self.max_values)
        self.builds += 1
        if column is None or column.size > self.max_keys:
            self.refused.add(ckey)
            return None
        self.columns[ckey] = column
        self.size += column.size
        while len(self.columns) > self.max_columns or self.size > self.max_keys:
            _, dropped = self.columns.popitem(last=False)
            self.size -= dropped.size
        return column


def read_column(
    conn: sqlite3.Connection,
    p: str,
    key: str,
    type_sql: str,
    type_params: list[Any],
    max_values: int,
) -> _Column | None:
    """The records of ``type_sql`` grouped by their text value at top-level ``key``
    (a ``PATH_KEY``), read in one scan; None when there are more than
    ``max_values`` distinct values.

    Raises:
        sqlite3.Error: from the query.
    """
    path = f'$."{key}"'
    sql = (
        "SELECT v, group_concat(pk) FROM ("
        f"SELECT r.pk AS pk, json_extract(r.metadata, ?) AS v FROM {p}records r "
        f"WHERE {type_sql} AND json_type(r.metadata, ?) = 'text') GROUP BY v"
    )
    groups: dict[str, IntArray] = {}
    size = 0
    for value, keys in conn.execute(sql, [path, *type_params, path]):
        if len(groups) >= max_values:
            return None
        arr = np.fromstring(keys, dtype=np.int64, sep=",")
        groups[value] = arr
        size += len(arr)
    return _Column(groups, size)
