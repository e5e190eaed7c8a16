"""What an ``oam mcp`` client is told about a failure (docs/service.md).

The client's own mistakes (a bad argument, an id outside the scope) carry the
library's message. A failure of the server's side (a ``StoreError``, an error a
database driver raised, anything unexpected) carries only its class and a safe
message with an error id; its whole text, which names the database (file path,
PostgreSQL user, socket, search_path), goes to the server's log
(``oam.service.mcp``) with that id.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from oam_core.errors import DatabaseLockedError, StoreConnectionError, StoreError

__all__ = ["client_errors", "error_text", "pipeline_warnings"]

_log = logging.getLogger("oam.service.mcp")
"""Where the details of a failure the client only gets a summary of are logged
(``oam mcp`` writes them to stderr)."""

_DRIVER_MODULES = ("sqlite3", "psycopg", "psycopg_pool", "oracledb")


def _from_driver(exc: BaseException) -> bool:
    """Whether a database driver's exception is in ``exc``'s cause chain (its text
    names the database: a file path, a user, a socket, a search_path)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__module__.split(".")[0] in _DRIVER_MODULES:
            return True
        current = current.__cause__  # the store maps a driver error ``from`` it
    return False


def _safe_message(exc: BaseException) -> str:
    """What a client may read about a failure of the server's own (no path, user,
    host or schema of the database)."""
    if isinstance(exc, DatabaseLockedError):
        return "the database is busy: another writer held it longer than the server waits; retry"
    if isinstance(exc, StoreConnectionError):
        return "the server cannot reach its database"
    if isinstance(exc, StoreError):
        return "the database failed"
    if isinstance(exc, ValueError):
        return "the database refused a value"
    return "internal error"


def error_text(exc: Exception) -> str:
    """The text a client reads about ``exc``: the library's message for the client's
    own mistakes (and for a misconfigured LLM), else the class, a safe message and
    an error id, the whole text logged with that id.

    Args:
        exc: The exception a tool or resource call raised.

    Returns:
        One line for the client.
    """
    ours = isinstance(exc, (LookupError, ValueError, TypeError, ImportError))
    if ours and not isinstance(exc, StoreError) and not _from_driver(exc):
        if isinstance(exc, KeyError):
            return str(exc.args[0]) if exc.args else "not found"
        return str(exc)
    ref = secrets.token_hex(4)
    _log.error("error %s: %s: %s", ref, type(exc).__name__, exc, exc_info=exc)
    return (
        f"{type(exc).__name__}: {_safe_message(exc)} (error {ref}; the details are in "
        "the server's log)"
    )


@contextmanager
def client_errors(kind: type[Exception]) -> Iterator[None]:
    """Turn errors into ``kind`` (``ToolError`` or ``ResourceError``) carrying
    ``error_text``; a ``ToolError`` or ``ResourceError`` passes as it is.

    Raises:
        ToolError | ResourceError: ``kind``, for any exception in the block.
    """
    try:
        yield
    except (ToolError, ResourceError):
        raise
    except Exception as exc:
        raise kind(error_text(exc)) from None


class _ThreadWarnings(logging.Handler):
    """Collects the WARNING texts one thread logs on the ``oam`` logger itself (the
    pipeline's, ``oam_core.memory.diagnostics``), not on its children."""

    def __init__(self, thread: int) -> None:
        super().__init__(logging.WARNING)
        self.thread = thread
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread and record.name == "oam":  # not oam.sqlite, ...
            self.texts.append(record.getMessage())


@contextmanager
def pipeline_warnings() -> Iterator[list[str]]:
    """Collect what the extraction pipeline warns about while the block runs in this
    thread (its ``MemoryPipelineWarning`` texts, also logged on the ``oam`` logger,
    docs/memory-pipeline.md#failures-never-lose-messages): a pass that failed (the
    LLM was down, answered something unusable) warns instead of raising. Calls of
    other threads (concurrent tool calls) are not collected.

    Yields:
        The list the texts are appended to, in order.
    """
    handler = _ThreadWarnings(threading.get_ident())
    logger = logging.getLogger("oam")
    logger.addHandler(handler)
    try:
        yield handler.texts
    finally:
        logger.removeHandler(handler)
