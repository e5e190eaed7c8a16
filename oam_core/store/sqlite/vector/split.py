"""Retraining a grown store's ANN index by splitting the serving index's lists
(``docs/sqlite.md#how-a-search-is-ranked``).

A store that grew past ``builds.REBUILD_GROWTH`` times its index's training gets an
index with more lists. Training one from scratch (``ivf.Ann.build``) clusters a
sample into every list at once and then compares every row with every centroid:
0.77 MFLOP a row at 2,000 lists of 384 dimensions, 5-10 s of one core per 100k
rows on a 2-core machine, longer than a fast bulk load takes to write them. Here the
serving index's lists are refined instead:

* each old list's live rows (those faiss holds, those held beside it, those its tail
  assigner finished, and the rows nobody assigned yet, found by the old quantizer)
  are clustered on their own into ``round(rows / target)`` children (at least one),
  ``target`` being the rows per list ``ivf.list_count`` gives the grown store;
  a few rounds of spherical k-means over a sample of that list's rows only
  (``SPLIT_ROUNDS``, ``TRAIN_PER_CHILD``), seeded, so the result is deterministic;
* every row is compared with its own list's children only: about ``rows x
  children per list x dim`` products in all instead of ``rows x lists x dim``;
* the new quantizer holds every child's centroid; the rows are coded with the old
  index's code scale and added to their child lists, each list allocated once;
* the probe count is calibrated on the new index like every build's
  (``ivf.Calibration``): a row sits in a child of its old list, not always in its
  globally nearest list, and calibration raises the probes where that costs recall.

The thread reads the mirror in slices under its lock, like a full build. The rows
written while it ran are placed by its catch-up through the old list the serving
index's tail assigner found for them, then among that list's children
(``catch_up_lists``). Measured (``bench/README.md``, "No cliff after a bulk load",
fourth pass): 120k -> 480k rows in 4.0 s of CPU against 21.7 s from scratch,
250k -> 1M in 9.7 s against 57.3 s, recall@10 0.996-0.9985 against 0.9995-1.0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from oam_core.store.sqlite.vector import ivf
from oam_core.store.sqlite.vector.ivf import (
    ADD_BATCH,
    CALIBRATION_QUERIES,
    Ann,
    Calibration,
    FloatArray,
    IntArray,
    RowSource,
)

__all__ = [
    "GROUP_CHILDREN",
    "SPLIT_ROUNDS",
    "TRAIN_PER_CHILD",
    "Children",
    "Group",
    "Members",
    "catch_up_lists",
    "child_counts",
    "groups",
    "members",
    "split",
]

SPLIT_ROUNDS = 8
"""k-means rounds per old list."""
TRAIN_PER_CHILD = 64
"""Rows per child an old list's k-means is trained on (a sample of its rows)."""
GROUP_CHILDREN = 64
"""Children clustered together: the old lists are taken in order until their
children reach it, and each row is scored against every child of its group, masked
to its own list's. A round is then a few large products instead of a few small
numpy calls per list: the thread, beside a writer that holds the GIL most of the
time, waits for it at every call. A split of 490k rows beside a 1M bulk load took
47 s of wall time for 6 s of CPU with numpy calls per list and numpy's threaded
BLAS, and 7.7 s for 4.7 s in groups with faiss's distances (``_nearest``)."""


class Members:
    """The serving index's rows by list, taken when a split retrain starts.

    Args:
        keys: Chunk keys, int64 of shape ``(m,)``, in any order.
        lists: The old list of each, same shape.

    Attributes:
        keys: As given, ascending.
        lists: Their lists, int32, in the same order.
        children: How the split's lists descend from the old ones, once ``split``
            made them (its catch-up assigns through it), else None.
    """

    def __init__(self, keys: IntArray, lists: IntArray) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys: IntArray = np.asarray(keys, dtype=np.int64)[order]
        self.lists = np.asarray(lists, dtype=np.int32)[order]
        self.children: Children | None = None

    def lists_of(self, pks: IntArray) -> IntArray:
        """The old list of each of ``pks`` (ascending int64), -1 where not held."""
        out = np.full(len(pks), -1, np.int64)
        if len(self.keys) and len(pks):
            pos = np.minimum(np.searchsorted(self.keys, pks), len(self.keys) - 1)
            hit = self.keys[pos] == pks
            out[hit] = self.lists[pos[hit]]
        return out


