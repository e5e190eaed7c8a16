"""Row decoding of the SQL back ends (SQLite, PostgreSQL), whose records table has one
column layout (docs/store.md#schema): epoch <-> ISO times, record rows, thread rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import orjson

from oam_core.apis.records import MESSAGE, MessageRecord, Record, ThreadRow
from oam_core.store.ttl import iso

__all__ = [
    "RECORD_COLUMNS",
    "epoch",
    "from_epoch",
    "record_from_row",
    "thread_from_row",
]

RECORD_COLUMNS = (
    "pk, family, id, record_type, content, role, seq_no, thread_id, user_id, agent_id, "
    "event_ts, metadata, created_at, expires_at"
)
"""The records-table columns ``record_from_row`` decodes, in order."""


def epoch(dt: datetime | None) -> float | None:
    """An aware datetime as Unix seconds (expiry columns), or None."""
    return None if dt is None else dt.timestamp()


def from_epoch(value: float | None) -> str | None:
    """Unix seconds as ISO-8601 UTC, or None."""
    return None if value is None else iso(datetime.fromtimestamp(value, timezone.utc))


def record_from_row(row: Sequence[Any]) -> Record:
    """A ``Record`` (``MessageRecord`` for messages) from a row of ``RECORD_COLUMNS``;
    metadata is JSON text."""
    (
        _pk,
        family,
        rid,
        rtype,
        content,
        role,
        seq_no,
        thread_id,
        user_id,
        agent_id,
        event_ts,
        metadata,
        created_at,
        expires_at,
    ) = row
    common: dict[str, Any] = dict(
        id=rid,
        record_type=rtype,
        content=content,
        timestamp=event_ts,
        metadata=orjson.loads(metadata) if metadata is not None else None,
        created_at=created_at,
        thread_id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        expires_at=from_epoch(expires_at),
    )
    if family == MESSAGE:
        return MessageRecord(role=role, seq_no=seq_no or 0, **common)
    return Record(**common)


def thread_from_row(row: Sequence[Any]) -> ThreadRow:
    """A ``ThreadRow`` from ``(id, user_id, agent_id, metadata, config, state,
    created_at)``; the JSON columns are text."""
    tid, user_id, agent_id, metadata, config, state, created_at = row
    return ThreadRow(
        thread_id=tid,
        user_id=user_id,
        agent_id=agent_id,
        metadata=orjson.loads(metadata) if metadata is not None else None,
        config=orjson.loads(config or "{}"),
        state=orjson.loads(state or "{}"),
        created_at=created_at,
    )
