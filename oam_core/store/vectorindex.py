"""In-process vector index of the embedded store: a cache of SQLite, never the truth.

``SQLiteMemoryStore`` keeps every chunk row in SQLite. This module mirrors the
searchable ones (chunks with a vector) in memory: a float32 matrix of unit vectors
and, next to it, the columns a search filters on (record type, thread/user/agent ids
as small integer codes, expiry, a live flag). Scope filtering is then array work,
without a SQL round trip per query; metadata filters still select candidate chunks
in SQL first and are ranked from the matrix. Documented in ``docs/sqlite.md``.

Ranking:

* exact (a matrix product over the candidate rows) whenever the candidates are at
  most ``EXACT_MAX`` rows or no ANN index exists: small and filtered stores rank
  exactly;
* above that, an IVF index (faiss ``IndexIVFScalarQuantizer``, 4-bit codes, inner
  product on unit vectors) proposes an oversampled candidate list which is re-ranked
  exactly from the float32 matrix after the scope/type/expiry/filter masks are
  applied; when the masks leave fewer than ``k`` records the query is ranked
  exactly, so a filter never loses results.

Why IVF and not HNSW (measured on this 2-core machine, 100k x 384 peerbench
vectors, see ``bench/README.md``): building hnswlib (M=16, ef_construction=100) took
68 s and usearch 27 s (i8) to 118 s (f32), so a bulk add would either run at HNSW's
insert rate or leave searches exact for a minute; IVF with scalar codes trains and fills in about
2-3 s, adds new vectors at matrix-product speed, answers in 0.2-0.5 ms at recall@10
1.0 against exact, and its 4-bit codes add an eighth of the matrix in memory (an
``IndexIVFFlat`` would hold a second float32 copy; 8-bit codes measured the same
recall after the exact re-rank). On less clustered data (1,000 centres) recall@10 is
0.96 at ``NPROBE`` 16 and 0.97 at 32: the probe count, not the codes, limits it. faiss-cpu ships wheels for the
main platforms; where it cannot be imported (or an index cannot be built), the
store ranks exactly and warns once.

Consistency with other connections and processes: ``sync`` runs at the start of
every search, inside the search's read transaction. ``PRAGMA data_version`` (commits
of other connections) and ``total_changes`` (this connection's writes) tell whether
anything changed; if so, chunk rows above the loaded high-water mark (primary keys
only grow: AUTOINCREMENT) are appended, and the ``chunk_changes`` log, filled by
triggers on delete and update of chunk rows, names the rows to re-read or drop. A
log pruned past this index's cursor, or a database whose sequence went backwards,
triggers a full reload. So a search never returns a chunk a committed delete,
update or expiry removed, and never misses a committed add.

Persistence: the trained ANN index is written next to the database as
``<database file>.oamvec`` (``.<memory_store_id>.oamvec`` with a store id), after it
is built and when the store closes, atomically (temporary file + rename). The file
holds faiss's own serialisation followed by a JSON trailer (magic, format version,
dimension, the highest chunk key it covers, entry count, faiss version, SHA-256 of
the payload). On open it is used
only if it parses, matches, covers every live chunk up to its high-water mark and
finds a sample of its own vectors; otherwise it is rebuilt with a warning. Rows
added after it was written are added to it incrementally. A kill -9 leaves either
the old file or the new one (never half of one), and SQLite rolls the write back, so
the reopened index is consistent or detected stale and rebuilt. On a read-only file
system nothing is written: the index is built in memory at the first large search
of each process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import sqlite3
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["ANN_MIN_ROWS", "EXACT_MAX", "FORMAT_VERSION", "VectorIndex", "index_path"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""Version of the index file layout; a file of another version is rebuilt."""
MAGIC = "oam-vector-index"
ANN_MIN_ROWS = 20_000
"""Live vector chunks from which an ANN index is built (exact below: ~1 ms)."""
EXACT_MAX = 5_000
"""Candidate chunks ranked exactly even when an ANN index exists."""
OVERSAMPLE = 4
"""ANN candidates per wanted record (chunks of one record, masks, re-rank margin)."""
NPROBE = 16
"""IVF lists scanned per query (recall@10 1.0 at 100k on the peer workload)."""
REBUILD_GROWTH = 4
"""Retrain the ANN index when the live rows grow past this multiple of its training."""
LOG_KEEP = 100_000
"""Change-log rows a writer keeps; a reader further behind reloads everything."""
_LOAD_BATCH = 2048
_ADD_BATCH = 16_384
_SCOPES = ("thread", "user", "agent")

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

    def __init__(self) -> None:
        self.code: dict[str, int] = {}

    def encode(self, values: Sequence[str | None]) -> npt.NDArray[np.int32]:
        code = self.code
        out = np.empty(len(values), dtype=np.int32)
        for i, v in enumerate(values):
            if v is None:
                out[i] = -1
            else:
                c = code.get(v)
                if c is None:
                    c = code[v] = len(code)
                out[i] = c
        return out

    def lookup(self, value: str | None) -> int | None:
        """The code of ``value`` (-1 for None), None if never seen."""
        return -1 if value is None else self.code.get(value)