def members(
    ann: Ann, extra: Sequence[tuple[IntArray, IntArray]] = (), *, in_faiss: bool = True
) -> Members:
    """The rows ``ann`` holds by list (in faiss, unless not ``in_faiss``, and beside
    it), plus ``extra`` ``(keys, lists)`` pairs (the rows its tail assigner
    finished and nobody drained). With ``in_faiss``, call with the store's lock
    held (faiss's lists are read); the build thread never reads them."""
    inv, faiss = ann.index.invlists, ann.faiss
    keys, lists = [ann.side.keys], [ann.side.lists]
    for i in range(int(inv.nlist) if in_faiss else 0):
        size = int(inv.list_size(i))
        if size:
            keys.append(faiss.rev_swig_ptr(inv.get_ids(i), size).copy())
            lists.append(np.full(size, i, np.int64))
    for k, li in extra:
        keys.append(np.asarray(k, dtype=np.int64))
        lists.append(np.asarray(li, dtype=np.int64))
    return Members(np.concatenate(keys), np.concatenate(lists))


def child_counts(sizes: IntArray, n: int) -> IntArray:
    """Children of each old list of ``sizes`` rows (int64 ``(nlist_old,)``) for a
    store of ``n`` rows: ``round(size / target)``, at least 1, with ``target``
    from ``n / ivf.list_count(n)`` rows per list, raised by 5% steps until the
    total is at most ``ivf.list_count(n)`` (or the old list count, if more)."""
    want = max(ivf.list_count(max(n, 1)), len(sizes))
    target = max(1.0, n / want)
    while True:
        counts: IntArray = np.maximum(1, np.rint(sizes / target)).astype(np.int64)
        if int(counts.sum()) <= want:
            return counts
        target *= 1.05


def _unit(x: FloatArray) -> FloatArray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: FloatArray = (x / np.maximum(norms, 1e-12)).astype(np.float32)
    return out


def _nearest(x: FloatArray, lists: IntArray, cent: FloatArray, parent: IntArray) -> IntArray:
    """For each row of ``x`` (float32 ``(m, dim)``, unit) in old list ``lists``, the
    child (row of ``cent``, unit, whose old list is ``parent``) of that list with the
    largest inner product: the nearest in squared distance (``2 - 2 x.c`` for unit
    vectors) among every child of the group, the other lists' children pushed past
    any unit distance. faiss computes the distances (its BLAS runs on the calling
    thread's one OpenMP thread, ``threads.background``; numpy's threaded BLAS took
    four times the wall time beside a busy writer on 2 cores)."""
    faiss = ivf.load_faiss()
    dist = faiss.pairwise_distances(np.ascontiguousarray(x), np.ascontiguousarray(cent))
    dist += np.float32(8.0) * (lists[:, None] != parent[None, :])
    out: IntArray = np.argmin(dist, axis=1).astype(np.int64)
    return out


def _means(x: FloatArray, labels: IntArray, cent: FloatArray) -> None:
    """Set each row of ``cent`` that some row of ``x`` is labelled with to the unit
    mean of those rows (sums by ``np.add.reduceat`` over the rows sorted by label)."""
    counts = np.bincount(labels, minlength=len(cent))
    filled = counts > 0
    starts = (np.cumsum(counts) - counts)[filled]
    sums = np.add.reduceat(x[np.argsort(labels, kind="stable")], starts, axis=0)
    cent[filled] = _unit(sums)


