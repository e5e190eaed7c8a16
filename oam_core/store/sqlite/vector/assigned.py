"""The IVF index of an index file that holds no codes (format 6, ``vector/file.py``):
its trained lists and each row's list, the rows coded as their vectors arrive.

The file keeps the coarse centroids (an empty faiss index) and, per row, the IVF
list it was added to. A store opened from it installs the empty index with every
list allocated at its final size, and ``Assigned`` records which rows belong to
which list and are not coded yet: those with chunk keys above ``done``. The
background fill (``vector/loading.py``) reads the vectors in key order and codes
each batch into the lists the file names (``code``: no quantizer search, no
training), raising ``done``; until it is through, a search that probes some lists
ranks the not-yet-coded rows of those lists exactly (``pending_in``), so it finds
what the complete index would (docs/sqlite.md#the-index-file).

Every function here is called with the mirror's lock held (the loader writes the
faiss lists while searches read them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core.store.sqlite.vector import ivf
from oam_core.store.sqlite.vector.ivf import Ann, FloatArray, IntArray

__all__ = [
    "Assigned",
    "code",
    "code_from",
    "empty_copy",
    "install",
    "list_of_rows",
    "pending_in",
    "probed",
]


class Assigned:
    """Rows of an IVF index known by list but not coded yet.

    Args:
        pks: Chunk keys, ascending, shape ``(m,)`` int64.
        lists: The IVF list of each, shape ``(m,)`` (any integer type).

    Attributes:
        done: Every row with a key up to it is coded (or was dropped); the rows
            above it are not.
    """

    def __init__(self, pks: IntArray, lists: npt.NDArray[Any]) -> None:
        self.pks = np.asarray(pks, dtype=np.int64)
        self.lists = np.asarray(lists, dtype=np.int16)  # int16: numpy radix-sorts it
        self.done = 0
        self.sizes: IntArray = np.bincount(self.lists, minlength=1).astype(np.int64)
        """Rows of each list (each list is allocated at that size when its first
        row is coded)."""
        self.whole = np.zeros(len(self.sizes), bool)
        """Lists coded out of order, every row at once, by a search that had read
        them all (``code_read``): the fill skips their rows."""
        self._order: IntArray | None = None  # rows by list (stable: keys ascend in each)
        self._starts: IntArray | None = None

    def lists_of(self, pks: IntArray) -> IntArray:
        """The list of each of ``pks`` (-1 where not held)."""
        pks = np.asarray(pks, dtype=np.int64)
        out = np.full(len(pks), -1, np.int64)
        if len(self.pks):
            pos = np.minimum(np.searchsorted(self.pks, pks), len(self.pks) - 1)
            hit = self.pks[pos] == pks
            out[hit] = self.lists[pos[hit]]
        return out

    def after(self, pk: int) -> tuple[IntArray, IntArray]:
        """``(keys, lists)`` of the rows with keys above ``pk``."""
        a = int(np.searchsorted(self.pks, pk, side="right"))
        return self.pks[a:], self.lists[a:].astype(np.int64)

    def in_lists(self, lists: IntArray) -> IntArray:
        """Keys of the rows not coded yet (above ``done``) in ``lists``, unsorted."""
        if self._order is None or self._starts is None:
            self._order = np.argsort(self.lists, kind="stable").astype(np.int64)
            nlist = int(self.lists.max()) + 2 if len(self.lists) else 1
            self._starts = np.searchsorted(self.lists[self._order], np.arange(nlist)).astype(
                np.int64
            )
        order, starts = self._order, self._starts
        parts = []
        for li in np.asarray(lists, dtype=np.int64).tolist():
            if 0 <= li < len(starts) - 1 and not self.whole[li]:
                seg = order[starts[li] : starts[li + 1]]
                keys = self.pks[seg]
                parts.append(keys[np.searchsorted(keys, self.done, side="right") :])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def install(ann: Ann, pks: IntArray, lists: npt.NDArray[Any]) -> None:
    """Make ``ann`` (an empty index read from a file) wait for the rows ``pks``
    (ascending) of ``lists`` (-1: not in it): ``ann.unfilled`` records them."""
    held = np.asarray(lists) >= 0
    assigned = Assigned(pks[held], np.asarray(lists)[held])
    ann.unfilled = assigned if len(assigned.pks) else None


def code(ann: Ann, vecs: FloatArray, pks: IntArray, upto: int) -> None:
    """Code the unit rows ``vecs`` (keys ``pks``, ascending, live in the mirror) into
    the lists ``ann.unfilled`` names for them (keys it does not hold are skipped),
    then mark every row up to key ``upto`` done (the whole index when none is left)."""
    assigned: Assigned | None = ann.unfilled
    if assigned is None:
        return
    lists = assigned.lists_of(pks)
    held = (lists >= 0) & (pks > assigned.done)
    held[held] = ~assigned.whole[lists[held]]
    _reserve(ann, assigned, lists[held])
    for a in range(0, int(held.sum()), ivf.ADD_BATCH):
        part = np.flatnonzero(held)[a : a + ivf.ADD_BATCH]
        coded = np.ascontiguousarray(ivf.encode(vecs[part], ann.scale))
        ids = np.ascontiguousarray(pks[part], dtype=np.int64)
        where = np.ascontiguousarray(lists[part], dtype=np.int64)
        swig = ann.faiss.swig_ptr
        ann.index.add_core(len(ids), swig(coded), swig(ids), swig(where))
    assigned.done = max(assigned.done, upto)
    if not len(assigned.pks) or assigned.done >= int(assigned.pks[-1]):
        ann.unfilled = None


def _reserve(ann: Ann, assigned: Assigned, lists: IntArray) -> None:
    """Allocate each of ``lists`` still empty at its final size (``Assigned.sizes``)
    before its first rows are coded: faiss would grow it by doubling (about 1.4x
    the codes, the outgrown buffers left in the heap), and allocating every list
    at once when the file is read took 0.36 s of the first search at 1M."""
    inv = ann.index.invlists
    for li in np.unique(lists).tolist():
        if li < len(assigned.sizes) and inv.list_size(li) == 0:
            inv.resize(li, int(assigned.sizes[li]))
            inv.resize(li, 0)


def code_read(ann: Ann, mirror: Any, lists: IntArray, rows: IntArray, vecs: FloatArray) -> None:
    """Code at once the rows of each of ``lists`` not coded yet when a search has
    just read all of them: ``rows`` (mirror rows) with their unit vectors ``vecs``
    (float32 ``(len(rows), dim)``). Later searches probing those lists use their
    codes instead of reading the rows again; the fill skips them. Takes the
    mirror's lock."""
    with mirror.lock:
        assigned: Assigned | None = ann.unfilled
        if assigned is None or mirror.missing is None:
            return
        pks = mirror.pks[rows]  # rows cannot move: compaction needs the backend's lock
        have = set(pks.tolist())
        own = assigned.lists_of(pks)
        for li in np.asarray(lists, dtype=np.int64).tolist():
            if not 0 <= li < len(assigned.whole) or assigned.whole[li]:
                continue
            waiting = assigned.in_lists(np.array([li]))
            found = mirror.rows_of(waiting)
            alive = found >= 0
            alive[alive] = mirror.live[found[alive]]
            if not all(k in have for k in waiting[alive].tolist()):
                continue  # a row of the list was not read (deleted meanwhile, ...)
            take = np.flatnonzero((own == li) & (pks > assigned.done))
            take = take[np.argsort(pks[take], kind="stable")]
            _reserve(ann, assigned, np.array([li]))
            if len(take):
                coded = np.ascontiguousarray(ivf.encode(vecs[take], ann.scale))
                ids = np.ascontiguousarray(pks[take], dtype=np.int64)
                where = np.full(len(take), li, np.int64)
                swig = ann.faiss.swig_ptr
                ann.index.add_core(len(ids), swig(coded), swig(ids), swig(where))
            assigned.whole[li] = True


