"""The newest memory-like records of several types, in one order that agrees with the
store's cut (``store.list(limit=n)``: each type's newest ``n`` by insertion), so that
lists and pages of any length are prefixes of one sequence (docs/service.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from oam_core.apis.records import Record

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = ["newest_first"]


def newest_first(
    store: OracleMemoryStore, record_types: Iterable[str], limit: int, **scope: Any
) -> tuple[list[Record], bool]:
    """The newest ``limit`` memory-like records of ``record_types``, newest first,
    and whether older ones exist.

    One order that agrees with the store's cut: ``store.list(limit=n)`` gives a
    type's newest ``n`` records by insertion, so each type keeps its insertion order
    (records written by one ``add`` share one ``created_at``), and the types are
    merged by taking, at each step, the type whose next record has the latest
    ``created_at`` (a tie goes to the type named first in sorted order). The first
    ``n`` of that merge depend only on each type's newest ``n``, so a longer
    ``limit`` extends a shorter one: a page of ``m`` records is exactly the records
    ``p * m`` to ``(p + 1) * m`` of one sequence, and every record is on one page
    (while nothing is written in between). The inspector's pages, ``oam memories
    list --limit`` and the MCP tool ``list_memories`` read this order.

    Args:
        store: The store.
        record_types: Memory types to list (``memory``, ``fact``, ...).
        limit: Most records returned (>= 0).
        **scope: ``store.list`` filters (``user_id=``, ``agent_id=``, ``thread_id=``,
            ``as_of=``).

    Returns:
        ``(records, more)``: up to ``limit`` records, newest first, and whether the
        store holds more of them.
    """
    lanes = [
        store.list(record_type, limit=limit + 1, **scope)[::-1]
        for record_type in sorted(set(record_types))
    ]
    heads = [0] * len(lanes)
    merged: list[Record] = []
    while len(merged) <= limit:
        best = -1
        for lane, (records, head) in enumerate(zip(lanes, heads, strict=True)):
            if head < len(records) and (
                best < 0
                or (records[head].created_at or "") > (lanes[best][heads[best]].created_at or "")
            ):
                best = lane
        if best < 0:
            break
        merged.append(lanes[best][heads[best]])
        heads[best] += 1
    return merged[:limit], len(merged) > limit
