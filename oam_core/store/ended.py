"""Whether a stored version was ended by the version machinery (docs/versions.md).

A memory replaced by a newer version (``superseded_by``) or invalidated (``status:
"invalid"``) keeps its window end; moving that end, or replacing the record by an
upsert, would let it hold beside its successor: two current versions of one memory.
"""

from __future__ import annotations

from typing import Any

from oam_core.apis.metadatajson import RESERVED_KEY


def ended_by_version(metadata: dict[str, Any] | None) -> str | None:
    """Why a record with ``metadata`` (its stored metadata, reserved object included)
    no longer holds: ``"was replaced by 'ID'"``, ``"was invalidated"``, or None when
    no version change ended it."""
    keys = (metadata or {}).get(RESERVED_KEY)
    if not isinstance(keys, dict):
        return None
    successor = keys.get("superseded_by")
    if isinstance(successor, str):
        return f"was replaced by {successor!r}"
    if keys.get("status") == "invalid":
        return "was invalidated"
    return None
