"""Stored record types returned by the store (docs/concepts.md#records)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oam_core.apis.metadatajson import dump_metadata
from oam_core.filters import matches, parse_filter

MESSAGE = "message"
MEMORY_TYPES: frozenset[str] = frozenset({"memory", "guideline", "fact", "preference"})
PROFILE_TYPES: frozenset[str] = frozenset({"user_profile", "agent_profile"})
THREAD = "thread"
RECORD_TYPES: frozenset[str] = frozenset({MESSAGE, THREAD} | MEMORY_TYPES | PROFILE_TYPES)
SEARCHABLE_TYPES: frozenset[str] = frozenset({MESSAGE} | MEMORY_TYPES | PROFILE_TYPES)
"""Types ``search`` looks at when ``record_types`` is omitted (docs/store.md#scopes)."""
EXPIRING_TYPES: frozenset[str] = frozenset({MESSAGE} | MEMORY_TYPES)
"""Only these types accept TTL options (docs/store.md#ttl-and-retention)."""


def check_metadata(value: object, name: str = "metadata") -> None:
    """Refuse metadata a store would refuse, before anything is written: a non-dict,
    a value JSON cannot hold (NaN, infinity, non-string keys), a key or string with
    NUL or a lone surrogate, or the library's reserved ``$agent_memory`` key
    (docs/store.md#metadata). None passes.

    Raises:
        InvalidArgumentError: (a ``ValueError``) naming ``name`` and what is wrong.
    """
    dump_metadata(value, name)


def matches_filter(metadata: Mapping[str, Any] | None, metadata_filter: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` passes ``metadata_filter``, evaluated in Python exactly as
    the stores evaluate it in SQL (docs/filters.md).

    Raises:
        InvalidFilterError: (a ``ValueError``) for a filter outside the language.
    """
    return matches(metadata, parse_filter(metadata_filter))


def family_of(record_type: str) -> str:
    """Return the id namespace of a record type: memory-like types share ``"memory"``.

    Ids are unique within a family, so ``delete_memory(id)`` finds a fact or a
    guideline alike, while a thread and a message may share an id.
    """
    return "memory" if record_type in MEMORY_TYPES else record_type


@dataclass(frozen=True, kw_only=True)
class Record:
    """One stored logical record, as returned by ``get``, ``list`` and ``search``.

    Attributes:
        id: The record id (for profiles, the user or agent id itself).
        record_type: One of ``message``, ``memory``, ``guideline``, ``fact``,
            ``preference``, ``user_profile``, ``agent_profile``, ``thread``.
        content: The stored text (profiles: the ``information`` text); ``None`` only
            when the caller stored no text and no ``metadata["content"]`` fallback.
        timestamp: The caller's event time string (ISO-8601 where given so), or None.
        metadata: The caller's JSON-compatible metadata, or None.
        created_at: Store time of the write, ISO-8601 UTC.
        thread_id, user_id, agent_id: Scope ids; None when unscoped.
        expires_at: ISO-8601 UTC expiry, or None when the record never expires.
        valid_from, valid_until: The validity window of a memory-like record
            (ISO-8601 UTC, like ``timestamp``): it holds at ``t`` when ``valid_from``
            is None or <= t and ``valid_until`` is None or > t. Always None for
            messages, profiles and threads (docs/versions.md).
    """

    id: str
    record_type: str
    content: str | None
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: str | None = None
    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    expires_at: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None


@dataclass(frozen=True, kw_only=True)
class MessageRecord(Record):
    """A stored message: a ``Record`` plus its ``role`` and per-thread ``seq_no``.

    ``seq_no`` is the 0-based insertion sequence number of the message within its
    thread; it orders a thread's history (docs/store.md#sequence-numbers).
    """

    role: str | None = None
    seq_no: int = 0


@dataclass(frozen=True, kw_only=True)
class ThreadRow:
    """The stored row of a thread: its scope, metadata and persisted runtime state.

    Attributes:
        thread_id, user_id, agent_id: The thread's scope.
        metadata: Caller metadata kept on the thread row, or None.
        config: The thread's runtime configuration (JSON object), persisted so that
            ``get_thread`` can rebuild the thread (docs/concepts.md#the-client-and-threads).
        state: Cadence and pipeline state (JSON object), e.g. extraction watermarks
            (docs/concepts.md#the-client-and-threads); written with compare-and-set by ``update_thread_row``.
        created_at: Store time of creation, ISO-8601 UTC.
    """

    thread_id: str
    user_id: str | None
    agent_id: str | None
    metadata: dict[str, Any] | None
    config: dict[str, Any]
    state: dict[str, Any]
    created_at: str
