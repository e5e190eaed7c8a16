"""The statements of the SQL back ends (SQLite, PostgreSQL), written once.

Pure functions: each returns a ``Stmt`` (SQL text and positional parameters) for a
``Dialect`` and an object prefix ``p`` (the ``memory_store_id`` prefix); nothing here
runs a query, so tests can check the SQL of both dialects without a database (the
Oracle back end builds its SQL the same way, ``store/oracle/sql.py``). The layout
(docs/store.md#schema): one ``records`` table for every record family (``pk``,
``family``, ``id`` unique per family, scope columns, JSON text columns), a ``chunks``
table of search rows pointing at their record by ``record_pk`` (deleted with it), and
``oam_meta`` key/value rows. Ranking queries are not here: they use the dialect's
vector and full-text operators and live with each back end.

The rows these statements read decode here too (``record_from_row``,
``thread_from_row``): epoch seconds <-> ISO times, JSON text columns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

import orjson

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import MESSAGE, THREAD, MessageRecord, Record, ThreadRow
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import Predicate
from oam_core.store.planning import BulkPlan, ChunkPlan, RowPlan
from oam_core.store.sql.dialect import Dialect
from oam_core.store.timestamps import normalize_timestamp
from oam_core.store.ttl import iso

RECORD_COLUMNS = (
    "pk, family, id, record_type, content, role, seq_no, thread_id, user_id, agent_id, "
    "event_ts, metadata, created_at, expires_at, valid_from, valid_until"
)
"""The records-table columns ``record_from_row`` decodes, in order."""


def record_select(d: Dialect, alias: str = "") -> str:
    """``RECORD_COLUMNS`` to SELECT (each prefixed with ``alias.`` when given); where
    the tables have no window columns (``Dialect.windows``) the window reads NULL."""
    names = RECORD_COLUMNS.split(", ")
    cols = [f"{alias}.{c}" if alias else c for c in names]
    if not d.windows:
        cols[-2:] = ["NULL", "NULL"]
    return ", ".join(cols)


def window_iso(value: float | None) -> str | None:
    """A stored window end (Unix seconds) as ``Record.valid_from``/``valid_until``
    render it: ISO-8601 UTC, microseconds only when non-zero
    (``apis.timestamps.normalize_timestamp``); None stays None."""
    if value is None:
        return None
    return normalize_timestamp(datetime.fromtimestamp(value, timezone.utc))


def epoch(dt: datetime | None) -> float | None:
    """An aware datetime as Unix seconds (expiry columns), or None."""
    return None if dt is None else dt.timestamp()


def from_epoch(value: float | None) -> str | None:
    """Unix seconds as ISO-8601 UTC, or None."""
    return None if value is None else iso(datetime.fromtimestamp(value, timezone.utc))


def record_from_row(row: Sequence[Any]) -> Record:
    """A ``Record`` (``MessageRecord`` for messages) from a row of ``RECORD_COLUMNS``;
    metadata is JSON text."""
    (
        _pk,
        family,
        rid,
        rtype,
        content,
        role,
        seq_no,
        thread_id,
        user_id,
        agent_id,
        event_ts,
        metadata,
        created_at,
        expires_at,
        valid_from,
        valid_until,
    ) = row
    common: dict[str, Any] = dict(
        id=rid,
        record_type=rtype,
        content=content,
        timestamp=event_ts,
        metadata=orjson.loads(metadata) if metadata is not None else None,
        created_at=created_at,
        thread_id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        expires_at=from_epoch(expires_at),
        valid_from=window_iso(valid_from),
        valid_until=window_iso(valid_until),
    )
    if family == MESSAGE:
        return MessageRecord(role=role, seq_no=seq_no or 0, **common)
    return Record(**common)


def thread_from_row(row: Sequence[Any]) -> ThreadRow:
    """A ``ThreadRow`` from ``(id, user_id, agent_id, metadata, config, state,
    created_at)``; the JSON columns are text."""
    tid, user_id, agent_id, metadata, config, state, created_at = row
    return ThreadRow(
        thread_id=tid,
        user_id=user_id,
        agent_id=agent_id,
        metadata=orjson.loads(metadata) if metadata is not None else None,
        config=orjson.loads(config or "{}"),
        state=orjson.loads(state or "{}"),
        created_at=created_at,
    )


THREAD_COLUMNS = "id, user_id, agent_id, metadata, config, state, created_at"
"""The records columns ``thread_from_row`` decodes, in order."""

RECORD_INSERT_COLUMNS = (
    "family, id, record_type, content, role, seq_no, thread_id, user_id, agent_id, "
    "event_ts, metadata, created_at, expires_at, valid_from, valid_until"
)
"""The columns of ``record_columns``, in order."""

CHUNK_INSERT_COLUMNS = (
    "record_pk, record_type, seq, text, thread_id, user_id, agent_id, expires_at, "
    "valid_from, valid_until"
)
"""The columns of ``chunk_columns``, in order; each back end adds its own."""
CHUNK_TEXT = CHUNK_INSERT_COLUMNS.split(", ").index("text")
"""The position of the text column among ``chunk_columns``."""

Scope = tuple[str | None, str | None, str | None]

_UPDATABLE = {
    "content": "content",
    "metadata": "metadata",
    "timestamp": "event_ts",
    "expires_at": "expires_at",
    "valid_from": "valid_from",
    "valid_until": "valid_until",
}
"""``Tx.update_row`` field -> records column."""

_COPIED = ("expires_at", "valid_from", "valid_until")
"""The ``Tx.update_row`` fields (datetimes) that are copied to the search rows."""

Window = tuple[float | None, float | None]
"""A validity window as stored: ``(valid_from, valid_until)`` in Unix seconds."""
NO_WINDOW: Window = (None, None)


@dataclass(frozen=True)
class Stmt:
    """One statement: SQL text with the dialect's placeholders, and its parameters."""

    sql: str
    params: Sequence[Any] = ()


