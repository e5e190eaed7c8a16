"""``SQLiteMemoryStore``: the embedded default store (docs/sqlite.md).

The store semantics are ``OracleMemoryStore``'s (store/base.py); this module opens the
file (``sqlite/backend.py``), creates or upgrades its schema and checks the stored
configuration against the store's (``sql/store.py``).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from oam_core.apis.embedder import IEmbedder
from oam_core.errors import ConfigurationError, DatabaseLockedError, InvalidArgumentError
from oam_core.rerankers import IReranker
from oam_core.store.fusion import FusionConfig
from oam_core.store.options import MemoryRetentionConfig, SchemaPolicy, SearchStrategy
from oam_core.store.sql import statements as st
from oam_core.store.sql.schema import newer_schema, table_prefix
from oam_core.store.sql.store import SqlMemoryStore
from oam_core.store.sqlite.backend import BUSY_TIMEOUT_S, SQLiteBackend
from oam_core.store.sqlite.schema import SCHEMA_VERSION, check_policy
from oam_core.store.ttl import Clock


class SQLiteMemoryStore(SqlMemoryStore):
    """Memory store in one SQLite file, or in memory (the default store; docs/sqlite.md).

    Args:
        path: Database file path, or ``":memory:"`` for a private in-memory store.
        embedder: See ``OracleMemoryStore``.
        vector_dim: See ``OracleMemoryStore``; checked against the dimension stored
            in the file.
        search_strategy: ``SearchStrategy`` or its name; None = the strategy stored
            in the file, HYBRID for a new one (the best of the three on the LoCoMo
            benchmark, docs/store.md#search-strategies). Without an embedder only
            KEYWORD ranks text queries (VECTOR and HYBRID refuse them with a
            ``ConfigurationError``). SQLite keeps vectors and a
            full-text index for every store, so any strategy opens any file, and the
            one given is recorded (as on PostgreSQL; docs/postgres.md).
        memory_retention_config: TTL defaults; persisted in the file. When omitted,
            the stored config is used.
        memory_store_id: Prefix of every table, so several stores share one file
            (letter first, letters/digits/underscore, at most 16 characters).
        clock: Zero-argument callable returning an aware datetime (default UTC now).
        reranker: See ``OracleMemoryStore`` (docs/retrieval.md).
        allow_embedder_change: See ``OracleMemoryStore``.
        fusion: See ``OracleMemoryStore`` (docs/retrieval.md#one-fusion-for-every-back-end).
        schema_policy: ``SchemaPolicy`` or its name, or None (docs/store.md#schema-policies).
            The embedded store creates and upgrades its schema under every policy
            but ``REQUIRE_EXISTING`` needs the file to exist;
            ``CREATE_IF_EMPTY`` and ``REQUIRE_EXISTING`` refuse a file holding part
            of a store (a table dropped), which None and ``CREATE_IF_NECESSARY``
            complete. ``RECREATE`` is not supported (delete the file instead).

    Raises:
        InvalidArgumentError: (a ValueError) for a bad ``path`` or
            ``memory_store_id``, or any ``OracleMemoryStore`` argument error.
        SchemaError: (a ValueError) for a dimension other than the one stored in the
            file, a schema version this release cannot read, a partial store
            under ``CREATE_IF_EMPTY`` or ``REQUIRE_EXISTING`` (naming what is missing),
            or no database at ``path`` under ``REQUIRE_EXISTING`` (nothing is created).
        ConfigurationError: (a ValueError) for ``schema_policy=RECREATE``.
        EmbedderMismatchError: (a SchemaError) for an embedder other than the one
            recorded in the file.
        StoreConnectionError: (a ConnectionError) when the file
            cannot be opened (a missing directory, no permission).
        DatabaseLockedError: (a TimeoutError) when another connection holds the file
            for writing past the busy timeout.
        StoreError: for a file that is not a SQLite database or is damaged.

        See docs/errors.md.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        embedder: IEmbedder | None = None,
        vector_dim: int | None = None,
        search_strategy: SearchStrategy | str | None = None,
        memory_retention_config: MemoryRetentionConfig | None = None,
        memory_store_id: str | None = None,
        clock: Clock | None = None,
        reranker: IReranker | None = None,
        allow_embedder_change: bool = False,
        fusion: FusionConfig | None = None,
        schema_policy: SchemaPolicy | str | None = None,
    ) -> None:
        policy = None if schema_policy is None else SchemaPolicy.parse(schema_policy)
        if policy is SchemaPolicy.RECREATE:
            raise ConfigurationError(
                "schema_policy=RECREATE is not supported by the embedded SQLite store; "
                "delete the database file (or use a new memory_store_id) instead"
            )
        super().__init__(
            embedder=embedder,
            vector_dim=vector_dim,
            search_strategy=SearchStrategy.HYBRID if search_strategy is None else search_strategy,
            memory_retention_config=memory_retention_config,
            clock=clock,
            reranker=reranker,
            allow_embedder_change=allow_embedder_change,
            fusion=fusion,
        )
        if not isinstance(path, (str, Path)):
            raise InvalidArgumentError(f"path must be a str or pathlib.Path, got {path!r}")
        self.path = str(path)
        self.memory_store_id = memory_store_id
        prefix = table_prefix(memory_store_id)
        if policy is not None:
            check_policy(self.path, prefix, policy)
        self._impl = SQLiteBackend(self.path, prefix)
        self.runtime.backend = self._impl
        try:
            self._open_schema(memory_retention_config, search_strategy is not None)
        except BaseException:
            self._impl.conn.close()
            raise

    def _open_schema(self, retention: MemoryRetentionConfig | None, strategy_given: bool) -> None:
        impl = self._impl
        meta = dict(impl.fetch_all(st.read_meta(impl.p)))
        version = int(meta.get("schema_version", SCHEMA_VERSION))
        if version > SCHEMA_VERSION:
            raise newer_schema(self.path, version, SCHEMA_VERSION)
        self._adopt_config(meta, self.path, strategy_given=strategy_given, retention=retention)
        self._learn_dim_later(meta, bool(impl.fetch_all(st.any_record(impl.p))))
        if impl.read_only or not self._meta_changes(meta):  # a read-only file stays readable
            return
        with impl.transaction() as tx:
            # Read again under the write lock: another store object may have recorded
            # a dimension (or another configuration) since, and writing ours over it
            # would leave the file with vectors of two dimensions.
            fresh = dict(impl.fetch_all(st.read_meta(impl.p)))
            if fresh != meta:
                self._adopt_config(
                    fresh, self.path, strategy_given=strategy_given, retention=retention
                )
            changed = self._meta_changes(fresh)
            if changed:
                tx.write_meta(changed)

    def _meta_changes(self, meta: dict[str, str]) -> dict[str, str]:
        """The ``oam_meta`` rows this store records that differ from ``meta``."""
        wanted = self._config_meta(self._impl.schema_version)
        if self.vector_dim is not None:
            wanted["vector_dim"] = str(self.vector_dim)
        return {k: v for k, v in wanted.items() if meta.get(k) != v}

    def compact(self) -> None:
        """Remove every trace of deleted text from the file (docs/sqlite.md#deleted-text).

        Deleted rows are zeroed on disk when they are deleted, but the FTS5 keyword
        index only marks a deleted word as deleted until its segments are merged.
        This merges them (FTS5 ``optimize``), rewrites the file (``VACUUM``) and
        empties the write-ahead log. It takes time proportional to the store (about
        the time to copy the file) and holds the write lock meanwhile.

        Raises:
            DatabaseLockedError: when another connection holds the file for writing
                past the busy timeout.
            StoreError: for a read-only or damaged file.
        """
        impl = self._impl
        fts = f"{impl.p}chunks_fts"
        with impl.reading() as conn:  # autocommit: each statement is its own write
            if impl.checkpointer is not None:
                impl.checkpointer.drain()
            conn.execute(f"INSERT INTO {fts}({fts}) VALUES('optimize')")
            conn.execute("VACUUM")
            if self.path != ":memory:":
                _empty_log(conn, self.path)


COMPACT_WAIT_S = BUSY_TIMEOUT_S
"""How long ``compact`` retries emptying the log while another connection
checkpoints or reads an older snapshot, in seconds."""


def _empty_log(conn: sqlite3.Connection, path: str) -> None:
    """``PRAGMA wal_checkpoint(TRUNCATE)`` until it reports done: SQLite answers
    busy, without waiting, while another connection checkpoints.

    Raises:
        DatabaseLockedError: when the log is still in use after ``COMPACT_WAIT_S``.
    """
    deadline = time.monotonic() + COMPACT_WAIT_S
    while True:
        busy, _log_frames, _copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return
        if time.monotonic() >= deadline:
            raise DatabaseLockedError(
                f"{path}: another connection is checkpointing or reading an older snapshot, "
                "so compact() could not empty the write-ahead log (deleted text may remain "
                "in it); run compact() again when it is done"
            )
        time.sleep(0.05)
