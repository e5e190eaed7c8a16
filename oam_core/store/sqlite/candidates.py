"""The chunks a metadata filter lets a VECTOR search of the embedded store rank
(docs/filters.md#how-it-runs, docs/sqlite.md).

The in-process vector index (``sqlite/vector/``) applies record type, scope,
expiry and liveness itself; this module gives it the chunk keys whose record passes
the metadata filter, before the top-k cut:

* without a scope, one scan of the ``records`` table (the filter's SQL over
  ``r.metadata``, ``sqlite/filter.py``) gives the passing record keys; a filter of
  string equalities on top-level keys is answered from that key's values, read
  once per database state from the second such scan on (``metacolumns.py``);
* with a thread, user or agent scope, the records of that scope (their indexes,
  ``sqlite/scoped.py``), so only that user's records are tested.

The keys are mapped to their chunks through the index's own arrays (no join to
``chunks``): the index knows which chunks hold a vector.

Neither query holds the expiry clause, so its result does not depend on the clock; the
index checks expiry at the search's ``now``.

``FilterCache`` keeps recent results, keyed on the statement and its parameters, and
valid for one database state: ``PRAGMA data_version`` (bumped by every commit of
another connection or process) and the connection's ``total_changes`` (its own
writes), read inside the search's read transaction. Any committed write, from
anywhere, therefore empties the cache before the next search uses it. A search inside
an open write transaction neither reads nor fills it (that transaction may roll back).
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from oam_core.apis._sentinel import NOT_SET
from oam_core.store.backend import Predicate
from oam_core.store.sqlite.dialect import SQLITE
from oam_core.store.sqlite.metacolumns import Columns
from oam_core.store.sqlite.scoped import record_scope

IntArray = npt.NDArray[np.int64]

MAX_ENTRIES = 32
"""Filter results a cache keeps (least recently used dropped first)."""
MAX_ITEMS = 2_000_000
"""Chunk keys a cache holds in all (int64: 16 MB); a larger result is not kept."""

Version = tuple[int, int]
Key = tuple[str, tuple[tuple[type, Any], ...]]


class MirrorRows(Protocol):
    """What this module reads of the vector index: its row count and, per row, the
    chunk key (``pks``), the record key (``rec``) and whether it is live."""

    n: int
    pks: IntArray
    rec: IntArray
    live: npt.NDArray[np.bool_]


class FilterCache:
    """Recent filter results of one connection, for one database state.

    Args:
        max_entries: Most results kept.
        max_items: Most chunk keys kept over all results.

    Attributes:
        columns: The metadata values read by key for the same state
            (``metacolumns.Columns``), which answer a string-equality filter
            without a scan.
    """

    def __init__(self, max_entries: int = MAX_ENTRIES, max_items: int = MAX_ITEMS) -> None:
        self.max_entries = max_entries
        self.max_items = max_items
        self.version: Version | None = None
        self.entries: OrderedDict[Key, IntArray] = OrderedDict()
        self.items = 0
        self.columns = Columns()

    def get(self, version: Version, key: Key) -> IntArray | None:
        """The result stored for ``key`` at ``version`` (None: none; a new version
        empties the cache)."""
        if version != self.version:
            self.clear()
            self.version = version
            return None
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
        return found

    def put(self, version: Version, key: Key, value: IntArray) -> None:
        """Keep ``value`` for ``key`` at ``version``, within the bounds."""
        if version != self.version or len(value) > self.max_items:
            return
        self.entries[key] = value
        self.items += len(value)
        while len(self.entries) > self.max_entries or self.items > self.max_items:
            _, dropped = self.entries.popitem(last=False)
            self.items -= len(dropped)

    def clear(self) -> None:
        self.entries.clear()
        self.items = 0


def statement(p: str, pred: Predicate) -> tuple[str, list[Any]]:
    """The SQL selecting the keys of the records that pass ``pred.metadata``
    (``None``: records without metadata), restricted to ``pred``'s record types and,
    when it has one, its scope; no expiry clause. ``p`` is the table prefix."""
    meta_params: list[Any] = []
    if pred.metadata is None:
        meta_sql = "r.metadata IS NULL"
    else:
        assert pred.metadata is not NOT_SET
        meta_sql, meta_params = SQLITE.metadata_filter(pred.metadata)
    type_sql, params = record_scope(pred)
    return f"SELECT r.pk FROM {p}records r WHERE {type_sql} AND {meta_sql}", [
        *params,
        *meta_params,
    ]


def chunks_of(index: MirrorRows, record_pks: IntArray) -> IntArray:
    """The chunk keys of the live index rows whose record is in ``record_pks``, in
    row order (so the index maps them to increasing rows without sorting)."""
    n = index.n
    recs = index.rec[:n]
    if not len(record_pks) or not n:
        return np.zeros(0, np.int64)
    top = int(max(int(recs.max()), int(record_pks.max()))) + 1
    wanted = np.zeros(top, bool)
    wanted[record_pks] = True
    keep = wanted[recs] & index.live[:n]
    return np.ascontiguousarray(index.pks[:n][keep])


def filtered_chunks(
    conn: sqlite3.Connection,
    p: str,
    pred: Predicate,
    index: MirrorRows,
    cache: FilterCache,
    *,
    cacheable: bool,
) -> IntArray:
    """The keys of the index's chunks whose record passes ``pred.metadata`` (run
    inside the search's read transaction, after the index caught up).

    Args:
        conn: The store's connection, in a read transaction.
        p: The table prefix.
        pred: The search's predicate; its ``metadata`` is set (a filter or None).
        index: The vector index, synchronised with ``conn``'s snapshot.
        cache: This connection's results.
        cacheable: False inside a write transaction: the cache is neither read
            nor filled.

    Returns:
        int64 array of chunk keys (unsorted, no duplicates).

    Raises:
        sqlite3.Error: from the query (the caller maps it).
    """
    sql, params = statement(p, pred)
    key: Key = (sql, tuple((type(v), v) for v in params))  # True and 1 stay apart
    version: Version | None = None
    records: IntArray | None = None
    if cacheable:
        version = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
        found = cache.get(version, key)
        if found is not None:
            return found
        records = cache.columns.records(conn, version, p, pred)
    if records is None:
        records = np.fromiter((r[0] for r in conn.execute(sql, params)), dtype=np.int64)
    chunks = chunks_of(index, records)
    chunks.flags.writeable = False  # shared by the searches the cache serves
    if version is not None:
        cache.put(version, key, chunks)
    return chunks