class ChunkRow(NamedTuple):
    """One search row to insert: its record's key and type, its position among the
    record's rows, the planned text and vector, and the scope, expiry and validity
    window (Unix seconds or None) copied from the record."""

    record_pk: int
    record_type: str
    seq: int
    chunk: ChunkPlan
    scope: Scope
    expires_at: float | None
    window: Window = NO_WINDOW


# -- predicates ---------------------------------------------------------------------


def where(d: Dialect, pred: Predicate, alias: str, *, records: bool) -> tuple[str, list[Any]]:
    """SQL for ``pred`` over ``alias`` (records ``r``, or chunks ``c`` joined to
    records ``r`` when a metadata filter is given), and its parameters.

    Args:
        records: ``alias`` is the records table: a thread scope on thread rows is
            their ``id``.
    """
    m = d.mark
    types = sorted(pred.record_types)
    type_sql, params = d.any_of(f"{alias}.record_type", types)
    parts = [type_sql, f"({alias}.expires_at IS NULL OR {alias}.expires_at > {m})"]
    params.append(pred.now.timestamp())
    thread_column = "id" if records and types == [THREAD] else "thread_id"
    parts += scope_sql(d, pred, alias, params, thread_column=thread_column)
    if pred.valid_at is not None and d.windows:
        parts.append(valid_at_sql(d, alias))
        params.extend([pred.valid_at.timestamp()] * 2)
    if pred.metadata is None:
        parts.append("r.metadata IS NULL")
    elif pred.metadata is not NOT_SET and pred.metadata:
        sql, filter_params = d.metadata_filter(pred.metadata)
        parts.append(sql)
        params.extend(filter_params)
    return " AND ".join(parts), params


def scope_sql(
    d: Dialect, pred: Predicate, alias: str, params: list[Any], *, thread_column: str = "thread_id"
) -> list[str]:
    """The conditions of ``pred``'s thread, user and agent scope over ``alias`` (a
    scope not set: none; None: the column is NULL), their values appended to
    ``params``. ``thread_column``: where the thread scope is read (a thread row's
    own ``id``)."""
    parts = []
    for column, value in (
        (thread_column, pred.thread_id),
        ("user_id", pred.user_id),
        ("agent_id", pred.agent_id),
    ):
        if value is NOT_SET:
            continue
        if value is None:
            parts.append(f"{alias}.{column} IS NULL")
        else:
            parts.append(f"{alias}.{column} = {d.mark}")
            params.append(value)
    return parts


def valid_at_sql(d: Dialect, alias: str) -> str:
    """SQL true where the window of ``alias`` holds at a time bound twice (Unix
    seconds): ``valid_from`` NULL or <= it, ``valid_until`` NULL or > it."""
    m = d.mark
    return (
        f"({alias}.valid_from IS NULL OR {alias}.valid_from <= {m}) "
        f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > {m})"
    )


