"""A batch of dumped records as columns: the fast path of an import
(docs/transfer.md#import, bench/README.md#transferpy).

Most lines of a dump are records of one shape: one search row with a vector, quoting
nothing. The importer decodes those straight into columns (``DumpColumns``), with
the batch's vectors as one matrix, instead of one ``DumpRow`` and ``DumpChunk`` per
record (building them was a fifth of an import's time); ``restore_columns`` checks
the whole batch with list and array operations and writes the columns as they are.
A batch the fast checks do not clear (a message, a profile, a row expired already,
an id given twice, text or a time that needs a closer look, a bad vector) is written
as ``DumpRow`` objects through ``dumprows.restore``, which names what is wrong: the
rows written and the errors are the same either way.
"""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import compress
from typing import Any

import numpy as np

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.metadatajson import RESERVED_KEY
from oam_core.apis.records import MEMORY_TYPES
from oam_core.checks import check_texts, check_window
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import DumpChunk, DumpRow, Tx
from oam_core.store.dumprows import (
    ON_CONFLICT,
    OnConflict,
    RestoreResult,
    restore,
    stored_created,
    stored_form,
)
from oam_core.store.identity import META_KEY, EmbedderIdentity
from oam_core.store.runtime import StoreRuntime

_PLAIN_TYPES = MEMORY_TYPES
"""Record types a ``DumpColumns`` batch is written for directly: not messages (their
threads and numbers are checked row by row) nor profiles (their search rows carry
the profile's own id as scope)."""


@dataclass(frozen=True, slots=True)
class DumpColumns:
    """Dumped records, each with exactly one search row that holds a vector and
    quotes nothing, one list per field (all of one length, the rows in order).

    Attributes:
        families, ids, record_types, contents, roles, seq_nos, thread_ids, user_ids,
        agent_ids, timestamps, metadatas, created_ats: As the ``DumpRow`` fields
            of those names.
        expires_ats, valid_froms, valid_untils: Aware datetimes or None.
        texts: Each record's search-row text (str or None).
        chunk_expires: Each search row's own expiry (aware datetime or None).
        vectors: float32 array of shape ``(rows, dim)``, row i the vector of record i.
    """

    families: builtins.list[str]
    ids: builtins.list[str]
    record_types: builtins.list[str]
    contents: builtins.list[str | None]
    roles: builtins.list[str | None]
    seq_nos: builtins.list[int | None]
    thread_ids: builtins.list[str | None]
    user_ids: builtins.list[str | None]
    agent_ids: builtins.list[str | None]
    timestamps: builtins.list[str | None]
    metadatas: builtins.list[str | None]
    created_ats: builtins.list[str]
    expires_ats: builtins.list[datetime | None]
    valid_froms: builtins.list[datetime | None]
    valid_untils: builtins.list[datetime | None]
    texts: builtins.list[str | None]
    chunk_expires: builtins.list[datetime | None]
    vectors: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def record_columns(self) -> builtins.list[builtins.list[Any]]:
        """The first twelve fields (``families`` to ``created_ats``), in order."""
        return [
            self.families,
            self.ids,
            self.record_types,
            self.contents,
            self.roles,
            self.seq_nos,
            self.thread_ids,
            self.user_ids,
            self.agent_ids,
            self.timestamps,
            self.metadatas,
            self.created_ats,
        ]

    def rows(self) -> builtins.list[DumpRow]:
        """The same records as ``DumpRow`` objects (the general path)."""
        return [
            DumpRow(
                f[0],
                f[1],
                f[2],
                f[3],
                f[4],
                f[5],
                f[6],
                f[7],
                f[8],
                f[9],
                f[10],
                f[11],
                f[12],
                None,
                None,
                (DumpChunk(f[15], f[17], f[16], ()),),
                f[13],
                f[14],
            )
            for f in zip(*self.lists(), self.vectors, strict=True)
        ]

    def lists(self) -> builtins.list[builtins.list[Any]]:
        """Every field but ``vectors``, in order."""
        return [
            *self.record_columns(),
            self.expires_ats,
            self.valid_froms,
            self.valid_untils,
            self.texts,
            self.chunk_expires,
        ]

    def take(self, keep: Sequence[bool]) -> DumpColumns:
        """The records whose ``keep`` is true, in order."""
        lists = [builtins.list(compress(c, keep)) for c in self.lists()]
        return from_lists(lists, self.vectors[np.asarray(keep, dtype=bool)])