class Group:
    """Consecutive old lists split together (``GROUP_CHILDREN``).

    Args:
        lists: The old list of each row, int64 ``(m,)``, ascending.
        counts: Children of each old list of the group, int64 ``(g,)``.
        first: The old list number of the group's first list.
    """

    def __init__(self, lists: IntArray, counts: IntArray, first: int) -> None:
        self.local = lists - first  # the row's list within the group
        self.counts = counts
        self.base = np.concatenate([[0], np.cumsum(counts)])  # first child of each list
        self.parent: IntArray = np.repeat(np.arange(len(counts)), counts)

    def centroids(
        self, mat: FloatArray, fallback: FloatArray, rng: np.random.Generator
    ) -> FloatArray:
        """Spherical k-means of each old list's rows of ``mat`` (float32 ``(m, dim)``,
        unit) into its children, ``SPLIT_ROUNDS`` rounds on at most
        ``TRAIN_PER_CHILD`` rows per child, seeded with distinct rows of the list;
        a child with no row to start from takes its list's old centroid
        (``fallback``, float32 ``(g, dim)``). Returns float32 ``(children, dim)``."""
        perm = rng.permutation(len(mat))
        order = perm[np.argsort(self.local[perm], kind="stable")]  # by list, shuffled
        sizes = np.bincount(self.local, minlength=len(self.counts))
        row_start = np.concatenate([[0], np.cumsum(sizes)])
        nth = np.arange(len(self.parent)) - self.base[self.parent]  # child's rank in its list
        seeded = nth < sizes[self.parent]
        cent = _unit(fallback[self.parent])
        cent[seeded] = mat[order[row_start[self.parent[seeded]] + nth[seeded]]]
        rank = np.arange(len(order)) - row_start[self.local[order]]
        train = order[rank < TRAIN_PER_CHILD * self.counts[self.local[order]]]
        x, lists = mat[train], self.local[train]
        for _ in range(SPLIT_ROUNDS):
            _means(x, _nearest(x, lists, cent, self.parent), cent)
        return cent

    def children(self, mat: FloatArray, cent: FloatArray) -> IntArray:
        """The child (row of ``cent``) of each row of ``mat`` among its list's."""
        return _nearest(mat, self.local, cent, self.parent)


class Children:
    """How a split index's lists descend from the old index's: the centroids of
    each group's children, so that a row whose old list is known is assigned among
    that list's children only (``assign``), as the split itself assigned its rows.

    Args:
        old: The old index (its quantizer finds the old list of a row none knows).
    """

    def __init__(self, old: Ann) -> None:
        self.old = old
        self.group_of = np.zeros(int(old.index.nlist), np.int64)
        self.parts: list[tuple[int, int, FloatArray, IntArray]] = []

    def add(self, a: int, b: int, first: int, cent: FloatArray, group: Group) -> None:
        """Record the children ``cent`` (new lists from ``first``) of old lists
        ``[a, b)`` (``group``)."""
        self.group_of[a:b] = len(self.parts)
        self.parts.append((a, first, cent, group.parent))

    def assign(self, mat: FloatArray, old_lists: IntArray) -> IntArray:
        """The new list of each row of ``mat`` (float32 ``(m, dim)``, unit) whose old
        list is ``old_lists`` (int64 ``(m,)``, -1 where unknown: the old quantizer
        finds it, a product with every old centroid)."""
        old_lists = old_lists.copy()
        unknown = old_lists < 0
        if unknown.any():
            coded = ivf.encode(mat[unknown], self.old.scale)
            old_lists[unknown] = ivf.assign(self.old.index, coded)
        out = np.empty(len(mat), np.int64)
        where = self.group_of[old_lists]
        for g in np.unique(where).tolist():
            rows = np.flatnonzero(where == g)
            a, first, cent, parent = self.parts[g]
            out[rows] = first + _nearest(mat[rows], old_lists[rows] - a, cent, parent)
        return out


def catch_up_lists(
    held: Members, old: Ann, finished: Callable[[], Sequence[tuple[IntArray, IntArray]]]
) -> Callable[[FloatArray, IntArray], IntArray]:
    """For one catch-up round of a split index: a function giving the new list of
    rows ``(mat, pks)`` written since the split read the store, from the old list
    the serving index's tail assigner found for them (held beside faiss, or
    ``finished()`` and not drained) when it did, through ``held.children``."""
    children = held.children
    assert children is not None
    known = members(old, finished(), in_faiss=False)
    return lambda mat, pks: children.assign(mat, known.lists_of(pks))


