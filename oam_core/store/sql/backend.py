"""The ``Backend``/``Tx`` primitives (``store/backend.py``) that the SQL back ends share.

``SqlBackend`` answers every read with a statement of ``statements.py`` on a
connection from ``reading()``; ``SqlTx`` runs every write on the connection of one
open transaction. A back end (``store/sqlite``, ``store/postgres``) subclasses both
with what is its own: how connections and transactions are had (``reading``,
``transaction``, ``close``), how records and search rows are inserted, the thread
locks of writers that run concurrently, and vector and keyword ranking.
"""

from __future__ import annotations

import abc
import builtins
import json
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import MESSAGE, THREAD, Record, ThreadRow
from oam_core.checks import Vector
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import (
    Backend,
    DumpChunk,
    DumpRow,
    IdsTakenError,
    Predicate,
    StoredRow,
    Tx,
    message_window,
)
from oam_core.store.planning import BulkPlan, ChunkPlan, RowPlan
from oam_core.store.quotes import QuotingRow, ResolvedChunk, quoted_ids, resolve_quotes
from oam_core.store.sql import dump as sd
from oam_core.store.sql import expiredids as ex
from oam_core.store.sql import quoting as sq
from oam_core.store.sql import statements as st
from oam_core.store.sql.dialect import Dialect, driver_errors
from oam_core.store.sql.readback import dump_row, stored_vector, utc_from_epoch
from oam_core.store.sql.statements import (
    ChunkRow,
    Scope,
    Stmt,
    epoch,
    record_from_row,
    thread_from_row,
)
from oam_core.store.ttl import iso

if TYPE_CHECKING:
    from oam_core.store.dumpcolumns import DumpColumns

T = TypeVar("T")


