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

The thread reads the mirror in slices under its lock, like a full build.
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

__all__ = ["SPLIT_ROUNDS", "TRAIN_PER_CHILD", "Members", "child_counts", "members", "split"]

SPLIT_ROUNDS = 8
"""k-means rounds per old list."""
TRAIN_PER_CHILD = 64
"""Rows per child an old list's k-means is trained on (a sample of its rows)."""


class Members:
    """The serving index's rows by list, taken when a split retrain starts.

    Args:
        keys: Chunk keys, int64 of shape ``(m,)``, in any order.
        lists: The old list of each, same shape.

    Attributes:
        keys: As given, ascending.
        lists: Their lists, int32, in the same order.
    """

    def __init__(self, keys: IntArray, lists: IntArray) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys: IntArray = np.asarray(keys, dtype=np.int64)[order]
        self.lists = np.asarray(lists, dtype=np.int32)[order]

    def lists_of(self, pks: IntArray) -> IntArray:
        """The old list of each of ``pks`` (ascending int64), -1 where not held."""
        out = np.full(len(pks), -1, np.int64)
        if len(self.keys) and len(pks):
            pos = np.minimum(np.searchsorted(self.keys, pks), len(self.keys) - 1)
            hit = self.keys[pos] == pks
            out[hit] = self.lists[pos[hit]]
        return out


def members(ann: Ann, extra: Sequence[tuple[IntArray, IntArray]] = ()) -> Members:
    """The rows ``ann`` holds by list (in faiss and beside it), plus ``extra``
    ``(keys, lists)`` pairs (the rows its tail assigner finished and nobody drained).
    Call with the store's lock held (faiss's lists are read); a copy, so the build
    thread never reads the serving index's lists."""
    inv, faiss = ann.index.invlists, ann.faiss
    keys, lists = [ann.side.keys], [ann.side.lists]
    for i in range(int(inv.nlist)):
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


def kmeans(x: FloatArray, k: int, rng: np.random.Generator) -> FloatArray:
    """``k`` unit centroids (float32 ``(k, dim)``) of the rows ``x`` (float32 ``(m,
    dim)``, unit) by ``SPLIT_ROUNDS`` rounds of spherical k-means (inner product)
    on at most ``TRAIN_PER_CHILD * k`` of them; a child left empty keeps its
    centroid. ``k`` is at most ``m``."""
    if k <= 1:
        return _unit(x.mean(axis=0, keepdims=True, dtype=np.float64).astype(np.float32))
    train = x if len(x) <= TRAIN_PER_CHILD * k else x[rng.choice(len(x), TRAIN_PER_CHILD * k, False)]
    cent = train[rng.choice(len(train), k, replace=False)].copy()
    for _ in range(SPLIT_ROUNDS):
        labels = np.argmax(train @ cent.T, axis=1)
        member = (labels[:, None] == np.arange(k)).astype(np.float32)  # (m, k) one-hot
        sums = member.T @ train
        filled = member.any(axis=0)
        cent[filled] = _unit(sums[filled])
    return cent


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
    first = 0
    for i in range(nlist_old):
        if stop():
            return None
        k = int(counts[i])
        keys = pks[starts[i] : starts[i + 1]]
        mat, found = source.vectors(keys)
        keys, mat = keys[found], mat[found]
        cent = kmeans(mat, min(k, len(mat)), rng) if len(mat) else old_cent[i : i + 1]
        if len(cent) < k:  # fewer live rows than children: the rest stay empty
            cent = np.vstack([cent, np.repeat(old_cent[i : i + 1], k - len(cent), axis=0)])
        centroids.append(cent)
        if len(mat):
            child = np.argmax(mat @ cent.T, axis=1)
            _reserve(index, first, np.bincount(child, minlength=k))
            ivf.add_to_lists(faiss, index, ivf.encode(mat, old.scale), keys, first + child)
        first += k
    index.quantizer.add(np.ascontiguousarray(np.vstack(centroids), dtype=np.float32))
    nprobe, oversample = calibration.probes(index, source)
    return Ann(faiss, index, after, n, nprobe, oversample, scale=old.scale)