def candidates(d: Dialect, p: str, pred: Predicate) -> tuple[str, str, list[Any]]:
    """``(join, where, params)`` restricting chunks ``c`` to ``pred``; ``join`` brings
    in records ``r`` only when a metadata filter needs them."""
    sql, params = where(d, pred, "c", records=False)
    join = f"JOIN {p}records r ON r.pk = c.record_pk" if pred.metadata is not NOT_SET else ""
    return join, sql, params


# -- reads --------------------------------------------------------------------------


def get_record(
    d: Dialect, p: str, family: str, record_id: str, record_type: str, now: datetime
) -> Stmt:
    """One visible record by family, id and type."""
    m = d.mark
    return Stmt(
        f"SELECT {record_select(d)} FROM {p}records WHERE family = {m} AND id = {m} "
        f"AND record_type = {m} AND (expires_at IS NULL OR expires_at > {m})",
        (family, record_id, record_type, now.timestamp()),
    )


def get_in_family(d: Dialect, p: str, family: str, record_id: str, now: datetime) -> Stmt:
    """One visible record by family and id, of any type of the family."""
    m = d.mark
    return Stmt(
        f"SELECT {record_select(d)} FROM {p}records WHERE family = {m} AND id = {m} "
        f"AND (expires_at IS NULL OR expires_at > {m})",
        (family, record_id, now.timestamp()),
    )


def list_records(d: Dialect, p: str, pred: Predicate, limit: int | None) -> Stmt:
    """The newest ``limit`` (None: all) visible records matching ``pred``, newest first."""
    sql, params = where(d, pred, "r", records=True)
    text = f"SELECT {record_select(d)} FROM {p}records r WHERE {sql} ORDER BY pk DESC"
    if limit is not None:
        text += f" LIMIT {d.mark}"
        params.append(limit)
    return Stmt(text, params)


def _visible_messages(d: Dialect, p: str) -> str:
    return (
        f"FROM {p}records WHERE family = 'message' AND thread_id = {d.mark} "
        f"AND (expires_at IS NULL OR expires_at > {d.mark})"
    )


def count_messages(d: Dialect, p: str, thread_id: str, now: datetime) -> Stmt:
    """How many visible messages a thread holds."""
    return Stmt(
        f"SELECT count(*) {_visible_messages(d, p)}",
        (thread_id, now.timestamp()),
    )


def thread_messages(
    d: Dialect, p: str, thread_id: str, now: datetime, offset: int, limit: int | None
) -> Stmt:
    """A thread's visible messages in insertion order, ``limit`` (None: all) from
    ``offset`` on."""
    return Stmt(
        f"SELECT {record_select(d)} {_visible_messages(d, p)} "
        f"ORDER BY seq_no, pk LIMIT {d.mark} OFFSET {d.mark}",
        (thread_id, now.timestamp(), d.limit(limit), offset),
    )


def thread_messages_by_seq(
    d: Dialect,
    p: str,
    thread_id: str,
    after: int | None,
    through: int | None,
    limit: int | None,
    newest: bool,
    now: datetime,
) -> Stmt:
    """A thread's visible messages with ``after < seq_no <= through`` (None: no
    bound) in insertion order (``newest``: descending), at most ``limit`` (None: all)."""
    m = d.mark
    sql, params = "", [thread_id, now.timestamp()]
    for op, bound in ((">", after), ("<=", through)):
        if bound is not None:
            sql += f" AND seq_no {op} {m}"
            params.append(bound)
    order = "DESC" if newest else "ASC"
    params.append(d.limit(limit))
    return Stmt(
        f"SELECT {record_select(d)} {_visible_messages(d, p)}{sql} "
        f"ORDER BY seq_no {order}, pk {order} LIMIT {m}",
        params,
    )


def get_thread(d: Dialect, p: str, thread_id: str) -> Stmt:
    """A thread row (``THREAD_COLUMNS``) by id."""
    return Stmt(
        f"SELECT {THREAD_COLUMNS} FROM {p}records WHERE family = 'thread' AND id = {d.mark}",
        (thread_id,),
    )