class SqlBackend(Backend):
    """Reads over the shared statements.

    Args:
        dialect: The back end's ``Dialect``.
        prefix: The object-name prefix (``schema.table_prefix``).
        label: Names the database in error messages (a path, a redacted URL).
    """

    def __init__(self, dialect: Dialect, prefix: str, label: str) -> None:
        self.d = dialect
        self.p = prefix
        self.label = label

    @property
    def table_key(self) -> str:
        """The prefix as the SQL sees it, for ``database_key``: the tables' names
        are unquoted, and SQLite and PostgreSQL read unquoted names without regard to
        ASCII case (PostgreSQL folds them to lower case), so ``memory_store_id``
        ``"NOTES"`` and ``"notes"`` name the same tables (docs/store.md#schema)."""
        return self.p.lower()

    def mapped(self) -> AbstractContextManager[None]:
        """A block whose driver exceptions become ``oam_core.errors`` ones
        (``dialect.driver_errors``)."""
        return driver_errors(self.d.map_error, self.label)

    @abc.abstractmethod
    def reading(self) -> AbstractContextManager[Any]:
        """A DB-API connection for one read, its driver errors mapped
        (``dialect.driver_errors``)."""

    def read(self, fn: Callable[[Any], T]) -> T:
        """``fn(conn)`` on a connection of ``reading``: every read goes through here,
        so a back end can run it again on another connection when the first one
        turned out dead (``postgres/backend.py``)."""
        with self.reading() as conn:
            return fn(conn)

    def fetch_all(self, stmt: Stmt) -> builtins.list[Any]:
        """Every row ``stmt`` returns, read on a connection of ``reading``."""
        return self.read(lambda conn: builtins.list(conn.execute(stmt.sql, stmt.params).fetchall()))

    def get(self, family: str, record_id: str, record_type: str, now: datetime) -> Record | None:
        rows = self.fetch_all(st.get_record(self.d, self.p, family, record_id, record_type, now))
        return record_from_row(rows[0]) if rows else None

    def get_in_family(self, family: str, record_id: str, now: datetime) -> Record | None:
        rows = self.fetch_all(st.get_in_family(self.d, self.p, family, record_id, now))
        return record_from_row(rows[0]) if rows else None

    def list(self, pred: Predicate, limit: int | None) -> builtins.list[Record]:
        rows = self.fetch_all(st.list_records(self.d, self.p, pred, limit))
        return [record_from_row(r) for r in reversed(rows)]

    def count_thread_messages(self, thread_id: str, now: datetime) -> int:
        return self.read(lambda conn: self._count(conn, thread_id, now))

    def _count(self, conn: Any, thread_id: str, now: datetime) -> int:
        stmt = st.count_messages(self.d, self.p, thread_id, now)
        row = conn.execute(stmt.sql, stmt.params).fetchone()
        return int(row[0]) if row else 0

    def thread_messages(
        self, thread_id: str, start: int | None, end: int | None, now: datetime
    ) -> builtins.list[Record]:
        def window_rows(conn: Any) -> builtins.list[Any]:
            window = message_window(start, end, lambda: self._count(conn, thread_id, now))
            if window is None:
                return []
            stmt = st.thread_messages(self.d, self.p, thread_id, now, *window)
            return builtins.list(conn.execute(stmt.sql, stmt.params).fetchall())

        return [record_from_row(r) for r in self.read(window_rows)]

    def thread_messages_by_seq(
        self,
        thread_id: str,
        after: int | None,
        through: int | None,
        limit: int | None,
        newest: bool,
        now: datetime,
    ) -> builtins.list[Record]:
        stmt = st.thread_messages_by_seq(
            self.d, self.p, thread_id, after, through, limit, newest, now
        )
        records = [record_from_row(r) for r in self.fetch_all(stmt)]
        return records[::-1] if newest else records

    def get_thread(self, thread_id: str) -> ThreadRow | None:
        rows = self.fetch_all(st.get_thread(self.d, self.p, thread_id))
        return thread_from_row(rows[0]) if rows else None

    def list_threads(
        self, user_id: Maybe[str | None], agent_id: Maybe[str | None]
    ) -> builtins.list[ThreadRow]:
        rows = self.fetch_all(st.list_threads(self.d, self.p, user_id, agent_id))
        return [thread_from_row(r) for r in rows]

    def load(self, keys: Sequence[Hashable]) -> dict[Hashable, Record]:
        def loaded(conn: Any) -> dict[Hashable, Record]:
            out: dict[Hashable, Record] = {}
            for part in self.d.batches(builtins.list(keys)):
                stmt = st.load_records(self.d, self.p, part)
                out.update({r[0]: record_from_row(r) for r in conn.execute(stmt.sql, stmt.params)})
            return out

        return self.read(loaded)

    def row_vectors(
        self, keys: Sequence[Hashable], now: datetime
    ) -> dict[Hashable, builtins.list[Vector]]:
        at = now.timestamp()

        def read(conn: Any) -> dict[Hashable, builtins.list[Vector]]:
            out: dict[Hashable, builtins.list[Vector]] = {}
            for part in self.d.batches([int(cast("int", key)) for key in keys]):
                stmt = sd.chunks_of(self.d, self.p, self.vector_select, part)
                for _pk, record_pk, _text, value, expires in conn.execute(stmt.sql, stmt.params):
                    vector = stored_vector(value)
                    if vector is not None and (expires is None or expires > at):
                        out.setdefault(int(record_pk), []).append(vector)
            return out

        return self.read(read)

    def unembedded(self, limit: int | None) -> builtins.list[tuple[str, str]]:
        rows = self.fetch_all(st.unembedded(self.d, self.p, limit))
        return [(str(f), str(i)) for f, i in rows]

    def dump_counts(self, user_ids: Sequence[str] | None, now: datetime) -> dict[str, int]:
        rows = self.fetch_all(sd.counts(self.d, self.p, user_ids, now.timestamp()))
        return {str(t): int(n) for t, n in rows}

    def dump_ids(
        self, after: Hashable | None, limit: int, user_ids: Sequence[str] | None, now: datetime
    ) -> tuple[builtins.list[tuple[str, str, str]], Hashable | None]:
        stmt = sd.ids(self.d, self.p, cast("int | None", after), limit, user_ids, now.timestamp())
        rows = self.fetch_all(stmt)
        live = [(str(f), str(i), str(t)) for _, f, i, t, alive in rows if alive]
        return live, (int(rows[-1][0]) if rows else None)

    vector_select = "embedding"
    """The expression reading a search row's vector as little-endian float32 bytes
    or a float list (``dump_page``)."""

    def dump_page(
        self, after: Hashable | None, limit: int, user_ids: Sequence[str] | None
    ) -> tuple[builtins.list[DumpRow], Hashable | None]:
        # Threads first, then every other row, each in insertion order: a thread
        # row stored after its messages (``store.add`` of a message names a thread
        # not created yet) still comes before them (docs/transfer.md#the-dump-format).
        threads, pk = cast("tuple[bool, int | None]", after or (True, None))
        with self.reading() as conn:
            while True:
                stmt = sd.page(self.d, self.p, pk, limit, user_ids, threads)
                rows = conn.execute(stmt.sql, stmt.params).fetchall()
                if rows or not threads:
                    break
                threads, pk = False, None
            if not rows:
                return [], after
            keys = [int(r[0]) for r in rows]
            chunks: dict[int, builtins.list[tuple[Any, ...]]] = {}
            for part in self.d.batches(keys):
                stmt = sd.chunks_of(self.d, self.p, self.vector_select, part)
                for c in conn.execute(stmt.sql, stmt.params):
                    chunks.setdefault(int(c[1]), []).append(tuple(c))
            chunk_keys = [int(c[0]) for cs in chunks.values() for c in cs]
            sources: dict[int, builtins.list[str]] = {}
            for part in self.d.batches(chunk_keys):
                stmt = sd.sources_of(self.d, self.p, part)
                for chunk_pk, source in conn.execute(stmt.sql, stmt.params):
                    sources.setdefault(int(chunk_pk), []).append(str(source))
        out = [
            dump_row(row, chunks.get(key, ()), sources) for row, key in zip(rows, keys, strict=True)
        ]
        return out, (threads, keys[-1])


