"""``PostgresMemoryStore``: the store on a PostgreSQL server with pgvector (docs/postgres.md).

The store semantics are ``OracleMemoryStore``'s (store/base.py); this module opens
the pool, applies the schema policy and checks the stored configuration
(``sql/store.py``). Async methods are the shared worker-thread twins of base.py
(docs/concepts.md#sync-and-async): psycopg's blocking connections from a thread-safe
pool serve them, so sync and async run the very same code, and the event loop never
waits on the server.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from oam_core.apis.embedder import IEmbedder
from oam_core.errors import InvalidArgumentError, StoreConnectionError
from oam_core.rerankers import IReranker
from oam_core.store.base import OracleMemoryStore
from oam_core.store.fusion import FusionConfig
from oam_core.store.options import MemoryRetentionConfig, SchemaPolicy, SearchStrategy
from oam_core.store.postgres.backend import PgBackend
from oam_core.store.postgres.schema import (
    SCHEMA_VERSION,
    apply_policy,
    lock_meta,
    read_meta,
    set_dimension,
    write_meta,
)
from oam_core.store.sql import statements as st
from oam_core.store.sql.schema import table_prefix
from oam_core.store.sql.store import SqlMemoryStore
from oam_core.store.ttl import Clock

POOL_MAX_SIZE = 10
"""Connections the store's own pool may open (one per concurrently running call)."""
LOCK_TIMEOUT_S = 30
"""Seconds a statement of the store's own pool waits for a row or table lock before the
call raises ``DatabaseLockedError`` (as a SQLite write waits for the file), set on each
session whose ``lock_timeout`` is the server's default 0 (wait for ever); a timeout the
server, database, role or conninfo sets is kept (docs/postgres.md#concurrency-and-durability)."""


def _bounded_lock_wait(conn: Any) -> None:
    """The pool's ``configure``: give a session that would wait for ever for a lock
    ``LOCK_TIMEOUT_S`` (module docstring of the constant)."""
    row = conn.execute("SHOW lock_timeout").fetchone()
    if row is not None and str(row[0]) in ("0", "0ms", "0s"):
        conn.execute(f"SET lock_timeout = '{int(LOCK_TIMEOUT_S * 1000)}ms'")