def list_threads(
    d: Dialect, p: str, user_id: Maybe[str | None], agent_id: Maybe[str | None]
) -> Stmt:
    """Thread rows (``THREAD_COLUMNS``), oldest first, optionally by user and agent
    (None: the column is NULL)."""
    parts, params = ["family = 'thread'"], []
    for column, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is None:
            parts.append(f"{column} IS NULL")
        elif value is not NOT_SET:
            parts.append(f"{column} = {d.mark}")
            params.append(value)
    return Stmt(
        f"SELECT {THREAD_COLUMNS} FROM {p}records WHERE {' AND '.join(parts)} ORDER BY pk",
        params,
    )


def load_records(d: Dialect, p: str, keys: Sequence[Any]) -> Stmt:
    """Records by key (one ``Dialect.batches`` slice of keys)."""
    sql, params = d.any_of("pk", keys)
    return Stmt(f"SELECT {record_select(d)} FROM {p}records WHERE {sql}", params)


def unembedded(d: Dialect, p: str, limit: int | None) -> Stmt:
    """``(family, id)`` of up to ``limit`` (None: all) records, oldest first, with a
    search row holding text but no vector."""
    return Stmt(
        f"SELECT family, id FROM {p}records WHERE pk IN (SELECT record_pk FROM "
        f"{p}chunks WHERE embedding IS NULL AND text IS NOT NULL AND text <> '') "
        f"ORDER BY pk LIMIT {d.mark}",
        (d.limit(limit),),
    )


def read_meta(p: str) -> Stmt:
    """Every ``oam_meta`` row as ``(key, value)``."""
    return Stmt(f"SELECT key, value FROM {p}oam_meta")


def any_record(p: str) -> Stmt:
    """One row when the store holds any record, none when it is empty."""
    return Stmt(f"SELECT 1 FROM {p}records LIMIT 1")


# -- writes -------------------------------------------------------------------------


def insert_records(d: Dialect, p: str, returning: bool) -> str:
    """The INSERT of one ``record_columns`` row, for ``executemany``."""
    tail = " RETURNING pk" if returning else ""
    return (
        f"INSERT INTO {p}records ({RECORD_INSERT_COLUMNS}) "
        f"VALUES ({d.marks(RECORD_INSERT_COLUMNS.count(',') + 1)}){tail}"
    )


def record_columns(
    plans: Sequence[RowPlan],
    seq_nos: Sequence[int | None],
    created_at: str,
    expires_at: Sequence[float | None],
) -> list[list[Any]]:
    """The ``RECORD_INSERT_COLUMNS`` values of planned record rows, column by column
    (one list per column, one entry per plan); ``expires_at`` holds
    ``epoch(plan.expires_at)`` of each. ``zip(*columns)`` gives the rows."""
    n = len(plans)
    return [
        [p.family for p in plans],
        [p.id for p in plans],
        [p.record_type for p in plans],
        [p.content for p in plans],
        [p.role for p in plans],
        list(seq_nos),
        [p.thread_id for p in plans],
        [p.user_id for p in plans],
        [p.agent_id for p in plans],
        [p.timestamp for p in plans],
        [p.metadata for p in plans],
        [created_at] * n,
        list(expires_at),
        [epoch(p.valid_from) for p in plans],
        [epoch(p.valid_until) for p in plans],
    ]


def bulk_record_columns(
    plan: BulkPlan, created_at: str, expires_at: float | None
) -> list[list[Any]]:
    """``record_columns`` of the records of ``plan``: the same values, taken from its
    columns; ``expires_at`` is ``epoch(plan.expires_at)``."""
    n = len(plan.ids)
    return [
        [plan.family] * n,
        plan.ids,
        [plan.record_type] * n,
        plan.contents,
        [None] * n,
        [None] * n,
        plan.thread_ids,
        plan.user_ids,
        plan.agent_ids,
        [None] * n,
        plan.metadata,
        [created_at] * n,
        [expires_at] * n,
        [None] * n,
        [None] * n,
    ]


def bulk_chunk_columns(
    plan: BulkPlan, record_pks: Sequence[int], expires_at: float | None
) -> list[list[Any]]:
    """``chunk_columns`` of the one search row each record of ``plan`` gets, for the
    records stored under ``record_pks`` (in order)."""
    n = len(plan.ids)
    return [
        list(record_pks),
        [plan.record_type] * n,
        [0] * n,
        plan.chunk_texts(),
        plan.thread_ids,
        plan.user_ids,
        plan.agent_ids,
        [expires_at] * n,
        [None] * n,
        [None] * n,
    ]


