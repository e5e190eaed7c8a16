"""The arrays of the vector index: the searchable chunks of SQLite, mirrored in memory.

The searchable chunks are the ones with a vector. Row ``i`` of the mirror is one
chunk: a float32 matrix of unit vectors (``mat``) and, next to it, the columns a
search filters on (record type, thread/user/agent ids as small integer codes,
expiry, the validity window, a live flag), in ascending chunk key order. Scope filtering is then array
work, without a SQL round trip per query (``vector/ranking.py``).

Rows are appended above the high-water mark (chunk keys only grow), marked dead when
a chunk is deleted or loses its vector, and dropped by ``compact``. A key-to-row
table (``SLOT_SPAN``) finds the row of a chunk key in one read. ``lock`` guards the
arrays against the background ANN build, the only other thread that reads them
(through ``LiveRows``); every other caller holds the store's lock.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core.checks import SHORT_COMPONENT, lengthen_short_rows
from oam_core.errors import InvalidArgumentError
from oam_core.store.sqlite.vector.file import SCOPES, Snapshot
from oam_core.store.sqlite.vector.ivf import Ann, BoolArray, FloatArray, IntArray

__all__ = ["SCOPES", "SLOT_SPAN", "Codes", "LiveRows", "Mirror", "unit"]

SLOT_SPAN = 4
"""The key-to-row table (``Mirror.rows_of``) is kept while the chunk keys of the
mirrored rows span at most this many times their count (int32 each: at most 1% of a
384-d row)."""

MAT_STEP = 1024
"""Rows the matrix and the columns grow by at least (``Mirror.reserve``)."""

ChunkRow = tuple[Any, ...]
"""A chunk as read from SQLite: ``(pk, record_pk, record_type, thread_id, user_id,
agent_id, expires_at, valid_from, valid_until, embedding)`` (times: epoch seconds or
None)."""


class Codes:
    """Strings to small int codes (None is -1) for one scope or type column.

    Args:
        names: The strings of codes 0, 1, ... (from an index file).

    Raises:
        InvalidArgumentError: when ``names`` repeats a name.
    """

    def __init__(self, names: Sequence[str] = ()) -> None:
        self.names: list[str] = list(names)
        self.code: dict[str | None, int] = {None: -1}
        self.code.update((v, i) for i, v in enumerate(self.names))
        if len(self.code) != len(self.names) + 1:
            raise InvalidArgumentError("repeated names in a code table")

    def encode(self, values: Sequence[str | None]) -> npt.NDArray[np.int32]:
        """The codes of ``values``, new strings getting the next codes."""
        get = self.code.get
        if len(values) > 1 and _uniform(values, values[0]):  # one value: one lookup
            return np.full(len(values), self.encode(values[:1])[0], np.int32)
        out = [get(v, -2) for v in values]
        if -2 in out:
            for i, c in enumerate(out):
                if c == -2:
                    v = values[i]
                    c = self.code.get(v, -2)
                    if c == -2:
                        c = self.code[v] = len(self.names)
                        self.names.append(v)  # type: ignore[arg-type]
                    out[i] = c
        return np.array(out, dtype=np.int32)

    def lookup(self, value: str | None) -> int | None:
        """The code of ``value`` (-1 for None), None if never seen."""
        return self.code.get(value)

    def __len__(self) -> int:
        return len(self.names)


class Mirror:
    """The vector chunks of one store, as arrays (module docstring).

    Rows ``0..n`` of the arrays are used (they have spare capacity). Attributes a
    search reads: ``n``, ``dim``, ``pks`` (chunk keys, ascending), ``rec`` (record
    keys), ``rtype`` (type codes of ``types``), ``scope`` (per scope name, codes of
    ``codes[name]``), ``expires`` (epoch seconds, ``inf`` for never), ``live``,
    ``mat`` (unit float32 rows), ``vfrom``/``vuntil`` (the validity window, epoch
    seconds, ``-inf``/``inf`` where open), ``n_dead`` (rows not live), ``n_expiring``
    (rows with a finite expiry), ``max_from`` (at least the largest finite ``vfrom``,
    ``-inf`` when none: a search at or after it needs no ``vfrom`` test), ``min_until``
    (at most the smallest finite ``vuntil``, ``inf`` when none: a search before it
    needs no ``vuntil`` test), and two caches emptied by every change of the rows
    (``forget``): ``postings``, per scope name the rows of each code in row order,
    filled by ``ranking.posting`` on first use, and ``ending``, the rows with a finite
    ``vuntil`` (``ranking.ending``). ``hwm`` is the highest chunk key read, ``cursor``
    the last change-log sequence applied. The counters and bounds include dead rows.
    ``missing`` is None, or ``(lo, hi)``: the rows of chunk keys ``lo < key <= hi``
    hold no vector yet (zeros) while a ``loading.VectorLoader`` (``loader``) fills
    them from SQLite; readers of ``mat`` call ``complete`` or ``wait_loaded`` first.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.reset()

    def reset(self) -> None:
        """Empty the mirror (keeps ``lock``)."""
        self.n = 0
        self.dim = 0
        self.pks: IntArray = np.zeros(0, np.int64)
        self.rec: IntArray = np.zeros(0, np.int64)
        self.rtype = np.zeros(0, np.int32)
        self.scope = {s: np.zeros(0, np.int32) for s in SCOPES}
        self.expires = np.zeros(0, np.float64)
        self.vfrom = np.zeros(0, np.float64)
        self.vuntil = np.zeros(0, np.float64)
        self.live: BoolArray = np.zeros(0, bool)
        self.mat: FloatArray = np.zeros((0, 0), np.float32)
        self.types = Codes()
        self.codes = {s: Codes() for s in SCOPES}
        self.hwm = 0
        self.cursor = 0
        self.n_dead = 0
        self.n_expiring = 0
        self.max_from = -math.inf
        self.min_until = math.inf
        self.postings: dict[str, dict[int, IntArray]] = {}
        self.ending: IntArray | None = None
        self._slots: npt.NDArray[np.int32] | None = np.zeros(0, np.int32)
        self._slot_base = 0  # row of chunk key k: _slots[k - _slot_base] (-1: none)
        self.missing: tuple[int, int] | None = None
        self.loader: Any = None  # the loading.VectorLoader filling ``mat``, if any

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` rows in all: the columns and the matrix grow to
        ``rows`` rounded up to ``MAT_STEP`` rows (``resize`` zero-fills what it adds,
        so spare rows would be resident memory: 250,000 rows, 380 MB of matrix and
        14 MB of columns, after a bulk load of 1M in adds of 10,000 when they grew by
        quarters; a large block grows by remapping its pages, not by a copy)."""
        cap = len(self.pks)
        if rows > cap:
            new = -(-rows // MAT_STEP) * MAT_STEP if cap else rows
            for arr in self._columns():
                arr.resize(new, refcheck=False)
            for arr in self.scope.values():
                arr.resize(new, refcheck=False)
        if self.dim and len(self.mat) < rows:
            step = -(-rows // MAT_STEP) * MAT_STEP
            self.mat.resize((min(step, len(self.pks)), self.dim), refcheck=False)

    def append(self, rows: Sequence[ChunkRow]) -> None:
        """Append chunks read from SQLite (``ChunkRow``), keys above every row's.

        Raises:
            InvalidArgumentError: when their vectors are not of the mirror's dimension.
        """
        pk, rec, rtype, thread, user, agent, expires, vfrom, vuntil, blobs = zip(*rows, strict=True)
        m = len(rows)
        raw = b"".join(blobs)
        dim = self.dim or len(blobs[0]) // 4
        if len(raw) != m * 4 * dim:
            raise InvalidArgumentError("chunk vectors of different dimensions in one store")
        vectors = np.frombuffer(raw, dtype="<f4").reshape(m, dim)
        self.append_columns(
            pk, rec, rtype, (thread, user, agent), (expires, vfrom, vuntil), vectors
        )

    def append_columns(
        self,
        pks: Sequence[int],
        rec: Sequence[int],
        rtype: Sequence[str],
        scopes: Sequence[Sequence[str | None]],
        times: Sequence[Sequence[float | None]],
        vectors: FloatArray,
    ) -> None:
        """Append chunks given as columns, keys ``pks`` ascending above every row's:
        record keys, record types, the ``SCOPES`` columns in their order, the
        ``(expires_at, valid_from, valid_until)`` columns (epoch seconds or None)
        and a float32 ``(m, dim)`` matrix of their vectors (scaled to unit length
        here). What a writer hands over (``vector/feed.py``), without a tuple per row.

        Raises:
            InvalidArgumentError: when the vectors are not of the mirror's dimension.
        """
        m = len(pks)
        if not self.dim:
            self.dim = int(vectors.shape[1])
            self.mat = np.zeros((0, self.dim), np.float32)
        if vectors.shape != (m, self.dim):
            raise InvalidArgumentError("chunk vectors of different dimensions in one store")
        self.reserve(self.n + m)
        a, b = self.n, self.n + m
        unit(vectors, out=self.mat[a:b])
        self.pks[a:b] = pks
        self.rec[a:b] = rec
        self.rtype[a:b] = self.types.encode(rtype)
        for name, values in zip(SCOPES, scopes, strict=True):
            self.scope[name][a:b] = self.codes[name].encode(values)
        expires, vfrom, vuntil = times
        exp = _floats(expires, math.inf)
        self.expires[a:b] = exp
        self.n_expiring += int(np.isfinite(exp).sum())
        self._set_windows(a, b, vfrom, vuntil)
        self.live[a:b] = True
        self.n = b
        self.hwm = max(self.hwm, int(pks[-1]))
        self.forget()
        self._index_keys(a)

    def kill(self, row: int) -> None:
        """Mark ``row`` dead (its chunk was deleted or lost its vector)."""
        if self.live[row]:
            self.live[row] = False
            self.n_dead += 1

    def update(self, row: int, state: Sequence[Any]) -> None:
        """Set the columns of ``row`` from ``state``: ``(expires_at, record_type,
        thread_id, user_id, agent_id, valid_from, valid_until)`` as SQLite holds them.
        The caller calls ``forget`` after a batch of updates."""
        old_exp = self.expires[row]
        new_exp = math.inf if state[0] is None else float(state[0])
        self.n_expiring += int(math.isfinite(new_exp)) - int(math.isfinite(old_exp))
        self.expires[row] = new_exp
        self.rtype[row] = self.types.encode([state[1]])[0]
        for name, value in zip(SCOPES, state[2:5], strict=True):
            self.scope[name][row] = self.codes[name].encode([value])[0]
        self._set_windows(row, row + 1, state[5:6], state[6:7])

    def _set_windows(
        self, a: int, b: int, vfrom: Sequence[float | None], vuntil: Sequence[float | None]
    ) -> None:
        """Set the windows of rows ``a..b`` (None: open) and widen the bounds
        ``max_from`` and ``min_until`` to them."""
        start = _floats(vfrom, -math.inf)
        until = _floats(vuntil, math.inf)
        self.vfrom[a:b] = start
        self.vuntil[a:b] = until
        if len(start):
            self.max_from = max(self.max_from, float(start.max()))
            self.min_until = min(self.min_until, float(until.min()))

    def _count_windows(self) -> None:
        """Set ``max_from`` and ``min_until`` from rows ``0..n``."""
        n = self.n
        self.max_from = float(self.vfrom[:n].max()) if n else -math.inf
        self.min_until = float(self.vuntil[:n].min()) if n else math.inf

    def forget(self) -> None:
        """Empty the caches derived from the rows (``postings``, ``ending``); call
        after every change of the rows."""
        self.postings.clear()
        self.ending = None

    def compact(self) -> IntArray:
        """Drop the dead rows (rows move); return their chunk keys."""
        keep = np.flatnonzero(self.live[: self.n])
        dead = self.pks[: self.n][~self.live[: self.n]]
        m = len(keep)
        for arr in self._columns():
            arr[:m] = arr[keep]
        for arr in self.scope.values():
            arr[:m] = arr[keep]
        self.mat[:m] = self.mat[keep]
        self.n, self.n_dead = m, 0
        self.n_expiring = int(np.isfinite(self.expires[:m]).sum())
        self._count_windows()
        self.forget()
        self._index_keys(0)
        return dead

    def _columns(self) -> tuple[npt.NDArray[Any], ...]:
        """The one-dimensional arrays of the rows (all but the scopes and ``mat``)."""
        return (self.pks, self.rec, self.rtype, self.expires, self.vfrom, self.vuntil, self.live)

    def install(self, snap: Snapshot) -> None:
        """Replace the rows by the live rows of an index file's ``snap``; without a
        matrix in it (``snap.mat`` None) the rows' vectors are zeros, to be filled
        from SQLite (``fill``)."""
        self.reset()
        n = snap.n
        self.n, self.dim = n, snap.dim
        self.pks, self.rec, self.expires = snap.pks, snap.rec, snap.expires
        self.mat = np.zeros((n, snap.dim), np.float32) if snap.mat is None else snap.mat
        self.vfrom, self.vuntil = snap.vfrom, snap.vuntil
        self.rtype = snap.columns["rtype"]
        self.scope = {s: snap.columns[s] for s in SCOPES}
        self.live = np.ones(n, bool)
        self.types = Codes(snap.tables["types"])
        self.codes = {s: Codes(snap.tables[s]) for s in SCOPES}
        self.hwm, self.cursor = snap.hwm, snap.cursor
        self.n_expiring = int(np.isfinite(self.expires).sum())
        self._count_windows()
        self._index_keys(0)

    def fill(self, pks: IntArray, vecs: FloatArray) -> None:
        """Set the vectors of the rows of chunk keys ``pks`` to the unit rows
        ``vecs`` (float32 ``(len(pks), dim)``); keys not mirrored are skipped.

        Raises:
            InvalidArgumentError: when the vectors are not of the mirror's dimension.
        """
        if vecs.shape != (len(pks), self.dim):
            raise InvalidArgumentError("chunk vectors of different dimensions in one store")
        rows = self.rows_of(pks)
        found = rows >= 0
        self.mat[rows[found]] = vecs[found]

    def complete(self, rows: IntArray | None) -> None:
        """Make rows ``rows`` (every row when None) of ``mat`` hold their vectors
        while a ``loading.VectorLoader`` fills it (``missing``); a no-op after."""
        loader = self.loader
        if self.missing is not None and loader is not None:
            loader.complete(rows)

    def gather(self, rows: IntArray, limit: int | None = None) -> FloatArray | None:
        """The vectors of ``rows`` while a ``loading.VectorLoader`` fills ``mat``
        (``VectorLoader.gather``: up to ``limit`` missing rows read from SQLite);
        None once ``mat`` holds every row (read it)."""
        loader = self.loader
        if self.missing is None or loader is None:
            return None
        out: FloatArray | None = loader.gather(rows, limit)
        return out

    def wait_loaded(self) -> None:
        """Return once every row of ``mat`` holds its vector (``loading.py``)."""
        loader = self.loader
        if self.missing is not None and loader is not None:
            loader.finish()

    def snapshot(self, ann: Ann) -> Snapshot:
        """The rows (views, not copies: hold ``lock`` while it is used) and ``ann``
        as an index file snapshot; call after ``compact``."""
        n = self.n
        return Snapshot(
            dim=self.dim,
            hwm=self.hwm,
            cursor=self.cursor,
            pks=self.pks[:n],
            rec=self.rec[:n],
            expires=self.expires[:n],
            vfrom=self.vfrom[:n],
            vuntil=self.vuntil[:n],
            mat=self.mat[:n],
            columns={"rtype": self.rtype[:n], **{s: self.scope[s][:n] for s in SCOPES}},
            tables={"types": self.types.names, **{s: self.codes[s].names for s in SCOPES}},
            ann=ann,
        )

    def live_keys(self) -> IntArray:
        """The chunk keys of the live rows, ascending."""
        return self.pks[: self.n][self.live[: self.n]]

    def first_row_after(self, pk: int) -> int:
        """The first row whose chunk key is above ``pk`` (``n`` if none)."""
        return int(np.searchsorted(self.pks[: self.n], pk, side="right"))

    def rows_of(self, pks: IntArray) -> IntArray:
        """Row positions of chunk keys ``pks`` (-1 where not mirrored)."""
        slots = self._slots
        if slots is not None:  # one read per key instead of a binary search
            at = np.asarray(pks, dtype=np.int64) - self._slot_base
            inside = (at >= 0) & (at < len(slots))
            out = np.full(len(at), -1, np.int64)
            out[inside] = slots[at[inside]]
            return out
        have = self.pks[: self.n]
        pos = np.searchsorted(have, pks)
        pos = np.minimum(pos, max(self.n - 1, 0))
        ok = (have[pos] == pks) if self.n else np.zeros(len(pks), bool)
        return np.where(ok, pos, -1).astype(np.int64)

    def _index_keys(self, start: int) -> None:
        """Enter rows ``start..n`` (appended: keys above every earlier row's) in the
        key-to-row table, or rebuild it (``start=0``, or no table yet). Without a
        table (keys spread over more than ``SLOT_SPAN`` times the rows, after many
        deletes) ``rows_of`` binary-searches the keys; at 1M rows that search
        costs ~0.1 ms per query (its reads miss the cache)."""
        n = self.n
        if n == 0:
            self._slots, self._slot_base = np.zeros(0, np.int32), 0
            return
        if self._slots is None or start == 0:
            start, base = 0, int(self.pks[0])
        else:
            base = self._slot_base
        span = int(self.pks[n - 1]) - base + 1
        if span > SLOT_SPAN * n + 1024:
            self._slots = None
            return
        slots = self._slots if start else np.zeros(0, np.int32)
        assert slots is not None
        old = len(slots)
        if span > old:
            slots.resize(max(span, int(old * 1.25) + 1024) if old else span, refcheck=False)
            slots[old:] = -1
        slots[self.pks[start:n] - base] = np.arange(start, n, dtype=np.int32)
        self._slots, self._slot_base = slots, base


class LiveRows:
    """The live rows of a ``Mirror`` for a build (``ivf.RowSource``): every read
    copies under the mirror's lock, so a build thread never sees a row move, once
    every row holds its vector (``Mirror.wait_loaded``)."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror

    def live_count(self) -> int:
        m = self.mirror
        with m.lock:
            return m.n - m.n_dead

    def sample(self, size: int, rng: np.random.Generator) -> tuple[FloatArray, IntArray]:
        m = self.mirror
        m.wait_loaded()
        with m.lock:
            rows = np.flatnonzero(m.live[: m.n])
            pick = rows[rng.choice(len(rows), min(size, len(rows)), replace=False)]
            return m.mat[pick], m.pks[pick]

    def rows_after(self, pk: int, limit: int) -> tuple[FloatArray, IntArray, int]:
        m = self.mirror
        m.wait_loaded()
        with m.lock:
            start = int(np.searchsorted(m.pks[: m.n], pk, side="right"))
            stop = min(m.n, start + limit)
            if start >= stop:
                return np.zeros((0, m.dim), np.float32), np.zeros(0, np.int64), pk
            rows = np.flatnonzero(m.live[start:stop]) + start
            return m.mat[rows], m.pks[rows], int(m.pks[stop - 1])

    def vectors(self, pks: IntArray) -> tuple[FloatArray, BoolArray]:
        m = self.mirror
        m.wait_loaded()
        with m.lock:
            rows = m.rows_of(np.asarray(pks, dtype=np.int64))
            found = rows >= 0
            found[found] = m.live[rows[found]]
            out = np.zeros((len(pks), m.dim), np.float32)
            out[found] = m.mat[rows[found]]
            return out, found


def _uniform(values: Sequence[Any], value: Any) -> bool:
    """Whether every item of ``values`` (a list or tuple: counted in C) is ``value``."""
    return isinstance(values, list | tuple) and values.count(value) == len(values)


def _floats(values: Sequence[float | None], none: float) -> npt.NDArray[np.float64]:
    """``values`` as float64, ``none`` where None (all None: one fill)."""
    if _uniform(values, None):
        return np.full(len(values), none, np.float64)
    return np.array([none if v is None else v for v in values], dtype=np.float64)


def unit(vecs: FloatArray, out: FloatArray | None = None) -> FloatArray:
    """Rows of ``vecs`` scaled to unit length (zero rows stay zero), as float32,
    written to ``out`` (a float32 array of the same shape; a new one when None).

    Rows whose components are all tiny (stored before writes lengthened them,
    ``checks.lengthen_short_rows``) are scaled in float64 first: the squares of
    components below about 1e-19 underflow float32, and such a row would else stay
    a zero row (docs/store.md#what-is-stored-and-what-is-searched). Only rows whose
    float32 length says they may be such rows are looked at (a short row's length
    is below ``SHORT_COMPONENT`` times the square root of the dimension), so a
    batch of ordinary rows is read twice and written once."""
    src = np.asarray(vecs, dtype=np.float32)
    if out is None:
        out = np.empty(src.shape, np.float32)
    if not src.size:
        return out
    norms = np.linalg.norm(src, axis=1)
    limit = 2.0 * SHORT_COMPONENT * math.sqrt(src.shape[1])
    short = np.flatnonzero(norms < limit)
    fixed = None
    if short.size:
        fixed = lengthen_short_rows(src[short])
        norms[short] = np.linalg.norm(fixed, axis=1)
    norms[norms == 0] = 1.0  # a zero row divided by 1 stays zero
    np.divide(src, norms[:, None], out=out)
    if fixed is not None:
        out[short] = fixed / norms[short, None]
    return out
