"""``OracleMemoryStore``: the public store API, written once for every back end (SPEC §3).

This class validates and plans every call (planning.py), calls the embedder once per
write, and hands plans to a ``Backend`` (backend.py) that executes them in one
transaction. Async twins run the sync method in a worker thread (SPEC §9), so both
share one implementation and the event loop never blocks on the database.
"""

from __future__ import annotations

import builtins
import json
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from oam_core._async import async_twin
from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.embedder import IEmbedder
from oam_core.apis.records import (
    EXPIRING_TYPES,
    MEMORY_TYPES,
    MESSAGE,
    PROFILE_TYPES,
    SEARCHABLE_TYPES,
    THREAD,
    MessageRecord,
    Record,
    ThreadRow,
    family_of,
)
from oam_core.apis.store import IMemoryStore
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.rerankers import IReranker, check_reranker
from oam_core.store import planning
from oam_core.store.backend import Backend, Predicate, StoredRow, Tx
from oam_core.store.chunking import chunk_text
from oam_core.store.filters import parse_filter
from oam_core.store.identity import META_KEY as IDENTITY_META_KEY
from oam_core.store.identity import PROBE_TEXT, EmbedderCheck, EmbedderIdentity
from oam_core.store.options import MemoryRetentionConfig, SearchStrategy
from oam_core.store.planning import ChunkPlan, PlanContext, RowPlan
from oam_core.store.ranking import normalized_distances, rrf, rrf_distance
from oam_core.store.signals import POOL, passage_text, signal_lists
from oam_core.store.text import query_terms
from oam_core.store.timestamps import normalize_timestamp
from oam_core.store.ttl import Clock, iso, read_clock, utc_now
from oam_core.telemetry import traced_embed, traced_store

MAX_LIST_LIMIT = 10000
"""Default cap of ``list`` when ``limit`` is omitted (SPEC §10)."""
DEFAULT_BATCH_SIZE = 256
"""Default ``batch_size`` store kwarg (SPEC §3.2)."""
_HYBRID_DEPTH = 50

T = TypeVar("T")