class _Ann:
    """A faiss IVF index (4-bit scalar codes) over unit vectors; labels are chunk keys."""

    def __init__(self, faiss: Any, index: Any, hwm: int, trained_on: int) -> None:
        self.faiss = faiss
        self.index = index
        self.hwm = hwm  # every chunk with pk <= hwm that was live when added is in it
        self.trained_on = trained_on
        self.dirty = True  # differs from the file on disk

    @classmethod
    def build(cls, faiss: Any, mat: FloatArray, pks: IntArray) -> _Ann:
        n, dim = mat.shape
        nlist = int(min(4096, max(16, math.sqrt(n)), n))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, dim, nlist, faiss.ScalarQuantizer.QT_4bit, faiss.METRIC_INNER_PRODUCT
        )
        index.cp.niter = 10
        index.cp.min_points_per_centroid = 1  # sampling below 39 per list is deliberate
        sample = min(n, 25 * nlist)
        pick = np.random.default_rng(0).choice(n, sample, replace=False) if sample < n else None
        index.train(np.ascontiguousarray(mat if pick is None else mat[np.sort(pick)]))
        index.nprobe = min(NPROBE, nlist)
        ann = cls(faiss, index, 0, n)
        ann.add(mat, pks)
        return ann

    def add(self, mat: FloatArray, pks: IntArray) -> None:
        # in slices: faiss's working buffers scale with the batch (peak memory)
        for a in range(0, len(pks), _ADD_BATCH):
            self.index.add_with_ids(
                np.ascontiguousarray(mat[a : a + _ADD_BATCH]), pks[a : a + _ADD_BATCH]
            )
        if len(pks):
            self.hwm = max(self.hwm, int(pks[-1]))
            self.dirty = True

    def remove(self, pks: IntArray) -> None:
        if len(pks):
            self.index.remove_ids(self.faiss.IDSelectorBatch(pks))
            self.dirty = True

    def search(self, q: FloatArray, kk: int) -> tuple[IntArray, FloatArray]:
        """Labels (chunk keys) and approximate inner products of up to ``kk`` entries."""
        scores, labels = self.index.search(q.reshape(1, -1), kk)
        ok = labels[0] >= 0
        return labels[0][ok].astype(np.int64), scores[0][ok]

    def ids(self) -> IntArray:
        """Every label the index holds."""
        inv = self.index.invlists
        parts = [
            self.faiss.rev_swig_ptr(inv.get_ids(i), inv.list_size(i)).copy()
            for i in range(inv.nlist)
            if inv.list_size(i)
        ]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    def save(self, path: str, dim: int) -> None:
        """Write the index to ``path`` atomically: faiss's own serialisation, then a
        JSON trailer (see the module docstring), streamed (no copy in memory)."""
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        try:
            self.faiss.write_index(self.index, tmp)
            digest = _sha256(tmp, os.path.getsize(tmp))
            trailer = json.dumps(
                {
                    "magic": MAGIC,
                    "format": FORMAT_VERSION,
                    "dim": dim,
                    "metric": "cosine",
                    "hwm": self.hwm,
                    "count": int(self.index.ntotal),
                    "trained_on": self.trained_on,
                    "faiss": getattr(self.faiss, "__version__", "?"),
                    "sha256": digest,
                }
            ).encode()
            with open(tmp, "ab") as f:
                f.write(trailer + len(trailer).to_bytes(8, "little") + _TAIL)
            os.replace(tmp, path)
            self.dirty = False
        except (OSError, RuntimeError) as exc:  # read-only place: in memory only
            log.debug("vector index not persisted to %s: %s", path, exc)
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    @classmethod
    def load(cls, faiss: Any, path: str, dim: int) -> _Ann:
        """Read an index file; ValueError when it is corrupt or not one of ours."""
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            f.seek(max(0, size - 16))
            tail = f.read(16)
            if len(tail) < 16 or tail[8:] != _TAIL:
                raise ValueError("not an oam vector index")
            length = int.from_bytes(tail[:8], "little")
            end = size - 16 - length
            if length > 65536 or end < 0:
                raise ValueError("unreadable trailer")
            f.seek(end)
            try:
                header = json.loads(f.read(length))
            except ValueError as exc:
                raise ValueError(f"unreadable trailer ({exc})") from None
        if not isinstance(header, dict) or header.get("magic") != MAGIC:
            raise ValueError("not an oam vector index")
        if header.get("format") != FORMAT_VERSION or header.get("dim") != dim:
            raise ValueError(
                f"format {header.get('format')} / dimension {header.get('dim')}, expected "
                f"{FORMAT_VERSION} / {dim}"
            )
        if _sha256(path, end) != header.get("sha256"):
            raise ValueError("checksum mismatch")
        try:
            index = faiss.read_index(path)
        except RuntimeError as exc:
            raise ValueError(f"faiss cannot read it ({exc})") from None
        if index.d != dim or index.ntotal != header.get("count"):
            raise ValueError("entry count or dimension differs from its trailer")
        index.nprobe = min(NPROBE, index.nlist)
        ann = cls(faiss, index, int(header["hwm"]), int(header.get("trained_on", index.ntotal)))
        ann.dirty = False
        return ann


