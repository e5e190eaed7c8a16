"""The SQLite back end of the store contract (``store/backend.py``) over the shared SQL
layer (``store/sql``): the connection, the vector mirror, FTS5 keyword ranking, and
the insert path (docs/sqlite.md).

stdlib ``sqlite3`` in WAL mode; one connection guarded by a lock, so one store object
is safe to share between threads of a process, and several processes may open the
same file (SQLite serialises their writers). VECTOR ranks from an in-process mirror
of the chunk vectors (``sqlite/vector/``: exact for small or filtered candidate
sets, an IVF index with exact re-ranking for large ones; it catches up with every
committed write of any connection before each search); KEYWORD ranks with FTS5 BM25
(``sqlite/keyword.py``), the two halves of a HYBRID search at once on a helper
thread (``run_beside``, at the end of this module). Scope, type and expiry filters
run on the mirror's arrays, metadata filters in SQL, all before the top-k cut.
"""

from __future__ import annotations

import builtins
import copy
import os
import sqlite3
import sys
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import Record
from oam_core.checks import Vector, lengthen_short_rows
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import DimCheck, Predicate, Tx
from oam_core.store.planning import name_ids
from oam_core.store.sql import statements as st
from oam_core.store.sql.backend import SqlBackend, SqlTx
from oam_core.store.sql.statements import record_from_row
from oam_core.store.sqlite import jsonrows, schema
from oam_core.store.sqlite.bulk import narrow_insert
from oam_core.store.sqlite.candidates import FilterCache, filtered_chunks
from oam_core.store.sqlite.checkpoint import WAL_CHECKPOINT_BYTES, Checkpointer
from oam_core.store.sqlite.dialect import SQLITE
from oam_core.store.sqlite.heldstate import RowCache
from oam_core.store.sqlite.keyword import Fts5Ranker
from oam_core.store.sqlite.openfile import OpenedFile
from oam_core.store.sqlite.readonly import immutable_uri, in_read_only_place, unwritable_closed_file
from oam_core.store.sqlite.schema import SCHEMA_VERSION
from oam_core.store.sqlite.vector import LOG_KEEP, BoolArray, IntArray, VectorIndex, index_path
from oam_core.store.sqlite.vector.feed import Inserted

BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another connection's write lock before
``DatabaseLockedError``, in seconds."""

MMAP_BYTES = 1 << 30 if sys.maxsize > 2**32 else 0
"""``PRAGMA mmap_size`` of a store's file connection, in bytes: up to the first GiB
of the file is read through a memory map instead of ``read()`` calls, on 64-bit
builds only (docs/sqlite.md#reading-through-a-memory-map)."""

STREAMING_CACHE_KIB = 32 * 1024
"""SQLite's page cache, in KiB, while ``streaming`` (instead of its default 2 MiB): an
import batch inserts into the id index at random places and, without the map, each
page it no longer holds is read again; 32 MiB made the write of an import batch ~20%
cheaper (docs/transfer.md#memory). Kept from one ``streaming`` block to the next (the
batches of an import); the first read or write outside one sets it back, freeing it."""

DEFAULT_CACHE_PAGES = -2000
"""SQLite's default ``PRAGMA cache_size`` (2,000 KiB), what ``streaming`` sets back."""

PAGE_BYTES = 16384
"""``PRAGMA page_size`` of a file the store creates, in bytes (SQLite's default is 4096).
A chunk row holds its vector (1.5 KiB at 384 dimensions) and its text, ~1.7 KiB in
all: a 4 KiB page fits two and wastes a fifth of itself, an 8 KiB page four (18%
empty), a 16 KiB page nine (7% empty). 16 KiB pages make a 100k-record file ~9%
smaller than 8 KiB and bulk writes no slower; a one-record write costs ~0.1-0.2 ms
more CPU (each commit writes whole pages to the log; docs/sqlite.md#page-size). A file
created before keeps its page size: SQLite cannot change it in WAL mode."""


def _writable_dir(path: str) -> bool:
    """Whether the process may create files in ``path``'s directory (a read-only
    mount answers False even to root)."""
    return os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


def _blob(vector: Vector | None) -> Any:
    if vector is None:
        return None
    if (vector.dtype is _F4 or vector.dtype == _F4) and vector.flags.c_contiguous:
        return vector  # bound as a BLOB through the buffer protocol: no copy
    return np.asarray(vector, dtype=_F4).tobytes()


_F4 = np.dtype("<f4")
_RECORD_COLUMNS = st.RECORD_INSERT_COLUMNS.split(", ")
_CHUNK_COLUMNS = [*st.CHUNK_INSERT_COLUMNS.split(", "), "embedding", "has_vector"]


class SQLiteBackend(SqlBackend):
    """One connection to a SQLite file (or a private in-memory database), guarded by a
    lock, with the file's vector mirror and keyword ranking.

    Args:
        path: The database file, or ``":memory:"``.
        prefix: The object-name prefix.

    Raises:
        StoreConnectionError: (a ConnectionError) when the file
            cannot be opened.
        StoreError: for a file that is not a SQLite database, or any other error
            while the schema is created or upgraded.
        DatabaseLockedError: (a TimeoutError) when another connection holds the file
            for writing past the busy timeout while the schema is prepared.
    """

    def __init__(self, path: str, prefix: str) -> None:
        super().__init__(SQLITE, prefix, path)
        self.lock = threading.RLock()
        self.streamed = False  # the page cache of ``streaming`` is held
        self.streaming_depth = 0
        with self.mapped():
            self.conn, immutable = self._open(path)
            try:
                with self.lock:
                    self.schema_version = schema.prepare(self.conn, prefix)
            except BaseException:
                self.conn.close()
                raise
        # A file in a read-only place, or one that could not be upgraded, is read as it is.
        self.read_only = immutable or self.schema_version < SCHEMA_VERSION
        self.opened = OpenedFile.of(self.conn)  # None for ":memory:"
        if self.schema_version < schema.WINDOWS_VERSION:  # no window columns: none read
            self.d = copy.copy(SQLITE)
            self.d.windows = False
        self.checkpointer: Checkpointer | None = None
        if not self.read_only and self._wal():
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")
            self.conn.execute(f"PRAGMA journal_size_limit = {WAL_CHECKPOINT_BYTES}")
            file = self.conn.execute("PRAGMA database_list").fetchone()[2]
            self.checkpointer = Checkpointer(file, BUSY_TIMEOUT_S)
            weakref.finalize(self, self.checkpointer.close)  # a store never closed
        self.index = VectorIndex(prefix, index_path(path, prefix))
        weakref.finalize(self, _stop_loading, self.index)  # a store never closed
        if not self.read_only:
            self.index.remove_stale_files()
        self.filters = FilterCache()  # metadata-filter candidates (sqlite/candidates.py)
        self.keywords = Fts5Ranker(self.d, prefix, self.schema_version)
        self.row_cache = RowCache()  # records read by searches (sqlite/heldstate.py)
        self.json_rows = jsonrows.supported(self.conn)
        """Whether batches are written through ``json_each`` (``sqlite/jsonrows.py``)."""
        self.mapped_file = path != ":memory:" and bool(MMAP_BYTES)
        """Whether the connection reads the file through a memory map (``streaming``)."""

    def _open(self, path: str) -> tuple[sqlite3.Connection, bool]:
        """The connection, and whether it reads the file as an immutable snapshot: a
        file that exists in a read-only place (docs/sqlite.md#read-only-places), where
        SQLite can neither write it nor create its ``-wal`` and ``-shm`` files, or a
        cleanly closed file the process may not write (``unwritable_closed_file``)."""
        if unwritable_closed_file(path):
            return self._connect(immutable_uri(path), uri=True), True
        conn = None
        try:
            conn = self._connect(path)
            conn.execute("SELECT name FROM sqlite_master").fetchall()
            return conn, False
        except sqlite3.OperationalError as exc:
            if conn is not None:
                conn.close()
            if path == ":memory:" or not in_read_only_place(path, exc, _writable_dir):
                raise
        return self._connect(immutable_uri(path), uri=True), True

    @classmethod
    def _connect(cls, target: str, *, uri: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(
            target,
            check_same_thread=False,
            isolation_level=None,
            timeout=BUSY_TIMEOUT_S,
            uri=uri,
        )
        try:
            return cls._configure(conn, target, uri=uri)
        except BaseException:
            conn.close()  # e.g. no -wal/-shm file can be made beside it
            raise

    @staticmethod
    def _configure(conn: sqlite3.Connection, target: str, *, uri: bool) -> sqlite3.Connection:
        if not uri:  # a no-op unless the database is still empty
            conn.execute(f"PRAGMA page_size = {PAGE_BYTES}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")  # deleted rows' bytes are zeroed
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if target != ":memory:" and MMAP_BYTES:
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        schema.register_functions(conn)
        if target != ":memory:" and not uri:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock, its errors mapped."""
        with self.lock, self.mapped():
            self._end_streaming()
            yield self.conn

    def remember_vector_dim(self, dim: int, check: DimCheck) -> None:
        """Record ``dim`` in ``oam_meta`` inside the open write (which holds the file's
        write lock, so the recorded one read first is current); ``check`` refuses it
        when another store object recorded another dimension."""
        with self.reading() as conn:
            recorded = dict(conn.execute(st.read_meta(self.p).sql).fetchall())
            check(recorded.get("vector_dim"), dim)
            stmt = st.upsert_meta(self.d, self.p, "vector_dim", str(dim))
            conn.execute(stmt.sql, stmt.params)

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """``BEGIN IMMEDIATE``: the write lock of the file until commit, so no other
        writer (connection or process) runs meanwhile. First the path must still name
        the file opened (``OpenedFile.check``: a ``StoreFileGoneError`` else)."""
        with self.lock, self.mapped():
            if self.opened is not None:
                self.opened.check()
            self._end_streaming()
            if self.checkpointer is not None:
                self.checkpointer.before_write(self.conn)
            self.conn.execute("BEGIN IMMEDIATE")
            tx = SQLiteTx(self, self.conn)
            try:
                yield tx
                changes = f"{self.p}chunk_changes"
                self.conn.execute(
                    f"DELETE FROM {changes} WHERE seq <= (SELECT max(seq) FROM {changes}) - ?",
                    (LOG_KEEP,),
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
            if self.checkpointer is not None:
                self.checkpointer.committed(self.conn)
            self.index.written(self.conn, tx.inserted)  # the new chunks, without a read

    @contextmanager
    def streaming(self) -> Iterator[None]:
        """Without the memory map meanwhile: an export or import touches every page
        of the file once, and through the map (``MMAP_BYTES``) each page it touched
        would count in the process's resident memory until the map is dropped, so
        a pass over a large store would look like a process growing with the store
        (docs/transfer.md#memory). Reads go through SQLite's own page cache instead
        (a bounded size); the map is set back after."""
        if not self.mapped_file:
            yield
            return
        with self.lock, self.mapped():
            self.conn.execute("PRAGMA mmap_size = 0")
            if not self.streamed:
                self.conn.execute(f"PRAGMA cache_size = -{STREAMING_CACHE_KIB}")
                self.streamed = True
            self.streaming_depth += 1
            try:
                yield
            finally:
                self.streaming_depth -= 1
                self.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")

    def _end_streaming(self) -> None:
        """Give the page cache of ``streaming`` back (to SQLite's default) at the first
        read or write outside it: kept between the batches of an import or the pages
        of an export, which each reread the pages the last one cached."""
        if self.streamed and not self.streaming_depth:
            self.streamed = False
            self.conn.execute(f"PRAGMA cache_size = {DEFAULT_CACHE_PAGES}")

    def _wal(self) -> bool:
        """Whether the connection writes a file in WAL mode."""
        row = self.conn.execute("PRAGMA journal_mode").fetchone()
        return bool(row) and str(row[0]).lower() == "wal"

    def database_key(self) -> Hashable | None:
        """As ``Backend.database_key``: the device and inode of the file SQLite
        opened (``OpenedFile``, taken at open from the absolute path SQLite reports:
        the same for any path, symbolic or hard link, and after a ``chdir``), and
        the prefix with its case folded (``table_key``). None for a private
        in-memory database, which no other store object can reach."""
        if self.opened is None:
            return None
        return ("sqlite", self.opened.device, self.opened.inode, self.table_key)

    def close(self) -> None:
        with self.lock, self.mapped():
            try:
                if self.checkpointer is not None:
                    self.checkpointer.close()
                self.index.save()
            finally:
                self.conn.close()

    def rank_vector(
        self, queries: Sequence[Vector], k: int, pred: Predicate
    ) -> builtins.list[builtins.list[tuple[Hashable, float]]]:
        with self.reading():
            with self._snapshot() as began:
                rows, mask = self._vector_candidates(pred, cacheable=began)
            return self._rank_rows(queries, k, rows, mask)

    def rank_hybrid(
        self,
        queries: Sequence[Vector],
        term_lists: Sequence[Sequence[str]],
        k: int,
        pred: Predicate,
    ) -> tuple[
        builtins.list[builtins.list[tuple[Hashable, float]]],
        builtins.list[builtins.list[tuple[Hashable, float]]],
    ]:
        """Both halves in one read snapshot, the vector ranking on a helper thread
        while FTS5 ranks the keywords (docs/sqlite.md#hybrid-search-in-parallel), or
        both in this thread for a small vector half (``_few``). The lock is held
        until both are done: no other thread's catch-up changes the mirror while the
        helper reads it."""
        if not queries or not term_lists:
            return super().rank_hybrid(queries, term_lists, k, pred)
        with self.reading() as conn, self._snapshot() as began:
            rows, mask = self._vector_candidates(pred, cacheable=began)

            def keyword() -> builtins.list[builtins.list[tuple[Hashable, float]]]:
                return [
                    self.keywords.rank(conn, terms, k, pred, cacheable=began)
                    for terms in term_lists
                ]

            if self._few(rows, mask, len(queries)):
                return self._rank_rows(queries, k, rows, mask), keyword()
            return run_beside(lambda: self._rank_rows(queries, k, rows, mask), keyword)

    def _few(self, rows: IntArray | None, mask: BoolArray | None, n_queries: int) -> bool:
        """Whether the vector half is ranked in the calling thread: its candidate
        rows times queries are at most ``BESIDE_MIN_ROWS``, so the product costs
        less than handing it to a helper thread and waiting for it."""
        if rows is not None:
            count = len(rows)
        else:
            count = self.index.mirror.n if mask is None else int(np.count_nonzero(mask))
        return count * n_queries <= BESIDE_MIN_ROWS

    @contextmanager
    def _snapshot(self) -> Iterator[bool]:
        """A read transaction around the block unless one is open; yields whether
        it began one (one snapshot for the catch-up, the candidates and the
        keyword ranking)."""
        began = not self.conn.in_transaction
        if began:
            self.conn.execute("BEGIN")
        try:
            yield began
        finally:
            if began:
                self.conn.execute("COMMIT")

    def _vector_candidates(
        self, pred: Predicate, *, cacheable: bool
    ) -> tuple[IntArray | None, BoolArray | None]:
        """The mirror brought up to date, then the candidate ``(rows, mask)`` of
        ``pred`` (``VectorIndex.candidates``); under the lock, in a snapshot."""
        self.index.sync(self.conn)
        allowed = None
        if pred.metadata is not NOT_SET:
            allowed = filtered_chunks(
                self.conn, self.p, pred, self.index.mirror, self.filters, cacheable=cacheable
            )
        scopes = {
            name: value
            for name, value in (
                ("thread", pred.thread_id),
                ("user", pred.user_id),
                ("agent", pred.agent_id),
            )
            if value is not NOT_SET
        }
        valid_at = None if pred.valid_at is None else pred.valid_at.timestamp()
        return self.index.candidates(
            pred.record_types, scopes, pred.now.timestamp(), allowed, valid_at=valid_at
        )

    def _rank_rows(
        self,
        queries: Sequence[Vector],
        k: int,
        rows: IntArray | None,
        mask: BoolArray | None,
    ) -> builtins.list[builtins.list[tuple[Hashable, float]]]:
        """The nearest ``k`` records per query among the candidates; reads only the
        mirror, so the caller holds the lock (another thread's catch-up would change
        it) but the helper thread of ``rank_hybrid`` may run it."""
        q = lengthen_short_rows(np.stack([np.asarray(v, dtype=np.float32) for v in queries]))
        qn = np.linalg.norm(q, axis=1, keepdims=True)
        q = np.divide(q, qn, out=np.zeros_like(q), where=qn > 0)
        ranked = self.index.rank(q, k, rows, mask)
        return [[(rpk, d) for rpk, d in lst] for lst in ranked]

    def rank_keyword(
        self, terms: Sequence[str], k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]]:
        with self.reading() as conn, self._snapshot() as began:
            if began:  # the snapshot starts here, before the version is read
                conn.execute(f"SELECT 1 FROM {self.p}chunks_fts_docsize LIMIT 1").fetchall()
            return self.keywords.rank(conn, terms, k, pred, cacheable=began)

    shares_loaded = True

    def load(self, keys: Sequence[Hashable]) -> dict[Hashable, Record]:
        """Records by key, each built anew; rows held for the database state
        (``sqlite/heldstate.py``) are not read again."""
        return self._load(keys, shared=False)

    def load_for_ranking(self, keys: Sequence[Hashable]) -> dict[Hashable, Record]:
        """As ``load``, the ``Record`` objects held for the database state
        (``sqlite/heldstate.py``): shared, to be read only."""
        return self._load(keys, shared=True)

    def _load(self, keys: Sequence[Hashable], *, shared: bool) -> dict[Hashable, Record]:
        """Records by key through the row cache, in one read snapshot with the
        version it is valid for; inside an open transaction, from the table alone."""
        with self.reading() as conn, self._snapshot() as began:
            if not began:
                return super().load(keys)
            cache = self.row_cache
            cache.at((int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes))
            held = cache.rows
            read: dict[Hashable, Sequence[Any]] = {}  # kept even if the cache empties
            for part in self.d.batches([key for key in keys if key not in held]):
                stmt = st.load_records(self.d, self.p, part)
                for row in conn.execute(stmt.sql, stmt.params):
                    read[row[0]] = row
                    cache.put(row[0], row)
            out: dict[Hashable, Record] = {}
            records = cache.records
            for key in keys:
                row = held.get(key) or read.get(key)
                if row is None:
                    continue
                if not shared:
                    out[key] = record_from_row(row)
                    continue
                record = records.get(key)
                if record is None:
                    record = records[key] = record_from_row(row)
                out[key] = record
            return out


class SQLiteTx(SqlTx):
    """Writes inside ``BEGIN IMMEDIATE``: the transaction holds the whole file, so
    thread locks need nothing and keys of rows inserted together are consecutive."""

    refuses_existing_ids = True

    def __init__(self, backend: SQLiteBackend, conn: sqlite3.Connection) -> None:
        super().__init__(backend, conn)
        self.json_rows = backend.json_rows
        self._json_bound: dict[str, list[Any]] = {}
        self.max_bytes = jsonrows.max_bytes(conn) if self.json_rows else 0
        self.inserted: builtins.list[Inserted] = []  # for the vector index after the commit

    def restore_if_new(self, cols: Any, batch_size: int) -> bool | None:
        # A savepoint, so that a clash (the unique index) undoes the batch's rows
        # inserted before it, and the caller looks the clashing ids up. An import
        # into a store not holding its ids then needs no query per batch.
        self.c.execute("SAVEPOINT oam_restore")
        try:
            self.restore(cols, batch_size)
        except InvalidArgumentError:  # ``insert_record_rows``: an id stored before
            self._release_json()
            self.c.execute("ROLLBACK TO oam_restore")
            self.c.execute("RELEASE oam_restore")
            return False
        except BaseException:
            self._json_bound.clear()
            self.c.execute("ROLLBACK TO oam_restore")
            self.c.execute("RELEASE oam_restore")
            raise
        self.c.execute("RELEASE oam_restore")
        return True

    def insert_record_rows(
        self, columns: Sequence[Sequence[Any]], batch_size: int
    ) -> builtins.list[int]:
        """As ``SqlTx.insert_record_rows``; the unique index refuses an id stored before.

        Raises:
            InvalidArgumentError: naming the ids of ``columns`` stored before this
                call (the transaction holds the file, so nothing else wrote them).
        """
        base = self._next_pk("records")
        try:
            self._insert_rows("records", base, _RECORD_COLUMNS, columns, batch_size)
        except sqlite3.IntegrityError as exc:
            if not self.d.unique_violation(exc):
                raise
            clash = self._stored_before(columns[0], columns[1], base)
            raise InvalidArgumentError(f"record ids already exist: {name_ids(clash)}") from None
        return self._inserted_pks(columns[0], columns[1], base)

    def _stored_before(
        self, families: Sequence[str], ids: Sequence[str], base: int
    ) -> builtins.list[str]:
        """The ids among ``(families[i], ids[i])`` held by rows older than key ``base``."""
        return sorted({rid for (_f, rid), pk in self._pks_of(families, ids).items() if pk < base})

    def _next_pk(self, table: str) -> int:
        """The primary key the next row of ``table`` gets (AUTOINCREMENT: after the
        largest key it ever held), read inside the write transaction."""
        row = self.c.execute(
            f"SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), "
            f"COALESCE((SELECT max(pk) FROM {self.p}{table}), 0))",
            (f"{self.p}{table}",),
        ).fetchone()
        return int(row[0]) + 1

    def _inserted_pks(
        self, families: Sequence[str], ids: Sequence[str], base: int
    ) -> builtins.list[int]:
        """The keys of the records ``(families[i], ids[i])`` just inserted from key
        ``base`` on. One writer holds the database, so they are consecutive; that is
        checked (the largest key must be the last one), else they are looked up by id."""
        n = len(ids)
        last = self.c.execute(f"SELECT max(pk) FROM {self.p}records").fetchone()[0]
        if last == base + n - 1:
            return builtins.list(range(base, base + n))
        found = self._pks_of(families, ids)
        return [found[key] for key in zip(families, ids, strict=True)]

    def _pks_of(self, families: Sequence[str], ids: Sequence[str]) -> dict[tuple[str, str], int]:
        """The stored keys of the records ``(families[i], ids[i])`` that exist."""
        found: dict[tuple[str, str], int] = {}
        for family in set(families):
            wanted = [rid for f, rid in zip(families, ids, strict=True) if f == family]
            for part in self.d.batches(wanted):
                for rid, pk in self.run(st.ids_to_pks(self.d, self.p, family, part)):
                    found[(family, rid)] = pk
        return found

    def insert_chunk_columns(
        self,
        columns: Sequence[Sequence[Any]],
        vectors: Sequence[Vector | None],
        batch_size: int,
    ) -> None:
        if not vectors:
            return
        has_vector = [0 if v is None else 1 for v in vectors]
        blob_list = [_blob(v) for v in vectors] if any(has_vector) else None
        blobs = None if blob_list is None else (lambda a, b: blob_list[a:b])
        self._insert_chunks(columns, has_vector, blobs, None, batch_size)

    def insert_vector_columns(
        self, columns: Sequence[Sequence[Any]], vectors: Vector, batch_size: int
    ) -> None:
        if not len(vectors):
            return
        matrix = np.ascontiguousarray(vectors, dtype=_F4)
        has_vector = [1] * len(matrix)
        self._insert_chunks(columns, has_vector, lambda a, b: list(matrix[a:b]), matrix, batch_size)

    def _insert_chunks(
        self,
        columns: Sequence[Sequence[Any]],
        has_vector: list[int],
        blobs: Callable[[int, int], Sequence[Any]] | None,
        matrix: Vector | None,
        batch_size: int,
    ) -> None:
        """Insert search rows (``_insert_rows`` with their vectors) and index their
        text."""
        first = self._next_pk("chunks")
        names = [*_CHUNK_COLUMNS[:-2], "has_vector"]
        n = len(has_vector)
        self._insert_rows("chunks", first, names, [*columns, has_vector], batch_size, blobs, matrix)
        vectors = (lambda: matrix) if matrix is not None else (lambda: blobs(0, n) if blobs else [])
        self.inserted.append(Inserted(first, columns, has_vector, vectors))
        # The new text goes to FTS5 from the caller's column through ``schema.fts_text``
        # (as the view and delete trigger): no read-back of the pages just written.
        # Keys are consecutive (BEGIN IMMEDIATE holds the file).
        texts = columns[st.CHUNK_TEXT]
        fts = f"{self.p}chunks_fts"
        text_spans: list[jsonrows.Span[str]] = [(0, n, None)]
        if self.json_rows and n > 1:
            text_spans = jsonrows.arrays(texts, self.max_bytes)
        for a, b, given_texts in text_spans:
            if given_texts is not None:
                self._execute_json(
                    f"INSERT INTO {fts} (rowid, text) SELECT ?1 + key, "
                    f"{schema.fts_text('value')} FROM json_each(?2) WHERE value IS NOT NULL",
                    [first + a, given_texts],
                )
                continue
            self.c.executemany(
                f"INSERT INTO {fts} (rowid, text) VALUES (?1, {schema.fts_text('?2')})",
                [(first + j, t) for j, t in enumerate(texts[a:b], a) if t is not None],
            )
        self._release_json()

    def _insert_rows(
        self,
        table: str,
        first: int,
        names: Sequence[str],
        columns: Sequence[Sequence[Any]],
        batch_size: int,
        blobs: Callable[[int, int], Sequence[Any]] | None = None,
        matrix: Vector | None = None,
    ) -> None:
        """Insert ``columns`` into ``table`` (keys ``first`` on, which the AUTOINCREMENT
        sequence gives next): a statement per ``jsonrows.ROWS_PER_STATEMENT`` rows
        (binding at most ``jsonrows.MAX_STATEMENT_BYTES``) through ``json_each``, or,
        where that cannot carry the values exactly, an ``executemany`` per
        ``batch_size`` rows.

        Args:
            blobs: ``blobs(a, b)`` gives the ``embedding`` values of rows ``a`` to
                ``b``, for rows bound one by one (None: no row has a vector).
            matrix: Every row's vector (float32, shape ``(rows, dim)``), bound whole
                through ``json_each``; without it, rows with vectors are bound one by
                one.
        """
        n = len(columns[0]) if columns else 0
        spans: list[jsonrows.Span[tuple[str, list[Any]]]] = [(0, n, None)] if n else []
        if self.json_rows and n > 1 and (blobs is None or matrix is not None):
            vectors = None if matrix is None else ("embedding", matrix)
            spans = jsonrows.plans(
                f"{self.p}{table}", "pk", first, names, columns, vectors, self.max_bytes
            )
        for a, b, given in spans:
            if given is not None:
                self._execute_json(*given)
            elif blobs is None:
                self._insert_bound(table, names, [c[a:b] for c in columns], batch_size)
            else:
                parts = [*(c[a:b] for c in columns), blobs(a, b)]
                self._insert_bound(table, [*names, "embedding"], parts, batch_size, ("embedding",))
        self._release_json()

    def _execute_json(self, sql: str, params: list[Any]) -> None:
        """Execute a ``jsonrows`` statement, noting it for ``_release_json``."""
        self.c.execute(sql, params)
        self._json_bound[sql] = params

    def _release_json(self) -> None:
        """Run each noted statement once more with an empty array (it writes nothing):
        a cached statement keeps its last bound values, and the JSON text and vector
        BLOB of a batch (about 15 MB at 8192 rows of 384 dimensions) would stay in
        memory until its next use."""
        for sql, params in self._json_bound.items():
            self.c.execute(sql, jsonrows.released(params))
        self._json_bound.clear()

    def _insert_bound(
        self,
        table: str,
        names: Sequence[str],
        columns: Sequence[Sequence[Any]],
        batch_size: int,
        blobs: Sequence[str] = (),
    ) -> None:
        """Insert ``columns`` with an ``executemany`` per ``batch_size`` rows, binding
        the values that vary (``bulk.narrow_insert``)."""
        for j in range(0, len(columns[0]), batch_size):
            rows = [c[j : j + batch_size] for c in columns]
            self.c.executemany(*narrow_insert(f"{self.p}{table}", names, rows, blobs))


# -- the helper thread of a HYBRID search ---------------------------------------------
# Threads running a search's vector half beside its keyword half (numpy, faiss and
# SQLite release the GIL; docs/sqlite.md#hybrid-search-in-parallel). The pool is per
# process: a child after ``fork`` starts its own (an inherited pool has no live threads
# and would never run what it is given).

T = TypeVar("T")
S = TypeVar("S")
M = TypeVar("M")


def _usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system has one, as
    under ``taskset`` or a container's cpuset), else ``os.cpu_count()``."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity call (macOS, Windows)
        return os.cpu_count() or 1


def _stop_loading(index: VectorIndex) -> None:
    """Stop the background fill of a store that was garbage-collected unclosed: it
    would go on filling a matrix nobody reads."""
    loader = index.log.loader
    if loader is not None:
        loader.stop_soon()


BESIDE_MIN_ROWS = 4096
"""Candidate rows (times query parts) up to which a HYBRID search ranks its vector
half in the calling thread (``SQLiteBackend._few``): the exact product over 4,096
rows of 384 dimensions takes ~0.1-0.2 ms, about what handing it to a helper thread
and waking the caller costs, and on a loaded machine the helper may wait for a core
(bench/README.md, issue 28's latency)."""

WORKERS = min(8, _usable_cores())
"""Threads of the pool; with one usable core (``WORKERS == 1``) nothing runs beside."""

_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _after_fork_in_child() -> None:
    """A lock another thread held at ``fork`` stays held in the child: replace it."""
    global _lock, _pool
    _lock, _pool = threading.Lock(), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def beside(fn: Callable[[], T]) -> Future[T] | None:
    """Start ``fn()`` on a helper thread and return its future, or None when it should
    run in the caller instead: a single core (``WORKERS``), the interpreter shutting
    down, or a thread that cannot be started. Never raises; ``fn``'s own exception
    is raised by ``future.result()``."""
    global _pool
    if WORKERS < 2:
        return None
    with _lock:
        pid = os.getpid()
        if _pool is None or _pool[0] != pid:
            _pool = (pid, ThreadPoolExecutor(WORKERS, thread_name_prefix="oam-search"))
        pool = _pool[1]
    future: Future[T] = Future()

    def task() -> None:
        if future.set_running_or_notify_cancel():  # else the caller runs ``fn``
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

    try:
        pool.submit(task)
    except RuntimeError:  # shutting down, or no thread can be started
        # ``submit`` queued the task before it failed to start a thread: a busy
        # thread of the pool would run it later, after the caller's lock is gone.
        if future.cancel():
            return None
    return future


def _wait_for(future: Future[Any]) -> None:
    """Wait until ``future`` is done, through ``KeyboardInterrupt`` (raised after):
    the helper may read state the caller holds a lock over."""
    interrupted: BaseException | None = None
    while True:
        try:
            wait([future])
            break
        except BaseException as exc:  # a signal handler's exception (Ctrl-C)
            interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted


def run_beside(side: Callable[[], S], main: Callable[[], M]) -> tuple[S, M]:
    """``(side(), main())``, with ``side`` on a helper thread (``beside``) while ``main``
    runs in the calling thread. When ``main`` raises, ``side`` is still waited for
    (it may read state the caller holds a lock over), then ``main``'s exception
    propagates. Without a helper thread ``main`` runs first, then ``side``."""
    future = beside(side)
    if future is None:
        got = main()
        return side(), got
    try:
        got = main()
    finally:
        _wait_for(future)
    return future.result(), got
