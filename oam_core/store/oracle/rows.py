"""Rows of the Oracle schema as the library's values, and back (docs/oracle.md#bind-types).

Pure conversions (no I/O) shared by the reads and writes of ``backend.py`` and the dump
path of ``transfer.py``: fetched CLOBs as text, JSON columns as values, naive UTC
``TIMESTAMP`` columns as aware datetimes or ISO text, vectors as ``array('f')``.
"""

from __future__ import annotations

import array
import json
from collections.abc import Hashable, Sequence
from datetime import datetime, timezone
from typing import Any, cast

import numpy as np

from oam_core.apis.records import MESSAGE, PROFILE_TYPES, THREAD, MessageRecord, Record, ThreadRow
from oam_core.checks import Vector
from oam_core.store.oracle import windows
from oam_core.store.ttl import iso

__all__ = [
    "family_of_type",
    "iso_utc",
    "json_value",
    "lob_text",
    "record_from_row",
    "split_key",
    "stored_text",
    "thread_row",
    "to_array",
    "utc",
]


def to_array(vector: Vector | None) -> array.array[float] | None:
    """A vector as ``array('f')``, bound as VECTOR(FLOAT32) (docs/oracle.md#bind-types)."""
    if vector is None:
        return None
    return array.array("f", np.asarray(vector, dtype=np.float32).tobytes())


def utc(value: datetime | None) -> datetime | None:
    """A fetched naive UTC ``TIMESTAMP`` as an aware datetime (None stays None)."""
    return None if value is None else value.replace(tzinfo=timezone.utc)


def iso_utc(value: datetime | None) -> str | None:
    """A fetched naive UTC ``TIMESTAMP`` as ISO-8601 UTC text (None stays None)."""
    return None if value is None else iso(value.replace(tzinfo=timezone.utc))


def lob_text(value: Any) -> Any:
    """A fetched CLOB (LOB object in a real driver if the handler was bypassed) as str."""
    return value.read() if hasattr(value, "read") else value


def json_value(value: Any) -> Any:
    """A fetched JSON column (text or CLOB) as Python values (None stays None)."""
    value = lob_text(value)
    return None if value is None else json.loads(value)


def stored_text(value: Any, is_set: Any) -> str | None:
    """A fetched text column with its ``*_set`` flag: Oracle stores ``""`` as NULL,
    so a set flag over NULL is the empty string."""
    value = lob_text(value)
    if value is None:
        return "" if is_set else None
    return str(value)


def split_key(key: Hashable) -> tuple[str, int]:
    """A record key ``(family, pk)`` as typed values."""
    family, pk = cast(tuple[str, int], key)
    return family, pk


def family_of_type(record_type: str) -> str:
    """The table family of a record type: memory-like types share ``memory``."""
    if record_type in (MESSAGE, THREAD) or record_type in PROFILE_TYPES:
        return record_type
    return "memory"


def record_from_row(family: str, row: Sequence[Any]) -> Record:
    """Decode a row of ``sql.record_columns`` (or ``THREAD_AS_RECORD``)."""
    (
        _pk,
        rid,
        rtype,
        content,
        content_set,
        role,
        seq_no,
        thread_id,
        user_id,
        agent_id,
        event_ts,
        event_ts_set,
        metadata,
        created_at,
        expires_at,
        valid_from,
        valid_until,
    ) = row
    common: dict[str, Any] = dict(
        id=rid,
        record_type=rtype,
        content=stored_text(content, content_set),
        timestamp=stored_text(event_ts, event_ts_set),
        metadata=json_value(metadata),
        created_at=iso_utc(created_at),
        thread_id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        expires_at=iso_utc(expires_at),
        valid_from=windows.iso(valid_from),
        valid_until=windows.iso(valid_until),
    )
    if family == MESSAGE:
        return MessageRecord(role=role, seq_no=int(seq_no or 0), **common)
    return Record(**common)


def thread_row(row: Sequence[Any]) -> ThreadRow:
    """Decode a row of the thread columns (``sql.get_thread``)."""
    tid, user_id, agent_id, metadata, config, state, created_at = row
    return ThreadRow(
        thread_id=tid,
        user_id=user_id,
        agent_id=agent_id,
        metadata=json_value(metadata),
        config=json_value(config) or {},
        state=json_value(state) or {},
        created_at=iso_utc(created_at) or "",
    )
