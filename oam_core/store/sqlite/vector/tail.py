"""The rows written after the serving ANN index (``vector/ivf.py``) last took rows in,
assigned to its lists in a background thread (``docs/sqlite.md#how-a-search-is-ranked``).

Finding a row's IVF list (a product with every centroid: 0.9 MFLOP per 384-d row at
1,200 lists) is the dear part of adding it to the index. A ``TailAssigner`` does it
in a thread while searches go on with the index as it stands (rows above its
high-water mark are ranked exactly, ``ranking``). The store's own thread, holding the
locks searches hold, hands the assigned keys to the index in ``drain``: they are
held beside faiss, grouped by list (``ivf.Side``, 16 bytes a row), and a search
proposes those of the lists it probes for the exact re-rank, so no faiss list is
changed and no code is made while searches wait. ``flush`` stores them in faiss
later (``builds.AnnBuilds.settle``: not while a retrain builds the next index, so
that one large faiss index is in memory, not two growing). The thread only reads the
index's coarse quantizer, which nothing changes once it is trained.

The thread reads the mirror in slices under its lock (``mirror.LiveRows``) and keeps
per row only its key and list; ``flush`` takes the vectors from the mirror again,
so a bulk load that nobody searches leaves little memory waiting.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from oam_core.store.sqlite.vector import threads
from oam_core.store.sqlite.vector.ivf import (
    ADD_BATCH,
    Ann,
    IntArray,
    add_to_lists,
    assign,
    empty_side,
    encode,
)
from oam_core.store.sqlite.vector.mirror import LiveRows, Mirror

__all__ = ["INLINE_ROWS", "TAIL_SLICE", "TailAssigner", "extend_inline", "flush", "release_freed"]

INLINE_ROWS = 2_048
"""Rows above the index's high-water mark added to it inline (in the search or the
write that finds them, about 0.1 s at 2,000 lists); more go to a ``TailAssigner``."""
TRIM_BYTES = 32 * 2**20
"""Bytes of faiss lists outgrown by ``flush`` after which the freed ones are given
back to the system (``release_freed``)."""
TAIL_SLICE = 8 * ADD_BATCH
"""Rows the assigner reads and assigns per step."""


class TailAssigner:
    """Assigns the live rows above ``ann.hwm`` to ``ann``'s lists in a thread.

    Args:
        faiss: The faiss module.
        ann: The serving index (its quantizer is only read).
        mirror: The rows, read in slices under ``mirror.lock``.

    Attributes:
        ann: As the argument; ``drain`` adds nothing to another index.
        thread: The worker; it ends once no row is left above what it assigned,
            and ``resume`` starts another from there.
        assigned: The largest chunk key assigned so far (rows up to it wait in
            ``drain``'s queue or are in ``ann``).
    """

    def __init__(self, faiss: Any, ann: Ann, mirror: Mirror) -> None:
        self.faiss = faiss
        self.ann = ann
        self.mirror = mirror
        self.assigned = ann.hwm
        self._ready: list[tuple[IntArray, IntArray, int]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.thread = self._start()

    def _start(self) -> threading.Thread:
        thread = threading.Thread(
            target=self._run, args=(self.assigned,), name="oam-vector-tail", daemon=True
        )
        thread.start()
        return thread

    def resume(self) -> None:
        """Start the thread again when it ended (rows were written since)."""
        if not self.thread.is_alive() and not self._stop.is_set():
            self.thread = self._start()

    def _run(self, after: int) -> None:
        threads.background(self.faiss)  # one core, below the writer and the searches
        source = LiveRows(self.mirror)
        while not self._stop.is_set():
            mat, pks, last = source.rows_after(after, TAIL_SLICE)
            if last == after:
                return
            lists = assign(self.ann.index, encode(mat, self.ann.scale)) if len(pks) else pks
            del mat  # the drain reads the vectors from the mirror again
            with self._lock:
                self._ready.append((pks, lists, last))
                self.assigned = last
            after = last

    @property
    def ready(self) -> bool:
        """Whether assigned rows wait for ``drain``."""
        return bool(self._ready)

    @property
    def running(self) -> bool:
        """Whether the thread still works."""
        return self.thread.is_alive()

    def drain(self) -> None:
        """Hand the assigned rows to ``ann`` beside faiss (``ivf.Side``: searches of
        their lists propose them) and raise its high-water mark; call with the
        mirror's lock and the store's lock held. A merge of two sorted runs, no
        faiss work: ``flush`` stores them in faiss later."""
        with self._lock:
            ready, self._ready = self._ready, []
        if not ready:
            return
        ann = self.ann
        pks = np.concatenate([r[0] for r in ready])
        lists = np.concatenate([r[1] for r in ready])
        order = np.argsort(lists, kind="stable")
        ann.side = ann.side.merged(pks[order], lists[order])
        ann.hwm = max(ann.hwm, ready[-1][2])

    def finished(self) -> list[tuple[IntArray, IntArray]]:
        """``(keys, lists)`` of the rows assigned and not yet drained (copies of the
        references: the arrays themselves are never changed)."""
        with self._lock:
            return [(pks, lists) for pks, lists, _ in self._ready]

    def stop(self) -> None:
        """Stop the thread at its next slice and wait for it; nothing more is added."""
        self._stop.set()
        self.thread.join()
        with self._lock:
            self._ready = []


@contextlib.contextmanager
def _one_omp_thread(faiss: Any) -> Iterator[None]:
    """Let faiss use one OpenMP thread in the calling thread for the block."""
    getter = getattr(faiss, "omp_get_max_threads", None)
    setter = getattr(faiss, "omp_set_num_threads", None)
    if getter is None or setter is None:
        yield
        return
    old = int(getter())
    setter(1)
    try:
        yield
    finally:
        setter(old)


def flush(faiss: Any, ann: Ann, mirror: Mirror) -> None:
    """Store the keys ``ann`` holds beside faiss (``ivf.Side``) in faiss, the live
    ones with their mirror vectors, ``ADD_BATCH`` rows at a time and with one
    OpenMP thread (on a busy 2-core machine faiss's second thread waited for a
    core, doubling the caller's wait). Call with the mirror's and the store's lock."""
    side = ann.side
    if not len(side):
        return
    m = mirror
    # slices ending at a list's end: one add per list, which faiss sizes exactly
    # when it at least doubles the list (else it doubles the list's capacity)
    ends = np.unique(
        side.starts[np.searchsorted(side.starts, np.arange(ADD_BATCH, len(side), ADD_BATCH))]
    )
    bounds = [0, *ends[(ends > 0) & (ends < len(side))].tolist(), len(side)]
    inv, grown = ann.index.invlists, 0
    with _one_omp_thread(faiss):
        for a, b in itertools.pairwise(bounds):
            pks, lists = side.keys[a:b], side.lists[a:b]
            rows = m.rows_of(pks)
            ok = rows >= 0
            ok[ok] = m.live[rows[ok]]
            if ok.any():
                grown += sum(inv.list_size(i) for i in np.unique(lists[ok]).tolist())
                coded = encode(m.mat[rows[ok]], ann.scale)
                add_to_lists(faiss, ann.index, coded, pks[ok], lists[ok])
            if grown * ann.index.code_size > TRIM_BYTES:
                grown = 0
                release_freed()
    ann.side = empty_side(int(ann.index.nlist))
    release_freed()


def release_freed() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``; a no-op
    elsewhere). A list that grows is copied to a new buffer and the old one freed;
    glibc keeps freed buffers of this size resident in its heaps, so storing a bulk
    load's rows in faiss (or dropping a retrained index) would leave about the
    index's size resident beside it until other allocations reuse it."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def extend_inline(ann: Ann, mirror: Mirror) -> None:
    """Add the live rows above ``ann.hwm`` to it now (assignment included)."""
    m = mirror
    start = m.first_row_after(ann.hwm)
    if start < m.n:
        keep = np.flatnonzero(m.live[start : m.n]) + start
        ann.add(m.mat[keep], m.pks[keep])
    ann.hwm = max(ann.hwm, m.hwm)
