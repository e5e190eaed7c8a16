"""Values read back from the SQL back ends' rows: Unix seconds as datetimes, stored
vectors as arrays, and a record with its search rows as a ``DumpRow``
(docs/transfer.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from oam_core.checks import Vector
from oam_core.store.backend import DumpChunk, DumpRow

__all__ = ["dump_row", "stored_vector", "utc_from_epoch"]


def utc_from_epoch(value: float | None) -> datetime | None:
    """Unix seconds as an aware UTC datetime, or None."""
    return None if value is None else datetime.fromtimestamp(value, timezone.utc)


def stored_vector(value: Any) -> Vector | None:
    """A stored vector (float32 bytes or a float list) as a float32 array."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(value, dtype="<f4").astype(np.float32)
    return np.asarray(value, dtype=np.float32)


def dump_row(
    row: Sequence[Any],
    chunks: Sequence[Sequence[Any]],
    sources: dict[int, list[str]],
) -> DumpRow:
    """A ``DumpRow`` from a row of ``sd.DUMP_COLUMNS`` and its ``sd.chunks_of`` rows."""
    (_pk, family, rid, rtype, content, role, seq_no, tid, uid, aid) = row[:10]
    event_ts, metadata, created_at, expires_at, valid_from, valid_until = row[10:16]
    config, state = row[16:]
    return DumpRow(
        family=family,
        id=rid,
        record_type=rtype,
        content=content,
        role=role,
        seq_no=None if seq_no is None else int(seq_no),
        thread_id=tid,
        user_id=uid,
        agent_id=aid,
        timestamp=event_ts,
        metadata=metadata,
        created_at=created_at,
        expires_at=utc_from_epoch(expires_at),
        config=config,
        state=state,
        valid_from=utc_from_epoch(valid_from),
        valid_until=utc_from_epoch(valid_until),
        chunks=tuple(
            DumpChunk(
                text=c[2],
                vector=stored_vector(c[3]),
                expires_at=utc_from_epoch(c[4]),
                sources=tuple(sources.get(int(c[0]), ())),
            )
            for c in chunks
        ),
    )
