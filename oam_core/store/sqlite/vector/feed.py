"""The chunks a write just committed, handed to the vector index's mirror
(``vector/mirror.py``) by the writer instead of being read back from SQLite at the next
search (``docs/sqlite.md#how-a-search-is-ranked``).

Reading 10,000 new chunk rows back costs about 0.1 s of CPU (10 us a row, mostly
Python objects for the rows), a fifth of the time their bulk add takes; the writer
already holds them as columns and one float32 matrix. So after its commit the
backend passes them here (``VectorIndex.written``), and the ANN index can follow a
bulk load while it runs (``builds.AnnBuilds.maintain(writing=True)``) instead of
being built from scratch after it.

The mirror takes them only when they continue it exactly: their keys start right
after the mirror's high-water mark, follow each other without gap or overlap (a
savepoint rolled back and written again overlaps), and end at the key the database's
sequence now holds (nothing else inserted chunks in the transaction). Otherwise
nothing is taken and the next search's catch-up reads SQLite as before. A mirror no
search has loaded yet is loaded once, by a catch-up, when the write is a bulk one
(``FOLLOW_ROWS`` vector rows) into a store that held few chunks (``FOLLOW_START``):
a process that only writes small batches into a large store keeps no mirror.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from oam_core.store.sqlite.vector.changelog import ChangeLog
from oam_core.store.sqlite.vector.mirror import Mirror

__all__ = ["FOLLOW_ROWS", "FOLLOW_START", "Inserted", "take"]

FOLLOW_ROWS = 1_000
"""Vector rows in one write from which a mirror nobody loaded yet is loaded."""
FOLLOW_START = 20_000
"""Chunk keys given out before such a write up to which it is loaded (a catch-up
reading at most these rows and the write's own)."""
_REC, _TYPE, _THREAD, _USER, _AGENT, _EXPIRES, _FROM, _UNTIL = 0, 1, 4, 5, 6, 7, 8, 9
"""Positions in ``statements.CHUNK_INSERT_COLUMNS`` of the columns the mirror holds."""


class Inserted(NamedTuple):
    """Chunk rows one statement batch inserted, with consecutive keys.

    Attributes:
        first: The key of the first row.
        columns: The ``CHUNK_INSERT_COLUMNS`` values, one list per column.
        has_vector: Per row, 1 when it has a vector.
        vectors: ``vectors()`` gives every row's vector (float32 array rows or
            little-endian float32 bytes; None for a row without one).
    """

    first: int
    columns: Sequence[Sequence[Any]]
    has_vector: Sequence[int]
    vectors: Callable[[], Any]


def take(
    mirror: Mirror, log: ChangeLog, conn: sqlite3.Connection, inserted: Sequence[Inserted]
) -> bool:
    """Append ``inserted`` (just committed on ``conn``) to ``mirror``, or load a
    mirror no search loaded yet (module docstring); whether the mirror now holds
    them. Call with the mirror's lock and the backend's lock held, outside any
    transaction."""
    if not inserted:
        return False
    try:
        end = _contiguous_end(inserted)
        top = conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = ?", (f"{log.p}chunks",)
        ).fetchone()
        if end is None or top is None or int(top[0]) != end:
            return False
        if not log.started:
            return _first_load(log, conn, inserted)
        if mirror.hwm != inserted[0].first - 1:
            return False  # another connection's chunks came in between
        for part in inserted:
            _append(mirror, part)
        mirror.hwm = max(mirror.hwm, end)
        return True
    except (sqlite3.Error, ValueError):  # the next search's catch-up reads SQLite
        return False


def _contiguous_end(inserted: Sequence[Inserted]) -> int | None:
    """The last key of ``inserted``, or None when they do not follow each other."""
    end = inserted[0].first - 1
    for part in inserted:
        if part.first != end + 1:
            return None
        end += len(part.has_vector)
    return end


def _first_load(log: ChangeLog, conn: sqlite3.Connection, inserted: Sequence[Inserted]) -> bool:
    """Load the mirror by a catch-up in a read transaction when the write is a bulk
    one into a store that held few chunks."""
    rows = sum(sum(part.has_vector) for part in inserted)
    if inserted[0].first - 1 > FOLLOW_START or rows < FOLLOW_ROWS:
        return False
    conn.execute("BEGIN")
    try:
        log.catch_up(conn)
    finally:
        conn.execute("COMMIT")
    return True


def _append(mirror: Mirror, part: Inserted) -> None:
    """Append the rows of ``part`` that have a vector to ``mirror``, as columns (the
    writer's matrix itself when every row has one)."""
    c, vectors = part.columns, part.vectors()
    keep = [i for i, has in enumerate(part.has_vector) if has]
    if not keep:
        return
    every = len(keep) == len(part.has_vector)

    def pick(col: Sequence[Any]) -> Sequence[Any]:
        return col if every else [col[i] for i in keep]

    if isinstance(vectors, np.ndarray):
        mat = vectors if every else vectors[keep]
    else:
        raw = b"".join(memoryview(vectors[i]).cast("B") for i in keep)
        mat = np.frombuffer(raw, dtype="<f4").reshape(len(keep), -1)
    mirror.append_columns(
        [part.first + i for i in keep],
        pick(c[_REC]),
        pick(c[_TYPE]),
        [pick(c[_THREAD]), pick(c[_USER]), pick(c[_AGENT])],
        [pick(c[_EXPIRES]), pick(c[_FROM]), pick(c[_UNTIL])],
        np.asarray(mat, dtype=np.float32),
    )
