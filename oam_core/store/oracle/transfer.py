"""The dump path of the Oracle back end run on a connection (docs/transfer.md):
``dump_rows`` turns one page of a family's table into ``DumpRow`` values with their
search rows and the messages those quote; ``restore`` writes ``DumpRow`` values back
with their own ids, times, sequence numbers and expiry (``OracleTx.restore``).

The statements are built by ``dump.py``, ``sql.py`` and ``quoting.py``; this module
only runs them, in ``IN_LIST`` slices and ``batch_size`` batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from oam_core.apis.records import MESSAGE, THREAD
from oam_core.store.backend import DumpChunk, DumpRow
from oam_core.store.oracle import dump as od
from oam_core.store.oracle import quoting as oq
from oam_core.store.oracle import sql, windows
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.rows import (
    family_of_type,
    iso_utc,
    json_value,
    lob_text,
    record_from_row,
    utc,
)
from oam_core.store.oracle.session import chunked, fetchall, run, run_batched
from oam_core.store.planning import ChunkPlan

if TYPE_CHECKING:
    from oam_core.store.oracle.backend import OracleTx

__all__ = ["dump_rows", "restore"]

Scope = tuple[str | None, str | None, str | None]
"""A search row's scope: ``(thread_id, user_id, agent_id)``."""


# -- reading ---------------------------------------------------------------------------


def dump_rows(
    conn: Any, n: Names, family: str, rows: Sequence[Sequence[Any]], with_vectors: bool
) -> list[DumpRow]:
    """The ``DumpRow`` of each row of ``od.page`` for ``family``, in the page's order.

    Args:
        conn: An open ``oracledb`` connection.
        n: The schema's object names.
        family: One of ``od.FAMILIES``.
        rows: The page's rows (``THREAD_DUMP_COLUMNS`` for threads, else
            ``sql.record_columns``).
        with_vectors: Whether the store keeps its own vectors (read them too).
    """
    if family == THREAD:
        return [_thread_dump_row(row) for row in rows]
    chunks = chunks_by_record(conn, n, family, [int(r[0]) for r in rows], with_vectors)
    chunk_pks = [int(c[0]) for cs in chunks.values() for c in cs]
    sources = _sources_by_chunk(conn, n, chunk_pks)
    return [_record_dump_row(family, row, chunks.get(int(row[0]), []), sources) for row in rows]


def _thread_dump_row(row: Sequence[Any]) -> DumpRow:
    _pk, tid, uid, aid, meta, config, state, created, seq = row
    return DumpRow(
        family=THREAD,
        id=tid,
        record_type=THREAD,
        content=None,
        role=None,
        seq_no=None if seq is None else int(seq),
        thread_id=None,
        user_id=uid,
        agent_id=aid,
        timestamp=None,
        metadata=lob_text(meta),
        created_at=iso_utc(created) or "",
        expires_at=None,
        config=lob_text(config),
        state=lob_text(state),
    )


def chunks_by_record(
    conn: Any, n: Names, family: str, pks: list[int], with_vectors: bool
) -> dict[int, list[tuple[Any, ...]]]:
    """The search rows (``od.chunks_of``) of the records ``pks``, by record pk."""
    chunks: dict[int, list[tuple[Any, ...]]] = {}
    # Both profile types share a table; their search rows name their own type.
    families = ("user_profile", "agent_profile") if family == "user_profile" else (family,)
    for part in chunked(pks, sql.IN_LIST):
        for fam in families:
            for c in fetchall(conn, od.chunks_of(n, fam, part, with_vectors)):
                chunks.setdefault(int(c[1]), []).append(tuple(c))
    return chunks


def _sources_by_chunk(conn: Any, n: Names, chunk_pks: list[int]) -> dict[int, list[str]]:
    """The ids of the messages each search row quotes, by search row pk."""
    sources: dict[int, list[str]] = {}
    for part in chunked(chunk_pks, sql.IN_LIST):
        for chunk_pk, mid in fetchall(conn, od.sources_of(n, part)):
            sources.setdefault(int(chunk_pk), []).append(str(mid))
    return sources


def _record_dump_row(
    family: str,
    row: Sequence[Any],
    own: Sequence[tuple[Any, ...]],
    sources: dict[int, list[str]],
) -> DumpRow:
    record = record_from_row(family, row)
    return DumpRow(
        family=family_of_type(record.record_type),
        id=record.id,
        record_type=record.record_type,
        content=record.content,
        role=getattr(record, "role", None),
        seq_no=None if row[6] is None else int(row[6]),
        thread_id=record.thread_id,
        user_id=record.user_id,
        agent_id=record.agent_id,
        timestamp=record.timestamp,
        metadata=lob_text(row[12]),
        created_at=record.created_at or "",
        expires_at=utc(row[14]),
        valid_from=windows.aware(row[15]),
        valid_until=windows.aware(row[16]),
        chunks=tuple(
            DumpChunk(
                text=lob_text(c[2]),
                vector=None if c[3] is None else np.asarray(c[3], dtype=np.float32),
                expires_at=utc(c[4]),
                sources=tuple(sources.get(int(c[0]), ())),
            )
            for c in own
        ),
    )


# -- writing ---------------------------------------------------------------------------


