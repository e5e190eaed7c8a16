"""The store side of moving memory between stores (docs/transfer.md): read every
stored row page by page, and write dumped rows back as they were.

``TransferMethods`` gives ``OracleMemoryStore`` its ``dump_rows``, ``dump_counts``
and ``restore_rows``, which call these; the dump format itself lives in
``oam_core.transfer``.
"""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import (
    MESSAGE,
    THREAD,
    MessageRecord,
    ThreadRow,
)
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import Backend, DumpRow, Tx
from oam_core.store.dumpcheck import check_batch, plain
from oam_core.store.dumpcolumns import DumpColumns
from oam_core.store.dumpids import IdMethods
from oam_core.store.dumpsources import check_sources
from oam_core.store.expiredrows import held_ids
from oam_core.store.identity import META_KEY, EmbedderIdentity
from oam_core.store.runtime import StoreRuntime
from oam_core.store.writes import DEFAULT_BATCH_SIZE
from oam_core.store.writes import batch_size as batch_size_arg

OnConflict = Literal["error", "skip", "replace"]
ON_CONFLICT: tuple[str, ...] = ("error", "skip", "replace")


@dataclass(frozen=True)
class RestoreResult:
    """What one ``restore_rows`` call did.

    Attributes:
        written: The rows written, in order.
        skipped_existing: Rows whose id the store held (``on_conflict="skip"``).
        skipped_expired: Rows already expired at the store clock's now.
    """

    written: builtins.list[DumpRow]
    skipped_existing: int
    skipped_expired: int


@dataclass(frozen=True)
class RestoreCounts:
    """What one ``restore_columns`` call wrote.

    Attributes:
        records: Rows written per record type.
        search_rows: Search rows written.
        skipped_existing: Rows whose id the store held (``on_conflict="skip"``).
        skipped_expired: Rows already expired at the store clock's now.
    """

    records: dict[str, int]
    search_rows: int
    skipped_existing: int
    skipped_expired: int

    @classmethod
    def of(cls, result: RestoreResult) -> RestoreCounts:
        """The counts of a ``restore_rows`` result."""
        records: dict[str, int] = {}
        search_rows = 0
        for r in result.written:
            records[r.record_type] = records.get(r.record_type, 0) + 1
            search_rows += len(r.chunks)
        return cls(records, search_rows, result.skipped_existing, result.skipped_expired)


class TransferMethods(IdMethods):
    """The store methods of docs/transfer.md, mixed into ``OracleMemoryStore``
    (base.py); they read and write through the store's ``runtime``."""

    runtime: StoreRuntime

    def dump_rows(
        self, *, user_ids: str | Sequence[str] | None = None, page_size: int = 512
    ) -> Iterator[builtins.list[DumpRow]]:
        """An oam addition: every stored row (records and threads, expired ones
        included) with its search rows and vectors, in insertion order, as pages of
        at most ``page_size`` rows; each page is one read (docs/transfer.md).
        ``oam_core.transfer.export_store`` writes them as a dump.

        Args:
            user_ids: Only those users' threads, the rows of those threads, the rows
                scoped to those users and their profiles (a list of ids, or one id as
                a string); None: everything.
            page_size: Rows per page (positive int).

        Raises:
            InvalidArgumentError: for a bad ``page_size`` or ``user_ids``.
        """
        users, size = dump_args(user_ids, page_size)
        return dump_pages(self.runtime.backend, users, size)

    def dump_counts(self, *, user_ids: str | Sequence[str] | None = None) -> dict[str, int]:
        """An oam addition: how many rows of each record type (threads included)
        ``dump_rows`` returns that are not expired now (docs/transfer.md).

        Raises:
            InvalidArgumentError: for bad ``user_ids`` (``dump_rows``'s rule).
        """
        users = user_list(user_ids)
        with self.runtime.backend.streaming():  # it reads every record's row
            return self.runtime.backend.dump_counts(users, self.runtime.now())

    def restore_rows(
        self,
        rows: Sequence[DumpRow],
        *,
        on_conflict: OnConflict = "error",
        batch_size: int = DEFAULT_BATCH_SIZE,
        identity: EmbedderIdentity | None = None,
    ) -> RestoreResult:
        """An oam addition: write dumped rows back as they were (ids, store times,
        message numbers, expiry, search rows and vectors) in one transaction
        (docs/transfer.md). ``oam_core.transfer.import_store`` calls it per batch.

        Args:
            rows: ``DumpRow`` objects in insertion order (a thread before its rows).
            on_conflict: ``"error"``, ``"skip"`` (keep the stored row) or
                ``"replace"`` (delete the stored row first).
            batch_size: Rows per executemany (positive int).
            identity: The embedder of the rows' vectors; recorded as the store's
                when it has none yet and its own embedder (if any) has that id.

        Returns:
            ``RestoreResult``: the rows written and the counts skipped.

        Raises:
            InvalidArgumentError: for an id given twice, an id already stored with
                ``on_conflict="error"`` (named), a bad ``on_conflict`` or a vector of
                another dimension. Nothing of ``rows`` is written.
        """
        size = batch_size_arg({"batch_size": batch_size})
        return restore(
            self.runtime, rows, on_conflict=on_conflict, batch_size=size, identity=identity
        )

    def restore_columns(
        self,
        cols: DumpColumns,
        *,
        on_conflict: OnConflict = "error",
        batch_size: int = DEFAULT_BATCH_SIZE,
        identity: EmbedderIdentity | None = None,
    ) -> RestoreCounts:
        """An oam addition: ``restore_rows`` for records given as columns
        (``DumpColumns``, ``oam_core/store/dumpcolumns.py``), the fast path of
        ``import_store`` (docs/transfer.md#import). Same arguments, checks, errors
        and rows written as ``restore_rows(cols.rows(), ...)``.

        Returns:
            ``RestoreCounts``: rows written per type, search rows, rows skipped.

        Raises:
            InvalidArgumentError: as ``restore_rows``; nothing of ``cols`` is written.
        """
        size = batch_size_arg({"batch_size": batch_size})
        return restore_batch(
            self.runtime, cols, on_conflict=on_conflict, batch_size=size, identity=identity
        )


