"""The vector index's reader of SQLite: brings the mirror (``vector/mirror.py``) up to
the database state a connection reads, from the chunk rows and their change log.

Consistency with other connections and processes: ``sync`` runs at the start of
every search, inside the search's read transaction. ``PRAGMA data_version`` (commits
of other connections) and ``total_changes`` (this connection's writes) tell whether
anything changed; if so, chunk rows above the loaded high-water mark (primary keys
only grow: AUTOINCREMENT) are appended, and the ``chunk_changes`` log, filled by
triggers on delete and update of chunk rows, names the rows to re-read or drop. A
log pruned past this index's cursor, or a database whose sequence went backwards,
triggers a full reload. So a search never returns a chunk a committed delete,
update or expiry removed, and never misses a committed add.

The first catch-up of a process starts from the index file (``vector/file.py``) when
the log still reaches back to it, and checks the result against SQLite
(``VERIFY_SAMPLE``). The triggers and the log table are in ``sqlite/schema.py``.

Validity windows: the chunks' ``valid_from``/``valid_until`` columns (schema version
7) are read with the other columns. A file of an older schema opened read-only has
none: the reader then selects NULLs in their place (every window open), and reloads
everything if the columns appear later (the file was upgraded by another
connection; the schema cookie, ``PRAGMA schema_version``, tells when to look again).
"""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from oam_core.errors import InvalidArgumentError
from oam_core.store.sqlite.schema import vector_count
from oam_core.store.sqlite.vector import assigned, ivf
from oam_core.store.sqlite.vector.builds import REBUILD_GROWTH, AnnBuilds
from oam_core.store.sqlite.vector.file import FORMAT_VERSION, SCOPES, IndexFile
from oam_core.store.sqlite.vector.ivf import IntArray
from oam_core.store.sqlite.vector.loading import VectorLoader
from oam_core.store.sqlite.vector.mirror import Mirror, unit

__all__ = ["LOG_KEEP", "VERIFY_SAMPLE", "ChangeLog"]

LOG_KEEP = 100_000
"""Change-log rows a writer keeps; a reader further behind reloads everything."""
VERIFY_SAMPLE = 32
"""Rows of a snapshot compared with SQLite when a store opens."""
_LOAD_BATCH = 512
_VECTOR_BATCH = 4096  # rows per fetch when the vectors of a restored file are read
_IN_BATCH = 500  # keys per ``pk IN (...)`` statement


def _writable_dir(path: str) -> bool:
    """Whether files can be made beside ``path`` (a second connection of a WAL file
    needs its ``-shm`` file)."""
    return os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


_CHUNK_COLUMNS = (
    "pk, record_pk, record_type, thread_id, user_id, agent_id, expires_at, {windows}, embedding"
)
"""The columns of a ``mirror.ChunkRow``; ``{windows}`` is ``_WINDOWS`` or ``_NO_WINDOWS``."""
_STATE_COLUMNS = "pk, has_vector, expires_at, record_type, thread_id, user_id, agent_id, {windows}"
"""The columns of a changed chunk re-read from the log (``Mirror.update`` after ``has_vector``)."""
_WINDOWS = "valid_from, valid_until"
_NO_WINDOWS = "NULL, NULL"  # a file of a schema before version 7: every window open


NEAR_LISTS = 4
"""A restored index's row not coded yet must lie in one of the lists of its own
vector's ``NEAR_LISTS`` nearest centroids (``ChangeLog._check_ann``): a file of
another database fails that for most rows, an index retrained by splitting lists
passes it."""


