"""Ranking from the vector index's arrays (``vector/mirror.py``): the candidate rows
of a search, then the nearest records among them.

Ranking:

* exact (a matrix product over the candidate rows) whenever the candidates are at
  most ``EXACT_MAX`` rows, no ANN index is ready, or the index's calibration found
  it cannot reach the recall target on this data: small and filtered stores rank
  exactly; so do candidates that a scope or metadata filter selected, up to
  ``SELECTED_EXACT_MAX`` rows (one user of 50 at 1M records);
* above that, the IVF index of ``vector/ivf.py`` proposes an oversampled
  candidate list which is re-ranked exactly from the float32 matrix after the
  scope/type/expiry/validity/filter masks are applied; when the masks leave fewer than ``k``
  records the query is ranked exactly, so a filter never loses results.

Everything a search runs here reads the mirror's attributes and calls nothing else
of the package unless a metadata filter or the ANN index is used, so a search of a
store that did not change runs through this module and the facade only.
"""

from __future__ import annotations

import math

import numpy as np

from oam_core.store.sqlite.vector import assigned
from oam_core.store.sqlite.vector.ivf import Ann, BoolArray, FloatArray, IntArray
from oam_core.store.sqlite.vector.loading import FETCH_ANN_MAX
from oam_core.store.sqlite.vector.mirror import Mirror

__all__ = [
    "EXACT_MAX",
    "FEW_QUERIES",
    "GATHER_BYTES",
    "SCAN_COST",
    "SELECTED_EXACT_MAX",
    "SMALL_PRODUCT",
    "Ranked",
    "candidates",
    "ending",
    "exact",
    "posting",
    "rank",
]

EXACT_MAX = 5_000
"""Candidate chunks ranked exactly even when an ANN index exists."""
SELECTED_EXACT_MAX = 65_536
"""Candidate chunks that a scope or a metadata filter selected (``rows``, not a
mask) ranked exactly even when an ANN index exists, so that such a search returns
what an exact search returns (recall 1.0): one user of 50 or a 5 % filter of a 1M
store (20,000 and 50,000 rows) costs about what numpy's scan of the same rows costs
(docs/sqlite.md#how-a-search-is-ranked)."""
SCAN_COST = 0.25
"""Cost of scanning one IVF code relative to ranking one candidate row exactly
(gather and product; measured for 4-bit codes, ~40 ns against ~150 ns at 384
dimensions; the 8-bit direct codes now used scan in about half the time, so the
estimate errs toward exact): a filtered search goes exact when its scan would cost
more."""
SMALL_PRODUCT = 32_768 * 384
"""Float32 elements (48 MiB: 32,768 rows of 384 dims) up to which a single-query
product over a slice of the matrix runs in numpy's own loop rather than the threaded
BLAS. On a loaded 2-core machine a threaded call of 5,000-25,000 rows waited 8-23 ms
for its second thread where the loop took 0.6-7 ms; above this size the second core
pays for the wait (docs/sqlite.md#how-a-search-is-ranked)."""
GATHER_BYTES = 768 * 1024
"""Bytes of matrix rows gathered at a time for a single-query product over scattered
rows (512 rows of 384 dims): the block is multiplied while it is still in the core's
cache, and no copy of every candidate row is allocated."""

Ranked = list[list[tuple[int, float]]]
"""Per query, ``(record pk, cosine distance)`` pairs, nearest first."""


def posting(mirror: Mirror, scope: str, code: int) -> IntArray:
    """The rows of ``mirror`` whose ``scope`` column holds ``code``, ascending
    (cached in ``mirror.postings`` until the rows change)."""
    entry = mirror.postings.get(scope)
    if entry is None:
        codes = mirror.scope[scope][: mirror.n]
        order = np.argsort(codes, kind="stable").astype(np.int64)
        sorted_codes = codes[order]
        uniq, starts = np.unique(sorted_codes, return_index=True)
        ends = starts[1:].tolist() + ([len(order)] if len(order) else [])
        entry = {
            int(c): order[s:e] for c, s, e in zip(uniq.tolist(), starts.tolist(), ends, strict=True)
        }
        mirror.postings[scope] = entry
    return entry.get(code, np.zeros(0, np.int64))


def ending(mirror: Mirror) -> IntArray:
    """The rows of ``mirror`` whose validity window ends (finite ``vuntil``),
    ascending (cached in ``mirror.ending`` until the rows change)."""
    rows = mirror.ending
    if rows is None:
        rows = mirror.ending = np.flatnonzero(np.isfinite(mirror.vuntil[: mirror.n]))
    return rows