def dump_args(user_ids: object, page_size: object) -> tuple[builtins.list[str] | None, int]:
    """``OracleMemoryStore.dump_rows``'s arguments, checked before its first page:
    ``(user_ids as a list or None, page_size)``.

    Raises:
        InvalidArgumentError: for a ``page_size`` that is not a positive int, or
            ``user_ids`` as ``user_list`` refuses them.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise InvalidArgumentError(f"page_size must be a positive int, got {page_size!r}")
    return user_list(user_ids), page_size


def user_list(user_ids: object) -> builtins.list[str] | None:
    """The users an export or copy is limited to: ``user_ids`` as a list (a single
    string is one user id, as in ``add``), or None for every user
    (docs/transfer.md#export).

    Raises:
        InvalidArgumentError: for anything but None, a non-empty string, or an
            iterable of non-empty strings.
    """
    if user_ids is None:
        return None
    if isinstance(user_ids, str):
        user_ids = [user_ids]
    if not isinstance(user_ids, Iterable):
        raise InvalidArgumentError(
            f"user_ids must be a user id, a list of non-empty strings or None, got {user_ids!r}"
        )
    users = builtins.list(user_ids)
    if not all(isinstance(u, str) and u for u in users):
        raise InvalidArgumentError(
            f"user_ids must be a user id, a list of non-empty strings or None, got {user_ids!r}"
        )
    return users


def dump_pages(
    backend: Backend, user_ids: Sequence[str] | None, page_size: int
) -> Iterator[builtins.list[DumpRow]]:
    """Pages of at most ``page_size`` stored rows in insertion order (``dump_rows``)."""
    after: Hashable | None = None
    while True:
        with backend.streaming():
            rows, after = backend.dump_page(after, page_size, user_ids)
        if not rows:
            return
        yield rows


def restore(
    runtime: StoreRuntime,
    rows: Sequence[DumpRow],
    *,
    on_conflict: OnConflict,
    batch_size: int,
    identity: EmbedderIdentity | None,
    now: datetime | None = None,
) -> RestoreResult:
    """Write ``rows`` in one transaction (``restore_rows``); ``now``: the store
    clock's time when the caller read it already (None: read it here).

    Raises:
        InvalidArgumentError: for an id given twice, an id the store holds with
            ``on_conflict="error"``, a vector of another dimension than the
            store's, a row the store's write path refuses (``check_batch`` in
            ``store/dumpcheck.py``, ``check_stored``), or a
            search row quoting a message that is in neither ``rows`` nor the store
            (``check_sources``); nothing of ``rows`` is written.
    """
    if on_conflict not in ON_CONFLICT:
        raise InvalidArgumentError(
            f"on_conflict must be one of {list(ON_CONFLICT)}, got {on_conflict!r}"
        )
    if now is None:
        now = runtime.now()
    expected = (
        runtime.vector_dim
        if runtime.vector_dim is not None
        else (None if identity is None else identity.dimension)
    )
    live, dims = check_batch(rows, now, expected, runtime.backend.get_thread)
    expired = len(rows) - len(live)
    check_stored(runtime.backend, live)
    record_identity = (
        identity is not None
        and runtime.identity.stored is None
        and (runtime.embedder is None or runtime.embedder.embedder_id == identity.embedder_id)
        and bool(dims)
    )
    by_family: dict[str, builtins.list[str]] = {}
    for r in live:
        by_family.setdefault(r.family, []).append(r.id)
    with runtime.backend.streaming(), runtime.writing() as tx:
        clash = held_ids(tx, by_family, now)  # an expired row is absent, and goes
        if clash and on_conflict == "error":
            first = next(r for r in live if (r.family, r.id) in clash)
            raise InvalidArgumentError(
                f"record id {first.id!r} ({first.record_type}) already exists in the "
                f"target store ({len(clash)} clashing ids in this batch); pass "
                "on_conflict='skip' or 'replace'"
            )
        _check_stored_threads(tx, [r for r in live if (r.family, r.id) in clash])
        check_sources(tx, rows, now)
        if on_conflict == "skip":
            write = [r for r in live if (r.family, r.id) not in clash]
        else:
            write = live
            for family, rid in sorted(clash):
                tx.delete_record(family, rid, None, NOT_SET)
        if (
            dims
            and runtime.vector_dim is None
            and any(c.vector is not None for r in write for c in r.chunks)
        ):
            runtime.learn_dim((), next(iter(dims)))
        tx.restore(write, batch_size)
        if record_identity and identity is not None:
            tx.write_meta({META_KEY: identity.to_json()})
    if record_identity and identity is not None:
        runtime.identity.stored = identity
    skipped = len(live) - len(write)
    return RestoreResult(write, skipped, expired)


def check_stored(backend: Backend, rows: Sequence[DumpRow]) -> None:
    """Refuse rows (checked by ``check_batch`` already) that clash with what the
    store holds: a thread whose id the store uses for a thread of another user or
    agent (``check_thread_scope``), a message numbered as a stored message of
    another id in its thread (``_check_stored_numbers``).

    Raises:
        InvalidArgumentError: naming the thread or the message.
    """
    for thread in rows:
        if thread.family == THREAD:
            check_thread_scope(thread, backend.get_thread(thread.id))
    if any(r.record_type == MESSAGE for r in rows):
        _check_stored_numbers(backend, rows)


def _check_stored_threads(tx: Tx, clashing: Sequence[DumpRow]) -> None:
    """``check_thread_scope`` again inside the write transaction, on the thread rows
    held for it (no other writer can change them before the batch commits)."""
    for r in clashing:
        if r.family == THREAD:
            check_thread_scope(r, tx.hold_thread_row(r.id))


def check_thread_scope(r: DumpRow, stored: ThreadRow | None) -> None:
    """Refuse a dump's thread ``r`` whose id the target store uses for a thread
    (``stored``) of another user or agent: skipping it would put the dump's messages
    in that thread, and replacing it would leave the stored messages in a thread no
    longer theirs.

    Raises:
        InvalidArgumentError: naming the thread and both scopes.
    """
    if stored is not None and (stored.user_id, stored.agent_id) != (r.user_id, r.agent_id):
        raise InvalidArgumentError(
            f"thread {r.id!r} is of user {r.user_id!r} and agent {r.agent_id!r} in "
            f"the dump, of user {stored.user_id!r} and agent {stored.agent_id!r} in "
            "the target store: one id cannot name both conversations"
        )


def _check_stored_numbers(backend: Backend, rows: Sequence[DumpRow]) -> None:
    """Refuse a message numbered as a stored message of another id in its thread:
    a dump's thread whose id the target already uses for another conversation (or
    a re-run whose rows were changed meanwhile) would interleave two conversations.

    Raises:
        InvalidArgumentError: naming the message, the thread and the stored message.
    """
    by_thread: dict[str, dict[int, str]] = {}
    for r in rows:
        if r.record_type == MESSAGE and r.thread_id is not None and r.seq_no is not None:
            by_thread.setdefault(r.thread_id, {})[r.seq_no] = r.id
    every = datetime(1970, 1, 1, tzinfo=timezone.utc)  # expired messages keep their numbers
    for tid, numbers in by_thread.items():
        stored = backend.thread_messages_by_seq(
            tid, min(numbers) - 1, max(numbers), None, False, every
        )
        for m in stored:
            seq = m.seq_no if isinstance(m, MessageRecord) else None
            mine = None if seq is None else numbers.get(seq)
            if mine is not None and mine != m.id:
                raise InvalidArgumentError(
                    f"record {mine!r} (message): seq_no {seq} of thread {tid!r} is "
                    f"message {m.id!r} in the target store (a thread id of the dump "
                    "names another conversation there)"
                )


def restore_batch(
    runtime: StoreRuntime,
    cols: DumpColumns,
    *,
    on_conflict: OnConflict,
    batch_size: int,
    identity: EmbedderIdentity | None,
) -> RestoreCounts:
    """Write ``cols`` in one transaction (``restore_columns``), as ``restore``
    writes the same records as ``DumpRow`` objects: the common batches of an import
    are checked over whole columns (``plain``) and written as columns; any other
    batch goes through ``restore``, which names what is wrong.

    Raises:
        InvalidArgumentError: as ``restore_rows``; nothing of ``cols`` is written.
    """
    if on_conflict not in ON_CONFLICT:
        raise InvalidArgumentError(
            f"on_conflict must be one of {list(ON_CONFLICT)}, got {on_conflict!r}"
        )
    now = runtime.now()
    expected = (
        runtime.vector_dim
        if runtime.vector_dim is not None
        else (None if identity is None else identity.dimension)
    )
    if not plain(cols, now, expected):
        result = restore(
            runtime,
            cols.rows(),
            on_conflict=on_conflict,
            batch_size=batch_size,
            identity=identity,
            now=now,
        )
        return RestoreCounts.of(result)
    record_identity = (
        identity is not None
        and runtime.identity.stored is None
        and (runtime.embedder is None or runtime.embedder.embedder_id == identity.embedder_id)
        and len(cols) > 0
    )
    with runtime.backend.streaming(), runtime.writing() as tx:
        written = None
        if on_conflict != "replace" and runtime.vector_dim is not None:
            written = tx.restore_if_new(cols, batch_size)
        write = cols if written else _write_checked(runtime, tx, cols, on_conflict, batch_size)
        if record_identity and identity is not None:
            tx.write_meta({META_KEY: identity.to_json()})
    if record_identity and identity is not None:
        runtime.identity.stored = identity
    return RestoreCounts(dict(Counter(write.record_types)), len(write), len(cols) - len(write), 0)


def _write_checked(
    runtime: StoreRuntime, tx: Tx, cols: DumpColumns, on_conflict: OnConflict, batch_size: int
) -> DumpColumns:
    """Look up which ids of ``cols`` the store holds, then write as ``on_conflict``
    says (``restore`` alike); return what was written.

    Raises:
        InvalidArgumentError: naming the first stored id, for ``"error"``.
    """
    by_family: dict[str, builtins.list[str]] = {}
    for family, rid in zip(cols.families, cols.ids, strict=True):
        by_family.setdefault(family, []).append(rid)
    clash = held_ids(tx, by_family, runtime.now())  # an expired row is absent, and goes
    write = cols
    if clash:
        keys = builtins.list(zip(cols.families, cols.ids, strict=True))
        if on_conflict == "error":
            first = next(i for i, key in enumerate(keys) if key in clash)
            raise InvalidArgumentError(
                f"record id {cols.ids[first]!r} ({cols.record_types[first]}) already "
                f"exists in the target store ({len(clash)} clashing ids in this "
                "batch); pass on_conflict='skip' or 'replace'"
            )
        if on_conflict == "skip":
            write = cols.take([key not in clash for key in keys])
        else:
            for family, rid in sorted(clash):
                tx.delete_record(family, rid, None, NOT_SET)
    if len(write) and runtime.vector_dim is None:
        runtime.learn_dim((), int(cols.vectors.shape[1]))
    if tx.restores_columns:
        tx.restore(write, batch_size)  # type: ignore[arg-type]  # (``SqlTx.restore``)
    else:
        tx.restore(write.rows(), batch_size)
    return write