def insert_chunks(d: Dialect, p: str, columns: Sequence[str], marks: Sequence[str]) -> str:
    """The INSERT of one search row, for ``executemany``: a ``chunk_columns`` row followed by
    the back end's own ``columns``, bound through ``marks`` (SQL holding placeholders,
    such as a cast; the values follow in placeholder order)."""
    shared = CHUNK_INSERT_COLUMNS.count(",") + 1
    return (
        f"INSERT INTO {p}chunks ({CHUNK_INSERT_COLUMNS}, {', '.join(columns)}) "
        f"VALUES ({d.marks(shared)}, {', '.join(marks)})"
    )


def chunk_columns(rows: Sequence[ChunkRow]) -> list[list[Any]]:
    """The ``CHUNK_INSERT_COLUMNS`` values of search rows, column by column (one list
    per column); ``zip(*columns)`` gives the rows."""
    return [
        [r.record_pk for r in rows],
        [r.record_type for r in rows],
        [r.seq for r in rows],
        [r.chunk.text for r in rows],
        [r.scope[0] for r in rows],
        [r.scope[1] for r in rows],
        [r.scope[2] for r in rows],
        [r.expires_at for r in rows],
        [r.window[0] for r in rows],
        [r.window[1] for r in rows],
    ]


def existing_ids(d: Dialect, p: str, family: str, ids: Sequence[str]) -> Stmt:
    """The ids among ``ids`` (one ``Dialect.batches`` slice) that exist in ``family``."""
    sql, params = d.any_of("id", ids)
    return Stmt(f"SELECT id FROM {p}records WHERE family = {d.mark} AND {sql}", [family, *params])


def ids_to_pks(d: Dialect, p: str, family: str, ids: Sequence[str]) -> Stmt:
    """``(id, pk)`` of ``ids`` (one ``Dialect.batches`` slice) in ``family``."""
    sql, params = d.any_of("id", ids)
    return Stmt(
        f"SELECT id, pk FROM {p}records WHERE family = {d.mark} AND {sql}", [family, *params]
    )


def next_seq(d: Dialect, p: str, thread_id: str | None) -> Stmt:
    """Two values: the largest message ``seq_no`` of a thread and the thread row's
    high-water mark (-1 for none). The next ``seq_no`` is one more than the larger, so
    a number freed by a delete is never handed out again (the pipeline's watermark
    relies on it)."""
    m = d.mark
    scope = "thread_id IS NULL" if thread_id is None else f"thread_id = {m}"
    return Stmt(
        f"SELECT (SELECT COALESCE(MAX(seq_no), -1) FROM {p}records WHERE family = 'message' "
        f"AND {scope}), COALESCE((SELECT seq_no FROM {p}records WHERE family = 'thread' "
        f"AND id = {m}), -1)",
        ([] if thread_id is None else [thread_id]) + [thread_id],
    )


def set_thread_seq(d: Dialect, p: str, thread_id: str, seq_no: int) -> Stmt:
    """Record ``seq_no`` as the thread's message-number high-water mark."""
    return Stmt(
        f"UPDATE {p}records SET seq_no = {d.mark} WHERE family = 'thread' AND id = {d.mark}",
        (seq_no, thread_id),
    )


def fetch_row(d: Dialect, p: str, family: str, record_id: str) -> Stmt:
    """One record row by family and id, expired or not, locked for the transaction:
    ``pk, record_type, content, event_ts, metadata, created_at, thread_id, user_id,
    agent_id, valid_from, valid_until, expires_at``."""
    window = "valid_from, valid_until" if d.windows else "NULL, NULL"
    return Stmt(
        f"SELECT pk, record_type, content, event_ts, metadata, created_at, thread_id, "
        f"user_id, agent_id, {window}, expires_at FROM {p}records WHERE family = {d.mark} "
        f"AND id = {d.mark}{d.lock_row}",
        (family, record_id),
    )


def chunk_texts(d: Dialect, p: str, key: Any) -> Stmt:
    """A record's search-row texts, in order."""
    return Stmt(f"SELECT text FROM {p}chunks WHERE record_pk = {d.mark} ORDER BY seq", (key,))


def chunk_vector_count(d: Dialect, p: str, key: Any) -> Stmt:
    """How many of a record's search rows hold a vector."""
    return Stmt(
        f"SELECT COUNT(*) FROM {p}chunks WHERE record_pk = {d.mark} AND embedding IS NOT NULL",
        (key,),
    )


