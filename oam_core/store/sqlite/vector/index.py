"""``VectorIndex``: the vector index as the SQLite back end uses it (``sqlite/backend.py``).

A cache of SQLite, never the truth: ``SQLiteMemoryStore`` keeps every chunk row in
SQLite, and this object mirrors the searchable ones in memory. It wires the parts of
the package together and is, with ``ranking.py``, the only module a search of an
unchanged store runs through: ``sync`` asks SQLite whether anything changed and
hands over to the change-log reader only when it did.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from oam_core.store.sqlite.vector import feed, ranking
from oam_core.store.sqlite.vector.builds import AnnBuilds
from oam_core.store.sqlite.vector.changelog import ChangeLog
from oam_core.store.sqlite.vector.feed import Inserted
from oam_core.store.sqlite.vector.file import IndexFile
from oam_core.store.sqlite.vector.ivf import Ann, BoolArray, FloatArray, IntArray
from oam_core.store.sqlite.vector.mirror import Mirror

__all__ = ["VectorIndex"]


class VectorIndex:
    """The vector chunks of one store's ``chunks`` table, mirrored in memory.

    Args:
        table_prefix: The store's table prefix (``memory_store_id`` + ``_``).
        path: Where the index file lives (``file.index_path``), or None.
        ann_min_rows: Live rows from which an ANN index is built (default
            ``builds.ANN_MIN_ROWS``; tests lower it).
        exact_max: Candidate rows always ranked exactly (default
            ``ranking.EXACT_MAX``).
        background_rows: Live rows from which the ANN index is built in a
            background thread (default ``builds.BACKGROUND_ROWS``).

    Attributes:
        mirror: The arrays (``mirror.Mirror``).
        file: The index file (``file.IndexFile``).
        builds: The ANN index's life (``builds.AnnBuilds``).
        log: The reader that catches the mirror up with SQLite (``changelog.ChangeLog``).
        exact_max: As the argument.

    Every method must be called with the owning backend's lock held; the only other
    threads are the background build and the background write of the index file
    (``saving.py``), which read the mirror under ``mirror.lock``.
    """

    def __init__(
        self,
        table_prefix: str,
        path: str | None,
        *,
        ann_min_rows: int | None = None,
        exact_max: int | None = None,
        background_rows: int | None = None,
    ) -> None:
        self.mirror = Mirror()
        self.file = IndexFile(path)
        self.builds = AnnBuilds(
            self.mirror, self.file, ann_min_rows=ann_min_rows, background_rows=background_rows
        )
        self.log = ChangeLog(table_prefix, self.mirror, self.builds, self.file)
        self.exact_max = ranking.EXACT_MAX if exact_max is None else exact_max
        self.version: tuple[int, int] | None = None  # (data_version, total_changes) synced

    # -- the tuning knobs of the parts (tests and benchmarks set them) --------------------

    @property
    def ann(self) -> Ann | None:
        """The ANN index searches use, or None (they rank exactly)."""
        return self.builds.ann

    @property
    def ann_min_rows(self) -> int:
        """Live rows from which an ANN index is built."""
        return self.builds.ann_min_rows

    @ann_min_rows.setter
    def ann_min_rows(self, rows: int) -> None:
        self.builds.ann_min_rows = rows

    @property
    def background_rows(self) -> int:
        """Live rows from which the ANN index is built in a background thread."""
        return self.builds.background_rows

    @background_rows.setter
    def background_rows(self, rows: int) -> None:
        self.builds.background_rows = rows

    @property
    def compact_min(self) -> int:
        """Dead rows tolerated before the mirror is compacted."""
        return self.builds.compact_min

    @compact_min.setter
    def compact_min(self, rows: int) -> None:
        self.builds.compact_min = rows

    # -- searching ----------------------------------------------------------------------

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the mirror up to the database state ``conn`` reads (call inside the
        search's read transaction), and adopt a finished background build."""
        version = (
            int(conn.execute("PRAGMA data_version").fetchone()[0]),
            conn.total_changes,
        )
        if version != self.version:
            with self.mirror.lock:
                self.log.catch_up(conn)
                self.version = version
                self._adopt_finished()  # first: a grown store may retrain it at once
                self.builds.maintain()
            return
        if self._adopt_finished() or (self.builds.recheck_waits and self.mirror.missing is None):
            with self.mirror.lock:  # a grown store retrains at once; a deferred check runs
                self.builds.maintain()
            return
        if self.builds.tail is not None and self.builds.tail_ready:  # rows assigned: add them
            with self.mirror.lock:
                ann = self.builds.ann
                if ann is None:
                    self.builds.drain()
                else:
                    self.builds.extend(ann)

    def _adopt_finished(self, *, writing: bool = False) -> bool:
        """Adopt the index of a background build that ended (``writing``: in a
        write, ``builds.AnnBuilds.adopt``); whether one was. ``maintain`` follows."""
        thread = self.builds.thread
        if thread is not None and not thread.is_alive():
            self.builds.adopt(writing=writing)
            return True
        return False

    def candidates(
        self,
        types: frozenset[str],
        scopes: dict[str, str | None],
        now: float,
        allowed_pks: IntArray | None,
        *,
        valid_at: float | None = None,
    ) -> tuple[IntArray | None, BoolArray | None]:
        """Candidate rows as ``(rows, mask)`` (``ranking.candidates``); ``valid_at``
        (epoch seconds, or None for no filter) keeps the rows valid then."""
        return ranking.candidates(self.mirror, types, scopes, now, allowed_pks, valid_at=valid_at)

    def rank(
        self,
        queries: FloatArray,
        k: int,
        rows: IntArray | None,
        mask: BoolArray | None,
    ) -> list[list[tuple[int, float]]]:
        """Top ``k`` ``(record pk, cosine distance)`` per unit query row, nearest first,
        ties by record pk, over the candidates ``(rows, mask)`` of ``candidates``
        (``ranking.rank``)."""
        return ranking.rank(self.mirror, self.builds.ann, queries, k, rows, mask, self.exact_max)

    def written(self, conn: sqlite3.Connection, inserted: Sequence[Inserted]) -> None:
        """Take in the chunks a write of ``conn`` just committed (``feed.Inserted``,
        in the order written) without reading them back, and let the ANN index
        follow them in the background (``feed.take``); call after the commit, with
        the backend's lock held. Errors never reach the writer: a write the mirror
        could not take is read by the next search's catch-up."""
        with self.mirror.lock:
            if feed.take(self.mirror, self.log, conn, inserted):
                self._adopt_finished(writing=True)
                self.builds.maintain(writing=True)

    # -- opening and closing ------------------------------------------------------------

    def remove_stale_files(self) -> None:
        """Remove the temporary index files that writers killed mid-write left
        beside the index file (``file.remove_stale``); call on a writable open."""
        self.file.remove_stale()

    def save(self) -> None:
        """Stop a background build and wait for a background write of the index
        file; write the file if the mirror has moved far from it (``file.SAVE_SHARE``)
        or the ANN index was rebuilt since and no background write saved it."""
        self.log.stop_loading()
        self.builds.save()

    def stop_building(self) -> None:
        """Stop a background build (it ends at its next slice) and wait for it."""
        self.builds.stop()

    def wait_for_build(self, timeout: float | None = None) -> bool:
        """Wait until a background build ends (its index is adopted by the next
        search); True when none is running any more."""
        return self.builds.wait(timeout)