def candidates(
    mirror: Mirror,
    types: frozenset[str],
    scopes: dict[str, str | None],
    now: float,
    allowed_pks: IntArray | None,
    *,
    valid_at: float | None = None,
) -> tuple[IntArray | None, BoolArray | None]:
    """Candidate rows of ``mirror`` as ``(rows, mask)``: sorted row positions, or
    ``rows=None`` with a mask over all rows (``mask=None``: every row).

    Args:
        mirror: The arrays, caught up with the search's snapshot.
        types: Record types searched.
        scopes: Scope name (``thread``/``user``/``agent``) to the exact value kept.
        now: The search's time, epoch seconds (rows expiring by then are left out).
        allowed_pks: Chunk keys a metadata filter kept, or None for no filter.
        valid_at: Keep only rows valid then (epoch seconds: ``vfrom <= valid_at <
            vuntil``), or None for no validity filter. Each half of the test runs only
            when some row could fail it (``Mirror.max_from``, ``Mirror.min_until``);
            in mask mode the ``vuntil`` half reads only the rows that have an end
            (``ending``), so a store with a few ended memories pays little.
    """
    known = mirror.types.code
    type_codes = [known[t] for t in types if t in known]
    other_types = None if len(type_codes) == len(mirror.types.names) else type_codes
    t = 0.0 if valid_at is None else valid_at
    window = (
        t,
        valid_at is not None and t < mirror.max_from,
        valid_at is not None and t >= mirror.min_until,
    )
    rows = _scoped_rows(mirror, scopes, allowed_pks)
    if rows is None:
        return None, _mask(mirror, other_types, now, window)
    return _kept(mirror, rows, scopes, other_types, now, window), None


_Window = tuple[float, bool, bool]
"""``(t, test_from, test_until)``: the time of a validity filter and which of its
halves some row could fail."""


def _scoped_rows(
    mirror: Mirror, scopes: dict[str, str | None], allowed_pks: IntArray | None
) -> IntArray | None:
    """The rows of the scopes' shortest posting list, intersected with the rows of
    ``allowed_pks`` (unsorted); None when neither restricts; empty for a scope value
    the mirror never saw."""
    rows: IntArray | None = None
    for name, value in scopes.items():
        code = mirror.codes[name].code.get(value)
        if code is None:
            return np.zeros(0, np.int64)
        post = posting(mirror, name, code)
        if rows is None or len(post) < len(rows):
            rows = post
    if allowed_pks is not None:
        found = mirror.rows_of(np.asarray(allowed_pks, dtype=np.int64))
        found = found[found >= 0]
        if len(found) > 1 and not (found[1:] > found[:-1]).all():  # else sorted, unique
            found = np.unique(found)
        rows = found if rows is None else np.intersect1d(rows, found, assume_unique=True)
    return rows


def _kept(
    mirror: Mirror,
    rows: IntArray,
    scopes: dict[str, str | None],
    type_codes: list[int] | None,
    now: float,
    window: _Window,
) -> IntArray:
    """The sorted ``rows`` that pass every test of ``candidates``."""
    rows = np.sort(rows)
    keep = np.ones(len(rows), bool)
    for name, value in scopes.items():
        keep &= mirror.scope[name][rows] == mirror.codes[name].code.get(value)
    if mirror.n_dead:
        keep &= mirror.live[rows]
    if type_codes is not None:
        keep &= np.isin(mirror.rtype[rows], type_codes)
    if mirror.n_expiring:
        keep &= mirror.expires[rows] > now
    t, test_from, test_until = window
    if test_from:
        keep &= mirror.vfrom[rows] <= t
    if test_until:
        keep &= mirror.vuntil[rows] > t
    return rows[keep]


def _mask(
    mirror: Mirror, type_codes: list[int] | None, now: float, window: _Window
) -> BoolArray | None:
    """The mask over all rows of ``candidates`` without a scope (None: every row)."""
    n = mirror.n
    mask: BoolArray | None = None
    if mirror.n_dead:
        mask = mirror.live[:n].copy()
    if type_codes is not None:
        tmask = np.isin(mirror.rtype[:n], type_codes)
        mask = tmask if mask is None else mask & tmask
    if mirror.n_expiring:
        emask = mirror.expires[:n] > now
        mask = emask if mask is None else mask & emask
    t, test_from, test_until = window
    if test_from:
        fmask = mirror.vfrom[:n] <= t
        mask = fmask if mask is None else mask & fmask
    if test_until:
        ends = ending(mirror)
        ended = ends[mirror.vuntil[ends] <= t]
        if len(ended):
            if mask is None:
                mask = np.ones(n, bool)
            mask[ended] = False
    return mask


