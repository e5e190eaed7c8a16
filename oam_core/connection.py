"""What a ``connection=`` (or ``OracleAgentMemory.open``) argument names: which back
end, and for the embedded store which file (docs/concepts.md#opening).

Tools built on ``oam`` that take a database argument (the ``oam`` CLI, ``oam mcp``,
``oam serve``) use these to tell a SQLite file from a server URL the way the client
does.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Literal

from oam_core.errors import InvalidArgumentError

__all__ = ["MEMORY", "BackendKind", "backend_of", "sqlite_holds_store", "sqlite_target"]

MEMORY = ":memory:"
"""The in-memory SQLite database."""

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
            raise InvalidArgumentError("connection must not be an empty string")
        if "://" not in connection:
            return "sqlite"
        scheme = connection.split("://", 1)[0].lower().split("+", 1)[0]
        if scheme in _SQLITE_SCHEMES:
            return "sqlite"
        if scheme in _SERVER_BACKENDS:
            return _SERVER_BACKENDS[scheme]
        raise InvalidArgumentError(
            f"connection URL scheme {scheme!r} is not supported: {connection!r}"
        )
    root = type(connection).__module__.split(".", 1)[0].lower()
    if root in _SERVER_BACKENDS:
        return _SERVER_BACKENDS[root]
    if isinstance(connection, sqlite3.Connection):
        raise InvalidArgumentError(
            "a sqlite3.Connection cannot be shared with the store; pass the database path "
            "(or 'sqlite:///path.db') as connection instead"
        )
    raise InvalidArgumentError(
        "connection must be a SQLite path, a 'sqlite:///...' URL or ':memory:', a "
        "PostgreSQL conninfo/URL or psycopg pool, or an oracledb pool/connection; "
        f"got {type(connection).__name__}"
    )


def sqlite_target(connection: str | os.PathLike[str]) -> str:
    """Resolve a SQLite ``connection`` to a file path or ``":memory:"`` (docs/concepts.md#opening).

    Accepted: a path, ``":memory:"``, or a URL ``sqlite:///relative.db``,
    ``sqlite:////absolute.db``, ``sqlite://:memory:``.

    Raises:
        ValueError: for a malformed ``sqlite://`` URL (host or query given).
    """
    if isinstance(connection, os.PathLike):
        path = os.fspath(connection)
        if not isinstance(path, str) or not path:
            raise InvalidArgumentError(
                f"connection path must be a non-empty str path, got {connection!r}"
            )
        return path
    if "://" not in connection:
        return connection
    rest = connection.split("://", 1)[1]
    if rest in ("", MEMORY, "/" + MEMORY):
        return MEMORY
    if not rest.startswith("/") or len(rest) == 1 or "?" in rest:
        raise InvalidArgumentError(
            f"connection {connection!r}: write 'sqlite:///relative/path.db', "
            "'sqlite:////absolute/path.db' or 'sqlite://:memory:' (no host, no query)"
        )
    return rest[1:]


def sqlite_holds_store(path: str) -> bool:
    """Whether the existing SQLite file at ``path`` holds an oam store (its
    ``oam_meta`` or ``chunks`` table), read without writing: opening a store on an
    empty file would create one there (docs/cli.md#commands).

    Args:
        path: A file path (not ``:memory:``).

    Returns:
        False for an empty database; True when it holds a store, and also when the
        file cannot be read as a database (the store's own open then names the
        problem).
    """
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return True
    try:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name IN ('oam_meta', 'chunks')"
        ).fetchone()
    except sqlite3.DatabaseError:
        return True
    finally:
        conn.close()
    return found is not None
