"""The ANN half of the embedded store's vector index (``store/sqlite/vector/``).

A faiss IVF index (``IndexIVFScalarQuantizer``, signed 8-bit codes of the vectors
scaled by ``Ann.scale``, inner product) whose labels are chunk keys. It only proposes
candidates: the store re-ranks them exactly from its float32 matrix after the scope,
type, expiry and filter masks. Documented in ``docs/sqlite.md``.

Build, from any ``RowSource`` (the mirror, read under its lock, so a build can run in
a background thread while searches go on):

* ``LISTS_PER_ROOT * sqrt(n)`` lists, trained (10 k-means rounds) on a sample of
  ``TRAIN_PER_LIST`` vectors per list; the code scale from the first
  ``SCALE_ROWS`` of that sample (``code_scale``);
* every live row added in two passes over slices copied from the source: the first
  finds each row's list, so each list is allocated once at its final size, the
  second adds the rows to those lists (extra memory: one slice, the row-to-list
  map, and the codes themselves, not faiss's doubling growth);
* the probe count calibrated on the store's own data: ``CALIBRATION_QUERIES``
  stored vectors are searched for their 10 nearest *other* vectors, with the
  search's oversampling and exact re-rank, and the fewest probes reaching recall
  ``RECALL_TARGET`` against exact are kept. Data without cluster structure, where no
  probe count up to ``MAX_PROBE_SHARE`` of the lists reaches it, gets ``nprobe = 0``:
  the index is not used and searches rank exactly.

Why these choices (measured on the project's 2-core machine, 100k and 1M x 384, see
``bench/README.md``): with ``sqrt(n)`` lists, data with more natural clusters than
lists (1,000 centres) needed 48 probes for recall 0.98; with ``2 sqrt(n)`` lists 8
probes give 0.999 there and on the 100-centre peer workload, and each list is half
as long. The codes: on the peer workload a query's ten nearest neighbours lie
anywhere in its cluster, so at 1M every code type scans about 10,000 codes per query
for recall 0.98, and the time per code decides. faiss scans signed 8-bit codes
("direct": the query is quantized too, integer products) in 0.58 ms there, its 4-bit
codes in 1.11 ms and its generic 8-bit ones in 0.80-0.89 ms, all at the same recall
after the exact re-rank; fast-scan 4-bit PQ (48 or 96 sub-quantizers) and 1- or
2-bit RaBitQ scan faster but reach recall 0.35-0.96 only, with 4x the candidates.
The 8-bit codes cost a quarter of the float32 matrix (37 MB at 100k x 384).
"""

from __future__ import annotations

import contextlib
import math
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from oam_core.store.sqlite.vector import threads

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

OVERSAMPLES = (4, 8, 16)
"""ANN candidates per wanted record that calibration tries (the exact re-rank needs
more of them when the coded scores of many near neighbours are close)."""
LISTS_PER_ROOT = 2
"""IVF lists per square root of the rows: 632 at 100k, 2,000 at 1M."""
MAX_LISTS = 4096
"""Most IVF lists (training cost grows with the square of the list count)."""
TRAIN_PER_LIST = 25
"""Training vectors per IVF list (a sample of the rows)."""
MIN_PROBES = 8
"""Fewest IVF lists scanned per query; calibration raises it where recall needs."""
EXHAUSTIVE_LISTS = 64
"""Indexes of at most this many lists scan them all (tiny stores: exact)."""
RECALL_TARGET = 0.99
"""recall@10 against exact that calibration asks of the store's own vectors."""
CALIBRATION_QUERIES = 64
"""Stored vectors searched (leaving themselves out) to calibrate the probe count."""
MAX_PROBE_SHARE = 0.25
"""Calibration stops at this share of the lists: an index that needs more (vectors
without cluster structure) is not used, and searches rank exactly."""
ADD_BATCH = 1_024
"""Rows copied from the source and added per step (the copy and faiss's buffers
scale with it; 4,096 rows left 6 MB more in the heap at the same build time)."""
SCALE_ROWS = 8_192
"""Sample rows whose largest components set the code scale (``code_scale``)."""
CODE_MAX = 127
"""Largest magnitude of a signed 8-bit code (faiss's direct codes wrap around past
it: ``encode`` clips)."""
SCALE_QUANTILE = 0.999
"""Share of the sampled rows whose largest component fits the code range unclipped
(a clipped component only coarsens that row's proposed score: the re-rank is exact)."""
CHECK_BATCH = ADD_BATCH
"""Rows copied from the source per step of a recall check (``Ann.recall_holds``)."""
SIMS_BLOCK = 2
"""Calibration queries whose candidates' vectors are gathered at once (all 64 at
once would copy 16 MB of vectors at 384 dimensions, 2 of them 0.5 MB)."""
_K = 10

