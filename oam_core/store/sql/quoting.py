"""Statements keeping the search rows that quote other records (``store/quotes.py``)
in step with what they quote, for the SQL back ends (docs/store.md#schema).

``chunk_sources`` holds one ``(chunk_pk, source_pk)`` row per quoted record; both
references cascade, so a link goes with its row or its source. The rows that quote a
record are deleted *before* the record, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from oam_core.store.sql.dialect import Dialect
from oam_core.store.sql.schema import ColumnTypes
from oam_core.store.sql.statements import Stmt


def sources_table(p: str, t: ColumnTypes) -> list[str]:
    """``chunk_sources`` and its index by source."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {p}chunk_sources (
            chunk_pk {t.key} NOT NULL REFERENCES {p}chunks (pk) ON DELETE CASCADE,
            source_pk {t.key} NOT NULL REFERENCES {p}records (pk) ON DELETE CASCADE,
            PRIMARY KEY (chunk_pk, source_pk))""",
        f"CREATE INDEX IF NOT EXISTS {p}chunk_sources_source ON {p}chunk_sources (source_pk)",
    ]


def legacy_context_rows(p: str, newline: str) -> str:
    """Delete the context rows written before ``chunk_sources`` existed (schema
    version 3), which quote messages without saying which: the second and last row
    of a message with two rows, holding a line break and longer than the message
    (the second row of a message cut in two is shorter). ``newline`` is the
    dialect's expression for a line feed."""
    return f"""DELETE FROM {p}chunks WHERE pk IN (
        SELECT c.pk FROM {p}chunks c JOIN {p}records r ON r.pk = c.record_pk
        WHERE r.family = 'message' AND c.seq = 1
          AND length(c.text) > length(r.content)
          AND c.text LIKE '%' || {newline} || '%'
          AND (SELECT count(*) FROM {p}chunks c2 WHERE c2.record_pk = c.record_pk) = 2)"""


def message_keys(d: Dialect, p: str, ids: Sequence[str]) -> Stmt:
    """``(id, pk, expires_at)`` of the messages among ``ids`` (one ``batches`` slice)."""
    sql, params = d.any_of("id", ids)
    return Stmt(
        f"SELECT id, pk, expires_at FROM {p}records WHERE family = 'message' AND {sql}", params
    )


def insert_link(d: Dialect, p: str) -> str:
    """Link one search row, named by ``(source_pk, record_pk, seq)``, to a source."""
    m = d.mark
    return (
        f"INSERT INTO {p}chunk_sources (chunk_pk, source_pk) "
        f"SELECT pk, {m} FROM {p}chunks WHERE record_pk = {m} AND seq = {m}"
    )


def drop_quoting(p: str, where: str, params: Sequence[Any]) -> Stmt:
    """Delete the search rows quoting any record that ``where`` (a condition on
    ``records`` columns) selects."""
    return Stmt(
        f"DELETE FROM {p}chunks WHERE pk IN (SELECT chunk_pk FROM {p}chunk_sources "
        f"WHERE source_pk IN (SELECT pk FROM {p}records WHERE {where}))",
        params,
    )


def drop_quoting_key(d: Dialect, p: str, key: Any) -> Stmt:
    """Delete the search rows quoting the record with primary key ``key``."""
    return Stmt(
        f"DELETE FROM {p}chunks WHERE pk IN "
        f"(SELECT chunk_pk FROM {p}chunk_sources WHERE source_pk = {d.mark})",
        (key,),
    )


def clamp_expiry(d: Dialect, p: str, key: Any) -> Stmt:
    """Set each search row that quotes the record ``key``, or is one of its rows and
    quotes others, to expire at the earliest expiry of its record and its sources."""
    m = d.mark
    return Stmt(
        f"""UPDATE {p}chunks SET expires_at = (
            SELECT MIN(r.expires_at) FROM {p}records r
            WHERE r.pk = {p}chunks.record_pk OR r.pk IN (
                SELECT s.source_pk FROM {p}chunk_sources s WHERE s.chunk_pk = {p}chunks.pk))
        WHERE pk IN (SELECT chunk_pk FROM {p}chunk_sources WHERE source_pk = {m})
           OR (record_pk = {m} AND pk IN (SELECT chunk_pk FROM {p}chunk_sources))""",
        (key, key),
    )


def purge_rows(d: Dialect, p: str, now: datetime) -> Stmt:
    """Delete the search rows expired at ``now`` (rows quoting an expired record
    expire with it)."""
    return Stmt(
        f"DELETE FROM {p}chunks WHERE expires_at IS NOT NULL AND expires_at <= {d.mark}",
        (now.timestamp(),),
    )
