"""The store side of moving memory between stores (docs/transfer.md): read every
stored row page by page, and write dumped rows back as they were.

``OracleMemoryStore.dump_rows`` and ``OracleMemoryStore.restore_rows`` call these;
the dump format itself lives in ``oam_core.transfer``.
"""

from __future__ import annotations

import builtins
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from oam_core.apis._sentinel import NOT_SET
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import DumpRow
from oam_core.store.embedding import learn_dim
from oam_core.store.identity import META_KEY, EmbedderIdentity

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

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


def dump_pages(
    store: OracleMemoryStore, user_ids: Sequence[str] | None, page_size: int
) -> Iterator[builtins.list[DumpRow]]:
    """Pages of at most ``page_size`` stored rows in insertion order (``dump_rows``)."""
    after: Hashable | None = None
    while True:
        with store._backend.streaming():
            rows, after = store._backend.dump_page(after, page_size, user_ids)
        if not rows:
            return
        yield rows


def restore(
    store: OracleMemoryStore,
    rows: Sequence[DumpRow],
    *,
    on_conflict: OnConflict,
    batch_size: int,
    identity: EmbedderIdentity | None,
) -> RestoreResult:
    """Write ``rows`` in one transaction (``restore_rows``).

    Raises:
        InvalidArgumentError: for an id given twice, an id the store holds with
            ``on_conflict="error"``, or a vector of another dimension than the
            store's; nothing of ``rows`` is written.
    """
    if on_conflict not in ON_CONFLICT:
        raise InvalidArgumentError(
            f"on_conflict must be one of {list(ON_CONFLICT)}, got {on_conflict!r}"
        )
    now = store._now()
    live = [r for r in rows if r.expires_at is None or r.expires_at > now]
    expired = len(rows) - len(live)
    keys = [(r.family, r.id) for r in live]
    if len(set(keys)) != len(keys):
        seen: set[tuple[str, str]] = set()
        for r, key in zip(live, keys, strict=True):
            if key in seen:
                raise InvalidArgumentError(f"record id {r.id!r} ({r.record_type}) is given twice")
            seen.add(key)
    expected = store.vector_dim
    if expected is None and identity is not None:
        # A new store learns its dimension from the dump's header, not from the
        # first vector: a header that names another dimension than its vectors hold
        # would record an identity no embedder can open the store with.
        expected = identity.dimension
    dims = {int(c.vector.shape[0]) for r in live for c in r.chunks if c.vector is not None}
    if len(dims) > 1 or (expected is not None and dims - {expected}):
        for r in live:
            for c in r.chunks:
                if c.vector is None:
                    continue
                dim = int(c.vector.shape[0])
                if expected is None:
                    expected = dim
                if dim != expected:
                    raise InvalidArgumentError(
                        f"record {r.id!r}: vector dimension {dim} does not match the "
                        f"store's dimension {expected}"
                    )
    for r in live:
        for c in r.chunks:
            if c.vector is not None and not np.isfinite(c.vector).all():
                raise InvalidArgumentError(
                    f"record {r.id!r}: a search row's vector holds NaN or infinity"
                )
    record_identity = (
        identity is not None
        and store.embedder_identity is None
        and (store.embedder is None or store.embedder.embedder_id == identity.embedder_id)
        and bool(dims)
    )
    by_family: dict[str, builtins.list[str]] = {}
    for r in live:
        by_family.setdefault(r.family, []).append(r.id)
    with store._backend.streaming(), store._writing() as tx:
        clash: set[tuple[str, str]] = set()
        for family, ids in by_family.items():
            clash.update((family, i) for i in tx.existing_ids(family, ids))
        if clash and on_conflict == "error":
            first = next(r for r in live if (r.family, r.id) in clash)
            raise InvalidArgumentError(
                f"record id {first.id!r} ({first.record_type}) already exists in the "
                f"target store ({len(clash)} clashing ids in this batch); pass "
                "on_conflict='skip' or 'replace'"
            )
        if on_conflict == "skip":
            write = [r for r in live if (r.family, r.id) not in clash]
        else:
            write = live
            for family, rid in sorted(clash):
                tx.delete_record(family, rid, None, NOT_SET)
        if (
            dims
            and store.vector_dim is None
            and any(c.vector is not None for r in write for c in r.chunks)
        ):
            learn_dim(store, (), next(iter(dims)))
        tx.restore(write, batch_size)
        if record_identity and identity is not None:
            tx.write_meta({META_KEY: identity.to_json()})
    if record_identity and identity is not None:
        store._embedder_check.stored = identity
    skipped = len(live) - len(write)
    return RestoreResult(write, skipped, expired)
