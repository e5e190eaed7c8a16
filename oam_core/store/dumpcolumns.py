"""A batch of dumped records as columns: the fast path of an import
(docs/transfer.md#import, bench/README.md#transferpy).

Most lines of a dump are records of one shape: one search row with a vector, quoting
nothing. The importer decodes those straight into columns (``DumpColumns``), with
the batch's vectors as one matrix, instead of one ``DumpRow`` and ``DumpChunk`` per
record (building them was a fifth of an import's time); ``dumprows.restore_columns`` checks
the whole batch with list and array operations and writes the columns as they are.
A batch the fast checks do not clear (a message, a profile, a row expired already,
an id given twice, text or a time that needs a closer look, a bad vector) is written
as ``DumpRow`` objects through ``dumprows.restore``, which names what is wrong: the
rows written and the errors are the same either way.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import compress
from typing import Any

import numpy as np

from oam_core.store.backend import DumpChunk, DumpRow


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
        return [row_of_fields(f, f[17]) for f in zip(*self.lists(), self.vectors, strict=True)]

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


def row_of_fields(f: Sequence[Any], vector: np.ndarray) -> DumpRow:
    """The ``DumpRow`` of one record's fields in ``DumpColumns.lists()`` order
    (``f[17]``, where present, is ignored: the search row's vector is ``vector``)."""
    return DumpRow(
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
        (DumpChunk(f[15], vector, f[16], ()),),
        f[13],
        f[14],
    )
