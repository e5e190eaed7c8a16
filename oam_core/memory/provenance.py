"""Library-owned metadata of derived records (SPEC §2 provenance; issue 3 supersede).

Keys under ``metadata["$agent_memory"]`` are written by the library only:
``source_message_ids`` (the messages a memory was extracted from), ``status``
(``"invalid"`` once superseded), ``superseded_by`` and ``reason``.
"""

from __future__ import annotations

from typing import Any

from oam_core.apis.records import Record
from oam_core.store.planning import RESERVED_KEY

__all__ = ["RESERVED_KEY", "SUPERSEDED", "is_superseded", "reserved_keys"]

SUPERSEDED = "invalid"
"""``$agent_memory.status`` of a memory replaced or contradicted by a newer one."""


def reserved_keys(record: Record) -> dict[str, Any]:
    """The record's ``metadata["$agent_memory"]`` object (empty when absent)."""
    value = (record.metadata or {}).get(RESERVED_KEY)
    return value if isinstance(value, dict) else {}


def is_superseded(record: Record) -> bool:
    """Whether a newer memory replaced or contradicted this one."""
    return reserved_keys(record).get("status") == SUPERSEDED
