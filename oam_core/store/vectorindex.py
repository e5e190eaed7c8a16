"""In-process vector index of the embedded store: a cache of SQLite, never the truth.

``SQLiteMemoryStore`` keeps every chunk row in SQLite. This module mirrors the
searchable ones (chunks with a vector) in memory: a float32 matrix of unit vectors
and, next to it, the columns a search filters on (record type, thread/user/agent ids
as small integer codes, expiry, a live flag). Scope filtering is then array work,
without a SQL round trip per query; metadata filters still select candidate chunks
in SQL first and are ranked from the matrix. Documented in ``docs/sqlite.md``.

Ranking:

* exact (a matrix product over the candidate rows) whenever the candidates are at
  most ``EXACT_MAX`` rows, no ANN index is ready, or the index's calibration found
  it cannot reach the recall target on this data: small and filtered stores rank
  exactly;
* above that, the IVF index of ``store/vectorann.py`` proposes an oversampled
  candidate list which is re-ranked exactly from the float32 matrix after the
  scope/type/expiry/filter masks are applied; when the masks leave fewer than ``k``
  records the query is ranked exactly, so a filter never loses results.

Building the ANN index: from ``ANN_MIN_ROWS`` live rows, in the search that first
needs it; from ``BACKGROUND_ROWS`` on in a background thread, while searches rank
exactly (or with the previous index, when a grown store retrains), so no search
waits for a large build. The thread reads the mirror in slices under ``_mutex``;
the result is adopted by the next search, which adds the rows written meanwhile.

Consistency with other connections and processes: ``sync`` runs at the start of
every search, inside the search's read transaction. ``PRAGMA data_version`` (commits
of other connections) and ``total_changes`` (this connection's writes) tell whether
anything changed; if so, chunk rows above the loaded high-water mark (primary keys
only grow: AUTOINCREMENT) are appended, and the ``chunk_changes`` log, filled by
triggers on delete and update of chunk rows, names the rows to re-read or drop. A
log pruned past this index's cursor, or a database whose sequence went backwards,
triggers a full reload. So a search never returns a chunk a committed delete,
update or expiry removed, and never misses a committed add.

Persistence (``store/vectorfile.py``): the mirror and its ANN index are written to
``<database file>.oamvec`` (``.<memory_store_id>.oamvec`` with a store id) after an
inline build and when the store closes if the file is far behind, atomically. A
process opening the store reads that snapshot instead of every vector from SQLite,
then catches up from the snapshot's high-water mark and change-log cursor like any
reader; it is trusted only if it parses, its checksum matches, the log still
reaches back to it, and afterwards it holds as many live vector chunks as the
database with a sample of rows (vectors, keys, scopes, expiry) equal to SQLite's.
Otherwise it is rebuilt with one warning. A file whose change log was pruned past
it keeps only its ANN index, checked against the rows read from SQLite. A kill -9
leaves either the old file or the new one, and SQLite rolls the write back. On a
read-only file system nothing is written: the index is built in memory.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core.checks import lengthen_short_rows
from oam_core.store import vectorfile
from oam_core.store.sqlite.schema import vector_count
from oam_core.store.vectorann import CALIBRATION_QUERIES, Ann
from oam_core.store.vectorfile import FORMAT_VERSION, SCOPES, Snapshot

__all__ = [
    "ANN_MIN_ROWS",
    "BACKGROUND_ROWS",
    "EXACT_MAX",
    "FORMAT_VERSION",
    "VectorIndex",
    "index_path",
]

ANN_MIN_ROWS = 20_000
"""Live vector chunks from which an ANN index is built (exact below: ~1 ms)."""
BACKGROUND_ROWS = 120_000
"""Live vector chunks from which the ANN index is built in a background thread
(below, the first search that needs it builds it and waits: about 2 s at 100k on a
2-core machine; 7 s was measured inline at 200k, too long for one search)."""
EXACT_MAX = 5_000
"""Candidate chunks ranked exactly even when an ANN index exists."""
REBUILD_GROWTH = 4
"""Retrain the ANN index when the live rows grow past this multiple of its training."""
RECHECK_GROWTH = 1.25
"""Check the ANN index's recall on the rows added since its training whenever the
live rows grew by this factor since the last check (``_check_recall``)."""
LOG_KEEP = 100_000
"""Change-log rows a writer keeps; a reader further behind reloads everything."""
SAVE_SHARE = 0.05
"""Closing rewrites the index file when rows added and changes since it was written
reach this share of the rows (or the ANN index was rebuilt); else the reader of the
older file catches up from it."""
SCAN_COST = 0.25
"""Cost of scanning one IVF code relative to ranking one candidate row exactly
(gather and product; measured for 4-bit codes, ~40 ns against ~150 ns at 384
dimensions; the 8-bit direct codes now used scan in about half the time, so the
estimate errs toward exact): a filtered search goes exact when its scan would cost
more."""
VERIFY_SAMPLE = 32
"""Rows of a snapshot compared with SQLite when a store opens."""
SLOT_SPAN = 4
"""The key-to-row table (``VectorIndex._index_keys``) is kept while the chunk keys
of the mirrored rows span at most this many times their count (int32 each: at most
1% of a 384-d row)."""
_LOAD_BATCH = 512
_SCOPES = SCOPES

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_warned: set[str] = set()
_warn_lock = threading.Lock()


def _warn_once(key: str, message: str) -> None:
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def index_path(db_path: str, prefix: str) -> str | None:
    """Where the ANN index of the store with table ``prefix`` in ``db_path`` is kept,
    or None for an in-memory database."""
    if db_path == ":memory:" or db_path.startswith("file:"):
        return None
    store = f".{prefix.rstrip('_')}" if prefix else ""
    return f"{db_path}{store}.oamvec"


def _faiss() -> Any:
    """The faiss module, or None (then ranking stays exact, with one warning)."""
    try:
        import faiss
    except ImportError:
        return None
    return faiss


class _Codes:
    """Strings to small int codes (None is -1) for one scope or type column."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self.names: list[str] = list(names)
        self.code: dict[str | None, int] = {None: -1}
        self.code.update((v, i) for i, v in enumerate(self.names))
        if len(self.code) != len(self.names) + 1:
            raise ValueError("repeated names in a code table")

    def encode(self, values: Sequence[str | None]) -> npt.NDArray[np.int32]:
        get = self.code.get
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