def _redact(conninfo: str) -> str:
    """``conninfo`` with any password hidden, for error messages."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "<unparsable conninfo>"
    if "password" in params:
        params["password"] = "***"
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items()})


def make_pool(conninfo: str, *, max_size: int = POOL_MAX_SIZE, timeout: float = 30.0) -> Any:
    """Open a ``psycopg_pool.ConnectionPool`` on ``conninfo`` (autocommit connections;
    store calls open their own transactions; the store checks each connection it
    takes, ``PgBackend.checked_connection``) and wait for its first connection.

    Raises:
        InvalidArgumentError: (a ValueError) for a malformed conninfo.
        StoreConnectionError: (a ConnectionError) for a server that
            cannot be reached within ``timeout`` seconds, or that refuses the
            credentials (the message hides the password).
    """
    try:
        psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise InvalidArgumentError(
            f"connection is not a valid PostgreSQL conninfo/URL: {exc}"
        ) from exc
    try:  # one direct attempt first: a refused or rejected connection fails fast
        psycopg.connect(conninfo, connect_timeout=int(max(1, timeout))).close()
    except psycopg.OperationalError as exc:
        reason = " ".join(str(exc).split())
        raise StoreConnectionError(
            f"cannot connect to PostgreSQL at {_redact(conninfo)}: {reason}"
        ) from exc
    pool: ConnectionPool[Any] = ConnectionPool(
        conninfo,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True},
        configure=_bounded_lock_wait,
        open=False,
        timeout=timeout,
    )
    try:
        pool.open(wait=True, timeout=timeout)
    except PoolTimeout as exc:
        pool.close()
        raise StoreConnectionError(
            f"cannot connect to PostgreSQL at {_redact(conninfo)} within {timeout:g} s"
        ) from exc
    return pool


class SingleConnection:
    """A pool-shaped wrapper of one caller-owned ``psycopg.Connection``: calls take
    turns on it (a lock), and ``close`` leaves it open."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self._lock = threading.RLock()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """Borrow the connection (blocks while another call uses it)."""
        with self._lock:
            yield self.conn

    def close(self) -> None:
        """Nothing to release: the caller owns the connection."""


class PostgresMemoryStore(SqlMemoryStore):
    """Memory store on PostgreSQL with pgvector (docs/postgres.md).

    Many processes may share one store: every call is one transaction, message
    ``seq_no`` is assigned under a per-thread advisory lock, and deletes cascade in
    the same transaction. VECTOR ranks by pgvector cosine distance (exact on small
    tables, the HNSW index on large ones, see ``postgres/dialect.py``), KEYWORD by
    BM25 over a ``tsvector``/GIN index, HYBRID by reciprocal rank fusion in SQL;
    metadata filters compile to jsonb operators with bound parameters.

    Args:
        conninfo_or_pool: A libpq conninfo string or ``postgresql://`` URL (the store
            opens and owns a ``psycopg_pool.ConnectionPool``), a caller's
            ``psycopg_pool.ConnectionPool`` (borrowed: ``close`` leaves it open),
            or one ``psycopg.Connection`` (borrowed; calls then take turns on it).
            Objects are created in the connection's current schema (search_path).
        embedder: See ``OracleMemoryStore``.
        vector_dim: See ``OracleMemoryStore``; must equal the stored dimension.
        search_strategy: ``SearchStrategy`` or its name; None = the stored strategy
            (HYBRID for a new store, as for the embedded store:
            docs/store.md#search-strategies). Another strategy than the stored one
            is used and recorded: the store keeps the vector and the full-text index
            that every strategy needs (docs/postgres.md).
        memory_retention_config: TTL defaults, persisted; None = the stored config.
        memory_store_id: Prefix of every table, index and text-search object, so
            several stores share one database (letter first, letters/digits/
            underscore, at most 16 characters; names are case-insensitive).
        schema_policy: ``SchemaPolicy`` or its name (docs/store.md#schema-policies): REQUIRE_EXISTING
            (default: never runs DDL), CREATE_IF_EMPTY, CREATE_IF_NECESSARY, RECREATE.
        clock: Zero-argument callable returning an aware datetime (default UTC now).
        reranker: An ``IReranker`` re-scoring the best results of text queries, or
            None (docs/retrieval.md).
        allow_embedder_change: See ``OracleMemoryStore``.
        fusion: See ``OracleMemoryStore`` (docs/retrieval.md#one-fusion-for-every-back-end).

    Raises:
        InvalidArgumentError: (a ValueError) for a bad argument.
        StoreConnectionError: (a ConnectionError) for a server that
            cannot be reached.
        SchemaError: (a ValueError) for a missing store under REQUIRE_EXISTING, an
            outdated or newer schema version, or an existing store with another
            vector dimension.
        EmbedderMismatchError: (a SchemaError) for an existing store written with
            another embedder.

        Nothing is written then (the pool the store opened is closed again); see
        docs/errors.md.
    """

    def __init__(
        self,
        conninfo_or_pool: str | ConnectionPool[Any] | psycopg.Connection[Any],
        *,
        embedder: IEmbedder | None = None,
        vector_dim: int | None = None,
        search_strategy: SearchStrategy | str | None = None,
        memory_retention_config: MemoryRetentionConfig | None = None,
        memory_store_id: str | None = None,
        schema_policy: SchemaPolicy | str = SchemaPolicy.REQUIRE_EXISTING,
        clock: Clock | None = None,
        reranker: IReranker | None = None,
        allow_embedder_change: bool = False,
        fusion: FusionConfig | None = None,
    ) -> None:
        super().__init__(
            embedder=embedder,
            vector_dim=vector_dim,
            search_strategy=search_strategy
            if search_strategy is not None
            else SearchStrategy.HYBRID,
            memory_retention_config=memory_retention_config,
            clock=clock,
            reranker=reranker,
            allow_embedder_change=allow_embedder_change,
            fusion=fusion,
        )
        policy = SchemaPolicy.parse(schema_policy)
        prefix = table_prefix(memory_store_id)
        self.memory_store_id = memory_store_id
        if isinstance(conninfo_or_pool, str):
            pool = make_pool(conninfo_or_pool)
            owns = True
            self._where = f"PostgreSQL {_redact(conninfo_or_pool)}"
        elif isinstance(conninfo_or_pool, ConnectionPool):
            pool, owns = conninfo_or_pool, False
            self._where = "the PostgreSQL pool's database"
        elif isinstance(conninfo_or_pool, psycopg.Connection):
            pool, owns = SingleConnection(conninfo_or_pool), False
            self._where = "the PostgreSQL connection's database"
        else:
            raise InvalidArgumentError(
                "conninfo_or_pool must be a conninfo string, a postgresql:// URL, a "
                "psycopg_pool.ConnectionPool or a psycopg.Connection, got "
                f"{type(conninfo_or_pool).__name__}"
            )
        if memory_store_id is not None:
            self._where += f" (memory_store_id {memory_store_id!r})"
        self._impl = PgBackend(pool, prefix, self._where, owns_pool=owns)
        self.runtime.backend = self._impl
        try:
            self._open_schema(policy, search_strategy is not None, memory_retention_config)
        except BaseException:
            self._impl.close()
            raise

    def _open_schema(
        self,
        policy: SchemaPolicy,
        strategy_given: bool,
        retention: MemoryRetentionConfig | None,
    ) -> None:
        p = self._impl.p
        with self._impl.mapped(), self._impl.checked_connection() as conn, conn.transaction():
            apply_policy(conn, p, policy, self.vector_dim, self._where)
            if self.vector_dim is not None:  # it may record the dimension below
                lock_meta(conn, p)
            meta = read_meta(conn, p)
            self._adopt_config(
                meta, self._where, strategy_given=strategy_given, retention=retention
            )
            self._learn_dim_later(meta, conn.execute(st.any_record(p).sql).fetchone() is not None)
            wanted = self._config_meta(SCHEMA_VERSION)
            changed = {k: v for k, v in wanted.items() if meta.get(k) != v}
            if changed:
                write_meta(conn, p, changed)
            if self.vector_dim is not None and "vector_dim" not in meta:
                set_dimension(conn, p, self.vector_dim)
            self._impl.use_ann(conn, self.vector_dim)


def postgres_conninfo(url: str) -> str:
    """A libpq URL from ``url``: ``postgresql+psycopg://`` and similar driver-qualified
    or driver-named schemes become ``postgresql://``; conninfo strings pass through."""
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    if scheme.lower() in ("postgresql", "postgres"):
        return url
    return "postgresql://" + rest


def open_postgres(
    connection: object, embedder: object, options: Mapping[str, Any]
) -> OracleMemoryStore:
    """Open the store for ``OracleAgentMemory(connection=<PostgreSQL>)`` (docs/postgres.md#opening).

    Args:
        connection: A ``postgresql://`` URL (also ``postgres://``,
            ``postgresql+psycopg://``), a ``psycopg_pool.ConnectionPool`` or a
            ``psycopg.Connection``.
        embedder: The client's ``embedder`` argument, or ``NOT_SET``.
        options: The client's database options (see ``connect.open_store``); the
            schema policy defaults to REQUIRE_EXISTING (docs/store.md#schema-policies).

    Raises:
        ValueError: for an invalid option, an unreachable server, or any
            ``PostgresMemoryStore`` error.
    """
    from oam_core.apis._sentinel import NOT_SET
    from oam_core.store.openoptions import sql_store_options

    kwargs: dict[str, Any] = {}
    if options["schema_policy"] is not NOT_SET:
        kwargs["schema_policy"] = SchemaPolicy.parse(options["schema_policy"])
    kwargs.update(sql_store_options(embedder, options))
    if isinstance(connection, os.PathLike):
        connection = os.fspath(connection)
    if isinstance(connection, str):
        connection = postgres_conninfo(connection)
    if not isinstance(connection, (str, ConnectionPool, psycopg.Connection)):
        raise InvalidArgumentError(
            "a PostgreSQL connection must be a postgresql:// URL, a "
            f"psycopg_pool.ConnectionPool or a psycopg.Connection, got {type(connection).__name__}"
        )
    return PostgresMemoryStore(connection, **kwargs)
