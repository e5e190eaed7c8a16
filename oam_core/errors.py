"""The exceptions `oam` raises, in one tree (docs/errors.md).

Every class derives from ``OAMError`` and also from the built-in exception that the
reference SDK raises in the same situation, so code written for the reference keeps
catching ``ValueError``, ``KeyError`` or ``TimeoutError`` while new code can catch
``OAMError`` (or a precise subclass). Errors of the database drivers (``sqlite3``,
``psycopg``, ``oracledb``) are mapped to ``StoreError`` subclasses at the store
boundary with ``raise ... from``, so the driver's exception stays attached as
``__cause__``.
"""

from __future__ import annotations

__all__ = [
    "ClientClosedError",
    "ConfigurationError",
    "DatabaseLockedError",
    "EmbedderMismatchError",
    "InvalidArgumentError",
    "InvalidFilterError",
    "LLMError",
    "MissingApiKeyError",
    "NotFoundError",
    "OAMError",
    "SchemaError",
    "StoreClosedError",
    "StoreConnectionError",
    "StoreError",
    "ThreadDeletedError",
    "UnknownModelError",
    "UnusableEmbeddingsError",
]


class OAMError(Exception):
    """Base of every exception `oam` raises on purpose."""


class InvalidArgumentError(OAMError, ValueError):
    """An argument has the wrong type, shape or value; the message names the argument
    and the value. Raised before anything is written."""


class InvalidFilterError(InvalidArgumentError):
    """A metadata filter is not in the filter language (docs/filters.md); the message
    names the operator and the value."""


class ConfigurationError(OAMError, ValueError):
    """Options that do not go together, or a component that is missing (an embedder
    for a text search under VECTOR or HYBRID, an LLM when extraction is on)."""


class SchemaError(OAMError, ValueError):
    """The database schema does not fit: missing under ``REQUIRE_EXISTING``, partial
    under ``REQUIRE_EXISTING`` or ``CREATE_IF_EMPTY``, outdated or newer than this
    release, or created with another dimension or strategy (docs/store.md#schema)."""


class EmbedderMismatchError(SchemaError):
    """The store was written with another embedder than the one it was opened with
    (docs/store.md#embedder-identity); the message names both."""


class NotFoundError(OAMError, KeyError):
    """A thread (or other object) that must exist does not."""

    def __str__(self) -> str:  # KeyError would print the message with quotes
        return str(self.args[0]) if self.args else ""


class ThreadDeletedError(OAMError, ValueError):
    """A write to a thread that was deleted meanwhile (by ``delete_thread`` or a
    cascading user or agent delete); nothing was written."""


class ClientClosedError(OAMError, ValueError):
    """A call on an ``OracleAgentMemory`` that was closed, or on a thread of it;
    nothing was done. Open a new client (docs/errors.md)."""


class StoreError(OAMError):
    """The database failed in a way that is not the caller's input."""


class StoreConnectionError(StoreError, ConnectionError):
    """The database cannot be reached or opened (server down, bad URL or
    credentials, a file that cannot be opened or whose directory does not exist, a
    connection lost). Not a ``ValueError``: a connection failure is not a bad
    argument value; catch ``StoreError`` (or ``ConnectionError``)."""


class StoreClosedError(StoreError, ValueError):
    """A call on a store after its ``close()`` (or on a pool its owner closed): the
    same class on every back end; nothing was done. Open the store again
    (docs/errors.md). A ``ValueError`` like ``ClientClosedError``: not retryable."""


class DatabaseLockedError(StoreError, TimeoutError):
    """Another writer held the database longer than the store waits (SQLite's
    ``database is locked``, a PostgreSQL lock or pool timeout)."""


class LLMError(OAMError, RuntimeError):
    """The LLM could not be called or gave no usable answer (see the message: a
    missing API key names the variable to set)."""


class UnusableEmbeddingsError(LLMError, ValueError):
    """The embedding model (any ``IEmbedder`` the store calls, LiteLLM's, Oracle's
    in-database one) answered with the wrong number of vectors, vectors of unequal or
    unexpected length, no numbers, or NaN or infinity. An ``LLMError`` and a
    ``ValueError`` (docs/errors.md)."""


class MissingApiKeyError(LLMError, ConfigurationError):
    """A LiteLLM model was called without its provider's API key; the message names
    the environment variable(s) to set (docs/llms.md#errors). An ``LLMError`` and a
    ``ConfigurationError`` (so a ``ValueError``, docs/errors.md): the memory pipeline
    does not count it as a failed pass but raises it (``INLINE``) or reports it once
    (``BACKGROUND``, docs/memory-pipeline.md#failures-never-lose-messages)."""


class UnknownModelError(ConfigurationError):
    """A LiteLLM model id whose provider LiteLLM cannot tell (a typo such as
    ``"loca"``, or a bare name of no known provider): raised before any request,
    naming the id and the accepted forms (docs/llms.md#errors). A
    ``ConfigurationError`` (so a ``ValueError``): every call would fail the same way."""