class _MirrorSource:
    """The live rows of a ``VectorIndex`` for a build (``vectorann.RowSource``): every
    read copies under the index's mutex, so a build thread never sees a row move."""

    def __init__(self, index: VectorIndex) -> None:
        self.ix = index

    def live_count(self) -> int:
        with self.ix._mutex:
            return self.ix.n - self.ix.n_dead

    def sample(self, m: int, rng: np.random.Generator) -> tuple[FloatArray, IntArray]:
        ix = self.ix
        with ix._mutex:
            rows = np.flatnonzero(ix.live[: ix.n])
            pick = rows[rng.choice(len(rows), min(m, len(rows)), replace=False)]
            return ix.mat[pick], ix.pks[pick]

    def rows_after(self, pk: int, limit: int) -> tuple[FloatArray, IntArray, int]:
        ix = self.ix
        with ix._mutex:
            start = int(np.searchsorted(ix.pks[: ix.n], pk, side="right"))
            stop = min(ix.n, start + limit)
            if start >= stop:
                return np.zeros((0, ix.dim), np.float32), np.zeros(0, np.int64), pk
            rows = np.flatnonzero(ix.live[start:stop]) + start
            return ix.mat[rows], ix.pks[rows], int(ix.pks[stop - 1])

    def vectors(self, pks: IntArray) -> tuple[FloatArray, BoolArray]:
        ix = self.ix
        with ix._mutex:
            rows = ix._rows_of(np.asarray(pks, dtype=np.int64))
            found = rows >= 0
            found[found] = ix.live[rows[found]]
            out = np.zeros((len(pks), ix.dim), np.float32)
            out[found] = ix.mat[rows[found]]
            return out, found