def record_expiry(d: Dialect, p: str, key: Any) -> Stmt:
    """A record's ``expires_at``, ``valid_from`` and ``valid_until`` (copied to the
    search rows it gets)."""
    window = "valid_from, valid_until" if d.windows else "NULL, NULL"
    return Stmt(f"SELECT expires_at, {window} FROM {p}records WHERE pk = {d.mark}", (key,))


def delete_chunks_of(d: Dialect, p: str, key: Any) -> Stmt:
    """Delete a record's search rows."""
    return Stmt(f"DELETE FROM {p}chunks WHERE record_pk = {d.mark}", (key,))


def update_record(d: Dialect, p: str, key: Any, fields: dict[str, Any]) -> list[Stmt]:
    """Set ``fields`` (among ``content``, ``metadata`` JSON text, ``timestamp``,
    ``expires_at``, ``valid_from``, ``valid_until``: aware datetimes or None) of a
    record by key; a new expiry or window is copied to its search rows.

    Raises:
        ValueError: for a field outside that set.
    """
    unknown = set(fields) - set(_UPDATABLE)
    if unknown:
        raise InvalidArgumentError(f"cannot update record fields {sorted(unknown)}")
    values = {_UPDATABLE[k]: (epoch(v) if k in _COPIED else v) for k, v in fields.items()}
    sets = ", ".join(f"{col} = {d.mark}" for col in values)
    out = [Stmt(f"UPDATE {p}records SET {sets} WHERE pk = {d.mark}", [*values.values(), key])]
    copied = {col: v for col, v in values.items() if col in _COPIED}
    if copied:
        chunk_sets = ", ".join(f"{col} = {d.mark}" for col in copied)
        out.append(
            Stmt(
                f"UPDATE {p}chunks SET {chunk_sets} WHERE record_pk = {d.mark}",
                [*copied.values(), key],
            )
        )
    return out


def delete_record(
    d: Dialect,
    p: str,
    family: str,
    record_id: str,
    record_type: str | None,
    thread_id: Maybe[str],
) -> Stmt:
    """Delete one record (its search rows cascade); ``record_type`` and ``thread_id``
    further constrain the match."""
    where, params = record_match(d, family, record_id, record_type, thread_id)
    return Stmt(f"DELETE FROM {p}records WHERE {where}", params)


def record_match(
    d: Dialect, family: str, record_id: str, record_type: str | None, thread_id: Maybe[str]
) -> tuple[str, list[Any]]:
    """The condition on ``records`` columns selecting the record ``delete_record``
    deletes, and its parameters."""
    m = d.mark
    return _constrained(
        d, f"family = {m} AND id = {m}", [family, record_id], record_type, thread_id
    )


def delete_records(
    d: Dialect,
    p: str,
    family: str,
    record_ids: Sequence[str],
    record_type: str | None,
    thread_id: Maybe[str],
) -> Stmt:
    """Delete the records among ``record_ids`` (one ``batches`` slice) in one
    statement (their search rows cascade); ``record_type`` and ``thread_id`` as in
    ``delete_record``."""
    where, params = records_match(d, family, record_ids, record_type, thread_id)
    return Stmt(f"DELETE FROM {p}records WHERE {where}", params)


def records_match(
    d: Dialect,
    family: str,
    record_ids: Sequence[str],
    record_type: str | None,
    thread_id: Maybe[str],
) -> tuple[str, list[Any]]:
    """``record_match`` for several ids (one ``batches`` slice)."""
    ids_sql, ids_params = d.any_of("id", record_ids)
    return _constrained(
        d, f"family = {d.mark} AND {ids_sql}", [family, *ids_params], record_type, thread_id
    )


def _constrained(
    d: Dialect, sql: str, params: list[Any], record_type: str | None, thread_id: Maybe[str]
) -> tuple[str, list[Any]]:
    """``sql``/``params`` further constrained by record type and thread (the optional
    conditions of ``record_match`` and ``records_match``)."""
    if record_type is not None:
        sql += f" AND record_type = {d.mark}"
        params.append(record_type)
    if thread_id is not NOT_SET:
        sql += f" AND thread_id = {d.mark}"
        params.append(thread_id)
    return sql, params


