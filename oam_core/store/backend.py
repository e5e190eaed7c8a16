"""The contract between the shared store logic and a database back end.

``OracleMemoryStore`` (base.py) owns every rule of docs/store.md; a back end implements the
primitives below in its SQL dialect. Writes run through ``Tx`` inside one transaction;
reads and rankings take a ``Predicate`` that the back end evaluates inside its query,
before any top-k cut. A back end raises ``oam_core.errors`` exceptions, never its
driver's: ``sql.dialect.driver_errors`` maps them at this boundary (docs/errors.md).
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import MEMORY_TYPES, Record, ThreadRow
from oam_core.checks import Vector
from oam_core.errors import InvalidArgumentError
from oam_core.filters import Cond
from oam_core.store.options import SearchStrategy
from oam_core.store.planning import BulkPlan, ChunkPlan, RowPlan


@dataclass(frozen=True)
class StoredRow:
    """A record row as read inside a write transaction (expired rows included);
    ``valid_from``/``valid_until``: its validity window (aware datetimes, None =
    open); ``expires_at``: its expiry (aware datetime, None = never expires)."""

    key: Hashable
    family: str
    record_type: str
    content: str | None
    timestamp: str | None
    metadata: dict[str, Any] | None
    created_at: datetime
    scope: tuple[str | None, str | None, str | None]
    id: str | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    expires_at: datetime | None = None


class IdsTakenError(InvalidArgumentError):
    """An insert met record ids that another writer stored after this transaction
    looked for them (a unique violation on a server; docs/postgres.md#concurrency-and-durability).
    ``add`` reports it as ids that already exist; ``upsert`` runs its transaction
    again, which then finds those records and replaces them."""


@dataclass(frozen=True)
class Predicate:
    """Which rows a read or search may see.

    Scope values: ``NOT_SET`` = unconstrained, ``None`` = the column is NULL, a string =
    the column equals it. For search, profile rows carry their own id as the user (or
    agent) dimension. ``metadata``: ``NOT_SET`` = no filter, ``None`` = metadata is
    NULL, else a parsed filter tree. ``valid_at``: None = no validity filter, a time =
    only rows valid then (``valid_from`` NULL or <= it, ``valid_until`` NULL or > it;
    rows without a window always pass), applied before any top-k cut.
    """

    record_types: frozenset[str]
    now: datetime
    thread_id: Maybe[str | None] = NOT_SET
    user_id: Maybe[str | None] = NOT_SET
    agent_id: Maybe[str | None] = NOT_SET
    metadata: Maybe[tuple[Cond, ...] | None] = NOT_SET
    valid_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class DumpChunk:
    """One search row as a dump holds it (docs/transfer.md).

    Attributes:
        text: The chunk text as indexed, or None (a vector without text).
        vector: float32 array of shape ``(dim,)``, or None (a row without vector).
        expires_at: The row's own expiry (aware datetime), or None; a row quoting
            messages may expire before its record.
        sources: Ids of the message records the text quotes (``store/quotes.py``).
    """

    text: str | None
    vector: Vector | None
    expires_at: datetime | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DumpRow:
    """One stored row (record or thread) with every column, as export reads it and
    import writes it back (docs/transfer.md).

    Attributes:
        family, id, record_type: The record's id namespace, id and type.
        content, role, timestamp: As stored (``timestamp`` normalized ISO-8601).
        seq_no: A message's sequence number; a thread's high-water mark of message
            numbers (None: none handed out yet).
        thread_id, user_id, agent_id: The scope columns.
        metadata: JSON text of the metadata (reserved keys included), or None.
        created_at: Store time of the write, ISO-8601 UTC.
        expires_at: Absolute expiry (aware datetime), or None.
        config, state: A thread's persisted runtime configuration and state (JSON
            text); None for other records.
        chunks: The record's search rows, in order.
        valid_from, valid_until: The validity window (aware datetimes, None =
            open); the search rows carry their record's.
    """

    family: str
    id: str
    record_type: str
    content: str | None
    role: str | None
    seq_no: int | None
    thread_id: str | None
    user_id: str | None
    agent_id: str | None
    timestamp: str | None
    metadata: str | None
    created_at: str
    expires_at: datetime | None
    config: str | None = None
    state: str | None = None
    chunks: tuple[DumpChunk, ...] = ()
    valid_from: datetime | None = None
    valid_until: datetime | None = None


def message_window(
    start: int | None, end: int | None, count: Callable[[], int]
) -> tuple[int, int | None] | None:
    """``(offset, limit)`` of the slice ``[start:end]`` of a thread's messages (limit
    None: to the end), or None when the slice is empty. ``count()`` (the thread's
    visible messages) is called only when a bound is negative."""
    if (start is not None and start < 0) or (end is not None and end < 0):
        lo, stop, _ = slice(start, end).indices(count())
        hi: int | None = stop
    else:
        lo, hi = start or 0, end
    if hi is not None and hi <= lo:
        return None
    return lo, None if hi is None else hi - lo


class Tx(abc.ABC):
    """Write primitives, all inside one open transaction."""

    stores_rows: bool = False
    """Set by ``StoreRuntime.storing_rows`` (store/runtime.py) when this write stores
    search rows: the transaction then records the embedder identity too."""

    restores_columns: bool = False
    """Whether ``restore`` also takes a ``DumpColumns`` (``store/dumpcolumns.py``)
    instead of rows: the columns of an import's common batches, written as they are."""

    refuses_existing_ids: bool = False
    """Whether ``insert``/``insert_bulk`` refuse a record id stored before, with a
    ``ValueError`` naming it: a write that does not replace needs no check first."""

    @abc.abstractmethod
    def existing_ids(self, family: str, ids: Sequence[str]) -> set[str]:
        """Return which of ``ids`` already exist in ``family``."""

    def expired_ids(self, family: str, ids: Sequence[str], now: datetime) -> set[str]:
        """Which of ``ids`` are rows of ``family`` expired at ``now`` and not purged
        yet: invisible to every read, so a write of one of those ids replaces the
        row (``store/expiredrows.py``). The SQL back ends (SQLite, PostgreSQL) answer
        with one statement per slice of ids. Here none: a back end that does not
        look (Oracle Database, for now) still counts such a row as held until
        ``purge_expired`` deletes it."""
        return set()

    @abc.abstractmethod
    def hold_thread(self, thread_id: str) -> bool:
        """Whether the thread row exists, checked so that until the transaction ends
        no other transaction can delete that thread (``delete_thread``, a cascading
        actor delete) or create a row with its id: the check and the writes that
        follow in this transaction see the same thread."""

    @abc.abstractmethod
    def hold_thread_row(self, thread_id: str) -> ThreadRow | None:
        """``hold_thread``, returning the held row (None: no such thread): a check
        of its scope stays true for the writes that follow in this transaction."""

    @abc.abstractmethod
    def insert(self, plans: Sequence[RowPlan], created_at: datetime, batch_size: int) -> None:
        """Insert records and their search rows; messages get per-thread ``seq_no``."""

    def insert_bulk(self, plan: BulkPlan, created_at: datetime, batch_size: int) -> None:
        """Insert the records of ``plan`` (given column by column) and their search
        rows; the same rows as ``insert(plan.row_plans(), ...)``, which is what a back
        end without a columnar insert does."""
        self.insert(plan.row_plans(), created_at, batch_size)

    @abc.abstractmethod
    def fetch(self, family: str, record_id: str) -> StoredRow | None:
        """Read one record row by family and id, expired or not."""

    def fetch_locked(self, family: str, record_id: str) -> StoredRow | None:
        """``fetch``, the row locked until the transaction ends, so a check of it
        stays true for the writes that follow (``store/versions.py``: two writers
        superseding one memory take turns). Here ``fetch``: right where the
        transaction holds the whole database, and where ``fetch`` locks already
        (the SQL back ends read it ``FOR UPDATE`` on a server)."""
        return self.fetch(family, record_id)

    @abc.abstractmethod
    def chunk_texts(self, key: Hashable) -> builtins.list[str | None]:
        """The texts of a record's search rows, in order."""

    @abc.abstractmethod
    def has_vectors(self, key: Hashable) -> bool:
        """Whether any of a record's search rows holds a vector the store wrote."""

    @abc.abstractmethod
    def replace_chunks(self, row: StoredRow, chunks: Sequence[ChunkPlan]) -> None:
        """Delete a record's search rows and write ``chunks`` in their place."""

    @abc.abstractmethod
    def drop_quoting(self, key: Hashable) -> None:
        """Delete the search rows that quote the record ``key`` (``store/quotes.py``)."""

    @abc.abstractmethod
    def clamp_quoting(self, key: Hashable) -> None:
        """Set the rows quoting the record ``key``, and its own rows that quote others,
        to expire at the earliest expiry of their record and their sources."""

    @abc.abstractmethod
    def update_row(self, row: StoredRow, fields: dict[str, Any]) -> None:
        """Set columns among ``content``, ``metadata`` (JSON text), ``timestamp``,
        ``expires_at``, ``valid_from`` and ``valid_until`` (the last three aware
        datetimes or None, copied to the search rows)."""

    @abc.abstractmethod
    def delete_record(
        self, family: str, record_id: str, record_type: str | None, thread_id: Maybe[str]
    ) -> int:
        """Delete one record and its search rows; ``record_type``/``thread_id`` further
        constrain the match. Returns rows deleted (0/1)."""

    def delete_records(
        self,
        family: str,
        record_ids: Sequence[str],
        record_type: str | None,
        thread_id: Maybe[str],
    ) -> int:
        """Delete the records among ``record_ids`` (distinct ids) and their search
        rows, constrained as ``delete_record``; return how many were deleted. A back
        end deletes them with a bounded number of statements (here: one per id)."""
        return sum(
            self.delete_record(family, record_id, record_type, thread_id)
            for record_id in record_ids
        )

    @abc.abstractmethod
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread row, its messages and memory-like records and their search
        rows; return 1 if the thread row existed."""

    @abc.abstractmethod
    def delete_actor_scope(self, column: str, actor_id: str) -> None:
        """Delete the threads whose ``column`` (user_id/agent_id) is ``actor_id`` with
        everything in them, then every remaining record scoped to that actor."""

    @abc.abstractmethod
    def insert_thread(self, row: ThreadRow) -> None:
        """Insert a thread row (the id is known to be new)."""

    @abc.abstractmethod
    def update_thread(
        self,
        thread_id: str,
        config: Maybe[dict[str, Any]],
        state: Maybe[dict[str, Any]],
        expected_state: Maybe[dict[str, Any]],
    ) -> int:
        """Set a thread's config and/or state; with ``expected_state``, only if the
        stored state equals it. Returns rows updated."""

    @abc.abstractmethod
    def purge(self, now: datetime) -> int:
        """Delete records expired at ``now`` with their search rows; return the count."""

    @abc.abstractmethod
    def write_meta(self, values: dict[str, str]) -> None:
        """Insert or replace schema-metadata entries (such as the embedder identity)."""

    def restore_if_new(self, cols: Any, batch_size: int) -> bool | None:
        """Insert the ``DumpColumns`` ``cols`` (``store/dumpcolumns.py``) relying on
        the unique index of record ids instead of a query first: True when written;
        False when an id was stored before (then nothing of ``cols`` is written and
        the transaction goes on); None when this back end does not do it (nothing
        written)."""
        return None

    def restore(self, rows: Sequence[DumpRow], batch_size: int) -> None:
        """Insert ``rows`` as they are (ids, ``created_at``, ``seq_no``, expiry, search
        rows with their vectors and quoted sources), in order, ``batch_size`` rows per
        statement: the import path of docs/transfer.md. The ids are known to be new;
        a chunk quoting a message missing from the store is not written."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore dumped rows")


