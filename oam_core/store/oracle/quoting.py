"""Statements keeping the search rows that quote messages (``store/quotes.py``) in step
with what they quote, for Oracle Database (docs/oracle.md).

``CHUNK_SOURCES`` holds one ``(chunk_pk, source_pk)`` row per quoted message; both
references cascade. The rows quoting a message are deleted before the message, in
the same transaction (the purge job needs nothing more: a quoting row expires no
later than what it quotes, and expired rows go first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oam_core.store.oracle.names import Names
from oam_core.store.oracle.stmt import BindType, Stmt


def sources_table(n: Names) -> list[Stmt]:
    """``CHUNK_SOURCES`` and its index by source."""
    return [
        Stmt(
            f"""CREATE TABLE {n.chunk_sources} (
  chunk_pk NUMBER NOT NULL REFERENCES {n.chunks} (pk) ON DELETE CASCADE,
  source_pk NUMBER NOT NULL REFERENCES {n.messages} (pk) ON DELETE CASCADE,
  CONSTRAINT {n.chunk_sources}_PK PRIMARY KEY (chunk_pk, source_pk)
)"""
        ),
        Stmt(f"CREATE INDEX {n.chunk_sources}_SRC_IX ON {n.chunk_sources} (source_pk)"),
    ]


def legacy_context_rows(n: Names) -> Stmt:
    """Delete the context rows written before ``CHUNK_SOURCES`` existed (schema
    version 3; the rule of ``sql/quoting.legacy_context_rows``)."""
    return Stmt(
        f"""DELETE FROM {n.chunks} c WHERE c.record_family = 'message' AND c.seq = 1
  AND DBMS_LOB.INSTR(c.chunk_text, CHR(10)) > 0
  AND DBMS_LOB.GETLENGTH(c.chunk_text) > (
    SELECT DBMS_LOB.GETLENGTH(m.content) FROM {n.messages} m WHERE m.pk = c.record_pk)
  AND (SELECT COUNT(*) FROM {n.chunks} c2
       WHERE c2.record_family = 'message' AND c2.record_pk = c.record_pk) = 2"""
    )


def message_keys(n: Names, ids: Sequence[str]) -> Stmt:
    """``(id, pk, expires_at)`` of the messages among ``ids`` (at most ``IN_LIST``),
    locked for the transaction (a delete of one waits, then sees the new links)."""
    binds: dict[str, Any] = {f"i{j}": rid for j, rid in enumerate(ids)}
    marks = ", ".join(f":i{j}" for j in range(len(ids)))
    return Stmt(
        f"SELECT id, pk, expires_at FROM {n.messages} WHERE id IN ({marks}) FOR UPDATE", binds
    )


def insert_links(n: Names, rows: Sequence[dict[str, Any]]) -> Stmt:
    """Link search rows, named by ``record_family``, ``record_pk`` and ``seq``, to the
    message ``source_pk`` (one bind dict per link, for ``executemany``)."""
    return Stmt(
        f"INSERT INTO {n.chunk_sources} (chunk_pk, source_pk) "
        f"SELECT pk, :source_pk FROM {n.chunks} WHERE record_family = :record_family "
        "AND record_pk = :record_pk AND seq = :seq",
        rows=rows,
    )


def drop_quoting(
    n: Names, where: str, binds: dict[str, Any], types: dict[str, BindType] | None = None
) -> Stmt:
    """Delete the search rows quoting any message that ``where`` (a condition on the
    messages table, with ``binds`` of ``types``) selects."""
    return Stmt(
        f"DELETE FROM {n.chunks} WHERE pk IN (SELECT chunk_pk FROM {n.chunk_sources} "
        f"WHERE source_pk IN (SELECT pk FROM {n.messages} WHERE {where}))",
        binds,
        types or {},
    )


def drop_quoting_key(n: Names, pk: int) -> Stmt:
    """Delete the search rows quoting the message with primary key ``pk``."""
    return Stmt(
        f"DELETE FROM {n.chunks} WHERE pk IN "
        f"(SELECT chunk_pk FROM {n.chunk_sources} WHERE source_pk = :pk)",
        {"pk": pk},
    )


def expired_messages(now: Any) -> tuple[str, dict[str, Any], dict[str, BindType]]:
    """The condition on the messages table selecting those expired at ``now`` (naive
    UTC), its binds and bind types."""
    return "expires_at <= :now", {"now": now}, {"now": "TIMESTAMP"}


def quoting_rows(n: Names, family: str, pk: int) -> Stmt:
    """``(chunk pk, its record's expiry)`` of the rows quoting the record, and of its
    own rows that quote others."""
    return Stmt(
        f"SELECT c.pk, c.record_family, c.record_pk FROM {n.chunks} c WHERE "
        f"(:family = 'message' AND c.pk IN (SELECT chunk_pk FROM {n.chunk_sources} "
        "WHERE source_pk = :pk)) OR (c.record_family = :family AND c.record_pk = :pk "
        f"AND c.pk IN (SELECT chunk_pk FROM {n.chunk_sources}))",
        {"family": family, "pk": pk},
    )


def source_expiries(n: Names, chunk_pk: int) -> Stmt:
    """The expiries of the messages one search row quotes."""
    return Stmt(
        f"SELECT m.expires_at FROM {n.chunk_sources} s JOIN {n.messages} m "
        "ON m.pk = s.source_pk WHERE s.chunk_pk = :chunk_pk",
        {"chunk_pk": chunk_pk},
    )


def set_row_expiry(n: Names, chunk_pk: int, expires_at: Any) -> Stmt:
    """Set one search row's expiry (naive UTC or None)."""
    return Stmt(
        f"UPDATE {n.chunks} SET expires_at = :expires_at WHERE pk = :chunk_pk",
        {"expires_at": expires_at, "chunk_pk": chunk_pk},
        {"expires_at": "TIMESTAMP"},
    )
