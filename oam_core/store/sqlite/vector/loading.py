"""Filling the mirror's float32 matrix from SQLite in a background thread after the
index file was read (``vector/file.py`` holds no vector since format 5), and coding
them into the IVF index's lists that the file names (format 6 holds no code either:
``vector/assigned.py``).

A store that opens from its index file installs the columns and the IVF index at
once; the vectors of those rows are in SQLite only. ``VectorLoader`` reads them in
chunk-key order on a connection of its own, a batch per statement, and fills the
matrix under the mirror's lock. Until it is done the mirror's ``missing`` names the
chunk keys whose rows hold no vector yet (``lo < key <= hi``, ``lo`` rising as the
batches land); ``gather`` gives a search the vectors of the rows it ranks: a few
(the IVF index's candidates and the rows of its probed lists not coded yet, up to
``FETCH_ANN_MAX``; up to ``FETCH_MAX`` for an exact ranking) are read at once from
SQLite, without writing them into the matrix, many wait for the thread. Each batch is coded into the IVF index under the same hold of the lock as
it lands in the matrix. Anything else that reads the matrix waits for it (``wait``).

Rows never change their vector in place, and the fill is by chunk key (``Mirror.fill``),
so a compaction meanwhile moves nothing the thread relies on; a reload (``Mirror.reset``)
empties ``missing`` and the thread stops at its next batch.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from oam_core.store.sqlite.vector import assigned
from oam_core.store.sqlite.vector.ivf import Ann, FloatArray, IntArray
from oam_core.store.sqlite.vector.mirror import Mirror, unit

__all__ = ["FETCH_ANN_MAX", "FETCH_MAX", "LOAD_BATCH", "VectorLoader"]

log = logging.getLogger(__name__)

LOAD_BATCH = 1024
"""Rows the thread reads per statement (1.5 MiB of vectors at 384 dimensions): the
thread holds the GIL for a few milliseconds at a time, so the searches right after
opening do not wait behind it."""
FETCH_MAX = 2048
"""Rows without a vector a search reads from SQLite itself; with more it waits for
the thread."""
FETCH_ANN_MAX = 32_768
"""Rows without a vector a search through the IVF index reads from SQLite itself
(its candidates and the rows of its probed lists not coded yet: a few thousand at
1M records); with more it waits for the thread."""
_IN_BATCH = 500  # keys per ``pk IN (...)`` statement
_YIELD_S = 0.002  # the thread's pause while a search reads rows itself


class VectorLoader:
    """The background fill of one mirror's matrix (module docstring).

    Args:
        mirror: The arrays to fill.
        uri: A ``file:`` URI opening the database read-only (``mode=ro``).
        table: The store's chunks table.
        ann: The IVF index whose rows are coded as they arrive (``ann.unfilled``), or
            None.
    """

    def __init__(self, mirror: Mirror, uri: str, table: str, ann: Ann | None = None) -> None:
        self.mirror = mirror
        self.ann = ann
        self.uri = uri
        self.table = table
        self.thread: threading.Thread | None = None
        self._conn: sqlite3.Connection | None = None
        self._conn_lock = threading.Lock()
        self._stop = threading.Event()
        self._readers = 0  # searches reading rows themselves: the thread waits for them
        # `+=` is not atomic where threads run at once (free-threaded builds)
        self._readers_lock = threading.Lock()
        _LOADERS.add(self)

    def start(self, lo: int, hi: int) -> None:
        """Fill the rows of chunk keys ``lo < key <= hi`` in a thread; call with the
        mirror's lock held, after installing the rows."""
        self.mirror.missing = (lo, hi)
        self.mirror.loader = self
        self.thread = threading.Thread(target=self._run, name="oam-vector-load", daemon=True)
        self.thread.start()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(self.uri, uri=True, check_same_thread=False)
        return self._conn

    def _run(self) -> None:
        try:
            while not self._stop.is_set() and self._step():
                time.sleep(0)  # let a search waiting for the GIL run between batches
                while self._readers and not self._stop.is_set():
                    time.sleep(_YIELD_S)  # a search reads its rows: give it the CPU
        except Exception as exc:  # the searches read the rows themselves (finish)
            log.warning("vector load from %s stopped (%s); searches read the rows", self.uri, exc)
        finally:
            if self._stop.is_set() or self.mirror.missing is None:
                self._close()

    def _step(self) -> bool:
        """Fill the next batch of missing rows; whether rows are left to fill."""
        m = self.mirror
        span = m.missing
        if span is None:
            return False
        lo, hi = span
        with self._conn_lock:
            rows = (
                self._connection()
                .execute(
                    f"SELECT pk, embedding FROM {self.table} WHERE has_vector = 1 "
                    "AND pk > ? AND pk <= ? ORDER BY pk LIMIT ?",
                    (lo, hi, LOAD_BATCH),
                )
                .fetchall()
            )
        pks, vecs = _vectors(rows, m.dim)
        with m.lock:
            if m.missing is not span:  # reloaded, or another thread filled these rows
                return m.missing is not None
            if len(pks):
                m.fill(pks, vecs)
            more = len(rows) == LOAD_BATCH
            if self.ann is not None and self.ann.unfilled is not None:
                found = m.rows_of(pks)
                keep = found >= 0
                keep[keep] = m.live[found[keep]]
                assigned.code(self.ann, vecs[keep], pks[keep], int(pks[-1]) if more else hi)
            m.missing = (int(pks[-1]), hi) if more else None
            return m.missing is not None

    def _close(self) -> None:
        with self._conn_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def complete(self, rows: IntArray | None, limit: int | None = None) -> None:
        """Make the matrix rows ``rows`` (all rows when None) hold their vectors:
        read the few without one from SQLite, or wait for the thread when there are
        more than ``limit`` (default ``FETCH_MAX``). Call without the mirror's lock
        (a search)."""
        m = self.mirror
        span = m.missing
        if span is None:
            return
        a, b = m.first_row_after(span[0]), m.first_row_after(span[1])
        need = np.arange(a, b) if rows is None else rows[(rows >= a) & (rows < b)]
        if not len(need):
            return
        if len(need) > (FETCH_MAX if limit is None else limit):
            self.finish()
            return
        pks, vecs = self._read(m.pks[need])
        with m.lock:
            if m.missing is not None and len(pks):
                m.fill(pks, vecs)

    def gather(self, rows: IntArray, limit: int | None = None) -> FloatArray | None:
        """The vectors of matrix rows ``rows``, float32 ``(len(rows), dim)``: those
        the thread filled from the matrix, the others read from SQLite without
        writing them into the matrix (each row written there alone would make the
        kernel clear a whole 2 MiB page of it, which numpy asks to be huge); None
        when the matrix is whole, after waiting for the thread when more than
        ``limit`` (default ``FETCH_MAX``) rows are missing. Call without the
        mirror's lock (a search)."""
        m = self.mirror
        span = m.missing
        if span is None:
            return None
        a, b = m.first_row_after(span[0]), m.first_row_after(span[1])
        absent = (rows >= a) & (rows < b)
        count = int(np.count_nonzero(absent))
        if count > (FETCH_MAX if limit is None else limit):
            self.finish()
            return None
        out = np.zeros((len(rows), m.dim), np.float32)
        out[~absent] = m.mat[rows[~absent]]
        if count:
            where = np.flatnonzero(absent)
            keys, back = np.unique(m.pks[rows[where]], return_inverse=True)
            pks, vecs = self._read(keys)
            read = np.zeros((len(keys), m.dim), np.float32)  # zeros: deleted meanwhile
            read[np.searchsorted(keys, pks)] = vecs
            out[where] = read[back]
        return out

    def _read(self, keys: IntArray) -> tuple[IntArray, FloatArray]:
        """Chunk keys and unit vectors of the vector chunks of ``keys``, by key; the
        thread starts no batch meanwhile (on 2 busy cores, 4,300 rows at 1M took
        0.2-0.8 s beside it, 0.1 s alone)."""
        with self._readers_lock:
            self._readers += 1
        try:
            return self._read_rows(keys)
        finally:
            with self._readers_lock:
                self._readers -= 1

    def _read_rows(self, keys: IntArray) -> tuple[IntArray, FloatArray]:
        got: list[tuple[int, bytes]] = []
        listed = keys.tolist()
        with self._conn_lock:
            conn = self._connection()
            for i in range(0, len(listed), _IN_BATCH):
                part = listed[i : i + _IN_BATCH]
                got += conn.execute(
                    f"SELECT pk, embedding FROM {self.table} WHERE has_vector = 1 AND pk IN "
                    f"({', '.join('?' * len(part))}) ORDER BY pk",
                    part,
                ).fetchall()
        return _vectors(got, self.mirror.dim)

    def finish(self) -> None:
        """Fill every missing row before returning: wait for the thread, or, when it
        stopped or the caller holds the mirror's lock (which the thread needs), fill
        them on the calling thread."""
        m = self.mirror
        thread = self.thread
        owned = getattr(m.lock, "_is_owned", lambda: True)()
        if thread is not None and thread.is_alive() and not owned:
            thread.join()
        while self._step():
            pass
        self._close()

    def stop_soon(self) -> None:
        """Ask the thread to stop at its next batch, without waiting (a store that is
        garbage-collected without ``close``)."""
        self._stop.set()

    def hold_for_fork(self) -> None:
        """Take the mirror's lock, then the connection's (the order ``finish`` takes
        them in), before the process forks."""
        self.mirror.lock.acquire()
        self._conn_lock.acquire()

    def release_after_fork(self, *, in_child: bool) -> None:
        """Release what ``hold_for_fork`` took. In the child, leave the parent's
        connection alone (kept in ``_INHERITED``, never used nor closed: closing it
        would release the parent's SQLite file locks); the child's searches fill the
        rows themselves on a connection of their own (``finish``: the thread does not
        exist in the child)."""
        if in_child and self._conn is not None:
            _INHERITED.append(self._conn)
            self._conn = None
        self._conn_lock.release()
        self.mirror.lock.release()

    def stop(self) -> None:
        """Stop the thread (at its next batch) and wait for it; the rows it did not
        fill stay marked ``missing``."""
        self._stop.set()
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self._close()


