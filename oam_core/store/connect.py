"""Open the right store for ``OracleAgentMemory(connection=...)`` (SPEC §5).

``open_store`` tells the back end from the connection (a path or URL string, or a
driver object such as a psycopg pool or an oracledb pool), then hands the shared
database options to that back end's opener. Each back end keeps its own opener in
its own module; this module only dispatches and holds the embedded SQLite opener.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.embedder import IEmbedder
from oam_core.errors import ConfigurationError, SchemaError
from oam_core.store.base import OracleMemoryStore
from oam_core.store.options import SchemaPolicy, SearchStrategy

__all__ = ["BackendKind", "backend_of", "open_store", "resolve_store_embedder"]

BackendKind = Literal["sqlite", "postgres", "oracle"]

_SERVER_BACKENDS: dict[str, BackendKind] = {
    "postgresql": "postgres",
    "postgres": "postgres",
    "psycopg": "postgres",
    "psycopg2": "postgres",
    "psycopg_pool": "postgres",
    "oracle": "oracle",
    "oracledb": "oracle",
    "cx_oracle": "oracle",
}
"""URL schemes and driver module names of the server back ends."""

_SQLITE_SCHEMES = frozenset({"sqlite", "sqlite3"})
_MEMORY = ":memory:"


def backend_of(connection: object) -> BackendKind:
    """Tell which back end ``connection`` is for.

    Args:
        connection: A path (``str`` or ``os.PathLike``), ``":memory:"``, a URL
            (``sqlite:///...``, ``postgresql://...``, ``oracle://...``) or a driver
            connection/pool object (its module decides: ``psycopg``/``psycopg_pool``
            or ``oracledb``).

    Raises:
        ValueError: for an empty string, an unknown URL scheme, a
            ``sqlite3.Connection`` (the store must own its connection) or any other type.
    """
    if isinstance(connection, os.PathLike):
        return "sqlite"
    if isinstance(connection, str):
        if not connection.strip():
            raise ValueError("connection must not be an empty string")
        if "://" not in connection:
            return "sqlite"
        scheme = connection.split("://", 1)[0].lower().split("+", 1)[0]
        if scheme in _SQLITE_SCHEMES:
            return "sqlite"
        if scheme in _SERVER_BACKENDS:
            return _SERVER_BACKENDS[scheme]
        raise ValueError(f"connection URL scheme {scheme!r} is not supported: {connection!r}")
    root = type(connection).__module__.split(".", 1)[0].lower()
    if root in _SERVER_BACKENDS:
        return _SERVER_BACKENDS[root]
    if isinstance(connection, sqlite3.Connection):
        raise ValueError(
            "a sqlite3.Connection cannot be shared with the store; pass the database path "
            "(or 'sqlite:///path.db') as connection instead"
        )
    raise ValueError(
        "connection must be a SQLite path, a 'sqlite:///...' URL or ':memory:', a "
        "PostgreSQL conninfo/URL or psycopg pool, or an oracledb pool/connection; "
        f"got {type(connection).__name__}"
    )


def sqlite_target(connection: str | os.PathLike[str]) -> str:
    """Resolve a SQLite ``connection`` to a file path or ``":memory:"`` (SPEC §5).

    Accepted: a path, ``":memory:"``, or a URL ``sqlite:///relative.db``,
    ``sqlite:////absolute.db``, ``sqlite://:memory:``.

    Raises:
        ValueError: for a malformed ``sqlite://`` URL (host or query given).
    """
    if isinstance(connection, os.PathLike):
        path = os.fspath(connection)
        if not isinstance(path, str) or not path:
            raise ValueError(f"connection path must be a non-empty str path, got {connection!r}")
        return path
    if "://" not in connection:
        return connection
    rest = connection.split("://", 1)[1]
    if rest in ("", _MEMORY, "/" + _MEMORY):
        return _MEMORY
    if not rest.startswith("/") or len(rest) == 1 or "?" in rest:
        raise ValueError(
            f"connection {connection!r}: write 'sqlite:///relative/path.db', "
            "'sqlite:////absolute/path.db' or 'sqlite://:memory:' (no host, no query)"
        )
    return rest[1:]


def resolve_store_embedder(embedder: object) -> IEmbedder | None:
    """Turn the client's ``embedder`` option into an ``IEmbedder`` (or ``None``).

    Raises:
        ValueError: when ``embedder`` is neither an ``IEmbedder``, a model id string
            nor ``None``, or names an unknown model.
    """
    from oam_core.embedders import resolve_embedder

    if embedder is not None and not isinstance(embedder, (IEmbedder, str)):
        raise ValueError(
            "embedder must be an IEmbedder, a model id string or None, "
            f"got {type(embedder).__name__}"
        )
    return resolve_embedder(embedder)


def store_id_option(options: Mapping[str, Any]) -> Any:
    """The ``memory_store_id`` to use, from it or its deprecated alias ``table_name_prefix``.

    Returns ``NOT_SET`` when neither is given.

    Raises:
        ValueError: when both are given (seed 004).
    """
    prefix, store_id = options["table_name_prefix"], options["memory_store_id"]
    if prefix is not NOT_SET:
        if store_id is not NOT_SET:
            raise ValueError("pass either memory_store_id or table_name_prefix, not both")
        return prefix
    return store_id


def sql_store_options(embedder: object, options: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``SQLiteMemoryStore`` and ``PostgresMemoryStore`` that
    the client's options give (those left ``NOT_SET`` are omitted): ``memory_store_id``
    (or its alias), ``search_strategy``, ``memory_retention_config``,
    ``allow_embedder_change`` and the resolved ``embedder``.

    Raises:
        ValueError: for an invalid strategy, both store-id options, or an embedder
            that is neither an ``IEmbedder``, a model id nor None.
    """
    kwargs: dict[str, Any] = {}
    store_id = store_id_option(options)
    if store_id is not NOT_SET:
        kwargs["memory_store_id"] = store_id
    if options["search_strategy"] is not NOT_SET:
        kwargs["search_strategy"] = SearchStrategy.parse(options["search_strategy"])
    if options["memory_retention_config"] is not NOT_SET:
        kwargs["memory_retention_config"] = options["memory_retention_config"]
    if options.get("allow_embedder_change", NOT_SET) is not NOT_SET:
        kwargs["allow_embedder_change"] = options["allow_embedder_change"]
    if embedder is not NOT_SET:
        kwargs["embedder"] = resolve_store_embedder(embedder)
    return kwargs


def _open_sqlite(
    connection: str | os.PathLike[str], embedder: object, options: Mapping[str, Any]
) -> OracleMemoryStore:
    from oam_core.store.sqlite import SQLiteMemoryStore

    path = sqlite_target(connection)
    policy = options["schema_policy"]
    if policy is not NOT_SET:
        policy = SchemaPolicy.parse(policy)
        if policy is SchemaPolicy.RECREATE:
            raise ConfigurationError(
                "schema_policy=RECREATE is not supported by the embedded SQLite store; "
                "delete the database file (or use a new memory_store_id) instead"
            )
        if policy is SchemaPolicy.REQUIRE_EXISTING and (path == _MEMORY or not Path(path).exists()):
            raise SchemaError(f"schema_policy=REQUIRE_EXISTING, but no database exists at {path!r}")
    return SQLiteMemoryStore(path, **sql_store_options(embedder, options))


def open_store(
    connection: object, embedder: object, options: Mapping[str, Any]
) -> OracleMemoryStore:
    """Open the store for ``OracleAgentMemory(connection=...)``.

    Args:
        connection: See ``backend_of``.
        embedder: The client's ``embedder`` argument, or ``NOT_SET``.
        options: The client's database options, each possibly ``NOT_SET``:
            ``schema_policy``, ``table_name_prefix``, ``memory_store_id``,
            ``search_strategy``, ``memory_retention_config``,
            ``allow_embedder_change``.

    Raises:
        ValueError: for an unsupported connection or an invalid option; nothing is
            opened or written then.
    """
    kind = backend_of(connection)
    if kind == "sqlite":
        return _open_sqlite(connection, embedder, options)  # type: ignore[arg-type]
    if kind == "postgres":
        return _open_postgres(connection, embedder, options)
    if kind == "oracle":
        from oam_core.store.oracle.opener import open_oracle

        return open_oracle(connection, embedder, options)
    raise ValueError(f"unsupported back end {kind!r}")  # unreachable: backend_of decides


def _open_postgres(
    connection: object, embedder: object, options: Mapping[str, Any]
) -> OracleMemoryStore:
    try:
        from oam_core.store.postgres import open_postgres
    except ImportError as exc:
        raise ImportError(
            f"the PostgreSQL back end needs the postgres extra: pip install 'oam[postgres]' ({exc})"
        ) from exc
    return open_postgres(connection, embedder, options)
