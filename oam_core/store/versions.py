"""Versions of memories: supersede, invalidate, history (docs/versions.md).

A memory-like record (``memory``, ``guideline``, ``fact``, ``preference``) has a
validity window ``[valid_from, valid_until)``. Superseding one memory by a newer one
ends the old window at the new one's ``valid_from`` (or now) and links the two in
their reserved metadata (``$agent_memory``): the old record gets ``status:
"invalid"``, ``superseded_by`` and ``reason``, the new one ``supersedes: [old ids]``.
Invalidating ends a window without a successor (``superseded_by: None``). Whether a
version can still be updated or invalidated is decided by its window
(``window_state``), not by those marks. Each operation is one transaction; the old
row is re-read inside it, so two writers superseding the same memory at once leave
exactly one current version.

``memory_versions(store)`` gives the operations the client calls
(``update_memory``, ``invalidate_memory``, ``get_memory_history``);
``apply_changes`` applies the decisions of an extraction pass inside the
transaction that advances the thread's watermark (``ThreadStore.commit_thread_pass``).
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from oam_core import checks
from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.metadatajson import MANAGED_KEY, RESERVED_KEY, dump_metadata
from oam_core.apis.records import Record
from oam_core.errors import InvalidArgumentError, NotFoundError
from oam_core.steps import async_twin
from oam_core.store import writes
from oam_core.store.backend import StoredRow, Tx
from oam_core.store.parts import StorePart, part_of
from oam_core.store.runtime import StoreRuntime
from oam_core.store.runtime import traced as traced_store
from oam_core.store.versionlinks import MEMORY, reserved_of, unlink_version, with_reserved

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = [
    "MemoryVersions",
    "VersionChange",
    "apply_changes",
    "lock_targets",
    "memory_versions",
    "unlink_version",
]

KEPT_PROVENANCE = ("source_message_ids", MANAGED_KEY)
"""Reserved keys a new version copies from the one it replaces: its provenance, and
the mark of a record managed by the application that wrote it (an explicit
``update_memory`` of it writes a version the application still manages)."""


@dataclass(frozen=True)
class VersionChange:
    """One change of a memory's version, applied inside a write transaction.

    Attributes:
        kind: ``"supersede"`` (``successor_id`` replaces ``target_id``) or
            ``"invalidate"`` (``target_id`` stops holding, no successor).
        target_id: The memory whose window ends (family ``memory``, any memory type).
        successor_id: For ``supersede``, the id of the new memory, inserted in the
            same transaction before the change is applied; None for ``invalidate``.
        at: When the target stops holding (aware UTC); None: the successor's
            ``valid_from``, else the store clock's now.
        reason: Why, kept in the target's reserved metadata; None for none.
        follow_head: For ``invalidate``: when the target was replaced meanwhile,
            end the current head of its chain instead (an extraction ``DELETE`` of
            a memory another writer updated since the prompt showed it, as a
            ``supersede`` always does); False (``invalidate_memory``): leave it.
    """

    kind: Literal["supersede", "invalidate"]
    target_id: str
    successor_id: str | None = None
    at: datetime | None = None
    reason: str | None = None
    follow_head: bool = False


# -- inside a transaction -----------------------------------------------------------


def window_state(
    valid_from: datetime | None, valid_until: datetime | None, now: datetime
) -> Literal["current", "planned", "ended"]:
    """Where a version's window ``[valid_from, valid_until)`` stands at ``now``
    (docs/versions.md#superseding-and-invalidating): ``"ended"`` when it ends by
    ``now`` (or is empty: a version replaced before it began never holds),
    ``"planned"`` when it starts after ``now``, else ``"current"``. The window alone
    decides, not the reserved ``status``/``superseded_by`` marks: a version
    invalidated for a later time, or replaced by a version planned for later, is
    current until its end."""
    if valid_until is not None and (
        valid_until <= now or (valid_from is not None and valid_until <= valid_from)
    ):
        return "ended"
    if valid_from is not None and valid_from > now:
        return "planned"
    return "current"


def is_open(valid_from: datetime | None, valid_until: datetime | None, now: datetime) -> bool:
    """Whether a version can still be replaced (``update_memory``): its window has not
    ended by ``now`` (``window_state`` is ``"current"`` or ``"planned"``: a version
    planned for later can be corrected before it holds)."""
    return window_state(valid_from, valid_until, now) != "ended"


def row_open(row: StoredRow, now: datetime) -> bool:
    """``is_open`` of a row read in a transaction."""
    return is_open(row.valid_from, row.valid_until, now)


def row_current(row: StoredRow, now: datetime) -> bool:
    """Whether a row read in a transaction is current (valid at ``now``)."""
    return window_state(row.valid_from, row.valid_until, now) == "current"


def live(row: StoredRow | None, now: datetime) -> StoredRow | None:
    """``row`` when it is visible at ``now`` (not expired), else None: an expired
    memory is unknown to every version operation, as to every read
    (docs/store.md#ttl-and-retention)."""
    if row is None or (row.expires_at is not None and row.expires_at <= now):
        return None
    return row


def apply_changes(
    runtime: StoreRuntime, tx: Tx, changes: Sequence[VersionChange]
) -> builtins.list[VersionChange]:
    """Apply ``changes`` in order inside the open write transaction ``tx``
    (docs/store.md#memory-versions).

    Each target is read again, locked (``Tx.fetch_locked``); its window decides
    (``window_state``), not its reserved marks. ``supersede``: a target whose window
    has ended is followed along its ``superseded_by`` links to the version after
    it, until one whose window has not ended, which is superseded instead (none: the
    successor simply stays and nothing ends); a target that still holds at the
    successor's start while the version after it is planned for later (starting
    after now) is not followed: the successor goes in between (the target ends at
    the successor's start, the successor at the plan's start, and the plan now
    replaces the successor, docs/versions.md#superseding-and-invalidating); a
    ``superseded_by`` naming no stored version is no link. The target's window ends
    at ``at``, else the successor's ``valid_from``, else now (never before the
    target's own ``valid_from``, never after an end it already has), its reserved
    metadata gets ``status: "invalid"``, ``superseded_by`` and ``reason``, and the
    successor's reserved ``supersedes`` list gets the target's id; the successor
    takes the target's expiry (``expires_at``, None = never expires: a new version
    keeps the memory's retention, docs/versions.md#superseding-and-invalidating).
    ``invalidate``: a current target ends (``at``, else now; a version planned for
    later is not current and is left alone) with ``superseded_by`` kept when it
    names a stored version planned for later, else None; an ended one is left
    alone, unless ``follow_head`` (then the version that holds now at the end of
    its ``superseded_by`` links ends instead). Unknown targets (and successors),
    and expired ones, are skipped.

    Returns:
        The changes applied, with the real target ids (the head a ``supersede``
        followed to) and the ``at`` each window ended at.
    """
    now = runtime.now()
    applied: builtins.list[VersionChange] = []
    for change in changes:
        if change.kind == "supersede":
            done = _supersede(tx, change, now)
        else:
            done = _invalidate(tx, change, now)
        if done is not None:
            applied.append(done)
    return applied


def lock_targets(runtime: StoreRuntime, tx: Tx, changes: Sequence[VersionChange]) -> None:
    """Lock the rows ``apply_changes`` will change among those that exist now: each
    target and the versions its ``superseded_by`` links lead to. A pipeline pass
    calls it before inserting its records, so on a server it takes record rows
    before the keyword statistics row its inserts take, in the order every other
    writer takes them (docs/postgres.md#concurrency-and-durability)."""
    del runtime  # the rows to lock do not depend on the time
    for change in changes:
        row = tx.fetch_locked(MEMORY, change.target_id)
        seen = {change.target_id}
        while row is not None:
            head = reserved_of(row).get("superseded_by")
            if not isinstance(head, str) or head in seen:
                break
            seen.add(head)
            row = tx.fetch_locked(MEMORY, head)


def _next_version(tx: Tx, row: StoredRow, seen: set[str], now: datetime) -> StoredRow | None:
    """The visible version ``row``'s ``superseded_by`` names (locked), or None when it
    names none, one already ``seen`` on this walk, or one that is not stored (a
    successor deleted by an older release, which did not join the neighbours)."""
    head = reserved_of(row).get("superseded_by")
    if not isinstance(head, str) or head in seen:
        return None
    return live(tx.fetch_locked(MEMORY, head), now)


def _supersede(tx: Tx, change: VersionChange, now: datetime) -> VersionChange | None:
    if change.successor_id is None or change.successor_id == change.target_id:
        return None
    successor = tx.fetch_locked(MEMORY, change.successor_id)
    target = live(tx.fetch_locked(MEMORY, change.target_id), now)
    seen = {change.successor_id}
    plan = None
    while target is not None:
        seen.add(str(target.id))
        after = _next_version(tx, target, seen, now)
        if after is None:
            if not row_open(target, now):
                return None  # ended, and no version after it: the successor simply stays
            break
        if _planned(after, now) and _holds_at(target, _start_after(successor, target, now) or now):
            plan = after  # the successor goes in before a version planned for later
            break
        target = after
    if successor is None or target is None:
        return None
    plan_reason = reserved_of(target).get("reason")
    fields: dict[str, Any] = {}
    start = successor.valid_from
    if start != (moved := _start_after(successor, target, now)):
        # A successor cannot hold before the version it replaces began (a pass whose
        # messages predate a correction made meanwhile): it starts now, or then.
        start = fields["valid_from"] = moved
    end = change.at or start or now
    _end(tx, target, end, superseded_by=successor.id, reason=change.reason)
    keys = reserved_of(successor)
    listed = keys.get("supersedes")
    supersedes = [i for i in listed if isinstance(i, str)] if isinstance(listed, list) else []
    if target.id not in supersedes:
        supersedes.append(str(target.id))
    keys["supersedes"] = supersedes
    if plan is not None:
        keys.update(_before_plan(tx, plan, str(target.id), str(successor.id), plan_reason))
        fields["valid_until"] = plan.valid_from
    fields["metadata"] = with_reserved(successor, keys)
    if successor.expires_at != target.expires_at:
        fields["expires_at"] = target.expires_at  # a new version keeps the memory's retention
    tx.update_row(successor, fields)
    if "expires_at" in fields:
        tx.clamp_quoting(successor.key)
    return dataclasses.replace(change, target_id=str(target.id), at=_clamped(target, end))


def _start_after(successor: StoredRow | None, target: StoredRow, now: datetime) -> datetime | None:
    """When ``successor`` starts holding once it replaces ``target``: its own
    ``valid_from`` (None: open), unless that is before ``target``'s start (then
    now, or ``target``'s start when that is later)."""
    start = None if successor is None else successor.valid_from
    if target.valid_from is not None and (start is None or start < target.valid_from):
        return max(now, target.valid_from)
    return start


def _planned(row: StoredRow | None, now: datetime) -> bool:
    """Whether ``row`` is a version that starts after ``now`` (a change planned ahead)."""
    return row is not None and row.valid_from is not None and row.valid_from > now


def _holds_at(row: StoredRow, at: datetime) -> bool:
    """Whether ``row``'s window holds at ``at``."""
    started = row.valid_from is None or row.valid_from <= at
    return started and (row.valid_until is None or at < row.valid_until)


def _before_plan(
    tx: Tx, plan: StoredRow, replaced: str, successor: str, reason: object
) -> dict[str, Any]:
    """Link ``successor``, which replaces ``replaced`` before the planned version
    ``plan`` begins, to ``plan``: ``plan`` now replaces ``successor``. Returns the
    successor's reserved keys that say so (the plan's ``reason`` moves with it)."""
    keys = reserved_of(plan)
    listed = keys.get("supersedes")
    names = [i for i in listed if isinstance(i, str)] if isinstance(listed, list) else []
    keys["supersedes"] = [successor if i == replaced else i for i in names] or [successor]
    tx.update_row(plan, {"metadata": with_reserved(plan, keys)})
    return {"status": "invalid", "superseded_by": str(plan.id), "reason": reason}


def _invalidate(tx: Tx, change: VersionChange, now: datetime) -> VersionChange | None:
    target = live(tx.fetch_locked(MEMORY, change.target_id), now)
    if change.follow_head:
        target = _started_head(tx, target, now)
    if target is None or not row_current(target, now):
        return None
    after = _next_version(tx, target, {str(target.id)}, now)
    kept = str(after.id) if after is not None and _planned(after, now) else None
    end = change.at or now
    _end(tx, target, end, superseded_by=kept, reason=change.reason)
    return dataclasses.replace(change, target_id=str(target.id), at=_clamped(target, end))


def _started_head(tx: Tx, row: StoredRow | None, now: datetime) -> StoredRow | None:
    """The version that holds now at the end of ``row``'s ``superseded_by`` links
    (``row`` itself when it is current); None when the chain ends without one, or
    reaches a version planned for later (which a change decided before it was
    written does not end)."""
    seen: set[str] = set()
    while row is not None and not row_current(row, now):
        if row_open(row, now):
            return None  # planned for later itself
        seen.add(str(row.id))
        row = _next_version(tx, row, seen, now)
        if _planned(row, now):
            return None
    return row


def _clamped(row: StoredRow, end: datetime) -> datetime:
    """``end`` within ``row``'s window: its ``valid_from`` when ``end`` is earlier (a
    version ended before it began never holds), its ``valid_until`` when that is
    earlier (ending a version never makes it hold longer)."""
    if row.valid_until is not None and end > row.valid_until:
        end = row.valid_until
    return row.valid_from if row.valid_from is not None and end < row.valid_from else end


def _end(
    tx: Tx, row: StoredRow, end: datetime, *, superseded_by: str | None, reason: str | None
) -> None:
    """End ``row``'s window at ``end`` (clamped) and mark it in its reserved metadata."""
    keys = reserved_of(row)
    keys.update(status="invalid", superseded_by=superseded_by, reason=reason)
    tx.update_row(row, {"valid_until": _clamped(row, end), "metadata": with_reserved(row, keys)})


# -- the client's operations ----------------------------------------------------------


def memory_versions(store: OracleMemoryStore) -> MemoryVersions:
    """The ``MemoryVersions`` of ``store`` (the same object on every call)."""
    return part_of(store, MemoryVersions)


class MemoryVersions(StorePart):
    """Update, invalidate and trace the versions of one store's memories
    (docs/store.md#memory-versions). Each write is one transaction that reads the
    memory again, locked, so two writers updating one memory at once leave exactly
    one current version.

    Args:
        runtime: The store's runtime; its back end runs every call.
        store: The store itself, only to name it (``repr``, telemetry spans).
    """

    @traced_store
    def update_memory(
        self,
        memory_id: str,
        content: str,
        *,
        reason: str | None = None,
        valid_from: Maybe[str | datetime | None] = NOT_SET,
        metadata: Maybe[dict[str, Any] | None] = NOT_SET,
    ) -> str:
        """Write a new version of a memory and supersede the old one, in one
        transaction (docs/store.md#memory-versions).

        The new memory has the old one's type and scope, its metadata (unless
        ``metadata`` is given) and its provenance (``source_message_ids``), and is
        embedded through the store's write path. The old one's window ends at the
        new one's ``valid_from`` (now when None). Its window decides whether it can
        be updated (``is_open``), not its reserved marks: a current memory can,
        also one invalidated for a later time or replaced by a version planned for
        later (the new one then goes in before the plan, or replaces the plan when
        it starts after it); a plan can be corrected before it holds (the new one
        starts when it would have); an ended one cannot. A window that already ends
        before the new ``valid_from`` keeps its end (a gap follows). The new version keeps the old one's expiry (``expires_at``): a memory that
        never expires stays so, a finite expiry stays the same instant, whatever the
        store's ``default_ttl_days`` (docs/store.md#ttl-and-retention); change it
        with ``store.update(..., ttl_days=...)``.

        Args:
            memory_id: The current version to replace.
            content: The new text.
            reason: Why, kept in the old version's reserved metadata.
            valid_from: When the new version starts holding: a datetime (naive =
                UTC) or an ISO-8601 string; omitted: now; None: open.
            metadata: The new version's metadata (a dict or None); omitted: the
                old version's.

        Returns:
            The new memory's id.

        Raises:
            NotFoundError: no memory has ``memory_id``.
            InvalidArgumentError: naming ``memory_id`` when that memory is no longer
                current: its window has ended (naming the version that holds now,
                or the next one planned, when its links lead to one); naming
                ``valid_from`` when it is not later than the old version's start; or
                for another bad argument. Nothing is written then.
        """
        checks.check_id(memory_id, "memory_id")
        if not isinstance(content, str):
            raise InvalidArgumentError(f"content must be a str, got {content!r}")
        reason = _reason_arg(reason)
        start = (
            self.runtime.now()
            if valid_from is NOT_SET
            else checks.window_time(valid_from, "valid_from")
        )
        if metadata is not NOT_SET:
            dump_metadata(metadata)
        old = self._visible(memory_id)
        if not is_open(_instant(old.valid_from), _instant(old.valid_until), self.runtime.now()):
            with self.runtime.writing() as tx:  # before embedding; names the current one
                raise _not_current(tx, memory_id, self.runtime.now())
        if valid_from is not NOT_SET:
            _after_start(start, old.valid_from, "valid_from")
        batch = _new_version(old, content, start, metadata)
        planned = writes.plan_batches(self.runtime, [batch], library=True)
        new_id = planned.ids[0]
        with self.runtime.writing() as tx:
            row = live(tx.fetch_locked(MEMORY, memory_id), self.runtime.now())
            if row is None:
                raise NotFoundError(f"no memory has id {memory_id!r}")
            if not row_open(row, self.runtime.now()):
                raise _not_current(tx, memory_id, self.runtime.now())
            if valid_from is not NOT_SET:
                _after_start(start, row.valid_from, "valid_from")
            writes.insert_planned(self.runtime, tx, planned, writes.DEFAULT_BATCH_SIZE)
            change = VersionChange("supersede", memory_id, new_id, reason=reason)
            if not apply_changes(self.runtime, tx, [change]):  # pragma: no cover - locked
                raise _not_current(tx, memory_id, self.runtime.now())
        return new_id

    @traced_store
    def invalidate_memory(
        self,
        memory_id: str,
        *,
        reason: str | None = None,
        valid_until: Maybe[str | datetime | None] = NOT_SET,
    ) -> bool:
        """End a memory's validity without a successor, in one transaction
        (docs/store.md#memory-versions): a current memory's window ends at
        ``valid_until`` (omitted or None: now; never later than an end the window
        already has: an invalidation does not make a memory hold longer), its
        reserved metadata gets ``status: "invalid"``, ``reason`` and
        ``superseded_by: None`` (a link to a version planned for later is kept).
        Its window decides, not its reserved marks: a memory invalidated for a later
        time, or replaced by a version planned for later, is current until then.

        Returns:
            True, or False when the memory is not current (nothing changes): its
            window has ended, or starts later (a plan is corrected with
            ``update_memory`` or removed with ``delete_memory``).

        Raises:
            NotFoundError: no memory has ``memory_id``, or it expired (an expired
                memory is unknown here as to every read; nothing is written).
            InvalidArgumentError: for a bad id, reason or time, or a ``valid_until``
                not later than the memory's ``valid_from``; nothing changes.
        """
        checks.check_id(memory_id, "memory_id")
        reason = _reason_arg(reason)
        at = None if valid_until is NOT_SET else checks.window_time(valid_until, "valid_until")
        with self.runtime.writing() as tx:
            row = live(tx.fetch_locked(MEMORY, memory_id), self.runtime.now())
            if row is None:
                raise NotFoundError(f"no memory has id {memory_id!r}")
            if at is not None and row_current(row, self.runtime.now()):
                _after_start(at, row.valid_from, "valid_until")
            change = VersionChange("invalidate", memory_id, at=at, reason=reason)
            return bool(apply_changes(self.runtime, tx, [change]))

    @traced_store
    def get_memory_history(self, memory_id: str) -> builtins.list[Record]:
        """Every visible version linked to a memory by supersede links, in either
        direction, oldest ``valid_from`` first (None first; ties by ``created_at``)
        (docs/store.md#memory-versions). A memory without links gives ``[itself]``.

        Raises:
            NotFoundError: no visible memory has ``memory_id``.
            InvalidArgumentError: for a bad id.
        """
        checks.check_id(memory_id, "memory_id")
        first = self._visible(memory_id)
        found: dict[str, Record] = {first.id: first}
        todo = [(first, rid) for rid in _links(first)]
        while todo:
            source, rid = todo.pop()
            if rid in found:
                continue
            record = self.runtime.backend.get_in_family(MEMORY, rid, self.runtime.now())
            if record is not None and _agree(source, record):
                found[rid] = record
                todo.extend((record, other) for other in _links(record))
        return sorted(found.values(), key=_history_order)

    def _visible(self, memory_id: str) -> Record:
        """The visible memory ``memory_id``.

        Raises:
            NotFoundError: when there is none.
        """
        found = (
            self.runtime.backend.get_in_family(MEMORY, memory_id, self.runtime.now())
            if checks.storable(memory_id)
            else None
        )
        if found is None:
            raise NotFoundError(f"no memory has id {memory_id!r}")
        return found

    update_memory_async = async_twin(update_memory)
    invalidate_memory_async = async_twin(invalidate_memory)
    get_memory_history_async = async_twin(get_memory_history)


def _new_version(
    old: Record, content: str, start: datetime | None, metadata: Maybe[dict[str, Any] | None]
) -> PendingRecordBatch:
    """The write of a new version of ``old``: its type and scope, its metadata unless
    ``metadata`` is given, and its provenance (``KEPT_PROVENANCE``)."""
    user_meta = (
        {k: v for k, v in (old.metadata or {}).items() if k != RESERVED_KEY}
        if metadata is NOT_SET
        else metadata
    )
    old_keys = reserved_of_record(old)
    kept = {k: old_keys[k] for k in KEPT_PROVENANCE if k in old_keys}
    new_meta = dict(user_meta or {})
    if kept:  # with a MANAGED_MARK the caller gives (the one reserved object it may)
        new_meta[RESERVED_KEY] = {**kept, **(new_meta.get(RESERVED_KEY) or {})}
    return PendingRecordBatch(
        texts=[content],
        record_type=old.record_type,
        thread_ids=old.thread_id,
        user_ids=old.user_id,
        agent_ids=old.agent_id,
        metadata=new_meta or (None if metadata is NOT_SET else metadata),
        valid_from=start,
    )


def _reason_arg(reason: object) -> str | None:
    """``reason``: None or a str a store can hold.

    Raises:
        InvalidArgumentError: naming ``reason`` for anything else.
    """
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise InvalidArgumentError(f"reason must be a str or None, got {reason!r}")
    return checks.check_text(reason, "reason")


def _not_current(tx: Tx, memory_id: str, now: datetime) -> InvalidArgumentError:
    """The error of an update of a version that is no longer current, naming the
    version its ``superseded_by`` links lead to whose window has not ended (read in
    ``tx``), if any: never an id that is not stored."""
    row = live(tx.fetch_locked(MEMORY, memory_id), now)
    seen = {memory_id}
    while row is not None and not row_open(row, now):
        row = _next_version(tx, row, seen, now)
        if row is not None:
            seen.add(str(row.id))
    where = ""
    if row is not None and row.id != memory_id:
        where = f"; its current version is {row.id!r}"
        if row.valid_from is not None and row.valid_from > now:
            where = f"; its next version {row.id!r} starts {row.valid_from.isoformat()}"
    return InvalidArgumentError(
        f"memory_id {memory_id!r} is no longer current (update the current version{where})"
    )


def _instant(text: str | None) -> datetime | None:
    """An ISO-8601 time of a ``Record`` window as an aware datetime (None stays)."""
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


def reserved_of_record(record: Record) -> dict[str, Any]:
    """A copy of ``record``'s reserved ``$agent_memory`` object (empty when none)."""
    found = (record.metadata or {}).get(RESERVED_KEY)
    return dict(found) if isinstance(found, dict) else {}


def _after_start(when: datetime | None, start: datetime | str | None, name: str) -> None:
    """Refuse a new end or start ``when`` that is not later than a version's start.

    Raises:
        InvalidArgumentError: naming ``name``, when ``when <= start``.
    """
    if isinstance(start, str):
        start = datetime.fromisoformat(start)
    if when is not None and start is not None and when <= start:
        raise InvalidArgumentError(
            f"{name} must be later than the memory's valid_from {start.isoformat()}, "
            f"got {when.isoformat()}"
        )


def _agree(source: Record, linked: Record) -> bool:
    """Whether ``linked``, reached from ``source`` by one of its links, links back: a
    version ``source`` lists in ``supersedes`` must name it as ``superseded_by``; its
    ``superseded_by`` must list it in ``supersedes`` (or list nothing: links written
    before successors kept the list). A record that took an ended version's id
    (``upsert``) is not that version, so a link to it does not count."""
    back = (linked.metadata or {}).get(RESERVED_KEY)
    back = back if isinstance(back, dict) else {}
    ahead = (source.metadata or {}).get(RESERVED_KEY)
    if isinstance(ahead, dict) and ahead.get("superseded_by") == linked.id:
        listed = back.get("supersedes")
        return not isinstance(listed, list) or source.id in listed
    return back.get("superseded_by") == source.id


def _links(record: Record) -> builtins.list[str]:
    """The ids ``record``'s reserved metadata links to: ``superseded_by`` and
    ``supersedes``."""
    keys = (record.metadata or {}).get(RESERVED_KEY)
    if not isinstance(keys, dict):
        return []
    out = [keys["superseded_by"]] if isinstance(keys.get("superseded_by"), str) else []
    listed = keys.get("supersedes")
    if isinstance(listed, list):
        out.extend(i for i in listed if isinstance(i, str))
    return out


_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


def _history_order(record: Record) -> tuple[datetime, str]:
    start = record.valid_from
    return (_EARLIEST if start is None else datetime.fromisoformat(start), record.created_at or "")