class OracleMemoryStore(IMemoryStore):
    """Shared store interface used by ``OracleAgentMemory`` (SPEC §3; seed 004).

    Subclasses provide a back end (``SQLiteMemoryStore``, ``PostgresMemoryStore``,
    ``OracleDBMemoryStore``); every rule about what is stored, searched and rejected
    lives here, so all back ends behave the same.

    Args:
        embedder: Embeds retrieval text and queries; None when callers pass vectors,
            or for KEYWORD search.
        vector_dim: Vector length; defaults to the embedder's dimension, else is
            learned from the first vector written.
        search_strategy: ``SearchStrategy`` or its name.
        memory_retention_config: Store-wide TTL defaults and cap (SPEC §3.7).
        clock: Zero-argument callable returning an aware ``datetime``; every TTL
            decision uses it (default: UTC now).
        reranker: An ``IReranker`` (e.g. ``CrossEncoderReranker``) that re-scores the
            best ``reranker.candidates`` results of every text query, or None
            (docs/retrieval.md).
        allow_embedder_change: Open a store whose recorded embedder differs from
            ``embedder`` (same dimension), and record ``embedder`` with the next
            vector written (docs/store.md#embedder-identity).

    Raises:
        ValueError: for a bad strategy, a non-positive ``vector_dim``, a
            ``vector_dim`` that differs from the embedder's dimension, or a reranker
            that is not an ``IReranker``.
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
    ) -> None:
        if not isinstance(allow_embedder_change, bool):
            raise ValueError(f"allow_embedder_change must be a bool, got {allow_embedder_change!r}")
        if embedder is not None and not isinstance(embedder, IEmbedder):
            raise ValueError(f"embedder must be an IEmbedder or None, got {embedder!r}")
        if vector_dim is not None and (
            isinstance(vector_dim, bool) or not isinstance(vector_dim, int) or vector_dim < 1
        ):
            raise ValueError(f"vector_dim must be a positive int or None, got {vector_dim!r}")
        if embedder is not None:
            dim = embedder.embedding_dimension
            if vector_dim is not None and vector_dim != dim:
                raise ValueError(
                    f"vector_dim {vector_dim} does not match the embedder's dimension {dim}"
                )
            vector_dim = dim
        if memory_retention_config is not None and not isinstance(
            memory_retention_config, MemoryRetentionConfig
        ):
            raise ValueError(
                "memory_retention_config must be a MemoryRetentionConfig, "
                f"got {memory_retention_config!r}"
            )
        self.embedder = embedder
        self.vector_dim: int | None = vector_dim
        self.search_strategy = SearchStrategy.parse(search_strategy)
        self.memory_retention_config = memory_retention_config or MemoryRetentionConfig()
        self._clock: Clock = clock or utc_now
        self.reranker: IReranker | None = check_reranker(reranker)
        self.allow_embedder_change = allow_embedder_change
        self._embedder_check = EmbedderCheck()
        self._unembedded_checked = False

    # -- back end hooks -------------------------------------------------------------

    @property
    def _backend(self) -> Backend:
        raise NotImplementedError

    def _native_search(
        self, query: str | None, query_vector: Any, k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]] | None:
        """Back end hook: ``(record key, distance)`` pairs from a native ranking (such
        as Oracle's hybrid vector index), or None to rank with the shared logic below.
        Called after every argument check."""
        return None

    def _remember_vector_dim(self, dim: int) -> None:
        """Persist a dimension learned from the first explicit vector (back end hook)."""
        self.vector_dim = dim

    def _adopt_embedder_identity(self, meta_value: str | None, where: str) -> None:
        """Back ends call this at open with the schema metadata's ``embedder`` value.

        Raises:
            ValueError: naming both embedders when the store's embedder is not the
                recorded one (unless ``allow_embedder_change``).
        """
        self._embedder_check.where = where
        self._embedder_check.adopt(
            meta_value, self.embedder, allow_change=self.allow_embedder_change
        )

    @property
    def embedder_identity(self) -> EmbedderIdentity | None:
        """[oam] The embedder recorded with this store's vectors (id, dimension,
        fingerprint), or None before its embedder wrote a vector
        (docs/store.md#embedder-identity)."""
        return self._embedder_check.stored

    # -- helpers ------------------------------------------------------------------

    def _now(self) -> datetime:
        return read_clock(self._clock)

    @property
    def chunk_chars(self) -> int:
        """Longest search row the store writes, in characters: the embedder's
        ``chunk_chars`` (``min(4000, max_input_tokens * 3.5)``), or 4000 without one."""
        return self.embedder.chunk_chars if self.embedder is not None else 4000

    def _ctx(self) -> PlanContext:
        return PlanContext(
            chunk_chars=self.chunk_chars,
            vector_dim=self.vector_dim,
            has_embedder=self.embedder is not None,
            retention=self.memory_retention_config,
            now=self._now(),
        )

    def _embed_plans(self, plans: Iterable[ChunkPlan]) -> None:
        todo = [c for c in plans if c.needs_embedding and c.text]
        if not todo or self.embedder is None:
            return
        vectors = self._embed_texts([c.text or "" for c in todo], is_query=False)
        if vectors.shape != (len(todo), self.vector_dim):
            raise ValueError(
                f"embedder returned shape {vectors.shape}, expected ({len(todo)}, {self.vector_dim})"
            )
        for c, v in zip(todo, vectors, strict=True):
            c.vector = v
            c.needs_embedding = False

    def _embed_texts(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        """Every embedder call of the store: float32 array of shape ``(len(texts),
        dim)``. The first call of a store object also embeds the identity probe, to
        check the recorded embedder or to record this one with a first write."""
        embedder = self.embedder
        assert embedder is not None
        check = self._embedder_check
        if not check.wants_probe(writing=not is_query):
            return np.asarray(traced_embed(embedder, texts, is_query=is_query), dtype=np.float32)
        if is_query:  # the probe is a document embedding: its own call
            probe = np.asarray(traced_embed(embedder, [PROBE_TEXT]), dtype=np.float32)[0]
            vectors = np.asarray(traced_embed(embedder, texts, is_query=True), dtype=np.float32)
        else:
            both = np.asarray(traced_embed(embedder, [*texts, PROBE_TEXT]), dtype=np.float32)
            vectors, probe = both[:-1], both[-1]
        check.accept_probe(embedder, probe)
        return vectors

    def _write_identity(self, tx: Tx) -> None:
        """Record the embedder's identity in the write transaction that stores its
        first vectors (see ``_embed_texts``)."""
        pending = self._embedder_check.pending()
        if pending is not None:
            tx.write_meta({IDENTITY_META_KEY: pending})

    def _learn_dim(self, plans: Iterable[ChunkPlan]) -> None:
        if self.vector_dim is None:
            for c in plans:
                if c.vector is not None:
                    self._remember_vector_dim(int(c.vector.shape[0]))
                    return

    # -- add ----------------------------------------------------------------------

    @traced_store
    def add(
        self,
        contents: Sequence[str | None],
        record_type: str,
        index_texts: Maybe[Sequence[str | Sequence[str] | None]] = NOT_SET,
        embeddings: Maybe[Sequence[Any] | None] = NOT_SET,
        record_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        thread_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        user_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        agent_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        roles: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        timestamps: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET,
        metadata: Maybe[dict[str, Any] | Sequence[dict[str, Any] | None] | None] = NOT_SET,
        ttl_days: Maybe[int | Sequence[int | None] | None] = NOT_SET,
        ttl_anchor: Maybe[TimeToLiveAnchor | Sequence[TimeToLiveAnchor]] = NOT_SET,
        **store_kwargs: Any,
    ) -> builtins.list[str]:
        """Add records of one type (SPEC §3.1-§3.2; seed 004 ``add``).

        Args:
            contents: Stored texts, one per record; ``None`` falls back to
                ``metadata["content"]``; ``""`` is kept. Messages need a str.
            record_type: ``message``, ``memory``, ``guideline``, ``fact``,
                ``preference``, ``user_profile`` or ``agent_profile``.
            index_texts: Retrieval text per record: a string (chunked by the store),
                a list of strings (caller-owned chunks), or None (use the content).
            embeddings: Per record one vector (for the whole retrieval text) or a list
                of chunk vectors (one per caller chunk); the embedder is not called
                for them. ``None`` = omitted.
            record_ids: All given or all omitted (uuid4); a single string for one record.
            thread_ids, user_ids, agent_ids, roles, timestamps, metadata, ttl_days,
                ttl_anchor: A scalar broadcast over all records, or an aligned list.
                ``roles`` only for messages; ``ttl_*`` only for messages and
                memory-like records (days; see SPEC §3.7).
            **store_kwargs: ``batch_size`` (default 256) rows per executemany.

        Returns:
            The record ids in input order.

        Raises:
            ValueError: on misaligned lists, partial, duplicate or existing ids, a
                vector dimension mismatch, NaN or empty vectors, a message without
                role or content, TTL options on profiles, a TIMESTAMP anchor without
                an ISO-8601 timestamp, or invalid metadata. Nothing is written.
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
                )
            ],
            **store_kwargs,
        )

    @traced_store
    def add_batches(
        self, batches: Sequence[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """Persist prepared batches in one transaction (SPEC §3.2; seed 004).

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
        return self._write_batches(batches, store_kwargs, replace=False)

    def _write_batches(
        self, batches: Sequence[PendingRecordBatch], store_kwargs: dict[str, Any], *, replace: bool
    ) -> builtins.list[str]:
        batch_size = self._batch_size(store_kwargs)
        planned = self._plan_batches(batches)
        with self._backend.transaction() as tx:
            self._insert_planned(tx, planned, batch_size, replace=replace)
        self._embedder_check.recorded()
        return [p.id for p in planned.plans]

    def _plan_batches(
        self, batches: Sequence[PendingRecordBatch], *, library: bool = False
    ) -> _Planned:
        """Validate and plan ``batches`` (embedding included); nothing is written.
        ``library``: the library's own write, which may set ``$agent_memory``."""
        if not isinstance(batches, (list, tuple)):
            raise ValueError(f"batches must be a list of PendingRecordBatch, got {batches!r}")
        ctx = self._ctx()
        plans: builtins.list[RowPlan] = []
        for i, batch in enumerate(batches):
            if not isinstance(batch, PendingRecordBatch):
                raise ValueError(f"batches[{i}] must be a PendingRecordBatch, got {batch!r}")
            plans.extend(
                planning.plan_add(
                    batch.texts,
                    batch.record_type,
                    index_texts=batch.index_texts,
                    embeddings=batch.embeddings,
                    record_ids=batch.record_ids,
                    thread_ids=batch.thread_ids,
                    user_ids=batch.user_ids,
                    agent_ids=batch.agent_ids,
                    roles=batch.roles,
                    timestamps=batch.timestamps,
                    metadata=batch.metadata,
                    ttl_days=batch.ttl_days,
                    ttl_anchor=batch.ttl_anchor,
                    ctx=ctx,
                    library=library,
                )
            )
        by_family: dict[str, builtins.list[str]] = {}
        for p in plans:
            by_family.setdefault(p.family, []).append(p.id)
        for family, ids in by_family.items():
            if len(set(ids)) != len(ids):
                raise ValueError(f"duplicate record ids across batches in family {family!r}")
        chunks = [c for p in plans for c in p.chunks]
        planning.check_dims([c.vector for c in chunks if c.vector is not None], self.vector_dim)
        self._embed_plans(chunks)
        return _Planned(plans, by_family, chunks, ctx.now)

    def _insert_planned(
        self, tx: Tx, planned: _Planned, batch_size: int, *, replace: bool = False
    ) -> None:
        for family, ids in planned.by_family.items():
            clash = tx.existing_ids(family, ids)
            if clash and not replace:
                raise ValueError(f"record ids already exist: {sorted(clash)}")
            for record_id in sorted(clash):
                tx.delete_record(family, record_id, None, NOT_SET)
        tx.insert(planned.plans, planned.now, batch_size)
        self._learn_dim(planned.chunks)
        self._write_identity(tx)

    @traced_store
    def commit_thread_pass(
        self,
        thread_id: str,
        *,
        expected_state: dict[str, Any],
        state: dict[str, Any],
        batches: Sequence[PendingRecordBatch] = (),
        reserved_updates: Sequence[tuple[str, str, dict[str, Any]]] = (),
    ) -> builtins.list[str] | None:
        """[oam] Write a pipeline pass of a thread atomically (SPEC §7; DESIGN
        "Extraction pipeline").

        In ONE transaction: the thread's ``state`` is replaced if (and only if) the
        stored state still equals ``expected_state`` (compare-and-set: the watermark
        advances exactly once), the derived records of ``batches`` are inserted, and
        each ``(record_type, record_id, keys)`` of ``reserved_updates`` merges ``keys``
        into that record's ``metadata["$agent_memory"]`` (e.g. marking a memory
        superseded). If the compare-and-set fails nothing is written.

        Args:
            thread_id: The thread whose row holds the pipeline state.
            expected_state: The state the pass was computed from.
            state: The new state (JSON object).
            batches: Records to insert (same rules as ``add_batches``).
            reserved_updates: Library-owned metadata changes; unknown records are
                skipped (they may have been deleted meanwhile).

        Returns:
            The inserted ids, or None when the state had changed (another pass won).

        Raises:
            ValueError: for invalid batches, non-JSON state or keys, or an unknown
                thread; nothing is written.
        """
        planning.check_id(thread_id, "thread_id")
        for name, value in (("state", state), ("expected_state", expected_state)):
            planning.dump_metadata(value, name)
        for i, (record_type, record_id, keys) in enumerate(reserved_updates):
            if record_type not in MEMORY_TYPES and record_type != MESSAGE:
                raise ValueError(
                    f"reserved_updates[{i}]: record_type must be a message or memory type, "
                    f"got {record_type!r}"
                )
            planning.check_id(record_id, f"reserved_updates[{i}] record_id")
            planning.dump_metadata(
                {planning.RESERVED_KEY: keys}, f"reserved_updates[{i}]", library=True
            )
        planned = self._plan_batches(batches, library=True)
        with self._backend.transaction() as tx:
            won = bool(tx.update_thread(thread_id, NOT_SET, state, expected_state))
            if won:
                self._commit_pass_rows(tx, planned, reserved_updates)
        if won:
            self._embedder_check.recorded()
            return [p.id for p in planned.plans]
        if self._backend.get_thread(thread_id) is None:
            raise ValueError(f"thread {thread_id!r} does not exist")
        return None

    def _commit_pass_rows(
        self,
        tx: Tx,
        planned: _Planned,
        reserved_updates: Sequence[tuple[str, str, dict[str, Any]]],
    ) -> None:
        self._insert_planned(tx, planned, DEFAULT_BATCH_SIZE)
        for record_type, record_id, keys in reserved_updates:
            row = tx.fetch(family_of(record_type), record_id)
            if row is None or row.record_type != record_type:
                continue
            meta = dict(row.metadata or {})
            reserved = meta.get(planning.RESERVED_KEY)
            merged = dict(reserved) if isinstance(reserved, dict) else {}
            merged.update(keys)
            meta[planning.RESERVED_KEY] = merged
            tx.update_row(row, {"metadata": json.dumps(meta, ensure_ascii=False)})

    @traced_store
    def upsert(
        self,
        contents: Sequence[str | None],
        record_type: str,
        index_texts: Maybe[Sequence[str | Sequence[str] | None]] = NOT_SET,
        embeddings: Maybe[Sequence[Any] | None] = NOT_SET,
        record_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        thread_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        user_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        agent_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        roles: Maybe[str | Sequence[str | None] | None] = NOT_SET,
        timestamps: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET,
        metadata: Maybe[dict[str, Any] | Sequence[dict[str, Any] | None] | None] = NOT_SET,
        ttl_days: Maybe[int | Sequence[int | None] | None] = NOT_SET,
        ttl_anchor: Maybe[TimeToLiveAnchor | Sequence[TimeToLiveAnchor]] = NOT_SET,
        **store_kwargs: Any,
    ) -> builtins.list[str]:
        """[oam] ``add``, except that a stored record with one of the ids is replaced,
        all in one transaction (the "add with ids" semantics of framework adapters).

        Same arguments and rules as ``add``, except that ``record_ids`` must give every
        id. A record already stored under one of the ids in the same id family
        (SPEC §2: any memory-like type for memory-like records), expired or not, is
        deleted with its search rows and the new record is written in its place, with
        a new ``created_at``. Duplicate ids within the call are still an error.

        Returns:
            The record ids in input order.

        Raises:
            ValueError: as ``add``, or when ``record_ids`` is omitted or None; nothing
                is written or deleted then.
        """
        if record_ids is NOT_SET or record_ids is None:
            raise ValueError("upsert needs record_ids: every record must have an id")
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
        )
        return self._write_batches([batch], store_kwargs, replace=True)

    @traced_store
    def upsert_batches(
        self, batches: Sequence[PendingRecordBatch], **store_kwargs: Any
    ) -> builtins.list[str]:
        """[oam] ``add_batches``, except that stored records with the batches' ids are
        replaced, all in one transaction (as ``upsert``; docs/llama_index.md).

        Raises:
            ValueError: as ``add_batches``, or when a batch gives no ``record_ids``;
                nothing is written or deleted then.
        """
        for i, batch in enumerate(batches):
            if isinstance(batch, PendingRecordBatch) and batch.record_ids in (NOT_SET, None):
                raise ValueError(
                    f"upsert_batches needs record_ids in every batch; batches[{i}] has none"
                )
        return self._write_batches(batches, store_kwargs, replace=True)

    @staticmethod
    def _batch_size(store_kwargs: dict[str, Any]) -> int:
        unknown = set(store_kwargs) - {"batch_size"}
        if unknown:
            raise TypeError(f"unexpected store keyword arguments: {sorted(unknown)}")
        size = store_kwargs.get("batch_size", DEFAULT_BATCH_SIZE)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"batch_size must be a positive int, got {size!r}")
        return size

    @traced_store
    def add_user(
        self, user_id: str, information: str, metadata: dict[str, Any] | None = None
    ) -> str:
        """Add a user profile; its id is ``user_id`` (seed 004 ``add_user``).

        Raises:
            ValueError: for an empty id, non-str information, or an existing profile.
        """
        return self.add([information], "user_profile", record_ids=user_id, metadata=metadata)[0]

    @traced_store
    def add_agent(
        self, agent_id: str, information: str, metadata: dict[str, Any] | None = None
    ) -> str:
        """Add an agent profile; its id is ``agent_id`` (seed 004 ``add_agent``).

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
    ) -> int:
        """Update one record's text, retrieval rows, metadata, timestamp or expiry
        (SPEC §3.1, §3.3, §3.7; seed 004 ``update``).

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

        Returns:
            1 if the record exists (even expired but not yet purged), else 0.

        Raises:
            ValueError: if no field is given, for the rejected combinations of
                SPEC §3.1, TTL options on non-expiring types, a dimension mismatch,
                an unparseable ``timestamp``, or a TIMESTAMP anchor without a timestamp.
        """
        record_type = planning.check_record_type(record_type)
        findable = planning.lookup_id(record_id, "record_id")
        given = {
            k: v
            for k, v in {
                "text": text,
                "index_text": index_text,
                "embedding": embedding,
                "metadata": metadata,
                "timestamp": timestamp,
                "ttl_days": ttl_days,
                "ttl_anchor": ttl_anchor,
            }.items()
            if v is not NOT_SET
        }
        if not given:
            raise ValueError(
                "update needs at least one of text, index_text, embedding, "
                "metadata, timestamp, ttl_days, ttl_anchor"
            )
        if text is None:
            if record_type in PROFILE_TYPES:
                raise ValueError(f"text=None is not allowed on {record_type} records")
            if index_text is not NOT_SET and index_text is not None:
                raise ValueError("text=None cannot be combined with a non-null index_text")
            if embedding is not NOT_SET and embedding is not None:
                raise ValueError("text=None cannot be combined with a non-null embedding")
        if text is not NOT_SET and text is not None:
            if not isinstance(text, str):
                raise ValueError(f"text must be a str or None, got {text!r}")
            planning.check_text(text, "text")
        if record_type == MESSAGE and text is None:
            raise ValueError("text=None is not allowed on messages (content must be a str)")
        if index_text is None and embedding is not NOT_SET and embedding is not None:
            vectors = planning.split_vectors(embedding, "embedding")
            if isinstance(vectors, np.ndarray) or vectors:
                raise ValueError("index_text=None deletes the search rows; no embedding allowed")
        if timestamp is not NOT_SET:
            if isinstance(timestamp, str):
                planning.check_text(timestamp, "timestamp")
            timestamp = normalize_timestamp(timestamp, "timestamp")
        meta_json = planning.dump_metadata(metadata) if metadata is not NOT_SET else None
        if record_type not in EXPIRING_TYPES and (
            ttl_days is not NOT_SET or ttl_anchor is not NOT_SET
        ):
            raise ValueError(
                f"{record_type} records do not expire; ttl_days/ttl_anchor not allowed"
            )

        ctx = self._ctx()
        new_chunks: builtins.list[ChunkPlan] | None = None  # None: keep the search rows
        embedding_only = text is NOT_SET and index_text is NOT_SET
        if text is None or (index_text is None and index_text is not NOT_SET):
            new_chunks = []
        elif not embedding_only:
            source: Any = index_text if index_text is not NOT_SET else text
            chunks, owned = planning.retrieval_chunks(source, None, ctx, "index_text")
            whole = source if isinstance(source, str) else None
            new_chunks = planning.attach_vectors(chunks, owned, embedding, whole, ctx, "embedding")
        explicit: builtins.list[Any] | None = None
        if embedding_only and embedding is not NOT_SET and embedding is not None:
            split = planning.split_vectors(embedding, "embedding")
            explicit = [split] if isinstance(split, np.ndarray) else split
            planning.check_dims(explicit, self.vector_dim)
        if new_chunks is not None:
            planning.check_dims(
                [c.vector for c in new_chunks if c.vector is not None], self.vector_dim
            )
        if not findable:  # no record can have this id
            return 0
        if new_chunks is not None:
            self._embed_plans(new_chunks)

        with self._backend.transaction() as tx:
            row = tx.fetch(family_of(record_type), record_id)
            if row is None or row.record_type != record_type:
                return 0
            fields: dict[str, Any] = {}
            if text is not NOT_SET:
                fields["content"] = text
            if metadata is not NOT_SET:
                fields["metadata"] = _keep_reserved(meta_json, row.metadata)
            if timestamp is not NOT_SET:
                fields["timestamp"] = timestamp
            if ttl_days is not NOT_SET or ttl_anchor is not NOT_SET:
                event_ts = timestamp if timestamp is not NOT_SET else row.timestamp
                fields["expires_at"] = planning.resolve_ttl(
                    record_type,
                    ttl_days,
                    ttl_anchor,
                    event_ts,
                    row.created_at,
                    self.memory_retention_config,
                    "update",
                )
            if embedding_only and embedding is not NOT_SET:
                new_chunks = self._revector(tx, row, explicit)
            if fields:
                tx.update_row(row, fields)
            if new_chunks is not None:
                tx.replace_chunks(row, new_chunks)
                self._learn_dim(new_chunks)
                self._write_identity(tx)
        self._embedder_check.recorded()
        return 1

    @staticmethod
    def _revector(
        tx: Tx, row: StoredRow, vectors: builtins.list[Any] | None
    ) -> builtins.list[ChunkPlan]:
        texts = tx.chunk_texts(row.key)
        if vectors is None:
            return [ChunkPlan(t) for t in texts]
        if len(vectors) == 1 and not texts:
            return [ChunkPlan(None, vectors[0])]
        if len(vectors) != len(texts):
            raise ValueError(
                f"embedding has {len(vectors)} vectors but the record has {len(texts)} search rows"
            )
        return [ChunkPlan(t, v) for t, v in zip(texts, vectors, strict=True)]

    # -- reads --------------------------------------------------------------------

    @traced_store
    def get(self, record_type: str, record_id: str) -> Record | None:
        """Return a visible record by type and id, or None (SPEC §3.4).

        Raises:
            ValueError: for an unknown record type.
        """
        record_type = planning.check_record_type(record_type, allow_thread=True)
        if not isinstance(record_id, str):
            raise ValueError(f"record_id must be a str, got {record_id!r}")
        if not planning.storable(record_id):  # NUL or a lone surrogate: never stored
            return None
        return self._backend.get(family_of(record_type), record_id, record_type, self._now())

    @traced_store
    def list(
        self,
        record_type: str,
        limit: Maybe[int | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        metadata_filter: Maybe[dict[str, Any] | None] = NOT_SET,
    ) -> builtins.list[Record]:
        """List visible records of one type, oldest to newest (SPEC §3.4, §4).

        Args:
            limit: The newest ``limit`` rows (omitted: 10000; None: no cap).
            thread_id, user_id, agent_id: Omitted = no filter; None = only rows where
                that column is NULL; ignored for profiles.
            metadata_filter: Omitted = no filter; None = only rows without
                metadata; a dict in the SPEC §4 language.

        Raises:
            ValueError: for an unknown type, a negative or non-int limit, or an
                invalid filter.
        """
        record_type = planning.check_record_type(record_type, allow_thread=True)
        if limit is NOT_SET:
            cap: int | None = MAX_LIST_LIMIT
        elif limit is None:
            cap = None
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
        else:
            cap = planning.clamp_count(limit)
        scoped = record_type not in PROFILE_TYPES
        pred = Predicate(
            record_types=frozenset({record_type}),
            now=self._now(),
            thread_id=_scope_arg(thread_id, "thread_id") if scoped else NOT_SET,
            user_id=_scope_arg(user_id, "user_id") if scoped else NOT_SET,
            agent_id=_scope_arg(agent_id, "agent_id") if scoped else NOT_SET,
            metadata=_filter_arg(metadata_filter),
        )
        if not _findable(pred):
            return []
        return self._backend.list(pred, cap)

    @traced_store
    def list_thread_messages(
        self,
        thread_id: str,
        last_n: Maybe[int | None] = NOT_SET,
        *,
        start: int | None = None,
        end: int | None = None,
    ) -> builtins.list[MessageRecord]:
        """A thread's visible messages in insertion order (SPEC §3.4).

        Args:
            thread_id: The thread.
            last_n: Only the last ``last_n`` messages (omitted or None: all).
            start, end: [oam] Python-slice positions over the thread's messages
                (negative allowed), applied before ``last_n``.

        Raises:
            ValueError: for a negative or non-int ``last_n``, or non-int positions.
        """
        findable = planning.lookup_id(thread_id, "thread_id")
        for name, value in (("start", start), ("end", end)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{name} must be an int or None, got {value!r}")
        if (last_n is not NOT_SET and last_n is not None) and (
            isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 0
        ):
            raise ValueError(f"last_n must be a non-negative int or None, got {last_n!r}")
        if not findable:
            return []
        start = None if start is None else planning.clamp_count(start)
        end = None if end is None else planning.clamp_count(end)
        if isinstance(last_n, int):
            last_n = planning.clamp_count(last_n)
        now = self._now()
        if isinstance(last_n, int) and start is None and end is None:
            if last_n == 0:
                return []
            start = -last_n
            last_n = None
        rows = self._backend.thread_messages(thread_id, start, end, now)
        if isinstance(last_n, int):
            rows = rows[len(rows) - last_n :] if last_n else []
        return [r for r in rows if isinstance(r, MessageRecord)]

    @traced_store
    def list_thread_messages_by_seq(
        self,
        thread_id: str,
        *,
        after: int | None = None,
        through: int | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> builtins.list[MessageRecord]:
        """[oam] A thread's visible messages by ``seq_no`` range, in insertion order
        (docs/store.md, "Reading a thread by sequence number").

        ``seq_no`` never changes and is never reused, so reading a long thread page
        by page (``after`` = the last ``seq_no`` of the previous page) neither skips
        nor repeats a message when others are deleted meanwhile, unlike positions.

        Args:
            thread_id: The thread.
            after: Only messages with ``seq_no > after`` (None: from the first).
            through: Only messages with ``seq_no <= through`` (None: to the last).
            limit: At most this many (>= 0; None: all): the oldest of the range, or
                the newest with ``newest=True``. Huge values are clamped.
            newest: Take the last ``limit`` of the range instead of the first.

        Raises:
            ValueError: for a blank ``thread_id``, non-int bounds or a negative limit.
        """
        findable = planning.lookup_id(thread_id, "thread_id")
        for name, value in (("after", after), ("through", through), ("limit", limit)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{name} must be an int or None, got {value!r}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0 or None, got {limit!r}")
        if not isinstance(newest, bool):
            raise ValueError(f"newest must be a bool, got {newest!r}")
        if not findable or limit == 0:
            return []
        rows = self._backend.thread_messages_by_seq(
            thread_id,
            None if after is None else planning.clamp_count(after),
            None if through is None else planning.clamp_count(through),
            None if limit is None else planning.clamp_count(limit),
            newest,
            self._now(),
        )
        return [r for r in rows if isinstance(r, MessageRecord)]

    @traced_store
    def count_thread_messages(self, thread_id: str) -> int:
        """[oam] How many visible messages ``thread_id`` holds."""
        if not planning.lookup_id(thread_id, "thread_id"):
            return 0
        return self._backend.count_thread_messages(thread_id, self._now())

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
    ) -> builtins.list[tuple[Record, float]]:
        """Rank visible records for a query (SPEC §3.5; seed 004 ``search``).

        Args:
            query: Non-blank natural-language query; exclusive with ``query_vector``.
            k: Maximum results (>= 1); fewer is normal.
            query_vector: A precomputed query embedding of the store's dimension.
            thread_id, user_id, agent_id: Scope ids, applied only where the matching
                ``exact_*_match`` is True (None then means "unscoped in that
                dimension"); profiles carry their own id as user (agent) scope.
            record_types: A set of types; default messages, memory-like, profiles.
            metadata_filter: SPEC §4 filter; applied with the scope before top-k.

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
                empty, non-finite or wrong-dimension vector, k < 1, a bare-string or
                unknown record type, an invalid filter, a vector query under KEYWORD,
                or a text query needing an embedder the store lacks.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        k = planning.clamp_count(k)
        if (query is None) == (query_vector is None):
            raise ValueError("give exactly one of query and query_vector")
        if query is not None and (not isinstance(query, str) or not query.strip()):
            raise ValueError(f"query must be a non-blank string, got {query!r}")
        if query is not None:
            planning.check_text(query, "query")
        qvec = None
        if query_vector is not None:
            if self.search_strategy is SearchStrategy.KEYWORD:
                raise ValueError("KEYWORD search ranks text; query_vector is not accepted")
            qvec = planning.to_vector(query_vector, "query_vector")
            if self.vector_dim is not None and qvec.shape[0] != self.vector_dim:
                raise ValueError(
                    f"query_vector dimension {qvec.shape[0]} does not match the store's "
                    f"dimension {self.vector_dim}"
                )
        types = _types_arg(record_types)
        pred = Predicate(
            record_types=types,
            now=self._now(),
            thread_id=_scope_arg(thread_id, "thread_id") if exact_thread_match else NOT_SET,
            user_id=_scope_arg(user_id, "user_id") if exact_user_match else NOT_SET,
            agent_id=_scope_arg(agent_id, "agent_id") if exact_agent_match else NOT_SET,
            metadata=_filter_arg(metadata_filter),
        )
        if not _findable(pred):
            return []
        # A reranker re-scores the first stage's best ``candidates``: rank that deep.
        depth = k if self.reranker is None or query is None else max(k, self.reranker.candidates)
        loaded: dict[Hashable, Record] | None = None
        native = self._native_search(query, qvec, depth, pred)
        strategy = self.search_strategy
        if native is not None:
            ranked = native
        elif qvec is not None:
            ranked = self._vector_ranking([qvec], depth, pred, fused=False)
        elif strategy is SearchStrategy.KEYWORD:
            ranked = self._keyword_ranking(self._query_parts(query or ""), depth, pred)
        else:
            if self.embedder is None and strategy is SearchStrategy.VECTOR:
                raise ValueError(
                    "VECTOR search of a text query needs an embedder; configure one, "
                    "pass query_vector, or use search_strategy=HYBRID or KEYWORD"
                )
            parts = self._query_parts(query or "")
            vectors = self._query_vectors(parts)
            if strategy is SearchStrategy.VECTOR:
                ranked = self._vector_ranking(vectors, depth, pred, fused=len(parts) > 1)
            else:
                depth = max(depth, _HYBRID_DEPTH)
                # Without an embedder HYBRID has only its keyword half to fuse.
                v_lists = self._backend.rank_vector(vectors, depth, pred) if vectors else []
                kw_lists = [self._backend.rank_keyword(query_terms(p), depth, pred) for p in parts]
                lists = [[key for key, _ in lst] for lst in (*v_lists, *kw_lists)]
                ranked, loaded = self._hybrid_ranking(query or "", lists, k, pred)
        if self.reranker is not None and query is not None:
            ranked, loaded = self._reranked(self.reranker, query, ranked, k, loaded)
        return self._materialize(ranked, k, loaded)

    def _hybrid_ranking(
        self, query: str, lists: Sequence[Sequence[Hashable]], k: int, pred: Predicate
    ) -> tuple[builtins.list[tuple[Hashable, float]], dict[Hashable, Record]]:
        """Fuse the text lists, then the query's speaker and date lists over the fused
        head (store/signals.py). Returns ``(key, distance)`` pairs from the final
        fused scores, and the head's loaded records."""
        fused = sorted(self._backend.fuse(lists), key=lambda kv: -kv[1])
        pool = [key for key, _ in fused[: max(POOL, k)]]
        records = self._backend.load(pool)
        weights = [1.0] * len(lists)
        extra = signal_lists(query, pool, records, pred.now)
        if extra:
            lists = [*lists, *(keys for keys, _ in extra)]
            weights += [weight for _, weight in extra]
            fused = builtins.list(rrf(lists, weights=weights).items())
        return [(key, rrf_distance(s, sum(weights))) for key, s in fused], records

    def _reranked(
        self,
        reranker: IReranker,
        query: str,
        ranked: Sequence[tuple[Hashable, float]],
        k: int,
        loaded: dict[Hashable, Record] | None,
    ) -> tuple[builtins.list[tuple[Hashable, float]], dict[Hashable, Record]]:
        """The first stage's best ``max(k, reranker.candidates)`` records, re-scored:
        distance ``1 - sigmoid(score)`` (docs/retrieval.md)."""
        head = [key for key, _ in sorted(ranked, key=lambda kv: kv[1])]
        head = head[: max(k, reranker.candidates)]
        records = dict(loaded or {})
        missing = [key for key in head if key not in records]
        if missing:
            records.update(self._backend.load(missing))
        head = [key for key in head if key in records]
        if not head:
            return [], records
        scores = np.asarray(
            reranker.score(query, [passage_text(records[key]) for key in head]), dtype=np.float64
        )
        if scores.shape != (len(head),) or not np.isfinite(scores).all():
            raise ValueError(
                f"reranker {reranker!r} returned scores of shape {scores.shape}, expected "
                f"{len(head)} finite values"
            )
        distances = 1.0 / (1.0 + np.exp(np.clip(scores, -60.0, 60.0)))
        return [(key, float(d)) for key, d in zip(head, distances, strict=True)], records

    def _query_vectors(self, parts: Sequence[str]) -> builtins.list[Any]:
        """The query embeddings of ``parts`` (none without an embedder)."""
        if self.embedder is None:
            return []
        self._warn_unembedded_once()
        return list(self._embed_texts(parts, is_query=True))

    def _warn_unembedded_once(self) -> None:
        """Warn (once per store object) when records have search rows without a
        vector: vector search cannot see them until ``reindex`` embeds them."""
        if self._unembedded_checked:
            return
        self._unembedded_checked = True
        missing = self._backend.unembedded(None)
        if not missing:
            return
        family, record_id = missing[0]
        how = "by keywords only" if self.search_strategy is SearchStrategy.HYBRID else "not at all"
        warnings.warn(
            f"{len(missing)} record(s) of this store (e.g. {family} {record_id!r}) have "
            f"search rows without a vector, written without an embedder; "
            f"{self.search_strategy.name} search finds them {how} until store.reindex() "
            "(CLI: oam reindex) embeds them",
            UserWarning,
            stacklevel=4,
        )

    def reindex(self, *, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """[oam] Embed the search rows stored without a vector (records written
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
            raise ValueError("reindex needs an embedder: open the store with embedder=...")
        self._batch_size({"batch_size": batch_size})
        done = 0
        seen: set[tuple[str, str]] = set()
        while todo := self._backend.unembedded(batch_size):
            if seen.issuperset(todo):
                break  # nothing left that this embedder can fill
            seen.update(todo)
            with self._backend.transaction() as tx:
                rows = [row for f, rid in todo if (row := tx.fetch(f, rid)) is not None]
                chunked = [(row, tx.chunk_texts(row.key)) for row in rows]
                plans = [[ChunkPlan(t, needs_embedding=bool(t)) for t in ts] for _, ts in chunked]
                self._embed_plans([c for cs in plans for c in cs])
                for (row, _), chunks in zip(chunked, plans, strict=True):
                    tx.replace_chunks(row, chunks)
                self._learn_dim([c for cs in plans for c in cs])
                self._write_identity(tx)
            self._embedder_check.recorded()
            done += len(rows)
        return done

    def _query_parts(self, query: str) -> builtins.list[str]:
        return chunk_text(query, self.chunk_chars) or [query]

    def _vector_ranking(
        self, vectors: Sequence[Any], k: int, pred: Predicate, *, fused: bool
    ) -> builtins.list[tuple[Hashable, float]]:
        lists = self._backend.rank_vector(vectors, k, pred)
        if not fused:
            return lists[0]
        scores = rrf([[key for key, _ in lst] for lst in lists])
        return [(key, rrf_distance(s, len(lists))) for key, s in scores.items()]

    def _keyword_ranking(
        self, parts: Sequence[str], k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]]:
        lists = [self._backend.rank_keyword(query_terms(p), k, pred) for p in parts]
        if len(lists) == 1:
            return normalized_distances(lists[0])
        scores = rrf([[key for key, _ in lst] for lst in lists])
        return [(key, rrf_distance(s, len(lists))) for key, s in scores.items()]

    def _materialize(
        self,
        ranked: Sequence[tuple[Hashable, float]],
        k: int,
        loaded: dict[Hashable, Record] | None = None,
    ) -> builtins.list[tuple[Record, float]]:
        best = sorted(ranked, key=lambda kv: kv[1])[: max(k * 2, k + 10)]
        loaded = loaded or {}
        records = {key: loaded[key] for key, _ in best if key in loaded}
        missing = [key for key, _ in best if key not in loaded]
        if missing:
            records.update(self._backend.load(missing))
        out = [(records[key], float(d)) for key, d in best if key in records]
        out.sort(key=lambda rd: (rd[1], rd[0].record_type, rd[0].id))
        return out[:k]

    # -- deletes ------------------------------------------------------------------

    @traced_store
    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete a record and its search rows in one transaction (SPEC §3.6).

        For ``user_profile``/``agent_profile`` with ``cascade=True``, also the
        actor's threads (with everything in them) and every remaining record scoped
        to the actor, even when the profile row is missing. ``thread`` deletes the
        thread with its messages and memories, as ``delete_thread``.

        Returns:
            Top-level rows deleted (0 or 1); cascaded rows are not counted.

        Raises:
            ValueError: for an unknown record type or a non-string id.
        """
        record_type = planning.check_record_type(record_type, allow_thread=True)
        if not planning.lookup_id(record_id, "record_id"):
            return 0
        if record_type == THREAD:
            return self.delete_thread(record_id)
        with self._backend.transaction() as tx:
            deleted = tx.delete_record(family_of(record_type), record_id, record_type, NOT_SET)
            if cascade and record_type in PROFILE_TYPES:
                column = "user_id" if record_type == "user_profile" else "agent_id"
                tx.delete_actor_scope(column, record_id)
        return deleted

    @traced_store
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread row, its messages, memory-like records and all their search
        rows in one transaction (SPEC §3.6).

        Returns:
            1 if the thread row existed, else 0 (children are removed either way).
        """
        if not planning.lookup_id(thread_id, "thread_id"):
            return 0
        with self._backend.transaction() as tx:
            return tx.delete_thread(thread_id)

    @traced_store
    def delete_scoped(self, family: str, record_id: str, *, thread_id: Maybe[str] = NOT_SET) -> int:
        """[oam] Delete a message (``family="message"``) or any memory-like record
        (``family="memory"``) by id, optionally only if its thread_id equals
        ``thread_id``. Returns 0 or 1. Used by the client and thread handles.

        Raises:
            ValueError: for another family or a bad id.
        """
        if family not in (MESSAGE, "memory"):
            raise ValueError(f"family must be 'message' or 'memory', got {family!r}")
        if not planning.lookup_id(record_id, "record_id"):
            return 0
        if thread_id is not NOT_SET and not planning.lookup_id(thread_id, "thread_id"):
            return 0
        with self._backend.transaction() as tx:
            return tx.delete_record(family, record_id, None, thread_id)

    @traced_store
    def delete_records(
        self, record_type: str, record_ids: Sequence[str], *, thread_id: Maybe[str] = NOT_SET
    ) -> int:
        """[oam] Delete several records of one type and their search rows in one
        transaction (SPEC §3.6 rules per record; no cascades).

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
        record_type = planning.check_record_type(record_type)
        if isinstance(record_ids, (str, bytes)) or not isinstance(record_ids, Sequence):
            raise ValueError(f"record_ids must be a list of str, got {record_ids!r}")
        findable = [
            record_id for record_id in record_ids if planning.lookup_id(record_id, "record_ids[]")
        ]
        if thread_id is not NOT_SET and not planning.lookup_id(thread_id, "thread_id"):
            return 0
        family = family_of(record_type)
        with self._backend.transaction() as tx:
            return sum(
                tx.delete_record(family, record_id, record_type, thread_id)
                for record_id in dict.fromkeys(findable)
            )

    @traced_store
    def purge_expired(self) -> int:
        """Delete every expired record and its search rows now (SPEC §3.7).

        Returns:
            The number of records removed.
        """
        with self._backend.transaction() as tx:
            return tx.purge(self._now())

    # -- thread rows --------------------------------------------------------------

    @traced_store
    def create_thread_row(
        self,
        thread_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        """[oam] Insert a thread row with its runtime ``config`` (SPEC §5-§6).

        Raises:
            ValueError: for bad ids, invalid metadata/config, or an existing thread.
        """
        row = _thread_row(thread_id, user_id, agent_id, metadata, config, self._now())
        with self._backend.transaction() as tx:
            if tx.hold_thread(thread_id):
                raise ValueError(f"thread {thread_id!r} already exists")
            tx.insert_thread(row)

    @traced_store
    def add_to_thread(
        self,
        thread_id: str,
        batches: Sequence[PendingRecordBatch],
        *,
        missing_row: Mapping[str, Any] | None = None,
        **store_kwargs: Any,
    ) -> builtins.list[str]:
        """[oam] Write records of one thread together with the check of its row, in
        ONE transaction (docs/memory-pipeline.md, "Threads and deletes").

        The thread row is held (``Tx.hold_thread``) while the records are written, so
        a ``delete_thread``, ``delete_user`` or ``delete_agent`` running at the same
        time either finishes first (then this write sees no row) or waits for this
        write and deletes its records too: no record ever outlives its thread row
        (BUGCASES C22).

        Args:
            thread_id: The thread; every batch must have exactly this ``thread_ids``.
            batches: The records (rules of ``add_batches``).
            missing_row: What to create when the row is missing: a dict of
                ``user_id``, ``agent_id``, ``metadata`` and ``config`` (as
                ``create_thread_row``); None: a missing row is an error.
            **store_kwargs: ``batch_size``.

        Returns:
            All ids, in input order.

        Raises:
            ValueError: as ``add_batches``; a batch of another thread; or, with
                ``missing_row`` None, when the thread does not exist (for example
                deleted meanwhile). Nothing is written then.
        """
        planning.check_id(thread_id, "thread_id")
        for i, batch in enumerate(batches):
            if not isinstance(batch, PendingRecordBatch) or batch.thread_ids != thread_id:
                raise ValueError(
                    f"batches[{i}] must be a PendingRecordBatch with thread_ids={thread_id!r}"
                )
        row = None
        if missing_row is not None:
            unknown = set(missing_row) - {"user_id", "agent_id", "metadata", "config"}
            if unknown:
                raise ValueError(f"missing_row has unknown keys {sorted(unknown)}")
            row = _thread_row(
                thread_id,
                missing_row.get("user_id"),
                missing_row.get("agent_id"),
                missing_row.get("metadata"),
                missing_row.get("config"),
                self._now(),
            )
        batch_size = self._batch_size(store_kwargs)
        planned = self._plan_batches(batches)
        with self._backend.transaction() as tx:
            if not tx.hold_thread(thread_id):
                if row is None:
                    raise ValueError(
                        f"thread {thread_id!r} does not exist: it was deleted (delete_thread, "
                        "or delete_user/delete_agent with cascade) or never created; nothing "
                        "was written. Create it again with create_thread to go on."
                    )
                tx.insert_thread(row)
            self._insert_planned(tx, planned, batch_size)
        self._embedder_check.recorded()
        return [p.id for p in planned.plans]

    @traced_store
    def write_thread(
        self,
        thread_id: str,
        batches: Sequence[PendingRecordBatch],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        replace: bool = False,
    ) -> builtins.list[str]:
        """[oam] Create a thread row and its records in ONE transaction; with
        ``replace``, an existing thread of this id (its messages, memories and search
        rows) is deleted first in the same transaction, so a failure keeps the old
        thread (docs/store.md#writing-a-whole-thread).

        Args:
            thread_id: The thread to write.
            batches: Its records (as ``add_batches``); every record must carry
                ``thread_ids=thread_id``.
            user_id, agent_id, metadata, config: The thread row, as
                ``create_thread_row``.
            replace: Replace an existing thread instead of refusing it.

        Returns:
            The record ids, batch by batch, in input order.

        Raises:
            ValueError: for bad ids, metadata or batches, a record of another thread,
                or an existing thread without ``replace``; nothing is written.
        """
        row = _thread_row(thread_id, user_id, agent_id, metadata, config, self._now())
        planned = self._plan_batches(batches)
        strays = [p.id for p in planned.plans if p.thread_id != thread_id]
        if strays:
            raise ValueError(
                f"write_thread({thread_id!r}): record {strays[0]!r} belongs to thread "
                f"{next(p.thread_id for p in planned.plans if p.id == strays[0])!r}"
            )
        with self._backend.transaction() as tx:
            if tx.hold_thread(thread_id):
                if not replace:
                    raise ValueError(f"thread {thread_id!r} already exists")
                tx.delete_thread(thread_id)
            tx.insert_thread(row)
            self._insert_planned(tx, planned, DEFAULT_BATCH_SIZE)
        self._embedder_check.recorded()
        return [p.id for p in planned.plans]

    @traced_store
    def get_thread_row(self, thread_id: str) -> ThreadRow | None:
        """[oam] The stored thread row, or None."""
        if not planning.lookup_id(thread_id, "thread_id"):
            return None
        return self._backend.get_thread(thread_id)

    @traced_store
    def list_thread_rows(
        self, user_id: Maybe[str | None] = NOT_SET, agent_id: Maybe[str | None] = NOT_SET
    ) -> builtins.list[ThreadRow]:
        """[oam] Thread rows oldest first; ``user_id``/``agent_id`` filter as in ``list``."""
        users, agents = _scope_arg(user_id, "user_id"), _scope_arg(agent_id, "agent_id")
        if not all(v is NOT_SET or v is None or planning.storable(v) for v in (users, agents)):
            return []
        return self._backend.list_threads(users, agents)

    @traced_store
    def update_thread_row(
        self,
        thread_id: str,
        *,
        config: Maybe[dict[str, Any]] = NOT_SET,
        state: Maybe[dict[str, Any]] = NOT_SET,
        expected_state: Maybe[dict[str, Any]] = NOT_SET,
    ) -> int:
        """[oam] Replace a thread's config and/or state; with ``expected_state``, only
        if the stored state still equals it (compare-and-set). Returns rows updated.

        Raises:
            ValueError: for non-JSON config/state.
        """
        findable = planning.lookup_id(thread_id, "thread_id")
        for name, value in (
            ("config", config),
            ("state", state),
            ("expected_state", expected_state),
        ):
            if value is not NOT_SET:
                planning.dump_metadata(value, name)
        if not findable:
            return 0
        with self._backend.transaction() as tx:
            return tx.update_thread(thread_id, config, state, expected_state)

    def close(self) -> None:
        """Release the database connection(s)."""
        self._backend.close()

    def __enter__(self) -> OracleMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async twins (SPEC §9): the sync method, run in a worker thread ------------

    add_async = async_twin(add)
    reindex_async = async_twin(reindex)
    write_thread_async = async_twin(write_thread)
    add_batches_async = async_twin(add_batches)
    add_user_async = async_twin(add_user)
    add_agent_async = async_twin(add_agent)
    update_async = async_twin(update)
    get_async = async_twin(get)
    list_async = async_twin(list)
    list_thread_messages_async = async_twin(list_thread_messages)
    list_thread_messages_by_seq_async = async_twin(list_thread_messages_by_seq)
    count_thread_messages_async = async_twin(count_thread_messages)
    search_async = async_twin(search)
    delete_async = async_twin(delete)
    delete_thread_async = async_twin(delete_thread)
    upsert_async = async_twin(upsert)
    upsert_batches_async = async_twin(upsert_batches)
    delete_records_async = async_twin(delete_records)
    delete_scoped_async = async_twin(delete_scoped)
    purge_expired_async = async_twin(purge_expired)
    create_thread_row_async = async_twin(create_thread_row)
    add_to_thread_async = async_twin(add_to_thread)
    get_thread_row_async = async_twin(get_thread_row)
    list_thread_rows_async = async_twin(list_thread_rows)
    update_thread_row_async = async_twin(update_thread_row)
    commit_thread_pass_async = async_twin(commit_thread_pass)


@dataclass(frozen=True)
class _Planned:
    """Planned rows of one write: row plans, ids by family, chunk plans, plan time."""

    plans: builtins.list[RowPlan]
    by_family: dict[str, builtins.list[str]]
    chunks: builtins.list[ChunkPlan]
    now: datetime


def _thread_row(
    thread_id: object,
    user_id: object,
    agent_id: object,
    metadata: dict[str, Any] | None,
    config: dict[str, Any] | None,
    now: datetime,
) -> ThreadRow:
    """A new thread row, checked (ids, JSON metadata and config).

    Raises:
        ValueError: for a bad id, or metadata/config that JSON cannot hold.
    """
    planning.check_id(thread_id, "thread_id")
    scope = [planning._scope_id(v, n) for v, n in ((user_id, "user_id"), (agent_id, "agent_id"))]
    planning.dump_metadata(metadata)
    planning.dump_metadata(config or {}, "config")
    return ThreadRow(
        thread_id=str(thread_id),
        user_id=scope[0],
        agent_id=scope[1],
        metadata=metadata,
        config=dict(config or {}),
        state={},
        created_at=iso(now),
    )


def _keep_reserved(meta_json: str | None, old: dict[str, Any] | None) -> str | None:
    """The new metadata JSON with the stored ``$agent_memory`` object kept (SPEC §3.3);
    the new metadata cannot hold that key (``planning.dump_metadata``)."""
    new = json.loads(meta_json) if meta_json is not None else None
    if old and isinstance(old.get(planning.RESERVED_KEY), dict):
        new = dict(new or {})
        new[planning.RESERVED_KEY] = old[planning.RESERVED_KEY]
    return None if new is None else json.dumps(new, ensure_ascii=False, allow_nan=False)


def _scope_arg(value: Maybe[str | None], name: str) -> Maybe[str | None]:
    if value is NOT_SET or value is None:
        return value
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, None or omitted, got {value!r}")
    return value


def _filter_arg(value: Maybe[dict[str, Any] | None]) -> Any:
    if value is NOT_SET or value is None:
        return value
    tree = parse_filter(value)
    # No stored key or string holds NUL or a lone surrogate (planning.dump_metadata),
    # and SQLite's JSON functions would stop at a NUL: such an operand is an error.
    planning.check_json_text(value, "metadata_filter")
    return tree


def _findable(pred: Predicate) -> bool:
    """False when a scope id of ``pred`` cannot be stored (NUL, lone surrogate): then
    no record matches and the back end is not asked."""
    return all(
        value is NOT_SET or value is None or planning.storable(value)
        for value in (pred.thread_id, pred.user_id, pred.agent_id)
    )


def _types_arg(record_types: Iterable[str] | None) -> frozenset[str]:
    if record_types is None:
        return SEARCHABLE_TYPES
    if isinstance(record_types, (str, bytes)):
        raise ValueError(
            f"record_types must be a set of type names, got the bare string {record_types!r}; "
            f"write {{{record_types!r}}}"
        )
    try:
        types = frozenset(record_types)
    except TypeError:
        raise ValueError(
            f"record_types must be a set of type names, got {record_types!r}"
        ) from None
    unknown = types - SEARCHABLE_TYPES
    if unknown:
        raise ValueError(
            f"unknown record_types {sorted(map(str, unknown))}; searchable: {sorted(SEARCHABLE_TYPES)}"
        )
    if not types:
        raise ValueError("record_types must not be empty")
    return types


__all__ = ["MAX_LIST_LIMIT", "MEMORY_TYPES", "OracleMemoryStore"]