_LOADERS: weakref.WeakSet[VectorLoader] = weakref.WeakSet()
_HELD: list[VectorLoader] = []  # the loaders whose locks the forking thread holds
_INHERITED: list[Any] = []
"""Connections a child process inherited: never used nor closed there (closing one
would release the parent's SQLite file locks), only kept from the collector."""


def _before_fork() -> None:
    """No thread may hold a loader's lock at ``fork``: a lock held then stays held in
    the child, whose first search would wait for it forever."""
    for loader in list(_LOADERS):
        loader.hold_for_fork()
        _HELD.append(loader)


def _after_fork_in_parent() -> None:
    while _HELD:
        _HELD.pop().release_after_fork(in_child=False)


def _after_fork_in_child() -> None:
    while _HELD:
        _HELD.pop().release_after_fork(in_child=True)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def _vectors(rows: Sequence[tuple[int, bytes]], dim: int) -> tuple[IntArray, FloatArray]:
    """Chunk keys and unit vectors of ``(pk, embedding)`` rows."""
    if not rows:
        return np.zeros(0, np.int64), np.zeros((0, dim), np.float32)
    pks, blobs = zip(*rows, strict=True)
    raw = np.frombuffer(b"".join(blobs), dtype="<f4")
    return np.array(pks, dtype=np.int64), unit(raw.reshape(len(rows), -1))