_TAIL = b"OAMVIDX1"


def _sha256(path: str, length: int) -> str:
    """SHA-256 of the first ``length`` bytes of ``path``, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        left = length
        while left > 0:
            block = f.read(min(left, 1 << 20))
            if not block:
                break
            h.update(block)
            left -= len(block)
    return h.hexdigest()


class VectorIndex:
    """The vector chunks of one store's ``chunks`` table, mirrored in memory.

    Args:
        table_prefix: The store's table prefix (``memory_store_id`` + ``_``).
        path: Where the ANN index file lives (``index_path``), or None.
        ann_min_rows: Live rows from which an ANN index is built (default
            ``ANN_MIN_ROWS``; tests lower it).
        exact_max: Candidate rows always ranked exactly (default ``EXACT_MAX``).

    Every method must be called with the owning backend's lock held.
    """

    def __init__(
        self,
        table_prefix: str,
        path: str | None,
        *,
        ann_min_rows: int | None = None,
        exact_max: int | None = None,
    ) -> None:
        self.p = table_prefix
        self.path = path
        self.ann_min_rows = ANN_MIN_ROWS if ann_min_rows is None else ann_min_rows
        self.exact_max = EXACT_MAX if exact_max is None else exact_max
        self.compact_min = 1024  # dead rows tolerated before compacting
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
        self._tracked = True
        self._postings: dict[str, tuple[int, dict[int, IntArray]]] = {}
        self.ann: _Ann | None = getattr(self, "ann", None)
        self._ann_checked = getattr(self, "_ann_checked", False)

    # -- catching up with SQLite ---------------------------------------------------

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the mirror up to the database state ``conn`` reads (call inside the
        search's read transaction)."""
        version = (
            int(conn.execute("PRAGMA data_version").fetchone()[0]),
            conn.total_changes,
        )
        if version == self.version:
            return
        p = self.p
        seqs = dict(
            conn.execute(
                "SELECT name, seq FROM sqlite_sequence WHERE name IN (?, ?)",
                (f"{p}chunks", f"{p}chunk_changes"),
            ).fetchall()
        )
        top = int(seqs.get(f"{p}chunks", 0))
        last_change = int(seqs.get(f"{p}chunk_changes", 0))
        tracked = self.version is None or self._tracked
        if self.version is None:
            self._tracked = bool(
                conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = ?", (f"{p}chunk_changes",)
                ).fetchone()
            )
        if not tracked or self.version is None or top < self.hwm or last_change < self.cursor:
            self._reload(conn, last_change)
        elif last_change > self.cursor:
            oldest = conn.execute(f"SELECT min(seq) FROM {p}chunk_changes").fetchone()[0]
            pruned = oldest is None or int(oldest) > self.cursor + 1
            if pruned or not self._apply_changes(conn, last_change):
                self._reload(conn, last_change)
        if top > self.hwm:
            self._load_rows(conn, self.hwm)
        self.version = version
        self._maintain(conn)

    def _reload(self, conn: sqlite3.Connection, last_change: int) -> None:
        ann, checked = self.ann, self._ann_checked
        self._reset()
        self.ann, self._ann_checked = ann, checked
        self.cursor = last_change
        total = conn.execute(
            f"SELECT count(*) FROM {self.p}chunks WHERE has_vector = 1"
        ).fetchone()[0]
        self._reserve(int(total))

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
        vecs = np.frombuffer(raw, dtype="<f4").reshape(m, self.dim)
        self._reserve(self.n + m)
        a, b = self.n, self.n + m
        out = self.mat[a:b]
        out[:] = vecs
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        out[(norms == 0)[:, 0]] = 0.0
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

    def _rows_of(self, pks: IntArray) -> IntArray:
        """Row positions of chunk keys ``pks`` (-1 where not mirrored)."""
        have = self.pks[: self.n]
        pos = np.searchsorted(have, pks)
        pos = np.minimum(pos, max(self.n - 1, 0))
        ok = (have[pos] == pks) if self.n else np.zeros(len(pks), bool)
        return np.where(ok, pos, -1).astype(np.int64)

    # -- housekeeping ---------------------------------------------------------------

    def _maintain(self, conn: sqlite3.Connection) -> None:
        if self.n_dead > max(self.compact_min, self.n // 4):
            self._compact()
        live = self.n - self.n_dead
        if self.ann is not None and live > REBUILD_GROWTH * self.ann.trained_on:
            self.ann = None
            self._ann_checked = True
        if (
            self.ann is None
            and not self._ann_checked
            and self.dim
            and self.path
            and os.path.exists(self.path)
        ):
            self._ann_checked = True
            self._load_ann()
        if self.ann is None and live >= self.ann_min_rows:
            self._build_ann()
        elif self.ann is not None:
            start = int(np.searchsorted(self.pks[: self.n], self.ann.hwm, side="right"))
            if start < self.n:
                keep = np.flatnonzero(self.live[start : self.n]) + start
                self.ann.add(self.mat[keep], self.pks[keep])
                self.ann.hwm = max(self.ann.hwm, self.hwm)

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

    def _build_ann(self) -> None:
        faiss = _faiss()
        if faiss is None:
            _warn_once(
                "faiss",
                "faiss-cpu is not installed: the embedded store ranks vectors exactly "
                "(correct, slower on large stores); pip install faiss-cpu",
            )
            self.ann_min_rows = 2**62
            return
        if self.n_dead:
            keep = np.flatnonzero(self.live[: self.n])
            mat, pks = self.mat[keep], self.pks[keep]
        else:  # views: no copy of the matrix
            mat, pks = self.mat[: self.n], self.pks[: self.n]
        try:
            self.ann = _Ann.build(faiss, mat, pks)
            self.ann.hwm = max(self.ann.hwm, self.hwm)
        except (MemoryError, RuntimeError) as exc:
            _warn_once("build", f"cannot build the vector index ({exc}); ranking exactly")
            self.ann = None
            self.ann_min_rows = 2**62
            return
        if self.path:
            self.ann.save(self.path, self.dim)

    def _load_ann(self) -> None:
        faiss = _faiss()
        if faiss is None or not self.path or not self.dim:
            return
        try:
            ann = _Ann.load(faiss, self.path, self.dim)
            self._validate(ann)
        except (OSError, ValueError) as exc:
            _warn_once(
                f"stale:{self.path}",
                f"vector index {self.path} is not usable ({exc}); rebuilding it",
            )
            return
        self.ann = ann

    def _validate(self, ann: _Ann) -> None:
        """ValueError unless ``ann`` holds every live chunk up to its high-water mark
        and finds a sample of those chunks' own vectors."""
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
            labels, scores = ann.search(self.mat[r], 10)
            # its own key, or an equal vector ranked first (duplicates)
            found += int(int(self.pks[r]) in labels.tolist() or (len(scores) and scores[0] > 0.99))
        if found < len(sample) - max(1, len(sample) // 8):
            raise ValueError("its vectors differ from the database's")
        live = self.pks[: self.n][self.live[: self.n]]
        ann.remove(np.setdiff1d(held, live))  # deleted since it was written

    def save(self) -> None:
        """Persist the ANN index if it changed since it was written."""
        if self.ann is not None and self.ann.dirty and self.path and self.dim:
            self.ann.save(self.path, self.dim)

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
        every_type = len(type_codes) == len(self.types.code)
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
            found = np.unique(found[found >= 0])
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
        if self.ann is None or count <= self.exact_max:
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
            dist = np.clip(1.0 - _dot(self.mat[rows], queries), 0.0, 2.0)
        else:  # multiply the whole matrix, then pick (no large copy)
            dist = np.clip(1.0 - _dot(self.mat[: self.n], queries), 0.0, 2.0)
            if rows is not None:
                dist = dist[rows]
        recs = self.rec[: self.n] if rows is None else self.rec[rows]
        return [_best_records(dist[:, j], recs, k) for j in range(len(queries))]

    def _approximate(
        self, q: FloatArray, k: int, allow: BoolArray | None, count: int
    ) -> list[tuple[int, float]] | None:
        assert self.ann is not None
        ntotal = int(self.ann.index.ntotal)
        share = count / max(self.n - self.n_dead, 1)
        kk = min(ntotal, max(k * OVERSAMPLE, 32, math.ceil(k * OVERSAMPLE / max(share, 1e-9))))
        if kk > 4 * self.exact_max:  # so selective that exact is cheaper
            return None
        labels, _ = self.ann.search(q, kk)
        rows = self._rows_of(labels)
        rows = rows[rows >= 0]
        tail = int(np.searchsorted(self.pks[: self.n], self.ann.hwm, side="right"))
        if tail < self.n:
            rows = np.concatenate([rows, np.arange(tail, self.n, dtype=np.int64)])
        if allow is not None:
            rows = rows[allow[rows]]
        elif self.n_dead:
            rows = rows[self.live[rows]]
        if not len(rows):
            return None
        dist = np.clip(1.0 - _dot(self.mat[rows], q[None])[:, 0], 0.0, 2.0)
        best = _best_records(dist, self.rec[rows], k)
        return best if len(best) >= k else None


SMALL_PRODUCT = 4_096
"""Rows up to which a single-query product runs in numpy's own loop: a threaded BLAS
call that small mostly waits for its threads (tens of ms on a loaded machine)."""


def _dot(mat: FloatArray, queries: FloatArray) -> FloatArray:
    """``mat @ queries.T`` (rows x queries), single-threaded when small."""
    if len(queries) == 1 and len(mat) <= SMALL_PRODUCT:
        out: FloatArray = np.einsum("ij,j->i", mat, queries[0])[:, None]
        return out
    result: FloatArray = mat @ queries.T
    return result


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