def restore(tx: OracleTx, rows: Sequence[DumpRow], batch_size: int) -> None:
    """Write ``rows`` in ``tx``: threads, then records by table, their search rows
    (a row quoting a message the store does not hold is left out) with their links,
    then each thread's message-number high-water mark raised to its last message.
    A record's window goes to its row and its search rows; a schema without window
    columns refuses a row with one (``SchemaError``) before anything is written."""
    for row in rows:
        windows.refuse_without_columns(tx.n, *windows.of(row))
    records = [row for row in rows if row.family != THREAD]
    for row in rows:
        if row.family == THREAD:
            run(tx.c, od.insert_thread(tx.n, _thread_binds(row)))
    by_table: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_table.setdefault(r.family, []).append(_record_binds(tx.n, r))
    for family, binds in by_table.items():
        run_batched(tx.c, sql.insert_records(tx.n, family, binds), batch_size)
    with_chunks = [r for r in records if r.chunks]
    chunk_rows, links = _search_rows(tx, with_chunks)
    tx.insert_chunk_rows(chunk_rows, batch_size)
    if links:
        run_batched(tx.c, oq.insert_links(tx.n, links), batch_size)
    for thread_id, seq_no in _last_seq_nos(records).items():
        run(tx.c, od.raise_thread_seq(tx.n, thread_id, seq_no))


def _thread_binds(row: DumpRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "user_id": row.user_id,
        "agent_id": row.agent_id,
        "metadata": json_value(row.metadata),
        "config": json_value(row.config) or {},
        "state": json_value(row.state) or {},
        "created_at": sql.naive_utc(datetime.fromisoformat(row.created_at)),
        "seq_no": row.seq_no,
    }


def _record_binds(n: Names, r: DumpRow) -> dict[str, Any]:
    return {
        "id": r.id,
        "record_type": r.record_type,
        "content": r.content,
        "content_set": int(r.content is not None),
        "role": r.role,
        "seq_no": r.seq_no,
        "thread_id": r.thread_id,
        "user_id": r.user_id,
        "agent_id": r.agent_id,
        "event_ts": r.timestamp,
        "event_ts_set": int(r.timestamp is not None),
        "metadata": json_value(r.metadata),
        "created_at": sql.naive_utc(datetime.fromisoformat(r.created_at)),
        "expires_at": sql.naive_utc(r.expires_at) if r.expires_at else None,
        **windows.binds(n, *windows.of(r)),
    }


def _search_rows(
    tx: OracleTx, records: Sequence[DumpRow]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The search rows of ``records`` (just inserted) and their ``CHUNK_SOURCES``
    links; a row quoting a message the store does not hold is left out."""
    pks = _record_pks(tx, records)
    stored = _message_pks(tx, sorted({s for r in records for c in r.chunks for s in c.sources}))
    chunk_rows: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    for r in records:
        pk = pks[(r.family, r.id)]
        scope = _restore_scope(r)
        seq = 0
        for chunk in r.chunks:
            if any(s not in stored for s in chunk.sources):
                continue  # it quotes a message the store does not hold
            expires = sql.naive_utc(chunk.expires_at) if chunk.expires_at else None
            plan = ChunkPlan(chunk.text, chunk.vector)
            chunk_rows.append(
                tx.chunk_row(r.family, pk, r.record_type, seq, plan, scope, expires, windows.of(r))
            )
            links.extend(
                {"source_pk": stored[s], "record_family": r.family, "record_pk": pk, "seq": seq}
                for s in chunk.sources
            )
            seq += 1
    return chunk_rows, links


def _record_pks(tx: OracleTx, records: Sequence[DumpRow]) -> dict[tuple[str, str], int]:
    """The pk of each of ``records`` by ``(family, id)``."""
    pks: dict[tuple[str, str], int] = {}
    for family in dict.fromkeys(r.family for r in records):
        ids = [r.id for r in records if r.family == family]
        for part in chunked(ids, sql.IN_LIST):
            for rid, pk in fetchall(tx.c, sql.ids_to_pks(tx.n, family, part)):
                pks[(family, str(rid))] = int(pk)
    return pks


def _message_pks(tx: OracleTx, message_ids: Sequence[str]) -> dict[str, int]:
    """The pk of each stored message of ``message_ids`` (absent ones left out)."""
    stored: dict[str, int] = {}
    for part in chunked(list(message_ids), sql.IN_LIST):
        for mid, pk, _exp in fetchall(tx.c, oq.message_keys(tx.n, part)):
            stored[str(mid)] = int(pk)
    return stored


def _last_seq_nos(records: Sequence[DumpRow]) -> dict[str, int]:
    """The highest message number of each thread among ``records``."""
    marks: dict[str, int] = {}
    for r in records:
        if r.family == MESSAGE and r.thread_id is not None and r.seq_no is not None:
            marks[r.thread_id] = max(marks.get(r.thread_id, -1), r.seq_no)
    return marks


def _restore_scope(row: DumpRow) -> Scope:
    """The scope a record's search rows carry: a profile's own id in its dimension."""
    if row.record_type == "user_profile":
        return (None, row.id, None)
    if row.record_type == "agent_profile":
        return (None, None, row.id)
    return (row.thread_id, row.user_id, row.agent_id)