def rank(
    mirror: Mirror,
    ann: Ann | None,
    queries: FloatArray,
    k: int,
    rows: IntArray | None,
    mask: BoolArray | None,
    exact_max: int,
) -> Ranked:
    """Top ``k`` ``(record pk, cosine distance)`` per unit query row, nearest first,
    ties by record pk, over the candidates ``(rows, mask)`` of ``candidates``:
    exactly up to ``exact_max`` candidates or without a usable ``ann``, else from
    the ANN index's proposals re-ranked exactly (module docstring)."""
    # count_nonzero: a fifth of the time of sum() on a bool array
    count = (
        len(rows)
        if rows is not None
        else (mirror.n if mask is None else int(np.count_nonzero(mask)))
    )
    if count == 0:
        return [[] for _ in range(len(queries))]
    if ann is None or not ann.nprobe or count <= exact_max:
        return exact(mirror, queries, k, rows, mask)
    if rows is not None and count <= SELECTED_EXACT_MAX:
        return exact(mirror, queries, k, rows, mask)
    allow = mask
    if rows is not None:
        allow = np.zeros(mirror.n, bool)
        allow[rows] = True
    out = []
    for q in queries:
        best = approximate(mirror, ann, q, k, allow, count, exact_max)
        if best is None:
            best = exact(mirror, q[None], k, rows, mask)[0]
        out.append(best)
    return out


def exact(
    mirror: Mirror, queries: FloatArray, k: int, rows: IntArray | None, mask: BoolArray | None
) -> Ranked:
    """``rank`` by the exact product with every candidate row."""
    if rows is None and mask is not None:
        rows = np.flatnonzero(mask)
    block = None
    if mirror.missing is not None:  # the vectors are still being read from SQLite
        if rows is None:
            mirror.complete(rows)
        else:
            block = mirror.gather(rows)
    if block is not None and rows is not None:  # the candidates, partly from SQLite
        dist = np.clip(1.0 - dot_rows(block, np.arange(len(rows)), queries), 0.0, 2.0)
    elif rows is not None and 4 * len(rows) < mirror.n:  # gather the few candidates
        dist = np.clip(1.0 - dot_rows(mirror.mat, rows, queries), 0.0, 2.0)
    else:  # multiply the whole matrix, then pick (no large copy)
        dist = np.clip(1.0 - dot(mirror.mat[: mirror.n], queries), 0.0, 2.0)
        if rows is not None:
            dist = dist[rows]
    recs = mirror.rec[: mirror.n] if rows is None else mirror.rec[rows]
    return [best_records(dist[:, j], recs, k) for j in range(len(queries))]


def approximate(
    mirror: Mirror,
    ann: Ann,
    q: FloatArray,
    k: int,
    allow: BoolArray | None,
    count: int,
    exact_max: int,
) -> list[tuple[int, float]] | None:
    """The ``k`` nearest records to ``q`` among the rows ``allow`` keeps (``count``
    of them) from ``ann``'s proposals; None when exact ranking is cheaper or the
    proposals hold fewer than ``k`` records."""
    n = mirror.n
    live = max(n - mirror.n_dead, 1)
    share = max(count / live, 1e-9)
    # A filter keeping a share s of the rows: its top k lie about 1/s times as
    # deep in the unfiltered ranking, so scan 1/s times the lists, unless the
    # exact product over the candidates is cheaper.
    nlist = int(ann.index.nlist)
    nprobe = min(nlist, math.ceil(ann.nprobe / share))
    if nprobe * live / nlist * SCAN_COST > count:
        return None
    want = k * ann.oversample
    kk = max(want, 32, math.ceil(want / share))
    if kk > 4 * exact_max:  # so selective that exact is cheaper
        return None
    rows = mirror.rows_of(_proposed(mirror, ann, q, kk, nprobe))
    rows = rows[rows >= 0]
    tail = mirror.first_row_after(ann.hwm)
    if tail < n:
        rows = np.concatenate([rows, np.arange(tail, n, dtype=np.int64)])
    if allow is not None:
        rows = rows[allow[rows]]
    elif mirror.n_dead:
        rows = rows[mirror.live[rows]]
    if not len(rows):
        return None
    block = mirror.gather(rows, FETCH_ANN_MAX) if mirror.missing is not None else None
    if block is not None:  # the vectors are still being read from SQLite
        dist = np.clip(1.0 - dot_rows(block, np.arange(len(rows)), q[None])[:, 0], 0.0, 2.0)
        if allow is None and ann.unfilled is not None:  # every row of the lists was read
            assigned.code_read(ann, mirror, assigned.probed(ann, q, nprobe), rows, block)
    else:
        dist = np.clip(1.0 - dot_rows(mirror.mat, rows, q[None])[:, 0], 0.0, 2.0)
    best = best_records(dist, mirror.rec[rows], k)
    return best if len(best) >= k else None


