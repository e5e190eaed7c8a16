"""The thread side of a store: what the memory layer (client, threads, the LLM
pipeline) reads and writes besides the public store API (docs/memory-pipeline.md).

``thread_store(store)`` gives the one ``ThreadStore`` of a store object. It holds the
thread rows (scope, metadata, runtime config, pipeline state), the thread-scoped
writes that check the row in the same transaction (``add_to_thread``,
``write_thread``), the pipeline's compare-and-set commit (``commit_thread_pass``) and
the reads and deletes only threads need. None of it is public API: the client and
``OracleThread`` are the public way to use threads, so this side of the store can
change with them.

Every method runs on the store's back end through the same write path as the public
API (``store/writes.py``). It has no async twins: the step driver runs a method
without one in a worker thread (``oam_core/steps.py``).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from oam_core import checks
from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.metadatajson import RESERVED_KEY, dump_metadata
from oam_core.apis.records import MEMORY_TYPES, MESSAGE, MessageRecord, ThreadRow, family_of
from oam_core.checks import check_optional_int, scope_arg
from oam_core.errors import InvalidArgumentError, ThreadDeletedError
from oam_core.store import writes
from oam_core.store.backend import Tx
from oam_core.store.parts import StorePart, part_of
from oam_core.store.runtime import traced as traced_store
from oam_core.store.ttl import iso
from oam_core.store.versionlinks import MEMORY as MEMORY_FAMILY
from oam_core.store.versionlinks import unlink_version
from oam_core.store.versions import VersionChange, apply_changes, lock_targets

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = ["NewThreadRow", "ReservedUpdate", "ThreadStore", "thread_store"]


@dataclass(frozen=True)
class NewThreadRow:
    """A thread row to create (``create_thread_row``; ``add_to_thread`` when the row is
    missing).

    Attributes:
        user_id: The thread's user, or None.
        agent_id: The thread's agent, or None.
        metadata: JSON-compatible metadata of the thread, or None.
        config: The runtime options persisted for ``get_thread`` (JSON object).
    """

    user_id: str | None = None
    agent_id: str | None = None
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = None


@dataclass(frozen=True)
class ReservedUpdate:
    """Library-owned keys merged into a record's ``metadata["$agent_memory"]`` (for
    example marking a memory superseded).

    Attributes:
        record_type: A message or memory-like type.
        record_id: The record.
        keys: The keys to merge (JSON object).
    """

    record_type: str
    record_id: str
    keys: dict[str, Any]


def thread_store(store: OracleMemoryStore) -> ThreadStore:
    """The ``ThreadStore`` of ``store`` (the same object on every call)."""
    return part_of(store, ThreadStore)


class ThreadStore(StorePart):
    """Thread rows, thread-scoped writes and pipeline commits of one store (see the
    module docstring).

    Args:
        runtime: The store's runtime; its back end runs every call.
        store: The store itself, only to name it (``repr``, telemetry spans).
    """

    # -- thread rows ---------------------------------------------------------------

    @traced_store
    def create_thread_row(
        self,
        thread_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        """Insert a thread row with its runtime ``config``.

        Raises:
            ValueError: for bad ids, invalid metadata/config, or an existing thread.
        """
        row = _thread_row(thread_id, NewThreadRow(user_id, agent_id, metadata, config), self._now())
        with self.runtime.writing() as tx:
            if tx.hold_thread(thread_id):
                raise InvalidArgumentError(f"thread {thread_id!r} already exists")
            tx.insert_thread(row)

    @traced_store
    def get_thread_row(self, thread_id: str) -> ThreadRow | None:
        """The stored thread row, or None."""
        if not checks.lookup_id(thread_id, "thread_id"):
            return None
        return self.runtime.backend.get_thread(thread_id)

    @traced_store
    def list_thread_rows(
        self, user_id: Maybe[str | None] = NOT_SET, agent_id: Maybe[str | None] = NOT_SET
    ) -> builtins.list[ThreadRow]:
        """Thread rows oldest first; ``user_id``/``agent_id`` filter as in ``list``
        (omitted: any; None: only threads without one)."""
        users, agents = scope_arg(user_id, "user_id"), scope_arg(agent_id, "agent_id")
        if not all(v is NOT_SET or v is None or checks.storable(v) for v in (users, agents)):
            return []
        return self.runtime.backend.list_threads(users, agents)

    @traced_store
    def update_thread_row(
        self,
        thread_id: str,
        *,
        config: Maybe[dict[str, Any]] = NOT_SET,
        state: Maybe[dict[str, Any]] = NOT_SET,
        expected_state: Maybe[dict[str, Any]] = NOT_SET,
    ) -> int:
        """Replace a thread's config and/or state; with ``expected_state``, only if the
        stored state still equals it (compare-and-set). Returns rows updated.

        Raises:
            ValueError: for non-JSON config/state.
        """
        findable = checks.lookup_id(thread_id, "thread_id")
        for name, value in (
            ("config", config),
            ("state", state),
            ("expected_state", expected_state),
        ):
            if value is not NOT_SET:
                dump_metadata(value, name)
        if not findable:
            return 0
        with self.runtime.writing() as tx:
            return tx.update_thread(thread_id, config, state, expected_state)

    # -- thread-scoped writes ------------------------------------------------------

    @traced_store
    def add_to_thread(
        self,
        thread_id: str,
        batches: Sequence[PendingRecordBatch],
        *,
        missing_row: NewThreadRow | None = None,
        **store_kwargs: Any,
    ) -> builtins.list[str]:
        """Write records of one thread together with the check of its row, in ONE
        transaction (docs/memory-pipeline.md, "Threads and deletes").

        The thread row is held (``Tx.hold_thread``) while the records are written, so
        a ``delete_thread``, ``delete_user`` or ``delete_agent`` running at the same
        time either finishes first (then this write sees no row) or waits for this
        write and deletes its records too: no record ever outlives its thread row
        (docs/failure-modes.md#c22).

        Args:
            thread_id: The thread; every batch must have exactly this ``thread_ids``.
            batches: The records (rules of ``add_batches``).
            missing_row: The row to create when it is missing; None: a missing row
                is an error.
            **store_kwargs: ``batch_size``.

        Returns:
            All ids, in input order.

        Raises:
            ValueError: as ``add_batches``, or for a batch of another thread.
            ThreadDeletedError: with ``missing_row`` None, when the thread does not
                exist (for example deleted meanwhile). Nothing is written then.
        """
        checks.check_id(thread_id, "thread_id")
        for i, batch in enumerate(batches):
            if not isinstance(batch, PendingRecordBatch) or batch.thread_ids != thread_id:
                raise InvalidArgumentError(
                    f"batches[{i}] must be a PendingRecordBatch with thread_ids={thread_id!r}"
                )
        if missing_row is not None and not isinstance(missing_row, NewThreadRow):
            raise InvalidArgumentError(
                f"missing_row must be a NewThreadRow or None, got {missing_row!r}"
            )
        row = None if missing_row is None else _thread_row(thread_id, missing_row, self._now())
        size = writes.batch_size(store_kwargs)
        planned = writes.plan_batches(self.runtime, batches)
        with self.runtime.writing() as tx:
            if not tx.hold_thread(thread_id):
                if row is None:
                    raise ThreadDeletedError(
                        f"thread {thread_id!r} does not exist: it was deleted (delete_thread, "
                        "or delete_user/delete_agent with cascade) or never created; nothing "
                        "was written. Create it again with create_thread to go on."
                    )
                tx.insert_thread(row)
            writes.insert_planned(self.runtime, tx, planned, size)
        return planned.ids

    @traced_store
    def write_thread(
        self,
        thread_id: str,
        batches: Sequence[PendingRecordBatch],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        replace: bool = False,
    ) -> builtins.list[str]:
        """Create a thread row and its records in ONE transaction; with ``replace``, an
        existing thread of this id (its messages, memories and search rows) is deleted
        first in the same transaction, so a failure keeps the old thread
        (``OracleAgentMemory.write_thread``).

        Args:
            thread_id: The thread to write.
            batches: Its records (as ``add_batches``); every record must carry
                ``thread_ids=thread_id``.
            user_id, agent_id, metadata, config: The thread row, as
                ``create_thread_row``.
            replace: Replace an existing thread instead of refusing it.

        Returns:
            The record ids, batch by batch, in input order.

        Raises:
            ValueError: for bad ids, metadata or batches, a record of another thread,
                an existing thread without ``replace``, or (with ``replace``) an
                existing thread of another user (its ``user_id`` differs from
                ``user_id``); nothing is written.
        """
        new = NewThreadRow(user_id, agent_id, metadata, config)
        row = _thread_row(thread_id, new, self._now())
        planned = writes.plan_batches(self.runtime, batches)
        strays = [p.id for p in planned.plans if p.thread_id != thread_id]
        if strays:
            raise InvalidArgumentError(
                f"write_thread({thread_id!r}): record {strays[0]!r} belongs to thread "
                f"{next(p.thread_id for p in planned.plans if p.id == strays[0])!r}"
            )
        with self.runtime.writing() as tx:
            # The owner is checked on the row this transaction holds: a thread deleted
            # and written again by another writer since this call began is the one
            # checked and replaced (or refused), never an older read of it.
            held = tx.hold_thread_row(thread_id)
            if held is not None:
                if not replace:
                    raise InvalidArgumentError(f"thread {thread_id!r} already exists")
                if held.user_id != row.user_id:
                    raise InvalidArgumentError(
                        f"thread {thread_id!r} belongs to user {held.user_id!r}, not "
                        f"{user_id!r}; replace does not take over another user's thread "
                        "(write it with its owner's user_id, or use another thread id); "
                        "nothing was written"
                    )
                tx.delete_thread(thread_id)
            tx.insert_thread(row)
            writes.insert_planned(self.runtime, tx, planned, writes.DEFAULT_BATCH_SIZE)
        return planned.ids

    @traced_store
    def commit_thread_pass(
        self,
        thread_id: str,
        *,
        expected_state: dict[str, Any],
        state: dict[str, Any],
        batches: Sequence[PendingRecordBatch] = (),
        reserved_updates: Sequence[ReservedUpdate] = (),
        version_changes: Sequence[VersionChange] = (),
    ) -> builtins.list[str] | None:
        """Write a pipeline pass of a thread atomically (docs/memory-pipeline.md).

        In ONE transaction: the thread's ``state`` is replaced if (and only if) the
        stored state still equals ``expected_state`` (compare-and-set: the watermark
        advances exactly once), the derived records of ``batches`` are inserted, and
        each of ``reserved_updates`` merges its keys into that record's
        ``metadata["$agent_memory"]``, then ``version_changes`` are applied
        (``versions.apply_changes``: supersede and invalidate memories, the
        successors among the inserted records). If the compare-and-set fails
        nothing is written.

        Args:
            thread_id: The thread whose row holds the pipeline state.
            expected_state: The state the pass was computed from.
            state: The new state (JSON object).
            batches: Records to insert (same rules as ``add_batches``).
            reserved_updates: Library-owned metadata changes; unknown records are
                skipped (they may have been deleted meanwhile).
            version_changes: ``VersionChange`` objects (docs/store.md#memory-versions); unknown
                targets are skipped.

        Returns:
            The inserted ids, or None when the state had changed (another pass won).

        Raises:
            ValueError: for invalid batches, non-JSON state or keys; nothing is
                written.
            ThreadDeletedError: when the thread does not exist (deleted meanwhile).
        """
        checks.check_id(thread_id, "thread_id")
        for name, value in (("state", state), ("expected_state", expected_state)):
            dump_metadata(value, name)
        for i, update in enumerate(reserved_updates):
            if update.record_type not in MEMORY_TYPES and update.record_type != MESSAGE:
                raise InvalidArgumentError(
                    f"reserved_updates[{i}]: record_type must be a message or memory type, "
                    f"got {update.record_type!r}"
                )
            checks.check_id(update.record_id, f"reserved_updates[{i}] record_id")
            dump_metadata({RESERVED_KEY: update.keys}, f"reserved_updates[{i}]", library=True)
        for i, change in enumerate(version_changes):
            _check_change(change, f"version_changes[{i}]")
        planned = writes.plan_batches(self.runtime, batches, library=True)
        with self.runtime.writing() as tx:
            won = bool(tx.update_thread(thread_id, NOT_SET, state, expected_state))
            if won:
                lock_targets(self.runtime, tx, version_changes)
                writes.insert_planned(self.runtime, tx, planned, writes.DEFAULT_BATCH_SIZE)
                _merge_reserved(tx, reserved_updates)
                apply_changes(self.runtime, tx, version_changes)
        if won:
            return planned.ids
        if self.runtime.backend.get_thread(thread_id) is None:
            raise ThreadDeletedError(f"thread {thread_id!r} does not exist")
        return None

    # -- thread-scoped reads and deletes -------------------------------------------

    @traced_store
    def list_thread_messages_by_seq(
        self,
        thread_id: str,
        *,
        after: int | None = None,
        through: int | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> builtins.list[MessageRecord]:
        """A thread's visible messages by ``seq_no`` range, in insertion order.

        ``seq_no`` never changes and is never reused, so reading a long thread page
        by page (``after`` = the last ``seq_no`` of the previous page) neither skips
        nor repeats a message when others are deleted meanwhile, unlike positions
        (docs/failure-modes.md#c21).

        Args:
            thread_id: The thread.
            after: Only messages with ``seq_no > after`` (None: from the first).
            through: Only messages with ``seq_no <= through`` (None: to the last).
            limit: At most this many (>= 0; None: all): the oldest of the range, or
                the newest with ``newest=True``. Huge values are clamped.
            newest: Take the last ``limit`` of the range instead of the first.

        Raises:
            ValueError: for a blank ``thread_id``, non-int bounds or a negative limit.
        """
        findable = checks.lookup_id(thread_id, "thread_id")
        for name, value in (("after", after), ("through", through), ("limit", limit)):
            check_optional_int(value, name)
        if limit is not None and limit < 0:
            raise InvalidArgumentError(f"limit must be >= 0 or None, got {limit!r}")
        if not isinstance(newest, bool):
            raise InvalidArgumentError(f"newest must be a bool, got {newest!r}")
        if not findable or limit == 0:
            return []
        rows = self.runtime.backend.thread_messages_by_seq(
            thread_id,
            None if after is None else checks.clamp_count(after),
            None if through is None else checks.clamp_count(through),
            None if limit is None else checks.clamp_count(limit),
            newest,
            self._now(),
        )
        return [r for r in rows if isinstance(r, MessageRecord)]

    @traced_store
    def delete_scoped(self, family: str, record_id: str, *, thread_id: Maybe[str] = NOT_SET) -> int:
        """Delete a message (``family="message"``) or any memory-like record
        (``family="memory"``) by id, optionally only if its thread_id equals
        ``thread_id``. Returns 0 or 1.

        Raises:
            ValueError: for another family or a bad id.
        """
        if family not in (MESSAGE, "memory"):
            raise InvalidArgumentError(f"family must be 'message' or 'memory', got {family!r}")
        if not checks.lookup_id(record_id, "record_id"):
            return 0
        if thread_id is not NOT_SET and not checks.lookup_id(thread_id, "thread_id"):
            return 0
        with self.runtime.writing() as tx:
            if family == MEMORY_FAMILY:
                unlink_version(tx, record_id, thread_id=thread_id)
            return tx.delete_record(family, record_id, None, thread_id)

    def _now(self) -> datetime:
        return self.runtime.now()


def _check_change(change: object, name: str) -> None:
    """Refuse a version change that cannot be applied.

    Raises:
        InvalidArgumentError: naming ``name``, for an object that is not a
            ``VersionChange``, an unknown kind, a bad id, a ``supersede`` without a
            successor or a naive ``at``.
    """
    if not isinstance(change, VersionChange):
        raise InvalidArgumentError(f"{name} must be a VersionChange, got {change!r}")
    if change.kind not in ("supersede", "invalidate"):
        raise InvalidArgumentError(f"{name}: kind must be supersede or invalidate")
    checks.check_id(change.target_id, f"{name} target_id")
    if change.kind == "supersede":
        checks.check_id(change.successor_id, f"{name} successor_id")
    if change.at is not None and (not isinstance(change.at, datetime) or change.at.tzinfo is None):
        raise InvalidArgumentError(f"{name}: at must be an aware datetime, got {change.at!r}")
    if change.reason is not None:
        checks.check_text(change.reason, f"{name} reason")


def _merge_reserved(tx: Tx, updates: Sequence[ReservedUpdate]) -> None:
    """Merge each update's keys into its record's ``$agent_memory`` object (records
    that are gone or of another type are skipped)."""
    for update in updates:
        row = tx.fetch(family_of(update.record_type), update.record_id)
        if row is None or row.record_type != update.record_type:
            continue
        meta = dict(row.metadata or {})
        reserved = meta.get(RESERVED_KEY)
        merged = dict(reserved) if isinstance(reserved, dict) else {}
        merged.update(update.keys)
        meta[RESERVED_KEY] = merged
        tx.update_row(row, {"metadata": json.dumps(meta, ensure_ascii=False)})


def _thread_row(thread_id: object, new: NewThreadRow, now: datetime) -> ThreadRow:
    """A new thread row, checked (ids, JSON metadata and config).

    Raises:
        ValueError: for a bad id, or metadata/config that JSON cannot hold.
    """
    checks.check_id(thread_id, "thread_id")
    scope = [
        checks.check_scope_id(v, n)
        for v, n in ((new.user_id, "user_id"), (new.agent_id, "agent_id"))
    ]
    dump_metadata(new.metadata)
    dump_metadata(new.config or {}, "config")
    return ThreadRow(
        thread_id=str(thread_id),
        user_id=scope[0],
        agent_id=scope[1],
        metadata=new.metadata,
        config=dict(new.config or {}),
        state={},
        created_at=iso(now),
    )
