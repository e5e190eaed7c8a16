"""Rows that expired but are not purged yet, removed when a write reuses their ids
(docs/store.md#ttl-and-retention).

An expired row is invisible to every read and search until ``purge_expired``
deletes it, so it is absent for a write too: ``add``, ``upsert``, the thread
writes, and an import or copy in every ``on_conflict`` mode store a record with
its id in its place. The row goes inside the write's own transaction, as a delete
takes it (search rows, keyword and vector entries; a memory's version links are
joined around it, ``versionlinks.unlink_version``), so a write that fails leaves
it as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import THREAD
from oam_core.store.backend import Tx
from oam_core.store.versionlinks import MEMORY, unlink_version

__all__ = ["drop_expired", "held_ids"]


def drop_expired(
    tx: Tx, by_family: Mapping[str, Sequence[str]], now: datetime
) -> set[tuple[str, str]]:
    """Delete, inside the write transaction ``tx``, the rows among ``by_family``'s ids
    (id family -> ids the write is about to store) that expired at ``now`` and are
    not purged yet.

    Args:
        tx: The open write transaction of the write.
        by_family: The ids of the write by id family (threads never expire: their
            family is not looked up).
        now: The store clock's time of the write (aware datetime).

    Returns:
        ``(family, id)`` of the expired rows deleted.
    """
    dropped: set[tuple[str, str]] = set()
    for family, ids in by_family.items():
        if family == THREAD or not ids:
            continue
        expired = sorted(tx.expired_ids(family, ids, now))
        if not expired:
            continue
        if family == MEMORY:
            for record_id in expired:
                unlink_version(tx, record_id)
        tx.delete_records(family, expired, None, NOT_SET)
        dropped.update((family, record_id) for record_id in expired)
    return dropped


def held_ids(tx: Tx, by_family: Mapping[str, Sequence[str]], now: datetime) -> set[tuple[str, str]]:
    """``(family, id)`` of the rows among ``by_family``'s ids that the store holds
    and that are live at ``now``; the expired ones among them are deleted
    (``drop_expired``), so only ids that clash are looked at twice."""
    held: set[tuple[str, str]] = set()
    for family, ids in by_family.items():
        held.update((family, i) for i in tx.existing_ids(family, ids))
    if held:
        clashing: dict[str, list[str]] = {}
        for family, record_id in sorted(held):
            clashing.setdefault(family, []).append(record_id)
        held -= drop_expired(tx, clashing, now)
    return held