_warned: set[str] = set()
_warn_lock = threading.Lock()


def warn_once(key: str, message: str) -> None:
    """Warn ``message`` (``RuntimeWarning``) once per process for ``key``."""
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def load_faiss() -> Any:
    """The faiss module, or None (then ranking stays exact, with one warning).

    The other modules call it as ``ivf.load_faiss()``: one name to replace for a
    process without faiss (tests do)."""
    try:
        import faiss
    except ImportError:
        return None
    threads.guard_fork(faiss)
    return faiss


class RowSource(Protocol):
    """Where a build reads the live rows (unit float32 vectors, ascending chunk keys)."""

    def live_count(self) -> int:
        """How many live rows there are now."""
        ...

    def sample(self, m: int, rng: np.random.Generator) -> tuple[FloatArray, IntArray]:
        """Copies of ``m`` random live rows and their keys, in random order."""
        ...

    def rows_after(self, pk: int, limit: int) -> tuple[FloatArray, IntArray, int]:
        """Copies of the live rows among the next ``limit`` rows with key > ``pk``,
        their keys, and the largest key looked at (``pk`` when none is left)."""
        ...

    def vectors(self, pks: IntArray) -> tuple[FloatArray, BoolArray]:
        """The vectors of ``pks`` (zero rows where unknown) and which were found."""
        ...


def list_count(n: int) -> int:
    """IVF lists for ``n`` rows: ``LISTS_PER_ROOT * sqrt(n)`` within [16, MAX_LISTS]."""
    return int(min(MAX_LISTS, max(16, LISTS_PER_ROOT * math.sqrt(n)), n))


