"""Open an ``OracleDBMemoryStore`` for ``OracleAgentMemory(connection=...)`` (docs/concepts.md#opening; docs/oracle.md#opening-a-store).

``connection`` is an ``oracledb`` pool or connection, or an ``oracle://user:password@
host:port/service`` URL (a small pool is created for it). Omitted options take the
store's defaults: ``SchemaPolicy.REQUIRE_EXISTING``, ``SearchStrategy.VECTOR``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from oam_core.apis._sentinel import NOT_SET
from oam_core.errors import InvalidArgumentError
from oam_core.store.openoptions import resolve_store_embedder
from oam_core.store.oracle.errors import map_error
from oam_core.store.oracle.store import OracleDBMemoryStore
from oam_core.store.sql.dialect import driver_errors


def pool_args(url: str) -> dict[str, Any]:
    """``oracledb.create_pool`` arguments for an ``oracle://`` URL.

    Raises:
        InvalidArgumentError: for a URL without user, host or service name.
    """
    parts = urlsplit(url)
    service = parts.path.lstrip("/")
    if not parts.username or not parts.hostname or not service:
        raise InvalidArgumentError(
            f"Oracle Database URL must look like oracle://user:password@host:1521/SERVICE, "
            f"got {url!r}"
        )
    port = parts.port or 1521
    return {
        "user": unquote(parts.username),
        "password": unquote(parts.password or ""),
        "dsn": f"{parts.hostname}:{port}/{service}",
        "min": 1,
        "max": 4,
        "increment": 1,
    }


def open_oracle(connection: Any, embedder: Any, options: Mapping[str, Any]) -> OracleDBMemoryStore:
    """Build the Oracle store from the client's arguments (see ``connect.open_store``).

    Raises:
        ValueError: for a bad URL or option, or a schema the policy cannot open.
        StoreConnectionError: (a ConnectionError) when the pool
            cannot be created (docs/errors.md).
    """
    emb = None if embedder is NOT_SET else resolve_store_embedder(embedder)
    kwargs: dict[str, Any] = {}
    for name in (
        "schema_policy",
        "table_name_prefix",
        "memory_store_id",
        "search_strategy",
        "memory_retention_config",
        "search_index_sync",
        "allow_embedder_change",
    ):
        value = options.get(name, NOT_SET)
        if value is not NOT_SET:
            kwargs[name] = value
    if not isinstance(connection, str):
        return OracleDBMemoryStore(emb, connection, **kwargs)
    try:
        import oracledb
    except ImportError as exc:
        raise ImportError(
            f"the Oracle Database back end needs the oracle extra: pip install 'oam[oracle]' ({exc})"
        ) from exc

    args = pool_args(connection)
    with driver_errors(map_error, f"Oracle Database {args['dsn']}"):
        pool = oracledb.create_pool(**args)
    try:
        store = OracleDBMemoryStore(emb, pool, **kwargs)
    except BaseException:
        pool.close()
        raise
    store.session.owned = True
    return store
