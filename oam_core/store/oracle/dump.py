"""Statements of the dump path (docs/transfer.md) for the Oracle back end: read each
family's table page by page in ``pk`` order with the search rows, and write rows back
with their own ids, times, sequence numbers and expiry (``OracleBackend.dump_page``,
``OracleTx.restore``). Pure builders, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oam_core.store.oracle.names import Names
from oam_core.store.oracle.sql import IN_LIST, record_columns
from oam_core.store.oracle.stmt import Stmt

FAMILIES = ("thread", "user_profile", "message", "memory")
"""Dump order: threads first, then profiles (both profile types share a table),
messages (before the context rows that quote them), memories."""

THREAD_DUMP_COLUMNS = (
    "r.pk, r.id, r.user_id, r.agent_id, JSON_SERIALIZE(r.metadata RETURNING CLOB), "
    "JSON_SERIALIZE(r.config RETURNING CLOB), JSON_SERIALIZE(r.state RETURNING CLOB), "
    "r.created_at, r.seq_no"
)
"""The thread columns ``page`` reads for the ``thread`` family."""


def _users(family: str, user_ids: Sequence[str] | None, n: Names, binds: dict[str, Any]) -> str:
    """The condition on ``r`` selecting the rows of ``user_ids`` (empty for None)."""
    if user_ids is None:
        return ""
    marks = ", ".join(f":u{j}" for j in range(len(user_ids))) or "NULL"
    binds.update({f"u{j}": u for j, u in enumerate(user_ids)})
    if family == "thread":
        return f" AND r.user_id IN ({marks})"
    if family == "user_profile":
        return f" AND r.record_type = 'user_profile' AND r.id IN ({marks})"
    return (
        f" AND (r.user_id IN ({marks}) OR r.thread_id IN "
        f"(SELECT t.id FROM {n.threads} t WHERE t.user_id IN ({marks})))"
    )


def page(
    n: Names, family: str, after: int | None, limit: int, user_ids: Sequence[str] | None
) -> Stmt:
    """Up to ``limit`` rows of ``family``'s table with ``pk > after``, in ``pk`` order:
    ``THREAD_DUMP_COLUMNS`` for threads, ``sql.record_columns`` otherwise."""
    binds: dict[str, Any] = {"after": -1 if after is None else after, "n": limit}
    cols = THREAD_DUMP_COLUMNS if family == "thread" else record_columns(n)
    where = _users(family, user_ids, n, binds)
    return Stmt(
        f"SELECT {cols} FROM {n.record_table(family)} r WHERE r.pk > :after{where} "
        "ORDER BY r.pk FETCH FIRST :n ROWS ONLY",
        binds,
    )


def counts(n: Names, family: str, user_ids: Sequence[str] | None, now: Any) -> Stmt:
    """``(record_type, count)`` of ``family``'s rows that ``page`` returns and that are
    not expired at ``now`` (naive UTC)."""
    binds: dict[str, Any] = {}
    where = _users(family, user_ids, n, binds)
    if family == "thread":
        return Stmt(f"SELECT 'thread', COUNT(*) FROM {n.threads} r WHERE 1 = 1{where}", binds)
    binds["now"] = now
    return Stmt(
        f"SELECT r.record_type, COUNT(*) FROM {n.record_table(family)} r "
        f"WHERE (r.expires_at IS NULL OR r.expires_at > :now){where} GROUP BY r.record_type",
        binds,
        {"now": "TIMESTAMP"},
    )


def chunks_of(n: Names, family: str, pks: Sequence[int], with_vectors: bool) -> Stmt:
    """``(pk, record_pk, chunk_text, embedding or NULL, expires_at)`` of the search
    rows of ``family``'s records ``pks`` (at most ``IN_LIST``), in record and position
    order."""
    assert len(pks) <= IN_LIST
    binds: dict[str, Any] = {"fam": family}
    binds.update({f"p{j}": pk for j, pk in enumerate(pks)})
    marks = ", ".join(f":p{j}" for j in range(len(pks)))
    vector = "c.embedding" if with_vectors else "NULL"
    return Stmt(
        f"SELECT c.pk, c.record_pk, c.chunk_text, {vector}, c.expires_at FROM {n.chunks} c "
        f"WHERE c.record_family = :fam AND c.record_pk IN ({marks}) "
        "ORDER BY c.record_pk, c.seq",
        binds,
    )


def sources_of(n: Names, chunk_pks: Sequence[int]) -> Stmt:
    """``(chunk_pk, message id)`` of the messages the search rows ``chunk_pks`` quote
    (at most ``IN_LIST``), in the messages' insertion order."""
    binds = {f"c{j}": pk for j, pk in enumerate(chunk_pks)}
    marks = ", ".join(f":c{j}" for j in range(len(chunk_pks)))
    return Stmt(
        f"SELECT s.chunk_pk, m.id FROM {n.chunk_sources} s JOIN {n.messages} m "
        f"ON m.pk = s.source_pk WHERE s.chunk_pk IN ({marks}) ORDER BY s.chunk_pk, m.pk",
        binds,
    )


def insert_thread(n: Names, binds: dict[str, Any]) -> Stmt:
    """INSERT of a thread row with its message-number high-water mark ``seq_no``."""
    return Stmt(
        f"INSERT INTO {n.threads} (id, user_id, agent_id, metadata, config, state, created_at, "
        "seq_no) VALUES (:id, :user_id, :agent_id, :metadata, :config, :state, :created_at, "
        ":seq_no)",
        binds,
        {"metadata": "JSON", "config": "JSON", "state": "JSON", "created_at": "TIMESTAMP"},
    )


def raise_thread_seq(n: Names, thread_id: str, seq_no: int) -> Stmt:
    """Raise a thread's high-water mark to ``seq_no`` when it is lower."""
    return Stmt(
        f"UPDATE {n.threads} SET seq_no = :seq_no WHERE id = :thread_id "
        "AND (seq_no IS NULL OR seq_no < :seq_no)",
        {"seq_no": seq_no, "thread_id": thread_id},
    )
