"""What the inspector's pages show, gathered through the public client and store API
(docs/service.md). Plain functions returning plain data; no HTML here."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from oam_core import OracleAgentMemory
from oam_core.apis.records import MessageRecord, Record, ThreadRow
from oam_core.errors import InvalidArgumentError
from oam_core.memory.newest import newest_first
from oam_core.service.common import MEMORY_TYPE_NAMES, provenance, record_json, window_text

__all__ = [
    "MESSAGE_PAGE",
    "Actor",
    "MemoryView",
    "actor_exists",
    "actors",
    "find_memory",
    "holds_at",
    "memory_history",
    "memory_page",
    "memory_views",
    "parse_filter",
    "planned_at",
]

MESSAGE_PAGE = 500
"""Most messages a thread page shows at once (the newest; older ones page back)."""
MEMORY_PAGE = 50
"""Memories per page of the memories list (``/memories``), newest first."""
MEMORY_PAGES = 200
"""Pages the memories list goes back at most (``MEMORY_PAGE`` each)."""
_LIST_CAP = 2000


@dataclass
class Actor:
    """A user or agent id with what the store holds for it."""

    id: str
    threads: int = 0
    profile: str | None = None


def actors(memory: OracleAgentMemory) -> tuple[list[Actor], list[Actor]]:
    """The users and the agents that own threads or have a profile, sorted by id."""
    users: dict[str, Actor] = {}
    agents: dict[str, Actor] = {}
    for row in memory.list_threads():
        if row.user_id is not None:
            users.setdefault(row.user_id, Actor(row.user_id)).threads += 1
        if row.agent_id is not None:
            agents.setdefault(row.agent_id, Actor(row.agent_id)).threads += 1
    store = memory.store
    for record_type, table in (("user_profile", users), ("agent_profile", agents)):
        for profile in store.list(record_type, limit=_LIST_CAP):
            table.setdefault(profile.id, Actor(profile.id)).profile = profile.content
    return sorted(users.values(), key=lambda a: a.id), sorted(agents.values(), key=lambda a: a.id)


def actor_exists(memory: OracleAgentMemory, kind: str, actor_id: str) -> bool:
    """Whether the store holds anything of user or agent ``actor_id`` (``kind``:
    ``user`` or ``agent``): a thread it owns, its profile or a memory scoped to it
    (what its page shows; without any, the page is a 404)."""
    scope: dict[str, Any] = {f"{kind}_id": actor_id}
    store = memory.store
    return bool(
        memory.list_threads(**scope)
        or store.get(f"{kind}_profile", actor_id) is not None
        or any(store.list(t, limit=1, **scope) for t in MEMORY_TYPE_NAMES)
    )


@dataclass
class SourceLink:
    """One source message of a memory: where to find it, or that it is gone."""

    message_id: str
    thread_id: str | None = None
    seq_no: int | None = None
    role: str | None = None
    excerpt: str | None = None

    @property
    def found(self) -> bool:
        return self.thread_id is not None


@dataclass
class MemoryView:
    """A memory with its provenance and supersede links resolved."""

    record: Record
    sources: list[SourceLink]
    status: str | None
    superseded_by: str | None
    reason: str | None
    replaces: list[str] = field(default_factory=list)

    holds: bool = True
    planned: bool = False

    @property
    def superseded(self) -> bool:
        """Whether it no longer holds: its window has ended (replaced by a newer
        memory or invalidated). Its window decides, not its ``status`` mark: a
        memory invalidated for a later time, or replaced by a version planned for
        later, holds until then; one planned for later has not ended either."""
        return not self.holds and not self.planned

    @property
    def ended_label(self) -> str:
        """``superseded`` when a newer memory replaced it, else ``invalidated``."""
        return "superseded" if self.superseded_by else "invalidated"

    @property
    def window(self) -> str:
        """Its validity window in words (docs/versions.md)."""
        return window_text(self.record)

    @property
    def metadata_json(self) -> str | None:
        data = record_json(self.record)["metadata"]
        return None if data is None else json.dumps(data, ensure_ascii=False, indent=2)


def _source_link(
    memory: OracleAgentMemory, message_id: str, known: dict[str, MessageRecord]
) -> SourceLink:
    message = known.get(message_id)
    if message is None:
        found = memory.store.get("message", message_id)
        message = found if isinstance(found, MessageRecord) else None
    if message is None:
        return SourceLink(message_id)
    text = " ".join((message.content or "").split())
    return SourceLink(
        message_id,
        thread_id=message.thread_id,
        seq_no=message.seq_no,
        role=message.role,
        excerpt=text if len(text) <= 160 else text[:159] + "…",
    )


def memory_views(
    memory: OracleAgentMemory,
    records: Iterable[Record],
    messages: Iterable[MessageRecord] = (),
) -> list[MemoryView]:
    """Resolve provenance and supersede links of ``records``.

    Args:
        memory: The client.
        records: Memory-like records.
        messages: Messages already loaded (looked up first, before the store).
    """
    known = {m.id: m for m in messages}
    now = store_now(memory)
    views = []
    for record in records:
        keys = provenance(record)
        views.append(
            MemoryView(
                record=record,
                sources=[_source_link(memory, s, known) for s in keys["source_message_ids"]],
                status=keys["status"],
                superseded_by=keys["superseded_by"],
                reason=keys["reason"],
                holds=holds_at(record, now),
                planned=planned_at(record, now),
            )
        )
    by_id = {v.record.id: v for v in views}
    for view in views:
        newer = by_id.get(view.superseded_by or "")
        if newer is not None:
            newer.replaces.append(view.record.id)
    return views


def thread_memories(memory: OracleAgentMemory, thread_id: str) -> list[Record]:
    """The newest ``_LIST_CAP`` memory-like records of a thread, oldest first."""
    return newest_first(memory.store, MEMORY_TYPE_NAMES, _LIST_CAP, thread_id=thread_id)[0][::-1]


def scoped_memories(memory: OracleAgentMemory, **scope: Any) -> list[Record]:
    """The newest ``_LIST_CAP`` memory-like records of a user or agent (``user_id=`` /
    ``agent_id=``), oldest first."""
    return newest_first(memory.store, MEMORY_TYPE_NAMES, _LIST_CAP, **scope)[0][::-1]


def memory_page(
    memory: OracleAgentMemory,
    record_types: Iterable[str],
    page: int,
    **scope: Any,
) -> tuple[list[Record], bool]:
    """One page of the memories list: memory-like records of ``record_types``
    across threads, newest first (``newest_first``'s order), filtered exactly by
    ``scope`` (``user_id=``, ``agent_id=``, ``thread_id=``).

    Args:
        memory: The client.
        record_types: Memory types to list (``memory``, ``fact``, ...).
        page: 0 = the newest ``MEMORY_PAGE`` records, 1 = the ones before, ...
        **scope: Exact filters; absent = any.

    Returns:
        ``(records, more)``: the page's records and whether older ones exist.
    """
    records, more = newest_first(memory.store, record_types, (page + 1) * MEMORY_PAGE, **scope)
    return records[page * MEMORY_PAGE :], more


def find_memory(memory: OracleAgentMemory, memory_id: str) -> Record | None:
    """The memory-like record with ``memory_id``, whatever its type, or None."""
    for record_type in MEMORY_TYPE_NAMES:
        found = memory.store.get(record_type, memory_id)
        if found is not None:
            return found
    return None


def store_now(memory: OracleAgentMemory) -> datetime:
    """The store clock's now (aware UTC): what "current" means (docs/versions.md)."""
    return memory.store.runtime.now()


def _instant(text: str | None) -> datetime | None:
    if text is None:
        return None
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def holds_at(record: Record, when: datetime) -> bool:
    """Whether ``record`` is valid at ``when``: ``valid_from`` None or <= it and
    ``valid_until`` None or > it (messages and profiles always hold)."""
    start, end = _instant(record.valid_from), _instant(record.valid_until)
    return (start is None or start <= when) and (end is None or end > when)


def planned_at(record: Record, when: datetime) -> bool:
    """Whether ``record``'s window starts after ``when`` and is not empty (a version
    planned for later, which can still be corrected before it holds)."""
    start, end = _instant(record.valid_from), _instant(record.valid_until)
    return start is not None and start > when and (end is None or end > start)


@dataclass
class Version:
    """One version of a memory in its history."""

    view: MemoryView
    this: bool


def memory_history(memory: OracleAgentMemory, record: Record) -> list[Version]:
    """Every version of ``record``'s memory (``get_memory_history``: linked by
    supersede links in either direction, oldest ``valid_from`` first), each with
    its window, reason and whether it is the one asked for."""
    records = memory.get_memory_history(record.id)
    return [Version(v, v.record.id == record.id) for v in memory_views(memory, records)]


def parse_filter(text: str) -> dict[str, Any] | None:
    """The search form's metadata filter: empty = none, else a JSON object.

    Raises:
        ValueError: for text that is not a JSON object.
    """
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"metadata filter is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"metadata filter must be a JSON object, got {text!r}")
    return value


def thread_rows_with_counts(
    memory: OracleAgentMemory, rows: Iterable[ThreadRow]
) -> list[tuple[ThreadRow, int]]:
    """Thread rows with their message counts."""
    return [(row, memory.store.count_thread_messages(row.thread_id)) for row in rows]