def delete_thread(d: Dialect, p: str, thread_id: str) -> tuple[Stmt, Stmt]:
    """Delete a thread row (its rowcount says whether it existed), then its messages
    and memories (``thread_contents``)."""
    where, params = thread_contents(d, thread_id)
    return (
        Stmt(f"DELETE FROM {p}records WHERE family = 'thread' AND id = {d.mark}", (thread_id,)),
        Stmt(f"DELETE FROM {p}records WHERE {where}", params),
    )


def thread_contents(d: Dialect, thread_id: str) -> tuple[str, list[Any]]:
    """The condition on ``records`` columns selecting a thread's messages and
    memories, and its parameters."""
    return f"family IN ('message', 'memory') AND thread_id = {d.mark}", [thread_id]


def _scope_column(column: str) -> str:
    if column not in ("user_id", "agent_id"):
        raise InvalidArgumentError(f"unknown scope column {column!r}")
    return column


def actor_threads(d: Dialect, p: str, column: str, actor_id: str) -> Stmt:
    """The ids of the threads whose ``column`` (``user_id``/``agent_id``) is ``actor_id``.

    Raises:
        ValueError: for another column.
    """
    return Stmt(
        f"SELECT id FROM {p}records WHERE family = 'thread' AND {_scope_column(column)} = {d.mark}",
        (actor_id,),
    )


def delete_actor_rows(d: Dialect, p: str, column: str, actor_id: str) -> Stmt:
    """Delete the messages and memories scoped to an actor (``column`` as
    ``actor_threads``)."""
    where, params = actor_rows(d, column, actor_id)
    return Stmt(f"DELETE FROM {p}records WHERE {where}", params)


def actor_rows(d: Dialect, column: str, actor_id: str) -> tuple[str, list[Any]]:
    """The condition on ``records`` columns selecting the messages and memories
    scoped to an actor, and its parameters."""
    return f"family IN ('message', 'memory') AND {_scope_column(column)} = {d.mark}", [actor_id]


def insert_thread(d: Dialect, p: str, row: ThreadRow) -> Stmt:
    """Insert a thread row; metadata, config and state are stored as JSON text."""
    metadata = json.dumps(row.metadata, ensure_ascii=False) if row.metadata is not None else None
    return Stmt(
        f"INSERT INTO {p}records (family, id, record_type, user_id, agent_id, metadata, "
        f"created_at, config, state) VALUES ('thread', {d.mark}, 'thread', {d.marks(6)})",
        (
            row.thread_id,
            row.user_id,
            row.agent_id,
            metadata,
            row.created_at,
            json.dumps(row.config),
            json.dumps(row.state),
        ),
    )


def thread_state(d: Dialect, p: str, thread_id: str) -> Stmt:
    """A thread's state (JSON text), the row locked for the transaction."""
    return Stmt(
        f"SELECT state FROM {p}records WHERE family = 'thread' AND id = {d.mark}{d.lock_row}",
        (thread_id,),
    )


def update_thread(
    d: Dialect,
    p: str,
    thread_id: str,
    config: Maybe[dict[str, Any]],
    state: Maybe[dict[str, Any]],
) -> Stmt | None:
    """Set a thread's config and/or state (None when neither is given)."""
    sets, params = [], []
    for column, value in (("config", config), ("state", state)):
        if value is not NOT_SET:
            sets.append(f"{column} = {d.mark}")
            params.append(json.dumps(value))
    if not sets:
        return None
    return Stmt(
        f"UPDATE {p}records SET {', '.join(sets)} WHERE family = 'thread' AND id = {d.mark}",
        [*params, thread_id],
    )


def purge(d: Dialect, p: str, now: datetime) -> Stmt:
    """Delete the records expired at ``now`` (their search rows cascade)."""
    where, params = expired(d, now)
    return Stmt(f"DELETE FROM {p}records WHERE {where}", params)


def expired(d: Dialect, now: datetime) -> tuple[str, list[Any]]:
    """The condition on ``records`` columns selecting the records expired at ``now``,
    and its parameters."""
    return f"expires_at IS NOT NULL AND expires_at <= {d.mark}", [now.timestamp()]


def upsert_meta(d: Dialect, p: str, key: str, value: str) -> Stmt:
    """Insert or replace one ``oam_meta`` row."""
    return Stmt(
        f"INSERT INTO {p}oam_meta (key, value) VALUES ({d.marks(2)}) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
