"""``OracleDBMemoryStore``: Oracle Database 23ai back end (docs/oracle.md; docs/store.md#schema).

The store semantics come from ``OracleMemoryStore`` (base.py); this class opens the
schema under a ``SchemaPolicy`` (schema.py), then serves the ``Backend`` contract in
Oracle SQL (backend.py). HYBRID search runs natively through
``DBMS_HYBRID_VECTOR.SEARCH`` over the managed hybrid vector index.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.embedder import IEmbedder
from oam_core.errors import InvalidArgumentError, SchemaError
from oam_core.store.base import OracleMemoryStore
from oam_core.store.identity import META_KEY as IDENTITY_META_KEY
from oam_core.store.options import (
    MemoryRetentionConfig,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oam_core.store.oracle import ddl, schema, sql, windows
from oam_core.store.oracle.backend import OracleBackend
from oam_core.store.oracle.embedder import OracleDBEmbedder
from oam_core.store.oracle.names import Names, resolve_prefix
from oam_core.store.oracle.session import Session, error_code, fetchall, run
from oam_core.store.oracle.stmt import Stmt
from oam_core.store.ttl import Clock

_NO_PRIVILEGE = {1031, 27486}
"""ORA-01031 insufficient privileges, ORA-27486 insufficient privileges (scheduler)."""
_NO_TABLE = 942
"""ORA-00942 table or view does not exist."""
_POOL_ERRORS = {51961, 51962, 51954, 51928}
"""Vector pool missing/full/too large, DML on in-memory graph unsupported: use IVF."""


def parse_sync(value: SearchIndexSyncMode | str) -> SearchIndexSyncMode:
    """Accept a ``SearchIndexSyncMode`` or its name in any case.

    Raises:
        ValueError: naming the value otherwise.
    """
    if isinstance(value, SearchIndexSyncMode):
        return value
    if isinstance(value, str) and value.upper() in SearchIndexSyncMode.__members__:
        return SearchIndexSyncMode[value.upper()]
    raise InvalidArgumentError(
        f"search_index_sync must be one of {[m.name for m in SearchIndexSyncMode]}, got {value!r}"
    )


class OracleDBMemoryStore(OracleMemoryStore):
    """Database-backed persistence for messages, memories and actor profiles (docs/oracle.md).

    Args:
        embedder: Embeds retrieval text for local vector storage; may be None when
            callers pass vectors or for KEYWORD search. HYBRID requires an
            ``OracleDBEmbedder`` (the hybrid index uses its in-database model).
        pool: An ``oracledb`` connection pool, or a connection (single-session mode:
            calls of this store are serialised with a lock).
        schema_policy: ``SchemaPolicy`` or its name (default ``REQUIRE_EXISTING``:
            no DDL). See ``oracle/schema.py`` for every rule.
        vector_dim: Local embedding dimension (VECTOR: defaults to the embedder's;
            with neither, a flexible column learns it from the first vector).
            KEYWORD/HYBRID keep no local vectors unless given (or the schema has them).
        table_name_prefix: Deprecated prefix of the managed names (``DeprecationWarning``).
        memory_store_id: Stable store id joined to every managed name with ``_``
            (letter first, letters/digits/underscore, at most 16 characters).
        search_strategy: ``VECTOR`` (default), ``KEYWORD`` or ``HYBRID``.
        search_index_sync: ``ON_COMMIT`` (default), ``MANUAL`` (run
            ``sync_search_index()``), ``AUTO`` (HYBRID only).
        memory_retention_config: TTL defaults and cap, stored in the schema metadata;
            omitted = the stored config.
        clock: Zero-argument callable returning an aware datetime (default UTC now).
        allow_embedder_change: (An oam addition.) See ``OracleMemoryStore``
            (docs/store.md#embedder-identity).

    Raises:
        ValueError: for both ``table_name_prefix`` and ``memory_store_id``, a bad id,
            AUTO without HYBRID, or HYBRID without an ``OracleDBEmbedder``.
        SchemaError: (a ValueError) for a schema the policy cannot open (missing,
            outdated, other dimension, strategy the schema cannot serve);
            ``EmbedderMismatchError`` for another embedder than the recorded one.
        StoreConnectionError, DatabaseLockedError, StoreError: for database errors
            (docs/errors.md). Nothing is created then.
    """

    def __init__(
        self,
        embedder: IEmbedder | None,
        pool: Any,
        schema_policy: SchemaPolicy | str = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: int | None = None,
        table_name_prefix: Maybe[str | None] = NOT_SET,
        memory_store_id: Maybe[str | None] = NOT_SET,
        search_strategy: SearchStrategy | str = SearchStrategy.VECTOR,
        search_index_sync: SearchIndexSyncMode | str = SearchIndexSyncMode.ON_COMMIT,
        memory_retention_config: MemoryRetentionConfig | None = None,
        *,
        clock: Clock | None = None,
        allow_embedder_change: bool = False,
    ) -> None:
        strategy = SearchStrategy.parse(search_strategy)
        sync = parse_sync(search_index_sync)
        policy = SchemaPolicy.parse(schema_policy)
        if sync is SearchIndexSyncMode.AUTO and strategy is not SearchStrategy.HYBRID:
            raise InvalidArgumentError(
                "search_index_sync=AUTO is supported only with SearchStrategy.HYBRID "
                f"(got {strategy.name})"
            )
        if strategy is SearchStrategy.HYBRID and not isinstance(embedder, OracleDBEmbedder):
            raise InvalidArgumentError(
                "SearchStrategy.HYBRID requires an OracleDBEmbedder as embedder, so the managed "
                f"hybrid index and the store share one in-database model; got {embedder!r}"
            )
        self.names = Names(resolve_prefix(table_name_prefix, memory_store_id))
        self.memory_store_id = None if memory_store_id is NOT_SET else memory_store_id
        shared = isinstance(embedder, OracleDBEmbedder) and embedder.session.target is pool
        # One raw connection, one lock: the embedder and the store never interleave.
        self.session = embedder.session if shared else Session(pool)  # type: ignore[union-attr]
        local = strategy is SearchStrategy.VECTOR or vector_dim is not None
        if embedder is not None and not isinstance(embedder, IEmbedder):
            raise InvalidArgumentError(f"embedder must be an IEmbedder or None, got {embedder!r}")
        # Without local vectors the embedder's dimension is not needed (no probe query).
        super().__init__(
            embedder=embedder if local else None,
            vector_dim=vector_dim,
            search_strategy=strategy,
            memory_retention_config=memory_retention_config,
            clock=clock,
            allow_embedder_change=allow_embedder_change,
        )
        self.embedder = embedder
        self.search_index_sync = sync
        self.schema_policy = policy
        wanted = schema.Wanted(
            strategy=strategy,
            sync=sync,
            vector_dim=self.vector_dim,
            model=embedder.model if isinstance(embedder, OracleDBEmbedder) else None,
            retention=memory_retention_config,
        )
        plan = self._open_schema(policy, wanted)
        if not local and plan.local_vectors and embedder is not None:
            dim = embedder.embedding_dimension  # the schema keeps local vectors: feed them
            if plan.vector_dim is not None and dim != plan.vector_dim:
                raise SchemaError(
                    f"the managed schema stores vectors of dimension {plan.vector_dim}, but "
                    f"the embedder's dimension is {dim}"
                )
            plan.vector_dim = dim  # a flexible column records it with the first vectors
        self.vector_dim = plan.vector_dim
        self.names = dataclasses.replace(self.names, windows=plan.windows)
        self.memory_retention_config = plan.retention
        self._local_vectors = plan.local_vectors
        self._impl = OracleBackend(
            self.session,
            self.names,
            self._local_vectors,
            plan.recorded_dim,
            self.runtime.check_recorded_dim,
        )
        self._impl.strategy = strategy
        if strategy is SearchStrategy.HYBRID:
            assert isinstance(embedder, OracleDBEmbedder)
            self._impl.hybrid_model = embedder
        self.runtime.backend = self._impl

    # -- schema -------------------------------------------------------------------

    def _read_state(self) -> schema.SchemaState:
        q = schema.inspect_statements(self.names)
        with self.session.connection() as conn:
            tables = frozenset(r[0] for r in fetchall(conn, q["tables"]))
            indexes = (
                frozenset(r[0] for r in fetchall(conn, q["indexes"])) if tables else frozenset()
            )
            meta = (
                {str(k): str(v) for k, v in fetchall(conn, q["meta"])}
                if self.names.meta in tables
                else {}
            )
            try:
                has_vectorizer = bool(fetchall(conn, q["vectorizer"]))
            except Exception as exc:  # no Oracle Text (e.g. a -slim image): no view
                if error_code(exc) != _NO_TABLE:
                    raise
                has_vectorizer = False
            has_job = bool(fetchall(conn, q["job"]))
        return schema.SchemaState(tables, indexes, meta, has_vectorizer, has_job)

    def _open_schema(self, policy: SchemaPolicy, wanted: schema.Wanted) -> schema.Plan:
        state = self._read_state()
        plan = schema.plan_schema(policy, self.names, state, wanted)
        if plan.local_vectors:
            where = f"the Oracle store (prefix {self.names.prefix!r})"
            self.runtime.adopt_identity(state.meta.get(IDENTITY_META_KEY), where)
        with self.session.connection() as conn:
            for step in plan.steps:
                if step == schema.VECTOR_INDEX:
                    self._create_vector_index(conn)
                elif step == schema.PURGE_JOB:
                    self._create_purge_job(conn)
                else:
                    assert isinstance(step, Stmt)
                    self._run_step(conn, step)
            if plan.steps:
                # The data steps of an upgrade (deletes, backfills) are DML: commit them
                # (a pool rolls back what a released connection left open).
                conn.commit()
        if plan.meta:
            rows = [{"meta_key": k, "meta_value": v} for k, v in sorted(plan.meta.items())]
            with self.session.transaction() as conn:
                run(conn, sql.upsert_meta(self.names, rows))
        return plan

    def _run_step(self, conn: Any, step: Stmt) -> None:
        try:
            run(conn, step)
        except Exception as exc:
            # DDL commits at once: an upgrade interrupted after adding the window
            # columns finds them there when it runs again.
            if not windows.is_duplicate_column(step, error_code(exc)):
                raise

    def _create_vector_index(self, conn: Any) -> None:
        try:
            run(conn, ddl.hnsw_index(self.names))
        except Exception as exc:
            if error_code(exc) not in _POOL_ERRORS:
                raise
            warnings.warn(
                f"HNSW vector index not created ({exc}); using an IVF index instead. Size "
                "VECTOR_MEMORY_SIZE for HNSW (docs/oracle.md)",
                UserWarning,
                stacklevel=4,
            )
            run(conn, ddl.ivf_index(self.names))

    def _create_purge_job(self, conn: Any) -> None:
        try:
            run(conn, ddl.create_purge_job(self.names))
        except Exception as exc:
            if error_code(exc) not in _NO_PRIVILEGE:
                raise
            warnings.warn(
                "the purge job for expired records was not created: the database user lacks "
                "CREATE JOB. Expired messages and memories stay hidden from reads and searches "
                "but are deleted only by purge_expired() until a user with CREATE JOB opens "
                "the store with schema_policy=CREATE_IF_NECESSARY",
                UserWarning,
                stacklevel=4,
            )

    def drop_schema(self) -> None:
        """An oam addition: drop every managed object of this store (tables, indexes, vectorizer
        preference, purge job). Destructive; the store is unusable afterwards."""
        state = self._read_state()
        with self.session.connection() as conn:
            for step in schema.drop_all(self.names, state):
                assert isinstance(step, Stmt)
                run(conn, step)

    def sync_search_index(self) -> None:
        """Synchronise the managed text or hybrid index now (for ``SearchIndexSyncMode.MANUAL``;
        ``CTX_DDL.SYNC_INDEX`` commits implicitly, so it runs outside any write).

        Raises:
            ValueError: for a VECTOR store (no text index to sync).
        """
        if self.search_strategy is SearchStrategy.VECTOR:
            raise InvalidArgumentError("a VECTOR store has no text or hybrid index to synchronise")
        state = self._read_state()
        name = (
            self.names.hybrid_index
            if self.names.hybrid_index in state.indexes
            else self.names.text_index
        )
        with self.session.connection() as conn:
            run(conn, ddl.sync_index(name))