def from_lists(c: Sequence[builtins.list[Any]], vectors: np.ndarray) -> DumpColumns:
    """``DumpColumns`` of its fields but ``vectors`` in order (``DumpColumns.lists``)
    and ``vectors``."""
    return DumpColumns(
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        c[8],
        c[9],
        c[10],
        c[11],
        c[12],
        c[13],
        c[14],
        c[15],
        c[16],
        vectors,
    )


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


def restore_columns(
    runtime: StoreRuntime,
    cols: DumpColumns,
    *,
    on_conflict: OnConflict,
    batch_size: int,
    identity: EmbedderIdentity | None,
) -> RestoreCounts:
    """Write ``cols`` in one transaction, as ``dumprows.restore`` writes the same
    records as ``DumpRow`` objects (``restore_rows``).

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
    says (``dumprows.restore`` alike); return what was written.

    Raises:
        InvalidArgumentError: naming the first stored id, for ``"error"``.
    """
    clash: set[tuple[str, str]] = set()
    by_family: dict[str, builtins.list[str]] = {}
    for family, rid in zip(cols.families, cols.ids, strict=True):
        by_family.setdefault(family, []).append(rid)
    for family, ids in by_family.items():
        clash.update((family, i) for i in tx.existing_ids(family, ids))
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


def plain(cols: DumpColumns, now: datetime, expected: int | None) -> bool:
    """Whether every check ``dumprows.restore`` makes passes for ``cols`` with nothing
    to change (no row expired, no id twice, no text or metadata to refuse, times in
    the stored form, windows in order, vectors of ``expected`` dimensions (or one
    dimension) and finite); the checks run over whole columns. False sends the batch
    to the general path, which looks closer and names what is wrong."""
    n = len(cols)
    types = set(cols.record_types)
    if not types <= _PLAIN_TYPES:
        return False
    if cols.expires_ats.count(None) != n and not all(
        e is None or e > now for e in cols.expires_ats
    ):
        return False
    if len(set(zip(cols.families, cols.ids, strict=True))) != n or None in cols.texts:
        return False
    texts: builtins.list[str | None] = [*cols.ids, *cols.contents, *cols.roles]
    for column in (cols.thread_ids, cols.user_ids, cols.agent_ids, cols.timestamps):
        texts.extend(column)
    texts.extend(cols.metadatas)
    texts.extend(cols.texts)
    try:
        check_texts(texts, "rows")
    except ValueError:
        return False
    metas = "".join([m for m in cols.metadatas if m is not None])
    if "\\u0000" in metas or RESERVED_KEY in metas:
        return False
    stamps = {t for t in set(cols.timestamps) if t is not None}
    if not all(map(stored_form, stamps)) or not all(map(stored_created, cols.created_ats)):
        return False
    if not _windows_in_order(cols):
        return False
    vectors = cols.vectors
    if vectors.ndim != 2 or vectors.shape[0] != n or vectors.dtype != np.float32:
        return False
    if expected is not None and vectors.shape[1] != expected:
        return False
    return bool(np.isfinite(vectors).all())


def _windows_in_order(cols: DumpColumns) -> bool:
    """Whether no validity window ends before it starts."""
    n = len(cols)
    if cols.valid_froms.count(None) == n and cols.valid_untils.count(None) == n:
        return True
    for start, stop in zip(cols.valid_froms, cols.valid_untils, strict=True):
        if start is not None or stop is not None:
            try:
                check_window(start, stop, "valid_until")
            except ValueError:
                return False
    return True