def groups(counts: IntArray) -> list[tuple[int, int]]:
    """``[a, b)`` ranges of consecutive old lists whose children add up to at least
    ``GROUP_CHILDREN`` (the last one may hold fewer)."""
    out, a, total = [], 0, 0
    for i, c in enumerate(counts.tolist()):
        total += c
        if total >= GROUP_CHILDREN:
            out.append((a, i + 1))
            a, total = i + 1, 0
    if a < len(counts):
        out.append((a, len(counts)))
    return out


def _old_lists(
    old: Ann, held: Members, source: RowSource, calibration: Calibration, stop: Callable[[], bool]
) -> tuple[IntArray, IntArray, int]:
    """Pass 1: every live row's key and old list (``held``'s, or the old quantizer's
    for a row it lacks), sorted by list, and the largest key looked at; the rows
    are folded into ``calibration`` on the way."""
    seen_pks, seen_lists, after = [], [], 0
    for mat, pks, last in ivf.slices(source, ADD_BATCH * 8, stop):
        after = last
        if not len(pks):
            continue
        lists = held.lists_of(pks)
        new = lists < 0
        if new.any():
            lists[new] = ivf.assign(old.index, ivf.encode(mat[new], old.scale))
        seen_pks.append(pks)
        seen_lists.append(lists.astype(np.int32))
        calibration.observe(mat, pks)
    if not seen_pks:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), after
    pks, lists = np.concatenate(seen_pks), np.concatenate(seen_lists)
    order = np.argsort(lists, kind="stable")
    return pks[order], lists[order].astype(np.int64), after


def _reserve(index: Any, first: int, sizes: IntArray) -> None:
    """Allocate lists ``first + i`` of ``index`` for ``sizes[i]`` entries (empty ones)."""
    inv = index.invlists
    for i in np.flatnonzero(sizes).tolist():
        inv.resize(first + i, int(sizes[i]))
        inv.resize(first + i, 0)


def split(
    faiss: Any,
    old: Ann,
    held: Members,
    source: RowSource,
    rng: np.random.Generator,
    stop: Callable[[], bool] = lambda: False,
) -> Ann | None:
    """A new index for ``source``'s live rows whose lists split ``old``'s (module
    docstring), calibrated; ``held`` is ``members(old)`` taken when the retrain
    started. None when ``stop()`` turned true.

    Raises:
        MemoryError, RuntimeError: when faiss cannot build it.
    """
    n = source.live_count()
    queries, query_pks = source.sample(CALIBRATION_QUERIES, rng)
    calibration = Calibration(queries, query_pks, old.scale)
    pks, lists, after = _old_lists(old, held, source, calibration, stop)
    if stop() or not len(pks):
        return None
    nlist_old = int(old.index.nlist)
    starts = np.searchsorted(lists, np.arange(nlist_old + 1))
    counts = child_counts(np.diff(starts), len(pks))
    index = ivf.new_index(faiss, int(old.index.d), int(counts.sum()))
    index.is_trained = True
    old_cent = old.index.quantizer.reconstruct_n(0, nlist_old).astype(np.float32)
    centroids: list[FloatArray] = []
    children = Children(old)
    for a, b in groups(counts):
        if stop():
            return None
        keys = pks[starts[a] : starts[b]]
        mat, found = source.vectors(keys)
        group = Group(lists[starts[a] : starts[b]][found], counts[a:b], a)
        keys, mat = keys[found], mat[found]
        cent = group.centroids(mat, old_cent[a:b], rng)
        centroids.append(cent)
        first = int(counts[:a].sum())
        children.add(a, b, first, cent, group)
        child = group.children(mat, cent)
        _reserve(index, first, np.bincount(child, minlength=len(cent)))
        ivf.add_to_lists(faiss, index, ivf.encode(mat, old.scale), keys, first + child)
    index.quantizer.add(np.ascontiguousarray(np.vstack(centroids), dtype=np.float32))
    nprobe, oversample = calibration.probes(index, source)
    held.children = children
    return Ann(faiss, index, after, n, nprobe, oversample, scale=old.scale)