def probe_ladder(nlist: int) -> list[int]:
    """Probe counts calibration tries, in order: every list for small indexes, else
    ``MIN_PROBES`` growing by about half up to ``MAX_PROBE_SHARE`` of the lists."""
    if nlist <= EXHAUSTIVE_LISTS:
        return [nlist]
    top = max(MIN_PROBES, int(nlist * MAX_PROBE_SHARE))
    steps, p = [], MIN_PROBES
    while p < top:
        steps.append(p)
        p = max(p + 1, (p * 3) // 2)
    return [*steps, top]


COPY_SIM = 0.99999
"""Rows at least this similar (cosine) to a calibration query count as the query
itself: copies of it (the same text stored again) sit in its own list with its own
code, so counting them would pass calibration at one probe while a fresh query's
nearest rows lie in other lists. They are left out of its truth and its candidates."""


class Calibration:
    """The exact neighbourhoods of a few stored vectors, gathered while a build
    streams the rows past (``observe``), then the probe count they need (``probes``).

    Args:
        queries: float32 array of shape ``(m, dim)``, unit rows taken from the store.
        pks: Their chunk keys, shape ``(m,)`` (each is left out of its own truth).
        scale: The code scale of the index they will search (``Ann.scale``).
    """

    def __init__(self, queries: FloatArray, pks: IntArray, scale: float) -> None:
        self.queries = np.ascontiguousarray(queries, dtype=np.float32)
        self.coded = encode(self.queries, scale)
        self.pks = np.asarray(pks, dtype=np.int64)
        self.best = np.full((len(pks), _K), -np.inf, np.float32)

    def observe(self, mat: FloatArray, pks: IntArray) -> None:
        """Fold rows ``mat`` (keys ``pks``, ascending) into the running top 10."""
        if not len(pks) or not len(self.pks):
            return
        sims = self.queries @ mat.T
        pos = np.minimum(np.searchsorted(pks, self.pks), len(pks) - 1)
        own = np.flatnonzero(pks[pos] == self.pks)
        sims[own, pos[own]] = -np.inf
        sims[sims >= COPY_SIM] = -np.inf  # copies of the query (COPY_SIM)
        both = np.concatenate([self.best, sims], axis=1)
        self.best = -np.partition(-both, _K - 1, axis=1)[:, :_K]

    def probes(self, index: Any, source: RowSource) -> tuple[int, int]:
        """``(nprobe, oversample)``: the fewest probes of ``probe_ladder``, and at
        those the fewest candidates per result of ``OVERSAMPLES``, at which
        ``index`` (searched like a query, exact re-rank) finds the 10 nearest other
        vectors at recall >= ``RECALL_TARGET``; a hit is a result at least as near
        as the true 10th (ties count). ``(0, 0)`` when none does."""
        ladder = probe_ladder(int(index.nlist))
        if len(ladder) == 1 or len(self.pks) == 0 or not np.isfinite(self.best).all():
            return ladder[-1], OVERSAMPLES[0]  # tiny: every list (exact)
        for nprobe in ladder:
            sims = self._candidate_sims(index, source, nprobe)
            for oversample in OVERSAMPLES:
                if self._meets(sims, oversample):
                    return nprobe, oversample
        return 0, 0

    def holds(self, index: Any, source: RowSource, nprobe: int, oversample: int) -> bool:
        """Whether ``index`` searched with ``nprobe`` lists and ``oversample``
        candidates per result still reaches ``RECALL_TARGET`` on these queries."""
        if len(self.pks) == 0 or not np.isfinite(self.best).all():
            return True  # fewer than 11 rows: nothing to miss
        return self._meets(self._candidate_sims(index, source, nprobe), oversample)

    def _candidate_sims(self, index: Any, source: RowSource, nprobe: int) -> FloatArray:
        """Exact similarities of each query's widest candidate list, best first
        (-inf for the query itself and rows no longer live)."""
        m, widest = len(self.pks), _K * OVERSAMPLES[-1] + 1
        old = index.nprobe
        index.nprobe = nprobe
        try:
            _, labels = index.search(self.coded, widest)
        finally:
            index.nprobe = old
        sims = np.empty(labels.shape, np.float32)
        found = np.empty(labels.shape, bool)
        for a in range(0, m, SIMS_BLOCK):  # the candidates' vectors, a few queries at a time
            part = labels[a : a + SIMS_BLOCK]
            vecs, hit = source.vectors(part.ravel())
            sims[a : a + SIMS_BLOCK] = np.einsum(
                "jcd,jd->jc", vecs.reshape(len(part), widest, -1), self.queries[a : a + SIMS_BLOCK]
            )
            found[a : a + SIMS_BLOCK] = hit.reshape(part.shape)
        usable = found & (labels != self.pks[:, None]) & (sims < COPY_SIM)
        out: FloatArray = np.where(usable, sims, -np.inf).astype(np.float32)
        return out

    def _meets(self, sims: FloatArray, oversample: int) -> bool:
        kth = self.best.min(axis=1) - 1e-6
        head = sims[:, : _K * oversample + 1]
        top = -np.partition(-head, _K - 1, axis=1)[:, :_K]
        return bool((top >= kth[:, None]).sum() >= RECALL_TARGET * _K * len(self.pks))


BLAS_QUERY_BLOCK = 1024
"""Query rows per BLAS block in faiss's distance products while building (its default
4,096 makes a 16 MB block at 1,024 database rows, which the allocator keeps after
the build: about 14 MB of peak memory at 100k). The build takes about a third
longer with it."""


@contextlib.contextmanager
def _small_blas_blocks(faiss: Any) -> Iterator[None]:
    """Lower faiss's process-wide BLAS block size for the duration (restored after;
    another thread's faiss call in between only runs with smaller blocks)."""
    cvar: Any = getattr(faiss, "cvar", None)
    old = getattr(cvar, "distance_compute_blas_query_bs", None)
    if old is None:
        yield
        return
    cvar.distance_compute_blas_query_bs = min(int(old), BLAS_QUERY_BLOCK)
    try:
        yield
    finally:
        cvar.distance_compute_blas_query_bs = old


def slices(
    source: RowSource, limit: int, stop: Callable[[], bool]
) -> Iterator[tuple[FloatArray, IntArray, int]]:
    """Copies of the live rows of ``source`` in key order, ``limit`` rows looked at
    per slice: ``(vectors, keys, largest key looked at)`` per slice (a slice of
    deleted rows is empty); ends early once ``stop()`` is true (the caller checks)."""
    after = 0
    while not stop():
        mat, pks, last = source.rows_after(after, limit)
        if last == after:
            return
        after = last
        yield mat, pks, last


def code_scale(mat: FloatArray) -> float:
    """The factor mapping components of the rows of ``mat`` (float32 ``(m, dim)``) to
    signed 8-bit codes: ``CODE_MAX`` over the ``SCALE_QUANTILE`` quantile of the rows'
    largest absolute component (1.0 for no rows or all-zero rows)."""
    if not len(mat):
        return 1.0
    peaks = np.concatenate(
        [np.abs(mat[a : a + ADD_BATCH]).max(axis=1) for a in range(0, len(mat), ADD_BATCH)]
    )
    top = float(np.quantile(peaks, SCALE_QUANTILE))
    return CODE_MAX / top if top > 0 else 1.0


def encode(mat: FloatArray, scale: float) -> FloatArray:
    """What faiss is given for rows ``mat``: ``scale`` times them, rounded to whole
    numbers within +-``CODE_MAX`` (faiss's direct codes truncate and wrap around), as
    a new C-contiguous float32 array of the same shape."""
    out: FloatArray = np.multiply(mat, np.float32(scale), dtype=np.float32)
    np.rint(out, out=out)
    np.clip(out, -CODE_MAX, CODE_MAX, out=out)
    return out


def assign(index: Any, coded: FloatArray) -> IntArray:
    """The IVF list of each row of ``coded`` (``encode``d rows: what faiss's own add
    computes)."""
    _, lists = index.quantizer.search(coded, 1)
    out: IntArray = lists[:, 0].astype(np.int64)
    return out


def _lookup(keys: IntArray, values: npt.NDArray[np.int32], pks: IntArray) -> IntArray:
    """``values`` at the positions of ``pks`` in the ascending ``keys`` (-1 where
    absent), as int64."""
    out = np.full(len(pks), -1, np.int64)
    if len(keys):
        pos = np.minimum(np.searchsorted(keys, pks), len(keys) - 1)
        hit = keys[pos] == pks
        out[hit] = values[pos[hit]]
    return out


def _reserve_lists(index: Any, sizes: IntArray) -> None:
    """Allocate list ``i`` of ``index`` for ``sizes[i]`` entries: a list resized up
    from empty gets exactly that capacity, and resizing it back to empty keeps it."""
    inv = index.invlists
    for i in np.flatnonzero(sizes).tolist():
        if inv.list_size(i) == 0:
            inv.resize(i, int(sizes[i]))
            inv.resize(i, 0)


def add_to_lists(faiss: Any, index: Any, coded: FloatArray, pks: IntArray, lists: IntArray) -> None:
    """Add ``encode``d rows ``coded`` labelled ``pks`` to the IVF lists ``lists``."""
    x = np.ascontiguousarray(coded, dtype=np.float32)
    ids = np.ascontiguousarray(pks, dtype=np.int64)
    where = np.ascontiguousarray(lists, dtype=np.int64)
    index.add_core(len(ids), faiss.swig_ptr(x), faiss.swig_ptr(ids), faiss.swig_ptr(where))


def new_index(faiss: Any, dim: int, nlist: int) -> Any:
    """An empty IVF index of ``nlist`` lists over ``dim`` dimensions with signed 8-bit
    direct codes of the whole (scaled) vectors, not of their residuals."""
    return faiss.IndexIVFScalarQuantizer(
        faiss.IndexFlatIP(dim),
        dim,
        nlist,
        faiss.ScalarQuantizer.QT_8bit_direct_signed,
        faiss.METRIC_INNER_PRODUCT,
        False,
    )


def is_own_kind(faiss: Any, index: Any) -> bool:
    """Whether ``index`` (read from a file) is an index ``new_index`` makes."""
    return (
        isinstance(index, faiss.IndexIVFScalarQuantizer)
        and int(index.sq.qtype) == int(faiss.ScalarQuantizer.QT_8bit_direct_signed)
        and not bool(index.by_residual)
        and int(index.metric_type) == int(faiss.METRIC_INNER_PRODUCT)
    )


class Side:
    """Chunk keys assigned to an index's lists but not stored in faiss (rows written
    after the index took rows in, ``vector/tail.py``), grouped by list: a search
    of the lists it probes proposes them too, for the exact re-rank. 16 bytes a
    row instead of faiss's 392; never changed once made (``merged`` makes another).

    Args:
        keys: Chunk keys, int64, grouped by list (ascending list numbers).
        lists: The list of each key, same order.
        nlist: The index's list count.
    """

    def __init__(self, keys: IntArray, lists: IntArray, nlist: int) -> None:
        self.keys = keys
        self.lists = lists
        self.starts: IntArray = np.searchsorted(lists, np.arange(nlist + 1)).astype(np.int64)

    def __len__(self) -> int:
        return len(self.keys)

    def merged(self, keys: IntArray, lists: IntArray) -> Side:
        """A new ``Side`` holding these keys and ``keys`` assigned to ``lists``."""
        all_lists = np.concatenate([self.lists, lists])
        order = np.argsort(all_lists, kind="stable")  # two sorted runs: a merge
        return Side(
            np.concatenate([self.keys, keys])[order], all_lists[order], len(self.starts) - 1
        )

    def keys_in(self, probed: IntArray) -> IntArray:
        """The keys assigned to the lists ``probed``."""
        parts = [self.keys[self.starts[i] : self.starts[i + 1]] for i in probed.tolist() if i >= 0]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def empty_side(nlist: int) -> Side:
    """A ``Side`` without keys."""
    return Side(np.zeros(0, np.int64), np.zeros(0, np.int64), nlist)


class Ann:
    """A trained faiss IVF index over unit vectors; labels are chunk keys.

    Attributes:
        scale: Vectors are multiplied by it before they are coded (``encode``).
        hwm: Every chunk with key <= ``hwm`` that was live when it was added is in it.
        trained_on: Live rows when it was trained (a 4x larger store retrains).
        trained_hwm: The highest chunk key when it was trained; rows above it were
            added later and may come from data its lists do not fit.
        checked_on: Live rows when its recall was last checked (``recall_holds``).
        nprobe: Lists scanned per query; 0 = not used (searches rank exactly).
        oversample: Candidates proposed per wanted record.
        rebuilt: Built (or re-calibrated) since it was last written to a file.
        unfilled: The rows known by list but not coded yet (``assigned.Assigned``,
            an index read from a file without codes), or None.
        side: Keys held beside faiss (``Side``, ``vector/tail.py``): searches
            propose them too; the index file is written once they are in faiss.
    """

    def __init__(
        self,
        faiss: Any,
        index: Any,
        hwm: int,
        trained_on: int,
        nprobe: int,
        oversample: int = OVERSAMPLES[0],
        trained_hwm: int | None = None,
        checked_on: int | None = None,
        scale: float = 1.0,
    ) -> None:
        self.faiss = faiss
        self.index = index
        self.scale = float(scale)
        self.hwm = hwm
        self.trained_on = trained_on
        self.trained_hwm = hwm if trained_hwm is None else trained_hwm
        self.checked_on = trained_on if checked_on is None else checked_on
        self.nprobe = int(min(max(0, nprobe), index.nlist))
        self.oversample = int(min(max(1, oversample), OVERSAMPLES[-1]))
        index.nprobe = max(1, self.nprobe)
        self.rebuilt = True
        self.unfilled: Any = None
        self.side = empty_side(int(index.nlist))

    @classmethod
    def build(
        cls,
        faiss: Any,
        source: RowSource,
        rng: np.random.Generator,
        stop: Callable[[], bool] = lambda: False,
    ) -> Ann | None:
        """Train, fill and calibrate an index from ``source`` (module docstring).

        Returns:
            The index, or None when ``stop()`` turned true during the build.

        Raises:
            MemoryError, RuntimeError: when faiss cannot build it.
        """
        with _small_blas_blocks(faiss):
            return cls._build(faiss, source, rng, stop)

    @classmethod
    def _build(
        cls, faiss: Any, source: RowSource, rng: np.random.Generator, stop: Callable[[], bool]
    ) -> Ann | None:
        n = source.live_count()
        nlist = list_count(n)
        train, train_pks = source.sample(min(n, TRAIN_PER_LIST * nlist), rng)
        dim = int(train.shape[1])
        index = new_index(faiss, dim, nlist)
        index.cp.niter = 10
        index.cp.min_points_per_centroid = 1  # sampling below 39 per list is deliberate
        scale = code_scale(train[:SCALE_ROWS])
        pick = rng.choice(len(train_pks), min(CALIBRATION_QUERIES, len(train_pks)), replace=False)
        calibration = Calibration(train[pick], train_pks[pick], scale)
        # The lists: k-means into the quantizer (unit centroids: the coded vectors
        # are scaled, which leaves the order of their products with them unchanged).
        faiss.Clustering(dim, nlist, index.cp).train(train, index.quantizer)
        del train
        index.is_trained = True  # direct codes have nothing to train
        # Pass 1: every row's list, so that each list is allocated once at its final
        # size (faiss grows a list by doubling as entries arrive: ~1.4x the codes, and
        # the outgrown buffers stay in the heap).
        seen_pks, seen_lists = [], []
        for mat, pks, _ in slices(source, ADD_BATCH, stop):
            if len(pks):
                seen_pks.append(pks)
                seen_lists.append(assign(index, encode(mat, scale)).astype(np.int32))
                calibration.observe(mat, pks)
        if stop():
            return None
        known_pks = np.concatenate(seen_pks) if seen_pks else np.zeros(0, np.int64)
        known_lists = np.concatenate(seen_lists) if seen_lists else np.zeros(0, np.int32)
        del seen_pks, seen_lists
        _reserve_lists(index, np.bincount(known_lists, minlength=nlist))
        # Pass 2: add the rows to the lists found above; rows written since pass 1 are
        # assigned here, rows deleted since are not read again.
        after = 0
        for mat, pks, last in slices(source, ADD_BATCH, stop):
            after = last
            coded = encode(mat, scale)
            lists = _lookup(known_pks, known_lists, pks)
            new = lists < 0
            if new.any():
                lists[new] = assign(index, coded[new])
            if len(pks):
                add_to_lists(faiss, index, coded, pks, lists)
        if stop():
            return None
        del known_pks, known_lists
        nprobe, oversample = calibration.probes(index, source)
        return cls(faiss, index, after, n, nprobe, oversample, scale=scale)

    def recall_holds(self, queries: FloatArray, pks: IntArray, rows: RowSource) -> bool:
        """Whether the calibrated probe count and oversampling still reach
        ``RECALL_TARGET`` for ``queries`` (stored unit rows, float32 of shape
        ``(m, dim)``, keys ``pks``), whose exact 10 nearest other rows are found
        by scanning every live row of ``rows``. An index trained before many rows
        of another distribution were added fails this (their lists are too long
        or too coarse), and is then retrained (``vector/builds.py``)."""
        if not self.nprobe:
            return True  # not used: searches already rank exactly
        calibration = Calibration(queries, pks, self.scale)
        for mat, got, _ in slices(rows, CHECK_BATCH, lambda: False):
            calibration.observe(mat, got)
        return calibration.holds(self.index, rows, self.nprobe, self.oversample)

    def add(self, mat: FloatArray, pks: IntArray) -> None:
        """Add rows ``mat`` (unit, float32 ``(m, dim)``) labelled ``pks`` (ascending)."""
        for a in range(0, len(pks), ADD_BATCH):
            self.index.add_with_ids(
                encode(mat[a : a + ADD_BATCH], self.scale), pks[a : a + ADD_BATCH]
            )
        if len(pks):
            self.hwm = max(self.hwm, int(pks[-1]))

    def remove(self, pks: IntArray) -> None:
        """Drop the entries labelled ``pks`` (in faiss and beside it)."""
        if len(pks):
            self.index.remove_ids(self.faiss.IDSelectorBatch(pks))
            side = self.side
            if len(side):
                keep = ~np.isin(side.keys, pks)
                self.side = Side(side.keys[keep], side.lists[keep], int(self.index.nlist))

    def count(self) -> int:
        """Entries held, in faiss and beside it."""
        return int(self.index.ntotal) + len(self.side)

    def search(self, q: FloatArray, kk: int, nprobe: int | None = None) -> IntArray:
        """Labels (chunk keys) of up to ``kk`` entries nearest to unit query ``q``,
        scanning ``nprobe`` lists (default: the calibrated count)."""
        coded = encode(q.reshape(1, -1), self.scale)
        if nprobe is None or nprobe == self.index.nprobe:
            _, labels = self.index.search(coded, kk)
        else:
            params = self.faiss.SearchParametersIVF(nprobe=int(nprobe))
            _, labels = self.index.search(coded, kk, params=params)
        found: IntArray = labels[0]
        found = found[found >= 0]
        side = self.side
        if len(side):  # the keys beside faiss in the lists probed, all proposed
            _, probed = self.index.quantizer.search(coded, int(nprobe or self.index.nprobe))
            found = np.concatenate([found, side.keys_in(probed[0])])
        return found

    def ids(self) -> IntArray:
        """Every label the index holds (in faiss and beside it)."""
        inv = self.index.invlists
        parts = [
            self.faiss.rev_swig_ptr(inv.get_ids(i), inv.list_size(i)).copy()
            for i in range(inv.nlist)
            if inv.list_size(i)
        ]
        parts.append(self.side.keys)
        return np.concatenate(parts).astype(np.int64)
