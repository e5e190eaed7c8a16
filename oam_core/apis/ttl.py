"""Time-to-live anchors (docs/store.md#ttl-and-retention; Oracle's SDK ``oracleagentmemory.apis.ttl``)."""

from __future__ import annotations

import enum


class TimeToLiveAnchor(str, enum.Enum):
    """What a record's time to live counts from.

    ``CREATED_AT`` (the default): the store time at which the row was written.
    ``TIMESTAMP``: the record's own event timestamp, which must then be an ISO-8601
    string (naive values are read as UTC).
    """

    CREATED_AT = "CREATED_AT"
    TIMESTAMP = "TIMESTAMP"