def code_from(ann: Ann, mirror: Any) -> None:
    """Code every row ``ann`` still waits for from the mirror's matrix (its vectors
    all filled; the dead and unknown rows are skipped)."""
    assigned: Assigned | None = ann.unfilled
    if assigned is None:
        return
    pks, _ = assigned.after(assigned.done)
    rows = mirror.rows_of(pks)
    keep = rows >= 0
    keep[keep] = mirror.live[rows[keep]]
    rows, pks = rows[keep], pks[keep]
    for a in range(0, len(pks), ivf.ADD_BATCH):
        code(ann, mirror.mat[rows[a : a + ivf.ADD_BATCH]], pks[a : a + ivf.ADD_BATCH], 0)
    ann.unfilled = None


def probed(ann: Ann, q: FloatArray, nprobe: int) -> IntArray:
    """The IVF lists a search of unit query ``q`` with ``nprobe`` probes scans."""
    _, lists = ann.index.quantizer.search(ivf.encode(q.reshape(1, -1), ann.scale), nprobe)
    found: IntArray = lists[0].astype(np.int64)
    return found[found >= 0]


def pending_in(ann: Ann, q: FloatArray, nprobe: int) -> IntArray:
    """Keys of the rows not coded yet in the lists a search of ``q`` probes (empty
    once the index is complete)."""
    assigned: Assigned | None = ann.unfilled
    if assigned is None:
        return np.zeros(0, np.int64)
    return assigned.in_lists(probed(ann, q, nprobe))


def list_of_rows(ann: Ann, pks: IntArray) -> npt.NDArray[np.int16]:
    """The IVF list of each of the rows ``pks`` (ascending) in ``ann``, coded or
    waiting (``Assigned``), as int16 (-1: not in it)."""
    inv = ann.index.invlists
    out = np.full(len(pks), -1, np.int16)
    for i in range(int(inv.nlist)):
        size = inv.list_size(i)
        if size:
            ids = ann.faiss.rev_swig_ptr(inv.get_ids(i), size)
            pos = np.minimum(np.searchsorted(pks, ids), max(len(pks) - 1, 0))
            hit = pks[pos] == ids if len(pks) else np.zeros(len(ids), bool)
            out[pos[hit]] = i
    assigned: Assigned | None = ann.unfilled
    if assigned is not None:
        keys, lists = assigned.after(assigned.done)
        pos = np.minimum(np.searchsorted(pks, keys), max(len(pks) - 1, 0))
        hit = pks[pos] == keys if len(pks) else np.zeros(len(keys), bool)
        out[pos[hit]] = lists[hit]
    return out


def empty_copy(ann: Ann) -> Any:
    """A faiss index with ``ann``'s trained lists (its centroids) and no entry."""
    index = ann.index
    copy = ivf.new_index(ann.faiss, int(index.d), int(index.nlist))
    centroids = index.quantizer.reconstruct_n(0, int(index.nlist))
    copy.quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
    copy.is_trained = True
    return copy