class SqlTx(Tx):
    """Writes over the shared statements, on ``conn`` inside an open transaction.

    Args:
        backend: The back end the transaction belongs to.
        conn: Its DB-API connection, inside the transaction.
    """

    def __init__(self, backend: SqlBackend, conn: Any) -> None:
        self.b = backend
        self.c = conn
        self.d = backend.d
        self.p = backend.p

    def run(self, stmt: Stmt) -> Any:
        """Execute ``stmt``; return the cursor."""
        return self.c.execute(stmt.sql, stmt.params)

    # -- what each back end does its own way ----------------------------------------

    def lock_threads(self, thread_ids: Sequence[str | None]) -> None:
        """Hold the given threads until the transaction ends, so writers of one thread
        and a delete of it serialise. Nothing to do where a write transaction holds
        the whole database."""

    @abc.abstractmethod
    def insert_record_rows(
        self, columns: Sequence[Sequence[Any]], batch_size: int
    ) -> builtins.list[int]:
        """Insert records given as ``statements.record_columns`` (one list per
        column, family and id first), in batches of ``batch_size``; return their
        primary keys in order."""

    @abc.abstractmethod
    def insert_chunk_columns(
        self,
        columns: Sequence[Sequence[Any]],
        vectors: Sequence[Vector | None],
        batch_size: int,
    ) -> None:
        """Insert search rows given as ``statements.chunk_columns`` (one list per
        column) with their vectors (float32 arrays of shape ``(dim,)``, or None), and
        index their text, in batches of ``batch_size``."""

    def insert_chunks(self, rows: Sequence[ChunkRow], batch_size: int) -> None:
        """Insert search rows (and index their text) in batches of ``batch_size``."""
        if rows:
            vectors = [r.chunk.vector for r in rows]
            self.insert_chunk_columns(st.chunk_columns(rows), vectors, batch_size)

    # -- the contract -----------------------------------------------------------------

    def existing_ids(self, family: str, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for part in self.d.batches(builtins.list(ids)):
            found.update(r[0] for r in self.run(st.existing_ids(self.d, self.p, family, part)))
        return found

    def expired_ids(self, family: str, ids: Sequence[str], now: datetime) -> set[str]:
        if not ids or self.run(ex.any_expired(self.d, self.p, now)).fetchone() is None:
            return set()
        found: set[str] = set()
        for part in self.d.batches(builtins.list(ids)):
            stmt = ex.expired_ids(self.d, self.p, family, part, now)
            found.update(r[0] for r in self.run(stmt))
        return found

    def hold_thread(self, thread_id: str) -> bool:
        self.lock_threads([thread_id])
        return bool(self.existing_ids(THREAD, [thread_id]))

    def hold_thread_row(self, thread_id: str) -> ThreadRow | None:
        self.lock_threads([thread_id])
        rows = self.run(st.get_thread(self.d, self.p, thread_id)).fetchall()
        return thread_from_row(rows[0]) if rows else None

    def insert(self, plans: Sequence[RowPlan], created_at: datetime, batch_size: int) -> None:
        created = iso(created_at)
        message_threads = [p.thread_id for p in plans if p.family == MESSAGE]
        if message_threads:
            self.lock_threads(message_threads)
        next_seq: dict[str | None, int] = {}
        seqs: builtins.list[int | None] = [None] * len(plans)
        for i, plan in enumerate(plans if message_threads else ()):
            if plan.family == MESSAGE:
                if plan.thread_id not in next_seq:
                    next_seq[plan.thread_id] = self._next_seq(plan.thread_id)
                seq = next_seq[plan.thread_id]
                seqs[i] = seq
                next_seq[plan.thread_id] = seq + 1
        # The thread rows are written before any search row: on a server, inserting
        # search rows takes a row of the keyword statistics (postgres chunk_stats), and
        # a pipeline pass writes the thread row first too, so both take their row
        # locks in one order (thread lock, thread row, statistics) and cannot deadlock.
        for thread_id in sorted(t for t in next_seq if t is not None):
            self.run(st.set_thread_seq(self.d, self.p, thread_id, next_seq[thread_id] - 1))
        expiries = [epoch(plan.expires_at) for plan in plans]
        columns = st.record_columns(plans, seqs, created, expiries)
        pks = self._insert_records(columns, batch_size)
        quoting: dict[tuple[int, int], ResolvedChunk] = {}
        dropped: set[tuple[int, int]] = set()
        if any(c.sources for plan in plans for c in plan.chunks):  # context rows quote
            quoting, dropped = self._resolve_quotes(
                [
                    (plan.id if plan.family == MESSAGE else None, pk, exp, plan.chunks)
                    for plan, pk, exp in zip(plans, pks, expiries, strict=True)
                ]
            )
        chunk_rows = [
            ChunkRow(pk, plan.record_type, seq, chunk, plan.chunk_scope, exp, window)
            for plan, pk, exp, window in zip(plans, pks, expiries, _windows(columns), strict=True)
            for seq, chunk in enumerate(plan.chunks)
        ]
        if quoting or dropped:
            chunk_rows = self._quoted_rows(chunk_rows, quoting, dropped)
        self.insert_chunks(chunk_rows, batch_size)
        self._link(quoting, pks)

    def _insert_records(
        self, columns: Sequence[Sequence[Any]], batch_size: int
    ) -> builtins.list[int]:
        """``insert_record_rows``; a unique violation (an id another writer stored
        since the check) becomes ``IdsTakenError`` (an ``InvalidArgumentError``)."""
        try:
            return self.insert_record_rows(columns, batch_size)
        except Exception as exc:
            if not self.d.unique_violation(exc):
                raise
            raise IdsTakenError(f"record ids already exist (written concurrently): {exc}") from exc

    def insert_bulk(self, plan: BulkPlan, created_at: datetime, batch_size: int) -> None:
        expires = epoch(plan.expires_at)
        columns = st.bulk_record_columns(plan, iso(created_at), expires)
        pks = self._insert_records(columns, batch_size)
        chunk_columns = st.bulk_chunk_columns(plan, pks, expires)
        self.insert_vector_columns(chunk_columns, plan.vectors, batch_size)

    def insert_vector_columns(
        self, columns: Sequence[Sequence[Any]], vectors: Vector, batch_size: int
    ) -> None:
        """``insert_chunk_columns`` with every row's vector given as one float32 array
        of shape ``(rows, dim)``; a back end may bind it whole."""
        self.insert_chunk_columns(columns, builtins.list(vectors), batch_size)

    def _resolve_quotes(
        self, rows: Sequence[QuotingRow]
    ) -> tuple[dict[tuple[int, int], ResolvedChunk], set[tuple[int, int]]]:
        """``quotes.resolve_quotes`` of ``rows``, the quoted messages read (and on a
        server, locked) in this transaction."""
        stored: dict[str, tuple[Hashable, float | None]] = {}
        for part in self.d.batches(quoted_ids(rows)):
            for mid, pk, exp in self.run(sq.message_keys(self.d, self.p, part)):
                stored[mid] = (pk, exp)
        return resolve_quotes(rows, stored)

    @staticmethod
    def _quoted_rows(
        rows: Sequence[ChunkRow],
        quoting: dict[tuple[int, int], ResolvedChunk],
        dropped: set[tuple[int, int]],
    ) -> builtins.list[ChunkRow]:
        """``rows`` (of records in write order) without the ``dropped`` ones and with
        the expiry of the quoting ones."""
        out: builtins.list[ChunkRow] = []
        index, last = -1, None
        for row in rows:
            if row.record_pk != last:
                index, last = index + 1, row.record_pk
            if (index, row.seq) in dropped:
                continue
            found = quoting.get((index, row.seq))
            if found is not None:
                row = row._replace(expires_at=found.expires_at)
            out.append(row)
        return out

    def _link(self, quoting: dict[tuple[int, int], ResolvedChunk], keys: Sequence[Any]) -> None:
        """Write the ``chunk_sources`` links of the quoting rows just inserted."""
        links = [
            (source, keys[r.plan], r.seq) for r in quoting.values() for source in r.source_keys
        ]
        self._write_links(links)

    def _write_links(self, links: Sequence[tuple[Any, ...]]) -> None:
        """Insert ``chunk_sources`` rows (source key, quoting record key, seq)."""
        if links:
            cur = self.c.cursor()
            try:
                cur.executemany(sq.insert_link(self.d, self.p), links)
            finally:
                cur.close()

    def drop_quoting(self, key: Hashable) -> None:
        self.run(sq.drop_quoting_key(self.d, self.p, key))

    def clamp_quoting(self, key: Hashable) -> None:
        self.run(sq.clamp_expiry(self.d, self.p, key))

    def _drop_quoting_where(self, where: str, params: Sequence[Any]) -> None:
        """Lock the records ``where`` selects (on a server), then delete the rows
        quoting them: a writer quoting one of them has committed or will not find it."""
        if self.d.lock_row:
            self.run(Stmt(f"SELECT pk FROM {self.p}records WHERE {where}{self.d.lock_row}", params))
        self.run(sq.drop_quoting(self.p, where, params))

    def _next_seq(self, thread_id: str | None) -> int:
        top, mark = self.run(st.next_seq(self.d, self.p, thread_id)).fetchone()
        return max(int(top), int(mark)) + 1

    def fetch(self, family: str, record_id: str) -> StoredRow | None:
        row = self.run(st.fetch_row(self.d, self.p, family, record_id)).fetchone()
        if row is None:
            return None
        pk, rtype, content, ts, meta, created, tid, uid, aid, valid_from, valid_until = row[:11]
        if rtype == "user_profile":
            scope: Scope = (None, record_id, None)
        elif rtype == "agent_profile":
            scope = (None, None, record_id)
        else:
            scope = (tid, uid, aid)
        return StoredRow(
            key=pk,
            family=family,
            record_type=rtype,
            content=content,
            timestamp=ts,
            metadata=json.loads(meta) if meta is not None else None,
            created_at=datetime.fromisoformat(created),
            scope=scope,
            id=record_id,
            valid_from=utc_from_epoch(valid_from),
            valid_until=utc_from_epoch(valid_until),
            expires_at=utc_from_epoch(row[11]),
        )

    def chunk_texts(self, key: Hashable) -> builtins.list[str | None]:
        return [r[0] for r in self.run(st.chunk_texts(self.d, self.p, key))]

    def has_vectors(self, key: Hashable) -> bool:
        return bool(self.run(st.chunk_vector_count(self.d, self.p, key)).fetchone()[0])

    def replace_chunks(self, row: StoredRow, chunks: Sequence[ChunkPlan]) -> None:
        found = self.run(st.record_expiry(self.d, self.p, row.key)).fetchone()
        expires = found[0] if found else None
        window: st.Window = (found[1], found[2]) if found else st.NO_WINDOW
        self.run(st.delete_chunks_of(self.d, self.p, row.key))
        pk = int(cast(Any, row.key))
        own_id = row.id if row.family == MESSAGE else None
        quoting, dropped = self._resolve_quotes([(own_id, pk, expires, chunks)])
        rows = [
            ChunkRow(pk, row.record_type, seq, c, row.scope, expires, window)
            for seq, c in enumerate(chunks)
        ]
        if quoting or dropped:
            rows = self._quoted_rows(rows, quoting, dropped)
        self.insert_chunks(rows, 256)
        self._link(quoting, [pk])

    def update_row(self, row: StoredRow, fields: dict[str, Any]) -> None:
        for stmt in st.update_record(self.d, self.p, row.key, fields):
            self.run(stmt)

    def delete_record(
        self, family: str, record_id: str, record_type: str | None, thread_id: Maybe[str]
    ) -> int:
        self._drop_quoting_where(
            *st.record_match(self.d, family, record_id, record_type, thread_id)
        )
        stmt = st.delete_record(self.d, self.p, family, record_id, record_type, thread_id)
        return int(self.run(stmt).rowcount)

    def delete_records(
        self,
        family: str,
        record_ids: Sequence[str],
        record_type: str | None,
        thread_id: Maybe[str],
    ) -> int:
        deleted = 0
        for batch in self.d.batches(record_ids):
            self._drop_quoting_where(
                *st.records_match(self.d, family, batch, record_type, thread_id)
            )
            stmt = st.delete_records(self.d, self.p, family, batch, record_type, thread_id)
            deleted += int(self.run(stmt).rowcount)
        return deleted

    def delete_thread(self, thread_id: str) -> int:
        self.lock_threads([thread_id])
        self._drop_quoting_where(*st.thread_contents(self.d, thread_id))
        thread_row, contents = st.delete_thread(self.d, self.p, thread_id)
        n = int(self.run(thread_row).rowcount)
        self.run(contents)
        return n

    def delete_actor_scope(self, column: str, actor_id: str) -> None:
        threads = [r[0] for r in self.run(st.actor_threads(self.d, self.p, column, actor_id))]
        self.lock_threads(threads)  # all at once, in key order: no lock-order deadlock
        for tid in threads:
            self.delete_thread(tid)
        self._drop_quoting_where(*st.actor_rows(self.d, column, actor_id))
        self.run(st.delete_actor_rows(self.d, self.p, column, actor_id))

    def insert_thread(self, row: ThreadRow) -> None:
        try:
            self.run(st.insert_thread(self.d, self.p, row))
        except Exception as exc:
            if not self.d.unique_violation(exc):
                raise
            raise InvalidArgumentError(f"thread {row.thread_id!r} already exists") from exc

    def update_thread(
        self,
        thread_id: str,
        config: Maybe[dict[str, Any]],
        state: Maybe[dict[str, Any]],
        expected_state: Maybe[dict[str, Any]],
    ) -> int:
        row = self.run(st.thread_state(self.d, self.p, thread_id)).fetchone()
        if row is None:
            return 0
        if expected_state is not NOT_SET and json.loads(row[0] or "{}") != expected_state:
            return 0
        stmt = st.update_thread(self.d, self.p, thread_id, config, state)
        return 1 if stmt is None else int(self.run(stmt).rowcount)

    def purge(self, now: datetime) -> int:
        self.run(sq.drop_quoting(self.p, *st.expired(self.d, now)))
        self.run(sq.purge_rows(self.d, self.p, now))
        return int(self.run(st.purge(self.d, self.p, now)).rowcount)

    def write_meta(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self.run(st.upsert_meta(self.d, self.p, key, value))

    restores_columns = True

    def restore(self, rows: Sequence[DumpRow] | DumpColumns, batch_size: int) -> None:
        if not isinstance(rows, Sequence):
            self._restore_columns(rows, batch_size)
            return
        run: builtins.list[DumpRow] = []
        for row in rows:
            if row.family == THREAD:
                self._restore_records(run, batch_size)
                run = []
                self._restore_thread(row)
            else:
                run.append(row)
        self._restore_records(run, batch_size)

    def _restore_thread(self, row: DumpRow) -> None:
        cur = self.c.cursor()
        try:
            cur.execute(
                sd.insert_thread(self.d, self.p),
                (
                    row.id,
                    row.user_id,
                    row.agent_id,
                    row.metadata,
                    row.created_at,
                    row.config or "{}",
                    row.state or "{}",
                    row.seq_no,
                ),
            )
        finally:
            cur.close()

    def _restore_records(self, rows: Sequence[DumpRow], batch_size: int) -> None:
        if not rows:
            return
        # Column by column in C (``attrgetter`` and ``zip``), not row by row: at
        # hundreds of thousands of rows the Python work per row is what an import
        # adds to the store's own bulk insert (bench/README.md#transferpy).
        columns: builtins.list[builtins.list[Any]] = [
            builtins.list(c) for c in zip(*map(_RECORD_FIELDS, rows), strict=True)
        ]
        columns.append([None if r.expires_at is None else r.expires_at.timestamp() for r in rows])
        columns.append([epoch(r.valid_from) for r in rows])
        columns.append([epoch(r.valid_until) for r in rows])
        pks = self._insert_records(columns, batch_size)
        quoted = sorted({s for r in rows for c in r.chunks for s in c.sources})
        stored: dict[str, Any] = {}
        for part in self.d.batches(quoted):
            for mid, pk, _exp in self.run(sq.message_keys(self.d, self.p, part)):
                stored[mid] = pk
        chunk_columns: builtins.list[builtins.list[Any]]
        vectors: builtins.list[Vector | None]
        links: builtins.list[tuple[Any, int, int]] = []
        firsts = [r.chunks[0] if len(r.chunks) == 1 else None for r in rows]
        if all(c is not None and not c.sources for c in firsts) and not any(
            r.record_type in _PROFILES for r in rows
        ):
            # The common shape (one search row per record, quoting nothing), column
            # by column as above.
            ones = cast("list[DumpChunk]", firsts)
            chunk_columns = [
                pks,
                columns[2],
                [0] * len(rows),
                [c.text for c in ones],
                columns[6],
                columns[7],
                columns[8],
                [None if c.expires_at is None else c.expires_at.timestamp() for c in ones],
                columns[-2],
                columns[-1],
            ]
            vectors = [c.vector for c in ones]
        else:
            chunk_columns, vectors = self._chunk_columns(rows, pks, stored, links)
        if vectors and all(v is not None for v in vectors):
            # One array, the bulk path (``restore_rows`` checked that every vector
            # has the store's dimension).
            matrix = np.concatenate(cast("list[Vector]", vectors)).reshape(len(vectors), -1)
            self.insert_vector_columns(chunk_columns, matrix, batch_size)
        elif vectors:
            self.insert_chunk_columns(chunk_columns, vectors, batch_size)
        self._write_links(links)
        marks: dict[str, int] = {}
        for r in rows:
            if r.family == MESSAGE and r.thread_id is not None and r.seq_no is not None:
                marks[r.thread_id] = max(marks.get(r.thread_id, -1), r.seq_no)
        for thread_id, seq_no in marks.items():
            self.run(sd.raise_thread_seq(self.d, self.p, thread_id, seq_no))

    def _restore_columns(self, cols: DumpColumns, batch_size: int) -> None:
        """Insert ``cols`` (``store/dumpcolumns.py``) as they came: no row objects."""
        if not len(cols):
            return
        columns: builtins.list[builtins.list[Any]] = cols.record_columns()
        columns.append([None if e is None else e.timestamp() for e in cols.expires_ats])
        columns.append([None if e is None else e.timestamp() for e in cols.valid_froms])
        columns.append([None if e is None else e.timestamp() for e in cols.valid_untils])
        pks = self._insert_records(columns, batch_size)
        chunk_columns: builtins.list[Sequence[Any]] = [
            pks,
            cols.record_types,
            [0] * len(pks),
            cols.texts,
            cols.thread_ids,
            cols.user_ids,
            cols.agent_ids,
            [None if e is None else e.timestamp() for e in cols.chunk_expires],
            columns[-2],
            columns[-1],
        ]
        self.insert_vector_columns(chunk_columns, cols.vectors, batch_size)

    @staticmethod
    def _chunk_columns(
        rows: Sequence[DumpRow],
        pks: Sequence[int],
        stored: dict[str, Any],
        links: builtins.list[tuple[Any, int, int]],
    ) -> tuple[builtins.list[builtins.list[Any]], builtins.list[Vector | None]]:
        """The search-row columns of ``rows`` (keys ``pks``) and their vectors; a row
        quoting a message missing from ``stored`` is left out; the quote links of
        the others are added to ``links``."""
        chunk_columns: builtins.list[builtins.list[Any]] = [[] for _ in range(10)]
        record_pks, types, seqs, texts, tids, uids, aids, expiries, froms, untils = chunk_columns
        vectors: builtins.list[Vector | None] = []
        for row, pk in zip(rows, pks, strict=True):
            if not row.chunks:
                continue
            tid, uid, aid = _chunk_scope(row)
            seq = 0
            for chunk in row.chunks:
                if chunk.sources:
                    if any(s not in stored for s in chunk.sources):
                        continue  # it quotes a message the store does not hold
                    links.extend((stored[s], pk, seq) for s in chunk.sources)
                record_pks.append(pk)
                types.append(row.record_type)
                seqs.append(seq)
                texts.append(chunk.text)
                tids.append(tid)
                uids.append(uid)
                aids.append(aid)
                expiries.append(None if chunk.expires_at is None else chunk.expires_at.timestamp())
                froms.append(epoch(row.valid_from))
                untils.append(epoch(row.valid_until))
                vectors.append(chunk.vector)
                seq += 1
        return chunk_columns, vectors


_RECORD_FIELDS = attrgetter(
    "family",
    "id",
    "record_type",
    "content",
    "role",
    "seq_no",
    "thread_id",
    "user_id",
    "agent_id",
    "timestamp",
    "metadata",
    "created_at",
)
"""The ``DumpRow`` fields of the records columns ``insert_record_rows`` takes, in
order (its expiry, last, is converted to Unix seconds)."""
_PROFILES = frozenset({"user_profile", "agent_profile"})
"""Record types whose search rows carry the record's own id as their scope."""


def _windows(record_columns: Sequence[Sequence[Any]]) -> Iterator[st.Window]:
    """Each record's ``(valid_from, valid_until)`` from ``statements.record_columns``
    (its last two columns)."""
    return zip(record_columns[-2], record_columns[-1], strict=True)


def _chunk_scope(row: DumpRow) -> Scope:
    """The scope a record's search rows carry: a profile's own id in its dimension."""
    if row.record_type == "user_profile":
        return (None, row.id, None)
    if row.record_type == "agent_profile":
        return (None, None, row.id)
    return (row.thread_id, row.user_id, row.agent_id)
