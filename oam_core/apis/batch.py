"""``PendingRecordBatch``: a prepared write for ``add_batches`` (docs/store.md#writing-records; Oracle's SDK type)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy.typing as npt

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.ttl import TimeToLiveAnchor


@dataclass
class PendingRecordBatch:
    """One logical batch of rows of a single record type, with per-row fields.

    The fields mirror the arguments of ``OracleMemoryStore.add``: ``texts`` is the
    ``contents`` list; scalar per-row fields broadcast over the batch and lists must
    align with ``texts``. Fields left at ``NOT_SET`` behave as omitted arguments.
    """

    texts: Sequence[str | None]
    record_type: str
    index_texts: Maybe[Sequence[str | Sequence[str] | None]] = NOT_SET
    embeddings: Maybe[Sequence[Any] | npt.NDArray[Any] | None] = NOT_SET
    record_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET
    thread_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET
    user_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET
    agent_ids: Maybe[str | Sequence[str | None] | None] = NOT_SET
    roles: Maybe[str | Sequence[str | None] | None] = NOT_SET
    timestamps: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET
    metadata: Maybe[dict[str, Any] | Sequence[dict[str, Any] | None] | None] = NOT_SET
    ttl_days: Maybe[int | Sequence[int | None] | None] = NOT_SET
    ttl_anchor: Maybe[TimeToLiveAnchor | Sequence[TimeToLiveAnchor]] = NOT_SET
    valid_from: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET
    valid_until: Maybe[str | datetime | Sequence[str | datetime | None] | None] = NOT_SET