def _proposed(mirror: Mirror, ann: Ann, q: FloatArray, kk: int, nprobe: int) -> IntArray:
    """Chunk keys ``ann`` proposes for ``q``: its ``kk`` nearest coded entries in the
    ``nprobe`` lists nearest to ``q``, and while it is being coded from SQLite
    (``ann.unfilled``, an index file without codes) every row of those lists not
    coded yet, so that the exact re-rank sees what the complete index would
    propose. The faiss lists are read under the mirror's lock then (the loader
    writes them)."""
    if ann.unfilled is None:
        return ann.search(q, kk, nprobe)
    with mirror.lock:
        coded = ann.search(q, kk, nprobe)
        waiting = assigned.pending_in(ann, q, nprobe)
    return np.concatenate([coded, waiting]) if len(waiting) else coded


FEW_QUERIES = 4
"""Query rows (the parts of a long query; an advice question's question and topic
vectors, store/advice.py) up to which a small product runs one query at a time in
numpy's loop, as a single query does: a two-query product through the threaded BLAS
waited 17 ms for its second thread on the loaded 2-core machine where two loops took
1.2 ms, and each query's distances are then the same bits as when it is ranked
alone."""


def dot(mat: FloatArray, queries: FloatArray) -> FloatArray:
    """``mat @ queries.T`` (rows x queries); up to ``FEW_QUERIES`` queries each in
    numpy's loop when small."""
    if len(queries) <= FEW_QUERIES and mat.size <= SMALL_PRODUCT:
        out: FloatArray = np.stack([np.einsum("ij,j->i", mat, q) for q in queries], axis=1)
        return out
    result: FloatArray = mat @ queries.T
    return result


def dot_rows(mat: FloatArray, rows: IntArray, queries: FloatArray) -> FloatArray:
    """``mat[rows] @ queries.T`` (rows x queries). Up to ``FEW_QUERIES`` queries:
    gathered a block at a time and multiplied in numpy's loop, one query after the
    other, whatever the number of rows, so a row's product is the same bits as in
    ``dot`` below ``SMALL_PRODUCT`` and wherever the row sits in the block (identical
    vectors tie exactly)."""
    if len(queries) > FEW_QUERIES:
        result: FloatArray = mat[rows] @ queries.T
        return result
    step = max(1, GATHER_BYTES // max(1, mat.shape[1] * mat.itemsize))
    out: FloatArray = np.empty((len(queries), len(rows)), np.float32)
    for a in range(0, len(rows), step):
        block = mat[rows[a : a + step]]
        for j, q in enumerate(queries):
            np.einsum("ij,j->i", block, q, out=out[j, a : a + step])
    columns: FloatArray = out.T
    return columns


def best_records(dist: FloatArray, recs: IntArray, k: int) -> list[tuple[int, float]]:
    """The ``k`` records with the smallest chunk distance, ties by record pk."""
    m = len(dist)
    t = min(m, max(2 * k, k + 16))
    while True:
        if t < m:
            cut = np.partition(dist, t - 1)[t - 1]
            idx = np.flatnonzero(dist <= cut)
        else:
            idx = np.arange(m)
        d, r = dist[idx], recs[idx]
        order = np.lexsort((r, d))
        d, r = d[order], r[order]
        _, first = np.unique(r, return_index=True)
        first.sort()
        if len(first) >= k or t >= m:
            return [(int(r[i]), float(d[i])) for i in first[:k]]
        t = min(m, t * 4)
