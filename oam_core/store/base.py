"""``OracleMemoryStore``: the public store API, written once for every back end
(docs/store.md). Each method checks its arguments (``oam_core/checks.py``) and hands
typed values to the module that does the work (writes, updates, search, dumprows),
which share the store's ``StoreRuntime`` (runtime.py) and its ``Backend``. Async
twins run the sync method in a worker thread (docs/concepts.md#sync-and-async).
Which module owns what: docs/layout.md.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import numpy.typing as npt

from oam_core import checks
from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.embedder import IEmbedder
from oam_core.apis.records import (
    MEMORY_TYPES,
    PROFILE_TYPES,
    THREAD,
    MessageRecord,
    Record,
    family_of,
)
from oam_core.apis.store import IMemoryStore
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.checks import filter_arg, findable, scope_arg
from oam_core.errors import InvalidArgumentError
from oam_core.rerankers import IReranker, check_reranker
from oam_core.steps import async_twin
from oam_core.store import search as search_flow
from oam_core.store.backend import Predicate
from oam_core.store.dumprows import TransferMethods
from oam_core.store.embedding import reindex as embed_missing
from oam_core.store.fusion import FusionConfig, fusion_arg
from oam_core.store.identity import EmbedderIdentity
from oam_core.store.options import MemoryRetentionConfig, SearchStrategy
from oam_core.store.runtime import StoreRuntime
from oam_core.store.runtime import traced as traced_store
from oam_core.store.strategy import searching_with as strategy_override
from oam_core.store.strategy import strategy_of
from oam_core.store.ttl import Clock
from oam_core.store.updates import update_record
from oam_core.store.versionlinks import MEMORY, unlink_version
from oam_core.store.writes import DEFAULT_BATCH_SIZE, write_batches
from oam_core.store.writes import batch_size as batch_size_arg

MAX_LIST_LIMIT = 10000
"""Default cap of ``list`` when ``limit`` is omitted (docs/store.md#defaults)."""


class OracleMemoryStore(TransferMethods, IMemoryStore):
    """Shared store interface used by ``OracleAgentMemory`` (docs/store.md).

    Subclasses provide a back end (``SQLiteMemoryStore``, ``PostgresMemoryStore``,
    ``OracleDBMemoryStore``); every rule about what is stored, searched and rejected
    lives here, so all back ends behave the same.

    Args:
        embedder: Embeds retrieval text and queries; None when callers pass vectors,
            or for KEYWORD search.
        vector_dim: Vector length; defaults to the embedder's dimension, else is
            learned from the first vector written.
        search_strategy: ``SearchStrategy`` or its name.
        memory_retention_config: Store-wide TTL defaults and cap
            (docs/store.md#ttl-and-retention).
        clock: Zero-argument callable returning an aware ``datetime``; every TTL
            decision uses it (default: UTC now).
        reranker: An ``IReranker`` (e.g. ``CrossEncoderReranker``) that re-scores the
            best ``reranker.candidates`` results of every text query, or None
            (docs/retrieval.md).
        allow_embedder_change: Open a store whose recorded embedder differs from
            ``embedder`` (same dimension), and record ``embedder`` with the next
            vector written (docs/store.md#embedder-identity).
        fusion: How HYBRID fuses its lists (``store.fusion.FusionConfig``: which
            signal and second-stage lists apply, their weights), or None for
            ``DEFAULT_FUSION`` (docs/retrieval.md#one-fusion-for-every-back-end).

    Raises:
        ValueError: for a bad strategy, a non-positive ``vector_dim``, a
            ``vector_dim`` that differs from the embedder's dimension, a reranker
            that is not an ``IReranker``, or a ``fusion`` that is not a
            ``FusionConfig``.
    """

    def __init__(
        self,
        *,
        embedder: IEmbedder | None = None,
        vector_dim: int | None = None,
        search_strategy: SearchStrategy | str = SearchStrategy.VECTOR,
        memory_retention_config: MemoryRetentionConfig | None = None,
        clock: Clock | None = None,
        reranker: IReranker | None = None,
        allow_embedder_change: bool = False,
        fusion: FusionConfig | None = None,
    ) -> None:
        self._fusion = fusion_arg(fusion)
        self.runtime = StoreRuntime(
            embedder=embedder,
            vector_dim=vector_dim,
            clock=clock,
            retention=memory_retention_config,
            allow_embedder_change=allow_embedder_change,
        )
        """What the store's modules share: back end, embedder and its identity,
        vector dimension, clock (store/runtime.py). Back ends set ``runtime.backend``
        when they open."""
        self.search_strategy = SearchStrategy.parse(search_strategy)
        self.reranker: IReranker | None = check_reranker(reranker)
        self.allow_embedder_change = allow_embedder_change

    @property
    def fusion(self) -> FusionConfig:
        """How this store's HYBRID searches fuse their lists; settable, None restoring
        ``DEFAULT_FUSION`` (docs/retrieval.md#one-fusion-for-every-back-end).

        Raises:
            InvalidArgumentError: on setting a value that is not a ``FusionConfig`` or None.
        """
        return self._fusion

    @fusion.setter
    def fusion(self, value: FusionConfig | None) -> None:
        self._fusion = fusion_arg(value)

    @property
    def embedder(self) -> IEmbedder | None:
        """The embedder of retrieval texts and queries, or None."""
        return self.runtime.embedder

    @embedder.setter
    def embedder(self, embedder: IEmbedder | None) -> None:
        self.runtime.embedder = embedder

    @property
    def vector_dim(self) -> int | None:
        """The vector length: given, stored, or learned from the first vector written;
        None before any is known."""
        return self.runtime.vector_dim

    @vector_dim.setter
    def vector_dim(self, dim: int | None) -> None:
        self.runtime.vector_dim = dim

    @property
    def memory_retention_config(self) -> MemoryRetentionConfig:
        """Store-wide TTL defaults and cap (docs/store.md#ttl-and-retention)."""
        return self.runtime.retention

    @memory_retention_config.setter
    def memory_retention_config(self, config: MemoryRetentionConfig) -> None:
        self.runtime.retention = config

    @property
    def embedder_identity(self) -> EmbedderIdentity | None:
        """An oam addition: the embedder recorded with this store's vectors (id, dimension,
        fingerprint), or None before its embedder wrote a vector
        (docs/store.md#embedder-identity)."""
        return self.runtime.identity.stored

    @property
    def chunk_chars(self) -> int:
        """Longest search row the store writes, in characters: the embedder's
        ``chunk_chars`` (``min(4000, max_input_tokens * 3.5)``), or 4000 without one."""
        return self.runtime.chunk_chars

    # -- add ----------------------------------------------------------------------

    @traced_store
    def add(
        self,
        contents: Sequence[str | None],
        record_type: str,
        index_texts: Maybe[Sequence[str | Sequence[str] | None]] = NOT_SET,
        embeddings: Maybe[Sequence[Any] | npt.NDArray[Any] | None] = NOT_SET,
        record_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        thread_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        user_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        agent_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        roles: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        timestamps: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET,
        metadata: Maybe[dict[str, Any] | Sequence[dict[str, Any] | None] | None] = NOT_SET,
        ttl_days: Maybe[int | Sequence[int | None] | None] = NOT_SET,
        ttl_anchor: Maybe[TimeToLiveAnchor | Sequence[TimeToLiveAnchor]] = NOT_SET,
        valid_from: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET,
        valid_until: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET,
        **store_kwargs: Any,
    ) -> builtins.list[str]:
        """Add records of one type (docs/store.md#writing-records).

        Args:
            contents: Stored texts, one per record; ``None`` falls back to
                ``metadata["content"]``; ``""`` is kept. Messages need a str.
            record_type: ``message``, ``memory``, ``guideline``, ``fact``,
                ``preference``, ``user_profile`` or ``agent_profile``.
            index_texts: Retrieval text per record: a string (chunked by the store),
                a list of strings (caller-owned chunks), or None (use the content).
            embeddings: Per record one vector (for the whole retrieval text) or a list
                of chunk vectors (one per caller chunk), or one array of shape
                ``(n, dim)`` (one vector per record: the fastest form,
                docs/sqlite.md#writes); the embedder is not called for them.
                ``None`` = omitted.
            record_ids: All given or all omitted (uuid4); a single string for one record.
            thread_ids, user_ids, agent_ids, roles, timestamps, metadata, ttl_days,
                ttl_anchor: A scalar broadcast over all records, or an aligned list.
                ``roles`` only for messages; ``ttl_*`` only for messages and
                memory-like records (days; docs/store.md#ttl-and-retention).
            valid_from, valid_until: The validity window of memory-like records
                (docs/store.md#validity-windows): a datetime (naive = UTC) or an
                ISO-8601 string, scalar or one per record; None = open.
                ``valid_from`` defaults to the record's timestamp. Given for a
                message or profile (None included) -> InvalidArgumentError.
            **store_kwargs: ``batch_size`` (default 256) rows per executemany.

        Returns:
            The record ids in input order.

        Raises:
            ValueError: on misaligned lists, partial, duplicate or existing ids, a
                vector dimension mismatch, NaN or empty vectors, a message without
                role or content, TTL options on profiles, a TIMESTAMP anchor without
                an ISO-8601 timestamp, invalid metadata, an unparseable window end,
                ``valid_until <= valid_from``, or a window on a message or profile.
                Nothing is written.
        """
        return self.add_batches(
            [
                PendingRecordBatch(
                    texts=contents,
                    record_type=record_type,
                    index_texts=index_texts,
                    embeddings=embeddings,
                    record_ids=record_ids,
                    thread_ids=thread_ids,
                    user_ids=user_ids,
                    agent_ids=agent_ids,
                    roles=roles,
                    timestamps=timestamps,
                    metadata=metadata,
                    ttl_days=ttl_days,
                    ttl_anchor=ttl_anchor,
                    valid_from=valid_from,
                    valid_until=valid_until,
                )
            ],
            **store_kwargs,
        )

    @traced_store
    def add_batches(
        self, batches: Sequence[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """Persist prepared batches in one transaction (docs/store.md#writing-records).

        Args:
            batches: ``PendingRecordBatch`` objects, each with its own record type and
                per-row fields (same rules as ``add``).
            **store_kwargs: ``batch_size`` (positive int, default 256).

        Returns:
            All ids, batch by batch, in input order.

        Raises:
            ValueError: as ``add``, for any row of any batch; an id repeated across
                batches or clashing with a stored record. Nothing is written.
        """
        return write_batches(self.runtime, batches, store_kwargs, replace=False)

    @traced_store
    def upsert(
        self,
        contents: Sequence[str | None],
        record_type: str,
        index_texts: Maybe[Sequence[str | Sequence[str] | None]] = NOT_SET,
        embeddings: Maybe[Sequence[Any] | npt.NDArray[Any] | None] = NOT_SET,
        record_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        thread_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        user_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        agent_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        roles: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        timestamps: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET,
        metadata: Maybe[dict[str, Any] | Sequence[dict[str, Any] | None] | None] = NOT_SET,
        ttl_days: Maybe[int | Sequence[int | None] | None] = NOT_SET,
        ttl_anchor: Maybe[TimeToLiveAnchor | Sequence[TimeToLiveAnchor]] = NOT_SET,
        valid_from: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET,
        valid_until: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET,
        **store_kwargs: Any,
    ) -> builtins.list[str]:
        """An oam addition: ``add``, except that a stored record with one of the ids is replaced,
        all in one transaction (the "add with ids" semantics of framework adapters).

        Same arguments and rules as ``add``, except that ``record_ids`` must give every
        id. A record already stored under one of the ids in the same id family
        (docs/concepts.md#records: any memory-like type for memory-like records),
        expired or not, is
        deleted with its search rows and the new record is written in its place, with
        a new ``created_at``. Duplicate ids within the call are still an error. Two
        writers upserting one id at once both succeed, the later one winning (on a
        server the transaction runs again when another writer stored a new id
        meanwhile: docs/postgres.md#concurrency-and-durability).

        Returns:
            The record ids in input order.

        Raises:
            ValueError: as ``add``, or when ``record_ids`` is omitted or None; nothing
                is written or deleted then.
        """
        if record_ids is NOT_SET or record_ids is None:
            raise InvalidArgumentError("upsert needs record_ids: every record must have an id")
        batch = PendingRecordBatch(
            texts=contents,
            record_type=record_type,
            index_texts=index_texts,
            embeddings=embeddings,
            record_ids=record_ids,
            thread_ids=thread_ids,
            user_ids=user_ids,
            agent_ids=agent_ids,
            roles=roles,
            timestamps=timestamps,
            metadata=metadata,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            valid_from=valid_from,
            valid_until=valid_until,
        )
        return write_batches(self.runtime, [batch], store_kwargs, replace=True)

    @traced_store
    def upsert_batches(
        self, batches: Sequence[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """An oam addition: ``add_batches``, except that stored records with the batches' ids are
        replaced, all in one transaction (as ``upsert``; docs/llama_index.md).

        Raises:
            ValueError: as ``add_batches``, or when a batch gives no ``record_ids``;
                nothing is written or deleted then.
        """
        for i, batch in enumerate(batches):
            if isinstance(batch, PendingRecordBatch) and batch.record_ids in (NOT_SET, None):
                raise InvalidArgumentError(
                    f"upsert_batches needs record_ids in every batch; batches[{i}] has none"
                )
        return write_batches(self.runtime, batches, store_kwargs, replace=True)

    @traced_store
    def add_user(
        self, user_id: str, information: str, metadata: dict[str, Any] | None = None
    ) -> str:
        """Add a user profile; its id is ``user_id`` (docs/store.md#writing-records).

        Raises:
            ValueError: for an empty id, non-str information, or an existing profile.
        """
        return self.add([information], "user_profile", record_ids=user_id, metadata=metadata)[0]

    @traced_store
    def add_agent(
        self, agent_id: str, information: str, metadata: dict[str, Any] | None = None
    ) -> str:
        """Add an agent profile; its id is ``agent_id`` (docs/store.md#writing-records).

        Raises:
            ValueError: for an empty id, non-str information, or an existing profile.
        """
        return self.add([information], "agent_profile", record_ids=agent_id, metadata=metadata)[0]

    # -- update -------------------------------------------------------------------

    @traced_store
    def update(
        self,
        record_type: str,
        record_id: str,
        *,
        text: Maybe[str | None] = NOT_SET,
        index_text: Maybe[str | Sequence[str] | None] = NOT_SET,
        embedding: Maybe[Any] = NOT_SET,
        metadata: Maybe[dict[str, Any] | None] = NOT_SET,
        timestamp: Maybe[str | datetime | None] = NOT_SET,
        ttl_days: Maybe[int | None] = NOT_SET,
        ttl_anchor: Maybe[TimeToLiveAnchor] = NOT_SET,
        valid_from: Maybe[str | datetime | None] = NOT_SET,
        valid_until: Maybe[str | datetime | None] = NOT_SET,
    ) -> int:
        """Update one record's text, retrieval rows, metadata, timestamp or expiry
        (docs/store.md#reading-updating-deleting).

        Args:
            text: New stored text; ``None`` clears it and its search rows.
            index_text: New retrieval text (string: chunked; list: caller chunks);
                ``None``, ``""`` or ``[]`` delete the search rows.
            embedding: One vector or chunk vectors; ``None`` stores rows without
                vectors (alone: clears the vectors of the existing rows).
            metadata: Replaces the whole dict (``None`` clears); keys under
                ``$agent_memory`` are kept.
            timestamp: New event time, an ISO-8601 string or a ``datetime`` (naive =
                UTC), stored normalized to UTC (docs/store.md#timestamps); ``None``
                clears it.
            ttl_days, ttl_anchor: New expiry (days); omit both to keep it.
            valid_from, valid_until: New window ends of a memory-like record
                (docs/store.md#validity-windows); None opens that end. Given for
                a message or profile (None included) -> InvalidArgumentError.

        Returns:
            1 if the record exists (even expired but not yet purged), else 0.

        Raises:
            ValueError: if no field is given, for the rejected combinations of
                docs/store.md#what-is-stored-and-what-is-searched, TTL options on
                non-expiring types, a dimension mismatch,
                an unparseable ``timestamp`` or window end, a TIMESTAMP anchor without
                a timestamp, a window on a message or profile, or a window that would
                end before it starts (against the stored other end).
        """
        return update_record(
            self.runtime,
            record_type,
            record_id,
            text=text,
            index_text=index_text,
            embedding=embedding,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            valid_from=valid_from,
            valid_until=valid_until,
        )

    # -- reads --------------------------------------------------------------------

    @traced_store
    def get(self, record_type: str, record_id: str) -> Record | None:
        """Return a visible record by type and id, or None
        (docs/store.md#reading-updating-deleting).

        Raises:
            ValueError: for an unknown record type.
        """
        record_type = checks.check_record_type(record_type, allow_thread=True)
        if not isinstance(record_id, str):
            raise InvalidArgumentError(f"record_id must be a str, got {record_id!r}")
        if not checks.storable(record_id):  # NUL or a lone surrogate: never stored
            return None
        return self.runtime.backend.get(
            family_of(record_type), record_id, record_type, self.runtime.now()
        )

    @traced_store
    def list(
        self,
        record_type: str,
        limit: Maybe[int | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        metadata_filter: Maybe[dict[str, Any] | None] = NOT_SET,
        *,
        as_of: Maybe[str | datetime | None] = NOT_SET,
    ) -> builtins.list[Record]:
        """List visible records of one type, oldest to newest
        (docs/store.md#reading-updating-deleting, docs/filters.md).

        Args:
            limit: The newest ``limit`` rows (omitted: 10000; None: no cap).
            thread_id, user_id, agent_id: Omitted = no filter; None = only rows where
                that column is NULL; ignored for profiles.
            metadata_filter: Omitted = no filter; None = only rows without
                metadata; a dict in the filter language (docs/filters.md).
            as_of: Omitted or None = every version; a datetime (naive = UTC) or an
                ISO-8601 string = only records valid then
                (docs/store.md#validity-windows).

        Raises:
            ValueError: for an unknown type, a negative or non-int limit, an
                invalid filter, or an unparseable ``as_of``.
        """
        record_type = checks.check_record_type(record_type, allow_thread=True)
        if limit is NOT_SET:
            cap: int | None = MAX_LIST_LIMIT
        elif limit is None:
            cap = None
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidArgumentError(f"limit must be a non-negative int or None, got {limit!r}")
        else:
            cap = checks.clamp_count(limit)
        scoped = record_type not in PROFILE_TYPES
        pred = Predicate(
            record_types=frozenset({record_type}),
            now=self.runtime.now(),
            thread_id=scope_arg(thread_id, "thread_id") if scoped else NOT_SET,
            user_id=scope_arg(user_id, "user_id") if scoped else NOT_SET,
            agent_id=scope_arg(agent_id, "agent_id") if scoped else NOT_SET,
            metadata=filter_arg(metadata_filter),
            valid_at=checks.as_of_arg(as_of, default=None),
        )
        if not findable(pred):
            return []
        return self.runtime.backend.list(pred, cap)

    @traced_store
    def list_thread_messages(
        self,
        thread_id: str,
        last_n: Maybe[int | None] = NOT_SET,
        *,
        start: int | None = None,
        end: int | None = None,
    ) -> builtins.list[MessageRecord]:
        """A thread's visible messages in insertion order
        (docs/store.md#reading-updating-deleting).

        Args:
            thread_id: The thread.
            last_n: Only the last ``last_n`` messages (omitted or None: all).
            start, end: (An oam addition.) Python-slice positions over the thread's messages
                (negative allowed), applied before ``last_n``.

        Raises:
            ValueError: for a negative or non-int ``last_n``, or non-int positions.
        """
        findable = checks.lookup_id(thread_id, "thread_id")
        for name, value in (("start", start), ("end", end)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InvalidArgumentError(f"{name} must be an int or None, got {value!r}")
        if (last_n is not NOT_SET and last_n is not None) and (
            isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 0
        ):
            raise InvalidArgumentError(f"last_n must be a non-negative int or None, got {last_n!r}")
        if not findable:
            return []
        start = None if start is None else checks.clamp_count(start)
        end = None if end is None else checks.clamp_count(end)
        if isinstance(last_n, int):
            last_n = checks.clamp_count(last_n)
        now = self.runtime.now()
        if isinstance(last_n, int) and start is None and end is None:
            if last_n == 0:
                return []
            start = -last_n
            last_n = None
        rows = self.runtime.backend.thread_messages(thread_id, start, end, now)
        if isinstance(last_n, int):
            rows = rows[len(rows) - last_n :] if last_n else []
        return [r for r in rows if isinstance(r, MessageRecord)]

    @traced_store
    def count_thread_messages(self, thread_id: str) -> int:
        """An oam addition: how many visible messages ``thread_id`` holds."""
        if not checks.lookup_id(thread_id, "thread_id"):
            return 0
        return self.runtime.backend.count_thread_messages(thread_id, self.runtime.now())

    # -- search -------------------------------------------------------------------

    @traced_store
    def search(
        self,
        query: str | None = None,
        k: int = 5,
        *,
        query_vector: Any = None,
        thread_id: Maybe[str | None] = NOT_SET,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        exact_user_match: bool = False,
        exact_agent_match: bool = False,
        exact_thread_match: bool = False,
        record_types: Iterable[str] | None = None,
        metadata_filter: Maybe[dict[str, Any] | None] = NOT_SET,
        as_of: Maybe[str | datetime | None] = NOT_SET,
    ) -> builtins.list[tuple[Record, float]]:
        """Rank visible records for a query (docs/store.md#searching; the flow is in
        store/search.py).

        Args:
            query: Non-blank natural-language query; exclusive with ``query_vector``.
            k: Maximum results (>= 1); fewer is normal.
            query_vector: A precomputed query embedding of the store's dimension.
            thread_id, user_id, agent_id: Scope ids, applied only where the matching
                ``exact_*_match`` is True (None then means "unscoped in that
                dimension"); profiles carry their own id as user (agent) scope.
            record_types: A set of types; default messages, memory-like, profiles.
            metadata_filter: A filter (docs/filters.md); applied with the scope
                before top-k.
            as_of: Omitted = current memories only; a datetime (naive = UTC) or an
                ISO-8601 string = those valid then; None = every version
                (docs/store.md#validity-windows). Applied before top-k.

        Returns:
            ``(record, distance)`` pairs by ascending distance, ties by record type
            then id. VECTOR: cosine distance of the best chunk in [0, 2]; KEYWORD and
            HYBRID: ``1 - normalized score`` in [0, 1]; HYBRID also fuses a list of
            the candidates spoken by a participant the query names and one of those
            dated in a span it names (docs/retrieval.md). With a ``reranker``, a text
            query's results are the first stage's best ``reranker.candidates``
            re-scored, distance ``1 - sigmoid(score)`` in [0, 1]
            (docs/retrieval.md).

        Raises:
            ValueError: for none or both of query/query_vector, a blank query, an
                empty, non-finite, all-zero or wrong-dimension vector, k < 1, a bare-string or
                unknown record type, an invalid filter, or a vector query under KEYWORD.
            ConfigurationError: (a ValueError) for a text query to a store without an
                embedder under VECTOR or HYBRID, before anything runs; only a KEYWORD
                store ranks text without one (docs/store.md#searching).
        """
        return search_flow.search(
            self.runtime,
            query,
            k,
            strategy=strategy_of(self),
            reranker=self.reranker,
            query_vector=query_vector,
            thread_id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            exact_user_match=exact_user_match,
            exact_agent_match=exact_agent_match,
            exact_thread_match=exact_thread_match,
            record_types=record_types,
            metadata_filter=metadata_filter,
            as_of=as_of,
            fusion=self.fusion,
        )

    def searching_with(self, strategy: SearchStrategy | str | None) -> AbstractContextManager[None]:
        """Rank this store's searches made inside the ``with`` block (in this thread or
        task) with ``strategy``, None: the store's own; ``search_strategy`` is not
        changed and nothing is recorded (docs/store.md#search-strategies).

        Raises:
            ValueError: for an unknown strategy, or one this store's indexes cannot
                serve (an Oracle store serves only the strategy it was opened with).
        """
        return strategy_override(self, strategy)

    def reindex(self, *, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """An oam addition: embed the search rows stored without a vector (records written
        while the store had no embedder), so vector search finds them
        (docs/store.md#embedder-identity).

        Each batch of records is one transaction; an interrupted run leaves the rest
        for the next call. Rows with an explicit vector are not touched.

        Args:
            batch_size: Records embedded and written per transaction (positive int).

        Returns:
            How many records got vectors.

        Raises:
            ValueError: when the store has no embedder, or ``batch_size`` is not a
                positive int.
        """
        if self.embedder is None:
            raise InvalidArgumentError(
                "reindex needs an embedder: open the store with embedder=..."
            )
        batch_size_arg({"batch_size": batch_size})
        return embed_missing(self.runtime, batch_size)

    # -- deletes ------------------------------------------------------------------

    @traced_store
    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete a record and its search rows in one transaction
        (docs/store.md#reading-updating-deleting).

        For ``user_profile``/``agent_profile`` with ``cascade=True``, also the
        actor's threads (with everything in them) and every remaining record scoped
        to the actor, even when the profile row is missing. ``thread`` deletes the
        thread with its messages and memories, as ``delete_thread``.

        Returns:
            Top-level rows deleted (0 or 1); cascaded rows are not counted.

        Raises:
            InvalidArgumentError: for an unknown record type, a non-string id or a
                ``cascade`` that is not a bool.
        """
        checks.check_bool(cascade, "cascade")
        record_type = checks.check_record_type(record_type, allow_thread=True)
        if not checks.lookup_id(record_id, "record_id"):
            return 0
        if record_type == THREAD:
            return self.delete_thread(record_id)
        with self.runtime.backend.transaction() as tx:
            if family_of(record_type) == MEMORY:
                unlink_version(tx, record_id, record_type=record_type)
            deleted = tx.delete_record(family_of(record_type), record_id, record_type, NOT_SET)
            if cascade and record_type in PROFILE_TYPES:
                column = "user_id" if record_type == "user_profile" else "agent_id"
                tx.delete_actor_scope(column, record_id)
        return deleted

    @traced_store
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread row, its messages, memory-like records and all their search
        rows in one transaction (docs/store.md#reading-updating-deleting).

        Returns:
            1 if the thread row existed, else 0 (children are removed either way).
        """
        if not checks.lookup_id(thread_id, "thread_id"):
            return 0
        with self.runtime.backend.transaction() as tx:
            return tx.delete_thread(thread_id)

    @traced_store
    def delete_records(
        self, record_type: str, record_ids: Sequence[str], *, thread_id: Maybe[str] = NOT_SET
    ) -> int:
        """An oam addition: delete several records of one type and their search rows in one
        transaction (``delete`` rules per record; no cascades).

        Args:
            record_type: The type the records must have; rows of another type that
                share an id are left alone.
            record_ids: The ids; unknown ids are skipped. An empty list deletes
                nothing.
            thread_id: Only delete records whose thread_id equals it (omitted: any).

        Returns:
            The number of records deleted.

        Raises:
            ValueError: for an unknown record type, ``thread``, a bare string or a
                non-string id (nothing is deleted then).
        """
        record_type = checks.check_record_type(record_type, method="delete_records")
        if isinstance(record_ids, (str, bytes)) or not isinstance(record_ids, Sequence):
            raise InvalidArgumentError(f"record_ids must be a list of str, got {record_ids!r}")
        ids = [record_id for record_id in record_ids if checks.lookup_id(record_id, "record_ids[]")]
        if thread_id is not NOT_SET and not checks.lookup_id(thread_id, "thread_id"):
            return 0
        family = family_of(record_type)
        with self.runtime.backend.transaction() as tx:
            return tx.delete_records(family, list(dict.fromkeys(ids)), record_type, thread_id)

    @traced_store
    def purge_expired(self) -> int:
        """Delete every expired record and its search rows now
        (docs/store.md#ttl-and-retention).

        Returns:
            The number of records removed.
        """
        with self.runtime.backend.transaction() as tx:
            return tx.purge(self.runtime.now())

    def clock_now(self) -> datetime:
        """An oam addition: the store clock's current time (aware UTC), the "now" of
        every TTL decision (docs/store.md#ttl-and-retention)."""
        return self.runtime.now()

    def close(self) -> None:
        """Release the database connection(s)."""
        self.runtime.backend.close()

    def __enter__(self) -> OracleMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async twins (docs/concepts.md#sync-and-async): the sync method in a worker thread

    add_async = async_twin(add)
    reindex_async = async_twin(reindex)
    add_batches_async = async_twin(add_batches)
    add_user_async = async_twin(add_user)
    add_agent_async = async_twin(add_agent)
    update_async = async_twin(update)
    get_async = async_twin(get)
    list_async = async_twin(list)
    list_thread_messages_async = async_twin(list_thread_messages)
    count_thread_messages_async = async_twin(count_thread_messages)
    search_async = async_twin(search)
    delete_async = async_twin(delete)
    delete_thread_async = async_twin(delete_thread)
    upsert_async = async_twin(upsert)
    upsert_batches_async = async_twin(upsert_batches)
    delete_records_async = async_twin(delete_records)
    purge_expired_async = async_twin(purge_expired)


__all__ = ["MAX_LIST_LIMIT", "MEMORY_TYPES", "OracleMemoryStore"]