DimCheck = Callable[[str | None, int], None]
"""``StoreRuntime.check_recorded_dim(recorded, dim)``: ``recorded`` is the dimension
the storage records (its metadata text) or None; raises to refuse ``dim``."""


class Backend(abc.ABC):
    """Read primitives and transactions of one database."""

    local_vectors: bool = True
    """Whether search rows hold vectors the store computes (an Oracle store searching
    by KEYWORD or HYBRID may keep none: the database embeds its text)."""

    def remember_vector_dim(self, dim: int, check: DimCheck) -> None:
        """Record ``dim``, learned from the first vector this store writes, inside the
        open write transaction that stores it, before its rows. A back end that
        records it reads the recorded one first (under a lock, so writers that learn
        a dimension take turns) and passes it to ``check``, which adopts it and
        raises when it differs (docs/store.md#schema). Here: nothing is recorded.

        Raises:
            InvalidArgumentError: (from ``check``) when another store object recorded
                another dimension since this one opened.
        """
        return None

    def database_key(self) -> Hashable | None:
        """What names this back end's database and tables, equal for two store
        objects on the same ones (a SQLite file reached by another path or a hard
        link, a PostgreSQL database reached by another URL, a ``memory_store_id``
        that differs only in case): ``copy_store`` refuses to copy a store onto
        itself (docs/transfer.md#copy). None: unknown (a private in-memory
        database, or a back end that cannot tell)."""
        return None

    def serves_strategy(self, strategy: SearchStrategy) -> bool:
        """Whether one call may search by ``strategy`` without reopening the store
        (store/strategy.py); the SQL back ends keep every index."""
        return True

    ranks_natively: bool = False
    """Whether ``native_search`` may return a ranking (Oracle's hybrid vector index);
    store/search.py asks only a back end that says so."""

    def native_search(
        self, query: str | None, query_vector: Vector | None, k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]] | None:
        """``(record key, distance)`` pairs from a ranking of the database's own (such
        as Oracle's hybrid vector index), or None to rank with the shared logic of
        store/search.py. Called after every argument check, with exactly one of
        ``query`` and ``query_vector``."""
        return None

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[Tx]:
        """A context manager yielding a ``Tx``; commits on success, rolls back on error."""

    @abc.abstractmethod
    def get(self, family: str, record_id: str, record_type: str, now: datetime) -> Record | None:
        """One visible record by type and id."""

    def get_in_family(self, family: str, record_id: str, now: datetime) -> Record | None:
        """One visible record by family and id, whatever its type in the family (a
        memory, fact, guideline or preference for ``"memory"``). Here: ``get`` of
        each type of the family in turn."""
        types = MEMORY_TYPES if family == "memory" else (family,)
        for record_type in sorted(types):
            found = self.get(family, record_id, record_type, now)
            if found is not None:
                return found
        return None

    @abc.abstractmethod
    def list(self, pred: Predicate, limit: int | None) -> builtins.list[Record]:
        """The newest ``limit`` visible records matching ``pred``, oldest first."""

    @abc.abstractmethod
    def thread_messages(
        self, thread_id: str, start: int | None, end: int | None, now: datetime
    ) -> builtins.list[Record]:
        """A thread's visible messages in insertion order, sliced like ``[start:end]``."""

    @abc.abstractmethod
    def thread_messages_by_seq(
        self,
        thread_id: str,
        after: int | None,
        through: int | None,
        limit: int | None,
        newest: bool,
        now: datetime,
    ) -> builtins.list[Record]:
        """A thread's visible messages with ``after < seq_no <= through`` (None: no
        bound) in insertion order; with ``limit``, only the first ``limit`` of them
        (``newest``: the last ``limit``). Keyed by ``seq_no``, so reading a long
        range page by page is not shifted by concurrent deletes."""

    @abc.abstractmethod
    def count_thread_messages(self, thread_id: str, now: datetime) -> int:
        """How many visible messages a thread holds."""

    @abc.abstractmethod
    def get_thread(self, thread_id: str) -> ThreadRow | None:
        """A thread row by id."""

    @abc.abstractmethod
    def list_threads(
        self, user_id: Maybe[str | None], agent_id: Maybe[str | None]
    ) -> builtins.list[ThreadRow]:
        """Thread rows, oldest first, optionally by user and agent."""

    @abc.abstractmethod
    def rank_vector(
        self, queries: Sequence[Vector], k: int, pred: Predicate
    ) -> builtins.list[builtins.list[tuple[Hashable, float]]]:
        """For each query vector, up to ``k`` ``(record key, cosine distance of the best
        chunk)`` pairs, nearest first."""

    @abc.abstractmethod
    def rank_keyword(
        self, terms: Sequence[str], k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]]:
        """Up to ``k`` ``(record key, BM25 score >= 0)`` pairs, best first, for records
        whose retrieval text holds any of ``terms`` (``store/text.query_terms``)."""

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
        """Both halves of a HYBRID search: ``rank_vector(queries, k, pred)`` (no
        vector lists when ``queries`` is empty) and ``rank_keyword(terms, k, pred)``
        for each entry of ``term_lists``. A back end may run them concurrently
        (SQLite does: docs/sqlite.md#hybrid-search-in-parallel); the lists are the
        same as the two calls give. A back end ranks and never fuses: the lists are
        fused once, by ``store/fusion.py``."""
        vector_lists = self.rank_vector(queries, k, pred) if queries else []
        return vector_lists, [self.rank_keyword(terms, k, pred) for terms in term_lists]

    @abc.abstractmethod
    def load(self, keys: Sequence[Hashable]) -> dict[Hashable, Record]:
        """Records by key."""

    def row_vectors(
        self, keys: Sequence[Hashable], now: datetime
    ) -> dict[Hashable, builtins.list[Vector]]:
        """Each record's stored search-row vectors (float32 arrays of shape ``(dim,)``)
        in row order, a message's context row last (docs/retrieval.md#second-stage-vector-lists);
        rows without a vector or expired at ``now`` (aware datetime) are left out, and so
        is a record without any. Here:
        none (a back end that cannot read them back: the feedback vector list is
        then not searched)."""
        return {}

    shares_loaded: bool = False
    """Whether ``load_for_ranking`` may return objects it returns again later (held
    between searches): store/search.py then reads them only and hands the caller
    records of ``load``."""

    def load_for_ranking(self, keys: Sequence[Hashable]) -> dict[Hashable, Record]:
        """Records by key, to be read while ranking (a HYBRID search's signal lists,
        a reranker's passages), never returned to a caller when ``shares_loaded``.
        Here: ``load(keys)``."""
        return self.load(keys)

    @abc.abstractmethod
    def unembedded(self, limit: int | None) -> builtins.list[tuple[str, str]]:
        """``(family, record id)`` of up to ``limit`` (None: all) records, oldest
        first, that have a search row with text but without a vector."""

    def dump_page(
        self, after: Hashable | None, limit: int, user_ids: Sequence[str] | None
    ) -> tuple[builtins.list[DumpRow], Hashable | None]:
        """Up to ``limit`` stored rows (records and threads, expired ones included)
        after the key ``after`` (None: from the start), in insertion order, with
        their search rows; and the key to pass as ``after`` for the next page.
        ``user_ids``: only those users' threads, the rows of those threads, the rows
        scoped to those users and their profiles (None: everything). Each page is
        one read, so exporting holds no lock between pages (docs/transfer.md)."""
        raise NotImplementedError(f"{type(self).__name__} cannot dump its rows")

    def dump_ids(
        self, after: Hashable | None, limit: int, user_ids: Sequence[str] | None, now: datetime
    ) -> tuple[builtins.list[tuple[str, str, str]], Hashable | None]:
        """``(family, id, record_type)`` of the rows of up to ``limit`` rows
        ``dump_page`` returns after ``after`` that are not expired at ``now`` (an
        import skips those), and the key of the next call (None: no more rows): the
        first pass of a copy that must write nothing when an id clashes
        (docs/transfer.md#copy). Here: ``dump_page``'s rows; a SQL back end reads
        only these columns."""
        rows, key = self.dump_page(after, limit, user_ids)
        live = [
            (r.family, r.id, r.record_type)
            for r in rows
            if r.expires_at is None or r.expires_at > now
        ]
        return live, (key if rows else None)

    def streaming(self) -> AbstractContextManager[None]:
        """Held around each page ``dump_page`` reads and each batch the import writes:
        where a back end maps its file into memory, the pages a whole-store pass
        touches would stay in the process's resident memory until the map is
        dropped, so it reads without the map meanwhile (docs/transfer.md#memory)."""
        return nullcontext()

    def dump_counts(self, user_ids: Sequence[str] | None, now: datetime) -> dict[str, int]:
        """How many rows of each record type ``dump_page`` returns (with the same
        ``user_ids``) that are not expired at ``now``: the dump header's counts."""
        raise NotImplementedError(f"{type(self).__name__} cannot count its rows")

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections."""
