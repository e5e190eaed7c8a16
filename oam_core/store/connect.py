"""Open the right store for ``OracleAgentMemory(connection=...)`` (docs/concepts.md#opening).

``open_store`` tells the back end from the connection (a path or URL string, or a
driver object such as a psycopg pool or an oracledb pool), then hands the shared
database options to that back end's opener. Each back end keeps its own opener in
its own module; this module only dispatches and holds the embedded SQLite opener.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oam_core.apis._sentinel import NOT_SET
from oam_core.connection import MEMORY as _MEMORY
from oam_core.connection import BackendKind, backend_of, sqlite_target
from oam_core.errors import (
    ConfigurationError,
    InvalidArgumentError,
    StoreConnectionError,
)
from oam_core.store.base import OracleMemoryStore
from oam_core.store.openoptions import resolve_store_embedder, sql_store_options
from oam_core.store.options import SchemaPolicy

__all__ = ["BackendKind", "backend_of", "open_store", "resolve_store_embedder"]


def _open_sqlite(
    connection: str | os.PathLike[str], embedder: object, options: Mapping[str, Any]
) -> OracleMemoryStore:
    from oam_core.store.sqlite import SQLiteMemoryStore

    path = sqlite_target(connection)
    if path != _MEMORY:
        path = os.path.expanduser(path)
        parent = Path(path).parent
        if not parent.is_dir():
            raise StoreConnectionError(
                f"cannot open SQLite database {path!r}: the directory {str(parent)!r} "
                "does not exist; create it first"
            )
    policy = options["schema_policy"]
    if policy is not NOT_SET:
        policy = SchemaPolicy.parse(policy)
        if policy is SchemaPolicy.RECREATE:
            raise ConfigurationError(
                "schema_policy=RECREATE is not supported by the embedded SQLite store; "
                "delete the database file (or use a new memory_store_id) instead"
            )
    kwargs = sql_store_options(embedder, options)
    if policy is not NOT_SET:
        kwargs["schema_policy"] = policy
    return SQLiteMemoryStore(path, **kwargs)


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

    A SQLite path (or ``sqlite:///`` URL) has ``~`` expanded.

    Raises:
        ValueError: for an unsupported connection or an invalid option; nothing is
            opened or written then.
        StoreConnectionError: for a SQLite path whose directory does not exist
            (naming both), or a database that cannot be reached (docs/errors.md).
    """
    kind = backend_of(connection)
    if kind == "sqlite":
        return _open_sqlite(connection, embedder, options)  # type: ignore[arg-type]
    if kind == "postgres":
        return _open_postgres(connection, embedder, options)
    if kind == "oracle":
        from oam_core.store.oracle.opener import open_oracle

        return open_oracle(connection, embedder, options)
    raise InvalidArgumentError(f"unsupported back end {kind!r}")  # unreachable: backend_of decides


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