class ChangeLog:
    """Catches the mirror up with the chunks of the store with table prefix ``prefix``.

    Args:
        prefix: The store's table prefix (``memory_store_id`` + ``_``).
        mirror: The arrays to keep up to date.
        builds: The ANN index's life (its index is dropped or replaced on a reload
            and checked when it comes from the file).
        file: The index file, read by the first catch-up.
    """

    def __init__(self, prefix: str, mirror: Mirror, builds: AnnBuilds, file: IndexFile) -> None:
        self.p = prefix
        self.mirror = mirror
        self.builds = builds
        self.file = file
        self.started = False  # a catch-up has run to its end
        self.tracked = True  # the file has the change log (a read-only v1 file has not)
        self.windows = False  # the chunks have the validity window columns
        self._cookie: int | None = None  # the schema cookie ``windows`` was read at
        self.loader: VectorLoader | None = None  # the background fill of the matrix

    def catch_up(self, conn: sqlite3.Connection) -> None:
        """Bring the mirror up to the database state ``conn`` reads (inside a read
        transaction, with the mirror's lock held)."""
        m = self.mirror
        gained = self._look_at_columns(conn)
        top, last_change = self._positions(conn)
        first = not self.started
        tracked = first or self.tracked
        restored = False
        if first:
            self.tracked = bool(
                conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = ?", (f"{self.p}chunk_changes",)
                ).fetchone()
            )
            restored = self.tracked and self._restore(conn, top, last_change)
        stale = not tracked or first or gained or top < m.hwm or last_change < m.cursor
        if (not restored and stale) or (
            last_change > m.cursor and not self._follow_log(conn, last_change)
        ):
            self._reload(conn, last_change)
        if top > m.hwm:
            self._load_rows(conn, m.hwm)
        if restored:
            try:
                self._verify(conn)
            except ValueError as exc:
                self.file.unusable(str(exc))
                self.builds.ann = None
                self.file.saved = None
                self._reload(conn, last_change)
                self._load_rows(conn, 0)
        if m.missing is not None and (not restored or self._reads_vectors()):
            m.wait_loaded()  # the maintenance after this catch-up may read any row
        if m.missing is None:  # every vector is in the matrix: code what is left
            for ann in (self.builds.ann, self.builds.pending):
                if ann is not None and ann.unfilled is not None:
                    assigned.code_from(ann, m)
        self.started = True

    def _reads_vectors(self) -> bool:
        """Whether the maintenance after the first catch-up may read vectors of rows
        the ANN index holds (a retraining is due, ``builds.py``). A recall check that
        is due waits for the fill instead (``AnnBuilds.check_recall``): it reads every
        row, and a reopened store's first search must not wait for them."""
        ann, m = self.builds.ann, self.mirror
        live = m.n - m.n_dead
        return ann is None or live > REBUILD_GROWTH * ann.trained_on

    def _look_at_columns(self, conn: sqlite3.Connection) -> bool:
        """Whether the chunks have the window columns (``windows``), read again when
        the schema cookie moved; True when they appeared or went since the last look
        (then the mirror is reloaded)."""
        cookie = int(conn.execute("PRAGMA schema_version").fetchone()[0])
        if cookie == self._cookie:
            return False
        first = self._cookie is None
        self._cookie = cookie
        had = self.windows
        self.windows = bool(
            conn.execute(
                "SELECT 1 FROM pragma_table_info(?) WHERE name = 'valid_until'",
                (f"{self.p}chunks",),
            ).fetchone()
        )
        return not first and had != self.windows

    def _columns(self, template: str) -> str:
        """``template`` (``_CHUNK_COLUMNS``, ``_STATE_COLUMNS``) with the window
        columns, or NULLs where the chunks have none."""
        return template.format(windows=_WINDOWS if self.windows else _NO_WINDOWS)

    def _positions(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """The highest chunk key and change-log sequence the database gave out."""
        p = self.p
        seqs = dict(
            conn.execute(
                "SELECT name, seq FROM sqlite_sequence WHERE name IN (?, ?)",
                (f"{p}chunks", f"{p}chunk_changes"),
            ).fetchall()
        )
        return int(seqs.get(f"{p}chunks", 0)), int(seqs.get(f"{p}chunk_changes", 0))

    def _follow_log(self, conn: sqlite3.Connection, last_change: int) -> bool:
        """Apply the logged changes up to ``last_change``; False when the log no
        longer reaches back to the cursor or a reload is needed anyway."""
        return self._reaches(conn, self.mirror.cursor) and self._apply_changes(conn, last_change)

    def _reaches(self, conn: sqlite3.Connection, cursor: int) -> bool:
        """Whether the log still holds every change after sequence ``cursor``."""
        oldest = conn.execute(f"SELECT min(seq) FROM {self.p}chunk_changes").fetchone()[0]
        return oldest is not None and int(oldest) <= cursor + 1

    def _reload(self, conn: sqlite3.Connection, last_change: int) -> None:
        m = self.mirror
        m.reset()
        m.cursor = last_change
        total = conn.execute(vector_count(self.p)).fetchone()[0]
        m.reserve(int(total))

    def _restore(self, conn: sqlite3.Connection, top: int, last_change: int) -> bool:
        """Load the mirror from the index file if it can be caught up from; True if
        it was (``_verify`` then checks it against SQLite)."""
        if not self.file.exists():
            return False  # (faiss, its BLAS and their 9 MB are loaded only when needed)
        faiss = ivf.load_faiss()
        if faiss is None:
            return False
        row = conn.execute(
            f"SELECT length(embedding) FROM {self.p}chunks WHERE has_vector = 1 LIMIT 1"
        ).fetchone()
        if row is None or not row[0]:
            return False
        snap = self.file.load(int(row[0]) // 4, faiss, top, last_change)
        if snap is None:
            return False
        lacks_windows = self.windows and not snap.windows  # a file of format 3
        if lacks_windows or (snap.cursor < last_change and not self._reaches(conn, snap.cursor)):
            self.builds.pending = snap.ann  # rows reloaded: the log no longer reaches them
            return False
        self.mirror.install(snap)
        self.builds.ann = snap.ann
        if snap.mat is None:
            self._start_loading(conn, snap.ann.hwm if snap.ann is not None else 0, snap.hwm)
        # a file of an older format (with codes, or a float32 matrix) is rewritten at close
        current = snap.mat is None and snap.version == FORMAT_VERSION
        self.file.saved = (snap.hwm, snap.cursor) if current else None
        return True

    def _start_loading(self, conn: sqlite3.Connection, ann_hwm: int, hwm: int) -> None:
        """Fill the vectors of the rows installed from the file (the file holds
        none): those the ANN index does not hold (chunk keys above ``ann_hwm`` up to
        ``hwm``, which its first extension reads) now, the others in a background
        thread (``loading.VectorLoader``) where the database can be opened a second
        time, else now too."""
        self.stop_loading()
        file = conn.execute("PRAGMA database_list").fetchone()[2]
        later = bool(file) and os.access(file, os.W_OK) and _writable_dir(file)
        split = min(ann_hwm, hwm) if later else 0
        self._load_vectors(conn, split, hwm)
        if split:
            self.loader = VectorLoader(
                self.mirror,
                f"{Path(file).resolve().as_uri()}?mode=ro",
                f"{self.p}chunks",
                self.builds.ann,
            )
            self.loader.start(0, split)

    def stop_loading(self) -> None:
        """Stop a background fill of the matrix (the store closes, or reloads)."""
        if self.loader is not None:
            self.loader.stop()
            self.loader = None

    def _load_vectors(self, conn: sqlite3.Connection, lo: int, hi: int) -> None:
        """Fill the vectors of the mirrored rows of chunk keys ``lo < key <= hi``
        from SQLite, in key order, on ``conn``."""
        cur = conn.execute(
            f"SELECT pk, embedding FROM {self.p}chunks "
            "WHERE has_vector = 1 AND pk > ? AND pk <= ? ORDER BY pk",
            (lo, hi),
        )
        while True:
            rows = cur.fetchmany(_VECTOR_BATCH)
            if not rows:
                break
            pks, blobs = zip(*rows, strict=True)
            raw = np.frombuffer(b"".join(blobs), dtype="<f4")
            if len(raw) != len(rows) * self.mirror.dim:
                raise InvalidArgumentError("chunk vectors of different dimensions in one store")
            self.mirror.fill(np.array(pks, dtype=np.int64), unit(raw.reshape(len(rows), -1)))

    def _verify(self, conn: sqlite3.Connection) -> None:
        """InvalidArgumentError unless the caught-up snapshot holds as many live
        vector chunks as the database and a sample of its rows equals SQLite's."""
        m = self.mirror
        held = int(conn.execute(vector_count(self.p)).fetchone()[0])
        live = np.flatnonzero(m.live[: m.n])
        if held != len(live):
            raise InvalidArgumentError(f"it holds {len(live)} vector chunks, the database {held}")
        if not len(live):
            return
        rng = np.random.default_rng(len(live))
        sample = live[rng.choice(len(live), min(VERIFY_SAMPLE, len(live)), replace=False)]
        keys = m.pks[sample].tolist()
        stored = {
            int(r[0]): r[1:]
            for r in conn.execute(
                f"SELECT {self._columns(_CHUNK_COLUMNS)} FROM {self.p}chunks "
                f"WHERE has_vector = 1 AND pk IN ({', '.join('?' * len(keys))})",
                keys,
            )
        }
        if m.missing is not None:  # rows still being filled: these ones from the rows read
            have = [pk for pk in keys if pk in stored and len(stored[pk][8]) == 4 * m.dim]
            if have:
                raw = np.frombuffer(b"".join(stored[pk][8] for pk in have), dtype="<f4")
                m.fill(np.array(have, dtype=np.int64), unit(raw.reshape(len(have), m.dim)))
        for row, pk in zip(sample.tolist(), keys, strict=True):
            s = stored.get(pk)
            if s is None or len(s[8]) != 4 * m.dim:
                raise InvalidArgumentError(f"chunk {pk} differs from the database's")
            if not self._same(row, s):
                raise InvalidArgumentError(
                    f"its vectors or rows differ from the database's (chunk {pk})"
                )
        self._check_ann(sample)

    def _check_ann(self, sample: IntArray) -> None:
        """InvalidArgumentError unless the restored ANN index finds most of the
        ``sample`` rows it covers by their own vectors (read from SQLite): a file
        of another database with the same keys holds other codes."""
        m, ann = self.mirror, self.builds.ann
        if ann is None:
            return
        covered = sample[m.pks[sample] <= ann.hwm].tolist()
        found = 0
        for r in covered:
            if ann.unfilled is not None and int(m.pks[r]) > ann.unfilled.done:
                # not coded yet: its list must be among its nearest few centroids'
                # (not always the nearest: a retrain by splitting places a row among
                # its old list's children only)
                want = ann.unfilled.lists_of(m.pks[r : r + 1])[0]
                lists = assigned.probed(ann, m.mat[r], NEAR_LISTS)
                found += int(int(want) in lists.tolist())
                continue
            labels = ann.search(m.mat[r], 10)
            rows = m.rows_of(labels)
            near = m.mat[rows[rows >= 0]] @ m.mat[r]
            # its own key, or an equal vector ranked first (duplicates)
            found += int(int(m.pks[r]) in labels.tolist() or bool((near > 0.99).any()))
        if found < len(covered) - max(1, len(covered) // 8):
            raise InvalidArgumentError("its ANN index does not find the database's vectors")

    def _same(self, row: int, s: tuple[Any, ...]) -> bool:
        """Whether mirror ``row`` holds the chunk columns ``s`` (``_CHUNK_COLUMNS``
        after ``pk``) as SQLite has them."""
        m = self.mirror
        vec = unit(np.frombuffer(s[8], dtype="<f4")[None])[0]
        return (
            int(s[0]) == int(m.rec[row])
            and m.types.lookup(s[1]) == int(m.rtype[row])
            and all(
                m.codes[name].lookup(value) == int(m.scope[name][row])
                for name, value in zip(SCOPES, s[2:5], strict=True)
            )
            and (math.inf if s[5] is None else float(s[5])) == float(m.expires[row])
            and (-math.inf if s[6] is None else float(s[6])) == float(m.vfrom[row])
            and (math.inf if s[7] is None else float(s[7])) == float(m.vuntil[row])
            and bool(np.allclose(vec, m.mat[row], rtol=0, atol=1e-6))
        )

    def _apply_changes(self, conn: sqlite3.Connection, last_change: int) -> bool:
        """Re-read the mirrored chunks the log names; False if a full reload is needed
        (a chunk below the high-water mark gained a vector)."""
        m = self.mirror
        changed = np.unique(
            np.fromiter(
                (
                    r[0]
                    for r in conn.execute(
                        f"SELECT chunk_pk FROM {self.p}chunk_changes WHERE seq > ? AND seq <= ?",
                        (m.cursor, last_change),
                    )
                ),
                dtype=np.int64,
            )
        )
        m.cursor = last_change
        rows = m.rows_of(changed)
        if self._gained_vector(conn, changed[(rows < 0) & (changed <= m.hwm)]):
            return False
        rows = rows[rows >= 0]
        if not len(rows):
            return True
        state: dict[int, tuple[Any, ...]] = {}
        keys = m.pks[rows].tolist()
        for i in range(0, len(keys), _IN_BATCH):
            part = keys[i : i + _IN_BATCH]
            for r in conn.execute(
                f"SELECT {self._columns(_STATE_COLUMNS)} "
                f"FROM {self.p}chunks WHERE pk IN ({', '.join('?' * len(part))})",
                part,
            ):
                state[int(r[0])] = r[1:]
        for row, pk in zip(rows.tolist(), keys, strict=True):
            s = state.get(pk)
            if s is None or not s[0]:
                m.kill(row)
            else:
                m.update(row, s[1:])
        m.forget()
        return True

    def _gained_vector(self, conn: sqlite3.Connection, unknown: IntArray) -> bool:
        """Whether any of the chunks ``unknown`` (not mirrored, below the high-water
        mark) holds a vector now."""
        keys = unknown.tolist()
        for i in range(0, len(keys), _IN_BATCH):
            part = keys[i : i + _IN_BATCH]
            if conn.execute(
                f"SELECT 1 FROM {self.p}chunks WHERE has_vector = 1 AND pk IN "
                f"({', '.join('?' * len(part))}) LIMIT 1",
                part,
            ).fetchone():
                return True
        return False

    def _load_rows(self, conn: sqlite3.Connection, after: int) -> None:
        """Append the vector chunks with keys above ``after``."""
        cur = conn.execute(
            f"SELECT {self._columns(_CHUNK_COLUMNS)} FROM {self.p}chunks "
            "WHERE has_vector = 1 AND pk > ? ORDER BY pk",
            (after,),
        )
        while True:
            rows = cur.fetchmany(_LOAD_BATCH)
            if not rows:
                break
            self.mirror.append(rows)
        top = conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = ?", (f"{self.p}chunks",)
        ).fetchone()
        self.mirror.hwm = max(self.mirror.hwm, int(top[0]) if top else 0)
