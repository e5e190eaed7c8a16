"""Statements of the dump path (docs/transfer.md) for the SQL back ends: read stored
rows page by page in insertion order with their search rows, and write them back
with their own ids, times, sequence numbers and expiry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oam_core.store.sql.dialect import Dialect
from oam_core.store.sql.statements import RECORD_COLUMNS, Stmt, record_select

DUMP_COLUMNS = f"{RECORD_COLUMNS}, config, state"
"""The records columns ``dump_page`` reads: ``RECORD_COLUMNS`` then the thread's JSON."""


def page(
    d: Dialect,
    p: str,
    after: int | None,
    limit: int,
    user_ids: Sequence[str] | None,
    threads: bool,
) -> Stmt:
    """Up to ``limit`` rows of ``DUMP_COLUMNS`` with ``pk > after``, in ``pk`` order:
    the thread rows (``threads``) or every other row; with ``user_ids``, only the
    rows of those users (scope, own threads, profiles)."""
    parts, params = _users(d, p, user_ids)
    parts.append("record_type = 'thread'" if threads else "record_type <> 'thread'")
    if after is not None:
        parts.append(f"pk > {d.mark}")
        params.append(after)
    where = f"WHERE {' AND '.join(parts)} " if parts else ""
    params.append(limit)
    columns = f"{record_select(d)}, config, state"
    return Stmt(f"SELECT {columns} FROM {p}records {where}ORDER BY pk LIMIT {d.mark}", params)


def ids(
    d: Dialect, p: str, after: int | None, limit: int, user_ids: Sequence[str] | None, now: float
) -> Stmt:
    """``(pk, family, id, record_type, live)`` of up to ``limit`` rows with ``pk >
    after`` in ``pk`` order (with ``user_ids``, ``page``'s rows of those users);
    ``live``: 1 when not expired at ``now`` (Unix seconds), else 0."""
    parts, params = _users(d, p, user_ids)
    if after is not None:
        parts.append(f"pk > {d.mark}")
        params.append(after)
    where = f"WHERE {' AND '.join(parts)} " if parts else ""
    live = f"CASE WHEN expires_at IS NULL OR expires_at > {d.mark} THEN 1 ELSE 0 END"
    return Stmt(
        f"SELECT pk, family, id, record_type, {live} FROM {p}records {where}"
        f"ORDER BY pk LIMIT {d.mark}",
        [now, *params, limit],
    )


def counts(d: Dialect, p: str, user_ids: Sequence[str] | None, now: float) -> Stmt:
    """``(record_type, count)`` of the rows ``page`` returns that are not expired at
    ``now`` (Unix seconds)."""
    parts, params = _users(d, p, user_ids)
    parts.append(f"(expires_at IS NULL OR expires_at > {d.mark})")
    params.append(now)
    return Stmt(
        f"SELECT record_type, count(*) FROM {p}records WHERE {' AND '.join(parts)} "
        "GROUP BY record_type",
        params,
    )


def _users(d: Dialect, p: str, user_ids: Sequence[str] | None) -> tuple[list[str], list[Any]]:
    """The conditions selecting the rows of ``user_ids`` (none for None)."""
    parts: list[str] = []
    params: list[Any] = []
    if user_ids is not None:
        users = d.marks(len(user_ids)) if user_ids else "NULL"
        parts.append(
            f"(user_id IN ({users}) OR (record_type = 'user_profile' AND id IN ({users})) "
            f"OR (family IN ('message', 'memory') AND thread_id IN (SELECT id FROM "
            f"{p}records WHERE family = 'thread' AND user_id IN ({users}))))"
        )
        params.extend([*user_ids, *user_ids, *user_ids])
    return parts, params


def chunks_of(d: Dialect, p: str, vector: str, keys: Sequence[int]) -> Stmt:
    """``(pk, record_pk, text, vector, expires_at)`` of the search rows of the records
    ``keys`` (one ``batches`` slice), in record and position order; ``vector`` is the
    back end's expression reading ``embedding`` as bytes or a float list. (The rows'
    validity window is their record's.)"""
    sql, params = d.any_of("record_pk", keys)
    return Stmt(
        f"SELECT pk, record_pk, text, {vector}, expires_at FROM {p}chunks WHERE {sql} "
        "ORDER BY record_pk, seq",
        params,
    )


def sources_of(d: Dialect, p: str, chunk_keys: Sequence[int]) -> Stmt:
    """``(chunk_pk, source id)`` of the records the search rows ``chunk_keys`` quote
    (one ``batches`` slice), in the sources' insertion order."""
    sql, params = d.any_of("s.chunk_pk", chunk_keys)
    return Stmt(
        f"SELECT s.chunk_pk, r.id FROM {p}chunk_sources s JOIN {p}records r "
        f"ON r.pk = s.source_pk WHERE {sql} ORDER BY s.chunk_pk, r.pk",
        params,
    )


def insert_thread(d: Dialect, p: str) -> str:
    """INSERT of one thread row with its high-water mark, for ``executemany``:
    ``(id, user_id, agent_id, metadata, created_at, config, state, seq_no)``."""
    return (
        f"INSERT INTO {p}records (family, id, record_type, user_id, agent_id, metadata, "
        f"created_at, config, state, seq_no) VALUES ('thread', {d.mark}, 'thread', "
        f"{d.marks(7)})"
    )


def raise_thread_seq(d: Dialect, p: str, thread_id: str, seq_no: int) -> Stmt:
    """Raise a thread's high-water mark to ``seq_no`` when it is lower."""
    m = d.mark
    return Stmt(
        f"UPDATE {p}records SET seq_no = {m} WHERE family = 'thread' AND id = {m} "
        f"AND (seq_no IS NULL OR seq_no < {m})",
        (seq_no, thread_id, seq_no),
    )
