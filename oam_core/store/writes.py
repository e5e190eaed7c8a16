"""The write path every store write shares: validate and plan batches of records
(``writeplan.plan_records``, embedding included), then insert the plans inside one
transaction (docs/store.md#writing-records).

``OracleMemoryStore.add``/``upsert`` and the thread writes of ``store/threads.py``
all go through ``plan_batches`` (no I/O but the embedder) and ``insert_planned``
(inside the caller's ``Tx``), so an id clash, a dimension learned from the first
vector and the embedder identity are handled the same way for each.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from oam_core import checks
from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.batch import PendingRecordBatch
from oam_core.errors import InvalidArgumentError
from oam_core.store import planning, writeplan
from oam_core.store.backend import IdsTakenError, Tx
from oam_core.store.expiredrows import drop_expired, held_ids
from oam_core.store.planning import BulkPlan, ChunkPlan, RowPlan
from oam_core.store.runtime import StoreRuntime

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "UPSERT_ATTEMPTS",
    "Planned",
    "batch_size",
    "insert_planned",
    "plan_batches",
    "write_batches",
]

DEFAULT_BATCH_SIZE = 256
"""Default ``batch_size`` store kwarg (docs/store.md#defaults)."""
UPSERT_ATTEMPTS = 5
"""How many transactions an ``upsert`` runs at most when other writers keep storing
its new ids between its check and its insert (``write_batches``)."""


Part = RowPlan | BulkPlan
"""One unit of a write: a record planned row by row, or a call planned as columns."""


@dataclass(frozen=True)
class Planned:
    """Planned rows of one write: the parts in input order (row plans and bulk
    plans), ids by family, the row plans' chunk plans, the dimension of the first
    vector given (None if none), plan time."""

    parts: builtins.list[Part]
    by_family: dict[str, builtins.list[str]]
    chunks: builtins.list[ChunkPlan]
    vector_dim: int | None
    now: datetime

    @property
    def ids(self) -> builtins.list[str]:
        """The record ids, batch by batch, in input order."""
        out: builtins.list[str] = []
        for part in self.parts:
            if isinstance(part, BulkPlan):
                out.extend(part.ids)
            else:
                out.append(part.id)
        return out

    @property
    def plans(self) -> builtins.list[RowPlan]:
        """Every record as a ``RowPlan``, in input order."""
        out: builtins.list[RowPlan] = []
        for part in self.parts:
            if isinstance(part, BulkPlan):
                out.extend(part.row_plans())
            else:
                out.append(part)
        return out


def batch_size(store_kwargs: Mapping[str, Any]) -> int:
    """The ``batch_size`` store kwarg (rows per executemany).

    Raises:
        TypeError: for any other keyword.
        InvalidArgumentError: for a ``batch_size`` that is not a positive int.
    """
    unknown = set(store_kwargs) - {"batch_size"}
    if unknown:
        raise TypeError(f"unexpected store keyword arguments: {sorted(unknown)}")
    size = store_kwargs.get("batch_size", DEFAULT_BATCH_SIZE)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidArgumentError(f"batch_size must be a positive int, got {size!r}")
    return size


def plan_batches(
    runtime: StoreRuntime, batches: Sequence[PendingRecordBatch], *, library: bool = False
) -> Planned:
    """Validate and plan ``batches`` (embedding included); nothing is written.

    Args:
        store: The store that will write them.
        batches: ``PendingRecordBatch`` objects.
        library: The library's own write, which may set ``$agent_memory``.

    Raises:
        InvalidArgumentError: for any invalid row, or an id repeated across batches.
    """
    if not isinstance(batches, (list, tuple)):
        raise InvalidArgumentError(f"batches must be a list of PendingRecordBatch, got {batches!r}")
    ctx = runtime.plan_context()
    parts: builtins.list[Part] = []
    by_family: dict[str, builtins.list[str]] = {}
    for i, batch in enumerate(batches):
        if not isinstance(batch, PendingRecordBatch):
            raise InvalidArgumentError(f"batches[{i}] must be a PendingRecordBatch, got {batch!r}")
        try:
            planned = writeplan.plan_batch(batch, ctx, library=library)
        except ValueError as exc:
            if len(batches) == 1:
                raise
            raise _in_batch(exc, i) from None
        if isinstance(planned, BulkPlan):
            parts.append(planned)
            by_family.setdefault(planned.family, []).extend(planned.ids)
        else:
            parts.extend(planned)
            for p in planned:
                by_family.setdefault(p.family, []).append(p.id)
    for family, ids in by_family.items():
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError(
                f"duplicate record ids across batches in family {family!r}: "
                f"{planning.name_ids(planning.duplicates(ids))}"
            )
    chunks = [c for p in parts if isinstance(p, RowPlan) for c in p.chunks]
    given = [c.vector for c in chunks if c.vector is not None]
    given.extend(p.vectors[0] for p in parts if isinstance(p, BulkPlan))
    dim = checks.check_dims(given, runtime.vector_dim)
    runtime.embed_plans(chunks)
    return Planned(parts, by_family, chunks, dim, ctx.now)


def _in_batch(exc: ValueError, i: int) -> ValueError:
    """``exc`` with its message prefixed by the batch it is about (``batches[i]: ``),
    of the same type where that type takes a message."""
    message = f"batches[{i}]: {exc}"
    try:
        return type(exc)(message)
    except TypeError:
        return InvalidArgumentError(message)


def insert_planned(
    runtime: StoreRuntime, tx: Tx, planned: Planned, size: int, *, replace: bool = False
) -> None:
    """Insert ``planned`` in ``tx``; with ``replace``, stored records with the same ids
    (in the same id family) are deleted first.

    A row with one of the ids that expired and is not purged yet is deleted first
    in any case (``expiredrows.drop_expired``): no read sees it, so no write clashes
    with it.

    Raises:
        InvalidArgumentError: when an id exists already and ``replace`` is False.
    """
    if replace or not tx.refuses_existing_ids:
        held = held_ids(tx, planned.by_family, planned.now)
        if held and not replace:
            clash = sorted(i for _, i in held)
            raise InvalidArgumentError(f"record ids already exist: {planning.name_ids(clash)}")
        for family in sorted({f for f, _ in held}):
            tx.delete_records(family, sorted(i for f, i in held if f == family), None, NOT_SET)
    else:  # the insert refuses a held id itself: only expired rows are looked for
        drop_expired(tx, planned.by_family, planned.now)
    # Before the rows: checks it against the recorded one. The caller's transaction
    # comes from ``store.writing()``, which forgets it when the write fails and
    # records the embedder identity with the rows.
    runtime.storing_rows(tx, planned.chunks, planned.vector_dim)
    _insert_parts(tx, planned, size)


def _insert_parts(tx: Tx, planned: Planned, size: int) -> None:
    """Insert the parts of ``planned`` in order; consecutive row plans in one insert."""
    run: builtins.list[RowPlan] = []
    for part in planned.parts:
        if isinstance(part, BulkPlan):
            if run:
                tx.insert(run, planned.now, size)
                run = []
            tx.insert_bulk(part, planned.now, size)
        else:
            run.append(part)
    if run or not planned.parts:
        tx.insert(run, planned.now, size)


def write_batches(
    runtime: StoreRuntime,
    batches: Sequence[PendingRecordBatch],
    store_kwargs: Mapping[str, Any],
    *,
    replace: bool,
) -> builtins.list[str]:
    """Plan and insert ``batches`` in one transaction; return their ids in order.

    With ``replace`` (``upsert``), a transaction that meets ids another writer
    stored after it looked for them (``IdsTakenError``, a server's unique violation)
    runs again, up to ``UPSERT_ATTEMPTS`` times in all: it then finds those records
    and replaces them, so two writers upserting one new id both succeed and the later
    one wins, as on SQLite, where writers take turns (docs/postgres.md#concurrency-and-durability).

    Raises:
        IdsTakenError: (an ``InvalidArgumentError``) for ``add``, or when every
            attempt met ids taken meanwhile.
    """
    size = batch_size(store_kwargs)
    planned = plan_batches(runtime, batches)
    attempts = UPSERT_ATTEMPTS if replace else 1
    for attempt in range(1, attempts + 1):
        try:
            with runtime.writing() as tx:
                insert_planned(runtime, tx, planned, size, replace=replace)
        except IdsTakenError:
            if attempt == attempts:
                raise
        else:
            break
    return planned.ids
