"""The links between versions of a memory (docs/versions.md), kept whole when a
version is deleted: by ``delete``, by a thread's delete, and when a write reuses the
id of an expired row that was not purged yet (``store/expiredrows.py``).
"""

from __future__ import annotations

import json
from typing import Any

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.metadatajson import RESERVED_KEY
from oam_core.store.backend import StoredRow, Tx

__all__ = ["MEMORY", "reserved_of", "unlink_version", "with_reserved"]

MEMORY = "memory"
"""The id family of every memory-like type."""


def reserved_of(row: StoredRow) -> dict[str, Any]:
    """A copy of ``row``'s reserved ``$agent_memory`` object (empty when none)."""
    found = (row.metadata or {}).get(RESERVED_KEY)
    return dict(found) if isinstance(found, dict) else {}


def unlink_version(
    tx: Tx, record_id: str, *, record_type: str | None = None, thread_id: Maybe[str] = NOT_SET
) -> None:
    """Before the memory ``record_id`` is deleted inside the write transaction ``tx``:
    join its neighbours in its chain (docs/versions.md#deleting-a-version), so a
    history stays whole and no link names a record that is gone. Each version it
    replaced, and that names it as ``superseded_by``, names its successor instead
    (None when it had none: that version stays ended); its successor lists those
    versions in ``supersedes`` in its place. Nothing happens for a memory without
    links, an unknown id, or one that the delete will not match (another
    ``record_type`` or ``thread_id`` than the given ones).
    """
    row = tx.fetch_locked(MEMORY, record_id)
    if (
        row is None
        or (record_type is not None and row.record_type != record_type)
        or (thread_id is not NOT_SET and row.scope[0] != thread_id)
    ):
        return
    keys = reserved_of(row)
    successor = keys.get("superseded_by")
    successor = successor if isinstance(successor, str) else None
    listed = keys.get("supersedes")
    relinked = []
    for pid in listed if isinstance(listed, list) else []:
        older = tx.fetch_locked(MEMORY, pid) if isinstance(pid, str) else None
        if older is None:
            continue
        older_keys = reserved_of(older)
        if older_keys.get("superseded_by") == record_id:
            older_keys["superseded_by"] = successor
            tx.update_row(older, {"metadata": with_reserved(older, older_keys)})
            relinked.append(str(older.id))
    newer = None if successor is None else tx.fetch_locked(MEMORY, successor)
    if newer is None:
        return
    newer_keys = reserved_of(newer)
    names = newer_keys.get("supersedes")
    names = [i for i in names if isinstance(i, str)] if isinstance(names, list) else []
    if record_id not in names:
        return
    at = names.index(record_id)
    names[at : at + 1] = [i for i in relinked if i not in names]
    newer_keys["supersedes"] = names
    tx.update_row(newer, {"metadata": with_reserved(newer, newer_keys)})


def with_reserved(row: StoredRow, keys: dict[str, Any]) -> str:
    """``row``'s metadata as JSON text with ``keys`` as its reserved object."""
    meta = dict(row.metadata or {})
    meta[RESERVED_KEY] = keys
    return json.dumps(meta, ensure_ascii=False)
