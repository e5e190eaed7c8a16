"""A real PostgreSQL server for the tests, from the ``pgserver`` package (pgvector
included), started once per test session in a temporary directory and reached over
its unix socket (pytest-socket allows unix sockets).

``server_uri()`` returns the server's URL or raises ``ServerUnavailable`` with the
reason; ``schema_conninfo(key)`` gives a conninfo whose objects land in a fresh schema
per ``key``, so tests never see each other's rows and need no cleanup.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import warnings
from typing import Any
from urllib.parse import quote

_state: dict[str, Any] = {}
_schemas: dict[object, str] = {}
_counter = itertools.count()


class ServerUnavailable(RuntimeError):
    """The test PostgreSQL server cannot start here; the message says why."""


def server_uri() -> str:
    """Start (once) and return the URL of the session's PostgreSQL server.

    Raises:
        ServerUnavailable: when pgserver or psycopg is missing or the server fails.
    """
    if "uri" in _state:
        return str(_state["uri"])
    if "error" in _state:
        raise ServerUnavailable(_state["error"])
    try:
        import psycopg

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
            import pgserver

        root = tempfile.mkdtemp(prefix="oam-pg-")
        atexit.register(shutil.rmtree, root, True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(  # type: ignore[attr-defined]
                f"{root}/data", cleanup_mode="stop"
            )
        uri = server.get_uri()
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            # A throwaway test server: skip disk flushes (crash safety of the server
            # itself is not under test; a killed *client* still rolls back).
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
    except Exception as exc:  # any failure means: no server in this environment
        _state["error"] = f"PostgreSQL test server (pgserver) cannot start: {exc!r}"
        raise ServerUnavailable(_state["error"]) from exc
    _state["server"] = server
    _state["uri"] = uri
    return uri


def new_schema() -> str:
    """Create a new empty schema on the test server and return its name."""
    import psycopg

    name = f"t{next(_counter)}"
    with psycopg.connect(server_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return name


def conninfo_for(schema: str) -> str:
    """A URL of the test server whose search_path is ``schema`` then ``public``."""
    options = quote(f"-c search_path={schema},public")
    return f"{server_uri()}&options={options}"


def schema_conninfo(key: object) -> str:
    """The conninfo of the schema belonging to ``key`` (created on first use)."""
    if key not in _schemas:
        _schemas[key] = new_schema()
    return conninfo_for(_schemas[key])


def own_server() -> tuple[Any, str]:
    """Start a PostgreSQL server of its own (not the session's: a test may stop it),
    with pgvector, in a new temporary directory; return ``(server, url)``. The
    caller stops it with ``server.cleanup()`` (which also deletes its directory).

    Raises:
        ServerUnavailable: when pgserver or psycopg is missing or the server fails.
    """
    try:
        import psycopg

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            root = tempfile.mkdtemp(prefix="oam-pg-own-")
            atexit.register(shutil.rmtree, root, True)
            server = pgserver.get_server(  # type: ignore[attr-defined]
                f"{root}/data", cleanup_mode="delete"
            )
        uri = server.get_uri()
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as exc:
        raise ServerUnavailable(f"a PostgreSQL server of its own cannot start: {exc!r}") from exc
    return server, str(uri)