class VectorIndex:
    """The vector chunks of one store's ``chunks`` table, mirrored in memory.

    Args:
        table_prefix: The store's table prefix (``memory_store_id`` + ``_``).
        path: Where the index file lives (``index_path``), or None.
        ann_min_rows: Live rows from which an ANN index is built (default
            ``ANN_MIN_ROWS``; tests lower it).
        exact_max: Candidate rows always ranked exactly (default ``EXACT_MAX``).
        background_rows: Live rows from which the ANN index is built in a
            background thread (default ``BACKGROUND_ROWS``).

    Every method must be called with the owning backend's lock held; the only other
    thread is the background build, which reads the mirror under ``_mutex``.
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
        self.p = table_prefix
        self.path = path
        self.ann_min_rows = ANN_MIN_ROWS if ann_min_rows is None else ann_min_rows
        self.exact_max = EXACT_MAX if exact_max is None else exact_max
        self.background_rows = BACKGROUND_ROWS if background_rows is None else background_rows
        self.compact_min = 1024  # dead rows tolerated before compacting
        self._mutex = threading.RLock()  # the mirror's arrays against the build thread
        self.ann: Ann | None = None
        self._pending: Ann | None = None  # from a file whose log was pruned: to check
        self._saved: tuple[int, int] | None = None  # (hwm, cursor) of the file on disk
        self._builder: threading.Thread | None = None
        self._built: Ann | BaseException | None = None
        self._stop = threading.Event()
        self._tracked = True  # the file has the change log (a read-only v1 file has not)
        self._reset()

    def _reset(self) -> None:
        self.n = 0
        self.dim = 0
        self.pks: IntArray = np.zeros(0, np.int64)
        self.rec: IntArray = np.zeros(0, np.int64)
        self.rtype = np.zeros(0, np.int32)
        self.scope = {s: np.zeros(0, np.int32) for s in _SCOPES}
        self.expires = np.zeros(0, np.float64)
        self.live: BoolArray = np.zeros(0, bool)
        self.mat: FloatArray = np.zeros((0, 0), np.float32)
        self.types = _Codes()
        self.codes = {s: _Codes() for s in _SCOPES}
        self.hwm = 0
        self.cursor = 0
        self.version: tuple[int, int] | None = None
        self.n_dead = 0
        self.n_expiring = 0
        self._postings: dict[str, tuple[int, dict[int, IntArray]]] = {}
        self._slots: npt.NDArray[np.int32] | None = np.zeros(0, np.int32)
        self._slot_base = 0  # row of chunk key k: _slots[k - _slot_base] (-1: none)

    # -- catching up with SQLite ---------------------------------------------------

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the mirror up to the database state ``conn`` reads (call inside the
        search's read transaction), and adopt a finished background build."""
        version = (
            int(conn.execute("PRAGMA data_version").fetchone()[0]),
            conn.total_changes,
        )
        if version != self.version:
            with self._mutex:
                self._catch_up(conn, version)
        if self._builder is not None and not self._builder.is_alive():
            self._adopt()

    def _catch_up(self, conn: sqlite3.Connection, version: tuple[int, int]) -> None:
        p = self.p
        seqs = dict(
            conn.execute(
                "SELECT name, seq FROM sqlite_sequence WHERE name IN (?, ?)",
                (f"{p}chunks", f"{p}chunk_changes"),
            ).fetchall()
        )
        top = int(seqs.get(f"{p}chunks", 0))
        last_change = int(seqs.get(f"{p}chunk_changes", 0))
        first = self.version is None
        tracked = first or self._tracked
        restored = False
        if first:
            self._tracked = bool(
                conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = ?", (f"{p}chunk_changes",)
                ).fetchone()
            )
            restored = self._tracked and self._restore(conn, top, last_change)
        if not restored and (not tracked or first or top < self.hwm or last_change < self.cursor):
            self._reload(conn, last_change)
        elif last_change > self.cursor:
            oldest = conn.execute(f"SELECT min(seq) FROM {p}chunk_changes").fetchone()[0]
            pruned = oldest is None or int(oldest) > self.cursor + 1
            if pruned or not self._apply_changes(conn, last_change):
                self._reload(conn, last_change)
        if top > self.hwm:
            self._load_rows(conn, self.hwm)
        if restored:
            try:
                self._verify(conn)
            except ValueError as exc:
                self._unusable(str(exc))
                self.ann = None
                self._saved = None
                self._reload(conn, last_change)
                self._load_rows(conn, 0)
        self.version = version
        self._maintain()

    def _reload(self, conn: sqlite3.Connection, last_change: int) -> None:
        self._reset()
        self.cursor = last_change
        total = conn.execute(vector_count(self.p)).fetchone()[0]
        self._reserve(int(total))

    def _restore(self, conn: sqlite3.Connection, top: int, last_change: int) -> bool:
        """Load the mirror from the index file if it can be caught up from; True if
        it was (``_verify`` then checks it against SQLite)."""
        if not self.path or not os.path.exists(self.path):
            return False  # (faiss, its BLAS and their 9 MB are loaded only when needed)
        faiss = _faiss()
        if faiss is None:
            return False
        row = conn.execute(
            f"SELECT length(embedding) FROM {self.p}chunks WHERE has_vector = 1 LIMIT 1"
        ).fetchone()
        if row is None or not row[0]:
            return False
        try:
            snap = vectorfile.read(self.path, int(row[0]) // 4, faiss)
            if snap.hwm > top or snap.cursor > last_change:
                raise ValueError("it is ahead of the database (another database's file?)")
        except (OSError, ValueError) as exc:
            self._unusable(str(exc))
            return False
        if snap.cursor < last_change:
            oldest = conn.execute(f"SELECT min(seq) FROM {self.p}chunk_changes").fetchone()[0]
            if oldest is None or int(oldest) > snap.cursor + 1:
                self._pending = snap.ann  # the log no longer reaches back to it
                return False
        self._install(snap)
        return True

    def _install(self, snap: Snapshot) -> None:
        self._reset()
        n = snap.n
        self.n, self.dim = n, snap.dim
        self.pks, self.rec, self.expires, self.mat = snap.pks, snap.rec, snap.expires, snap.mat
        self.rtype = snap.columns["rtype"]
        self.scope = {s: snap.columns[s] for s in _SCOPES}
        self.live = np.ones(n, bool)
        self.types = _Codes(snap.tables["types"])
        self.codes = {s: _Codes(snap.tables[s]) for s in _SCOPES}
        self.hwm, self.cursor = snap.hwm, snap.cursor
        self.n_expiring = int(np.isfinite(self.expires).sum())
        self.ann = snap.ann
        self._saved = (snap.hwm, snap.cursor)
        self._index_keys(0)

    def _verify(self, conn: sqlite3.Connection) -> None:
        """ValueError unless the caught-up snapshot holds as many live vector chunks
        as the database and a sample of its rows equals SQLite's."""
        held = int(conn.execute(vector_count(self.p)).fetchone()[0])
        live = np.flatnonzero(self.live[: self.n])
        if held != len(live):
            raise ValueError(f"it holds {len(live)} vector chunks, the database {held}")
        if not len(live):
            return
        rng = np.random.default_rng(len(live))
        sample = live[rng.choice(len(live), min(VERIFY_SAMPLE, len(live)), replace=False)]
        keys = self.pks[sample].tolist()
        stored = {
            int(r[0]): r[1:]
            for r in conn.execute(
                f"SELECT pk, record_pk, record_type, thread_id, user_id, agent_id, expires_at, "
                f"embedding FROM {self.p}chunks WHERE has_vector = 1 AND pk IN "
                f"({', '.join('?' * len(keys))})",
                keys,
            )
        }
        for row, pk in zip(sample.tolist(), keys, strict=True):
            s = stored.get(pk)
            if s is None or len(s[6]) != 4 * self.dim:
                raise ValueError(f"chunk {pk} differs from the database's")
            vec = _unit(np.frombuffer(s[6], dtype="<f4")[None])[0]
            same = (
                int(s[0]) == int(self.rec[row])
                and self.types.lookup(s[1]) == int(self.rtype[row])
                and all(
                    self.codes[name].lookup(value) == int(self.scope[name][row])
                    for name, value in zip(_SCOPES, s[2:5], strict=True)
                )
                and (math.inf if s[5] is None else float(s[5])) == float(self.expires[row])
                and bool(np.allclose(vec, self.mat[row], rtol=0, atol=1e-6))
            )
            if not same:
                raise ValueError(f"its vectors or rows differ from the database's (chunk {pk})")

    def _unusable(self, reason: str) -> None:
        _warn_once(
            f"stale:{self.path}:{reason}",
            f"vector index {self.path} is not usable ({reason}); rebuilding it",
        )

    def _apply_changes(self, conn: sqlite3.Connection, last_change: int) -> bool:
        """Re-read the mirrored chunks the log names; False if a full reload is needed
        (a chunk below the high-water mark gained a vector)."""
        changed = np.unique(
            np.fromiter(
                (
                    r[0]
                    for r in conn.execute(
                        f"SELECT chunk_pk FROM {self.p}chunk_changes WHERE seq > ? AND seq <= ?",
                        (self.cursor, last_change),
                    )
                ),
                dtype=np.int64,
            )
        )
        self.cursor = last_change
        rows = self._rows_of(changed)
        unknown = changed[(rows < 0) & (changed <= self.hwm)].tolist()
        for i in range(0, len(unknown), 500):
            part = unknown[i : i + 500]
            if conn.execute(
                f"SELECT 1 FROM {self.p}chunks WHERE has_vector = 1 AND pk IN "
                f"({', '.join('?' * len(part))}) LIMIT 1",
                part,
            ).fetchone():
                return False
        rows = rows[rows >= 0]
        if not len(rows):
            return True
        state: dict[int, tuple[Any, ...]] = {}
        keys = self.pks[rows].tolist()
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            for r in conn.execute(
                f"SELECT pk, has_vector, expires_at, record_type, thread_id, user_id, agent_id "
                f"FROM {self.p}chunks WHERE pk IN ({', '.join('?' * len(part))})",
                part,
            ):
                state[int(r[0])] = r[1:]
        for row, pk in zip(rows.tolist(), keys, strict=True):
            s = state.get(pk)
            if s is None or not s[0]:
                if self.live[row]:
                    self.live[row] = False
                    self.n_dead += 1
                continue
            old_exp = self.expires[row]
            new_exp = math.inf if s[1] is None else float(s[1])
            self.n_expiring += int(math.isfinite(new_exp)) - int(math.isfinite(old_exp))
            self.expires[row] = new_exp
            self.rtype[row] = self.types.encode([s[2]])[0]
            for name, value in zip(_SCOPES, s[3:], strict=True):
                self.scope[name][row] = self.codes[name].encode([value])[0]
        self._postings.clear()
        return True

    def _reserve(self, rows: int) -> None:
        cap = len(self.pks)
        if rows <= cap:
            return
        new = max(rows, int(cap * 1.25) + 1024) if cap else rows
        for name in ("pks", "rec", "rtype", "expires", "live"):
            getattr(self, name).resize(new, refcheck=False)
        for arr in self.scope.values():
            arr.resize(new, refcheck=False)
        if self.dim:
            self.mat.resize((new, self.dim), refcheck=False)

    def _load_rows(self, conn: sqlite3.Connection, after: int) -> None:
        cur = conn.execute(
            f"SELECT pk, record_pk, record_type, thread_id, user_id, agent_id, expires_at, "
            f"embedding FROM {self.p}chunks WHERE has_vector = 1 AND pk > ? ORDER BY pk",
            (after,),
        )
        while True:
            rows = cur.fetchmany(_LOAD_BATCH)
            if not rows:
                break
            self._append(rows)
        top = conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = ?", (f"{self.p}chunks",)
        ).fetchone()
        self.hwm = max(self.hwm, int(top[0]) if top else 0)

    def _append(self, rows: Sequence[tuple[Any, ...]]) -> None:
        pk, rec, rtype, thread, user, agent, expires, blobs = zip(*rows, strict=True)
        m = len(rows)
        raw = b"".join(blobs)
        if not self.dim:
            self.dim = len(blobs[0]) // 4
            self.mat = np.zeros((len(self.pks), self.dim), np.float32)
        if len(raw) != m * 4 * self.dim:
            raise ValueError("chunk vectors of different dimensions in one store")
        self._reserve(self.n + m)
        a, b = self.n, self.n + m
        self.mat[a:b] = _unit(np.frombuffer(raw, dtype="<f4").reshape(m, self.dim))
        self.pks[a:b] = pk
        self.rec[a:b] = rec
        self.rtype[a:b] = self.types.encode(rtype)
        for name, values in zip(_SCOPES, (thread, user, agent), strict=True):
            self.scope[name][a:b] = self.codes[name].encode(values)
        exp = np.array([math.inf if e is None else e for e in expires], dtype=np.float64)
        self.expires[a:b] = exp
        self.n_expiring += int(np.isfinite(exp).sum())
        self.live[a:b] = True
        self.n = b
        self.hwm = max(self.hwm, int(pk[-1]))
        self._postings.clear()
        self._index_keys(a)

    def _rows_of(self, pks: IntArray) -> IntArray:
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
        deletes) ``_rows_of`` binary-searches the keys; at 1M rows that search
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

    # -- housekeeping ---------------------------------------------------------------

    def _maintain(self) -> None:
        if self.n_dead > max(self.compact_min, self.n // 4):
            self._compact()
        if self._pending is not None:
            ann, self._pending = self._pending, None
            try:
                self._validate(ann)
                self.ann = ann
            except ValueError as exc:
                self._unusable(str(exc))
        live = self.n - self.n_dead
        grown = self.ann is not None and live > REBUILD_GROWTH * self.ann.trained_on
        if (self.ann is None or grown) and live >= self.ann_min_rows and self._builder is None:
            self._build(background=live >= self.background_rows)
        if self.ann is not None:
            self._extend_ann(self.ann)
            self._check_recall(self.ann, live)

    def _check_recall(self, ann: Ann, live: int) -> None:
        """Once the live rows grew by ``RECHECK_GROWTH`` since the index's last
        check, test its recall on rows added since it was trained; when it falls
        short (they come from data its lists do not fit), rank exactly until a
        retrained index is ready."""
        if not ann.nprobe or self._builder is not None or live < RECHECK_GROWTH * ann.checked_on:
            return
        ann.checked_on = live
        rows = np.flatnonzero(self.live[: self.n] & (self.pks[: self.n] > ann.trained_hwm))
        if not len(rows):
            return
        rng = np.random.default_rng(live)
        pick = rng.choice(rows, min(CALIBRATION_QUERIES, len(rows)), replace=False)
        if ann.recall_holds(self.mat[pick], self.pks[pick], _MirrorSource(self)):
            return
        self.ann = None  # the index file keeps its old verdict: a reopened store re-checks
        self._build(background=live >= self.background_rows)

    def _extend_ann(self, ann: Ann) -> None:
        """Add the live rows above the ANN index's high-water mark to it."""
        start = int(np.searchsorted(self.pks[: self.n], ann.hwm, side="right"))
        if start < self.n:
            keep = np.flatnonzero(self.live[start : self.n]) + start
            ann.add(self.mat[keep], self.pks[keep])
        ann.hwm = max(ann.hwm, self.hwm)

    def _compact(self) -> None:
        keep = np.flatnonzero(self.live[: self.n])
        dead = self.pks[: self.n][~self.live[: self.n]]
        if self.ann is not None:
            self.ann.remove(dead[dead <= self.ann.hwm])
        m = len(keep)
        for name in ("pks", "rec", "rtype", "expires", "live"):
            arr = getattr(self, name)
            arr[:m] = arr[keep]
        for arr in self.scope.values():
            arr[:m] = arr[keep]
        self.mat[:m] = self.mat[keep]
        self.n, self.n_dead = m, 0
        self.n_expiring = int(np.isfinite(self.expires[:m]).sum())
        self._postings.clear()
        self._index_keys(0)

    def _build(self, *, background: bool) -> None:
        faiss = _faiss()
        if faiss is None:
            _warn_once(
                "faiss",
                "faiss-cpu is not installed: the embedded store ranks vectors exactly "
                "(correct, slower on large stores); pip install faiss-cpu",
            )
            self.ann_min_rows = 2**62
            return
        source = _MirrorSource(self)
        rng = np.random.default_rng(0)
        if background:
            self._stop.clear()
            self._builder = threading.Thread(
                target=self._build_thread,
                args=(faiss, source, rng),
                name="oam-vector-index",
                daemon=True,
            )
            self._builder.start()
            return
        try:
            ann = Ann.build(faiss, source, rng)
        except (MemoryError, RuntimeError) as exc:
            self._cannot_build(exc)
            return
        assert ann is not None
        self.ann = ann
        self._extend_ann(ann)
        self._write()

    def _build_thread(self, faiss: Any, source: _MirrorSource, rng: np.random.Generator) -> None:
        try:
            self._built = Ann.build(faiss, source, rng, stop=self._stop.is_set)
        except (MemoryError, RuntimeError) as exc:
            self._built = exc

    def _adopt(self) -> None:
        """Take over the background build's index: drop the rows deleted meanwhile,
        add the rows written meanwhile."""
        with self._mutex:
            built, self._built, self._builder = self._built, None, None
            if isinstance(built, BaseException):
                self._cannot_build(built)
            elif built is not None:
                live = self.pks[: self.n][self.live[: self.n]]
                built.remove(np.setdiff1d(built.ids(), live, assume_unique=True))
                self.ann = built
                self._extend_ann(built)

    def _cannot_build(self, exc: BaseException) -> None:
        _warn_once("build", f"cannot build the vector index ({exc}); ranking exactly")
        self.ann_min_rows = 2**62

    def stop_building(self) -> None:
        """Stop a background build (it ends at its next slice) and wait for it."""
        builder = self._builder
        if builder is not None:
            self._stop.set()
            builder.join()
            self._builder, self._built = None, None

    def wait_for_build(self, timeout: float | None = None) -> bool:
        """Wait until a background build ends (its index is adopted by the next
        search); True when none is running any more."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
            return not builder.is_alive()
        return True

    def _validate(self, ann: Ann) -> None:
        """ValueError unless ``ann`` (read from a file whose snapshot could not be
        caught up with) holds every live chunk up to its high-water mark and finds a
        sample of those chunks' own vectors."""
        if ann.hwm > self.hwm:
            raise ValueError("it covers chunks this database never held")
        covered = np.flatnonzero(self.live[: self.n] & (self.pks[: self.n] <= ann.hwm))
        if not len(covered):
            return
        held = ann.ids()
        if not bool(np.isin(self.pks[covered], held).all()):
            raise ValueError("it lacks chunks the database holds")
        rng = np.random.default_rng(len(covered))
        sample = rng.choice(covered, min(16, len(covered)), replace=False)
        found = 0
        for r in sample:
            labels = ann.search(self.mat[r], 10)
            rows = self._rows_of(labels)
            sims = self.mat[rows[rows >= 0]] @ self.mat[r]
            # its own key, or an equal vector ranked first (duplicates)
            found += int(int(self.pks[r]) in labels.tolist() or bool((sims > 0.99).any()))
        if found < len(sample) - max(1, len(sample) // 8):
            raise ValueError("its vectors differ from the database's")
        live = self.pks[: self.n][self.live[: self.n]]
        ann.remove(np.setdiff1d(held, live))  # deleted since it was written

    def remove_stale_files(self) -> None:
        """Remove the temporary index files that writers killed mid-write left
        beside the index file (``vectorfile.remove_stale``); call on a writable open."""
        if self.path:
            vectorfile.remove_stale(self.path)

    def save(self) -> None:
        """Stop a background build; write the index file if the mirror has moved far
        from it (``SAVE_SHARE``) or the ANN index was rebuilt since."""
        self.stop_building()
        if self.ann is None or not self.path or not self.dim:
            return
        if not self.ann.rebuilt and self._saved is not None:
            old_hwm, old_cursor = self._saved
            added = self.n - int(np.searchsorted(self.pks[: self.n], old_hwm, side="right"))
            if added + (self.cursor - old_cursor) < SAVE_SHARE * max(self.n, 1):
                return
        self._write()

    def _write(self) -> None:
        """Write the mirror (live rows) and its ANN index to the index file."""
        faiss = _faiss()
        if self.ann is None or not self.path or not self.dim or faiss is None:
            return
        with self._mutex:
            if self.n_dead:
                self._compact()
            n = self.n
            snap = Snapshot(
                dim=self.dim,
                hwm=self.hwm,
                cursor=self.cursor,
                pks=self.pks[:n],
                rec=self.rec[:n],
                expires=self.expires[:n],
                mat=self.mat[:n],
                columns={"rtype": self.rtype[:n], **{s: self.scope[s][:n] for s in _SCOPES}},
                tables={"types": self.types.names, **{s: self.codes[s].names for s in _SCOPES}},
                ann=self.ann,
            )
            if vectorfile.write(self.path, snap, faiss):
                self.ann.rebuilt = False
                self._saved = (self.hwm, self.cursor)

    # -- ranking ----------------------------------------------------------------------

    def _posting(self, scope: str, code: int) -> IntArray:
        entry = self._postings.get(scope)
        if entry is None or entry[0] != self.n:
            codes = self.scope[scope][: self.n]
            order = np.argsort(codes, kind="stable").astype(np.int64)
            sorted_codes = codes[order]
            uniq, starts = np.unique(sorted_codes, return_index=True)
            ends = np.append(starts[1:], len(order))
            entry = (
                self.n,
                {
                    int(c): order[s:e]
                    for c, s, e in zip(uniq.tolist(), starts.tolist(), ends.tolist(), strict=True)
                },
            )
            self._postings[scope] = entry
        return entry[1].get(code, np.zeros(0, np.int64))

    def candidates(
        self,
        types: frozenset[str],
        scopes: dict[str, str | None],
        now: float,
        allowed_pks: IntArray | None,
    ) -> tuple[IntArray | None, BoolArray | None]:
        """Candidate rows as ``(rows, mask)``: sorted row positions, or ``rows=None``
        with a mask over all rows (``mask=None``: every row)."""
        n = self.n
        type_codes = [self.types.code[t] for t in types if t in self.types.code]
        every_type = len(type_codes) == len(self.types)
        rows: IntArray | None = None
        for name, value in scopes.items():
            code = self.codes[name].lookup(value)
            if code is None:
                return np.zeros(0, np.int64), None
            post = self._posting(name, code)
            if rows is None or len(post) < len(rows):
                rows = post
        if allowed_pks is not None:
            found = self._rows_of(np.asarray(allowed_pks, dtype=np.int64))
            found = found[found >= 0]
            if len(found) > 1 and not (found[1:] > found[:-1]).all():  # else sorted, unique
                found = np.unique(found)
            rows = found if rows is None else np.intersect1d(rows, found, assume_unique=True)
        if rows is not None:
            rows = np.sort(rows)
            keep = np.ones(len(rows), bool)
            for name, value in scopes.items():
                keep &= self.scope[name][rows] == self.codes[name].lookup(value)
            if self.n_dead:
                keep &= self.live[rows]
            if not every_type:
                keep &= np.isin(self.rtype[rows], type_codes)
            if self.n_expiring:
                keep &= self.expires[rows] > now
            return rows[keep], None
        mask: BoolArray | None = None
        if self.n_dead:
            mask = self.live[:n].copy()
        if not every_type:
            tmask = np.isin(self.rtype[:n], type_codes)
            mask = tmask if mask is None else mask & tmask
        if self.n_expiring:
            emask = self.expires[:n] > now
            mask = emask if mask is None else mask & emask
        return None, mask

    def rank(
        self,
        queries: FloatArray,
        k: int,
        rows: IntArray | None,
        mask: BoolArray | None,
    ) -> list[list[tuple[int, float]]]:
        """Top ``k`` ``(record pk, cosine distance)`` per unit query row, nearest first,
        ties by record pk, over the candidates ``(rows, mask)`` of ``candidates``."""
        count = len(rows) if rows is not None else (self.n if mask is None else int(mask.sum()))
        if count == 0:
            return [[] for _ in range(len(queries))]
        if self.ann is None or not self.ann.nprobe or count <= self.exact_max:
            return self._exact(queries, k, rows, mask)
        allow = mask
        if rows is not None:
            allow = np.zeros(self.n, bool)
            allow[rows] = True
        out = []
        for q in queries:
            best = self._approximate(q, k, allow, count)
            if best is None:
                best = self._exact(q[None], k, rows, mask)[0]
            out.append(best)
        return out

    def _exact(
        self, queries: FloatArray, k: int, rows: IntArray | None, mask: BoolArray | None
    ) -> list[list[tuple[int, float]]]:
        if rows is None and mask is not None:
            rows = np.flatnonzero(mask)
        if rows is not None and 4 * len(rows) < self.n:  # gather the few candidates
            dist = np.clip(1.0 - _dot_rows(self.mat, rows, queries), 0.0, 2.0)
        else:  # multiply the whole matrix, then pick (no large copy)
            dist = np.clip(1.0 - _dot(self.mat[: self.n], queries), 0.0, 2.0)
            if rows is not None:
                dist = dist[rows]
        recs = self.rec[: self.n] if rows is None else self.rec[rows]
        return [_best_records(dist[:, j], recs, k) for j in range(len(queries))]

    def _approximate(
        self, q: FloatArray, k: int, allow: BoolArray | None, count: int
    ) -> list[tuple[int, float]] | None:
        ann = self.ann
        assert ann is not None
        n = self.n
        live = max(n - self.n_dead, 1)
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
        if kk > 4 * self.exact_max:  # so selective that exact is cheaper
            return None
        rows = self._rows_of(ann.search(q, kk, nprobe))
        rows = rows[rows >= 0]
        tail = int(np.searchsorted(self.pks[:n], ann.hwm, side="right"))
        if tail < n:
            rows = np.concatenate([rows, np.arange(tail, n, dtype=np.int64)])
        if allow is not None:
            rows = rows[allow[rows]]
        elif self.n_dead:
            rows = rows[self.live[rows]]
        if not len(rows):
            return None
        dist = np.clip(1.0 - _dot_rows(self.mat, rows, q[None])[:, 0], 0.0, 2.0)
        best = _best_records(dist, self.rec[rows], k)
        return best if len(best) >= k else None


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


def _dot(mat: FloatArray, queries: FloatArray) -> FloatArray:
    """``mat @ queries.T`` (rows x queries); one query in numpy's loop when small."""
    if len(queries) == 1 and mat.size <= SMALL_PRODUCT:
        out: FloatArray = np.einsum("ij,j->i", mat, queries[0])[:, None]
        return out
    result: FloatArray = mat @ queries.T
    return result


def _dot_rows(mat: FloatArray, rows: IntArray, queries: FloatArray) -> FloatArray:
    """``mat[rows] @ queries.T`` (rows x queries). One query: gathered a block at a
    time and multiplied in numpy's loop, whatever the number of rows, so a row's
    product is the same bits as in ``_dot`` below ``SMALL_PRODUCT`` and wherever the
    row sits in the block (identical vectors tie exactly)."""
    if len(queries) != 1:
        result: FloatArray = mat[rows] @ queries.T
        return result
    q = queries[0]
    step = max(1, GATHER_BYTES // max(1, mat.shape[1] * mat.itemsize))
    out: FloatArray = np.empty((len(rows), 1), np.float32)
    for a in range(0, len(rows), step):
        np.einsum("ij,j->i", mat[rows[a : a + step]], q, out=out[a : a + step, 0])
    return out


def _best_records(dist: FloatArray, recs: IntArray, k: int) -> list[tuple[int, float]]:
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


def _unit(vecs: FloatArray) -> FloatArray:
    """Rows of ``vecs`` scaled to unit length (zero rows stay zero), as float32.

    Rows whose components are all tiny (stored before writes lengthened them,
    ``checks.lengthen_short_rows``) are scaled in float64 first: the squares of
    components below about 1e-19 underflow float32, and such a row would else stay
    a zero row (docs/store.md#what-is-stored-and-what-is-searched)."""
    out = lengthen_short_rows(np.array(vecs, dtype=np.float32))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    out[(norms == 0)[:, 0]] = 0.0
    return out
