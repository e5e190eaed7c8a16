"""DML and queries of the Oracle store, as ``Stmt`` builders (no I/O).

Rows live in one table per family (``THREADS``, ``ACTOR_PROFILES``, ``MESSAGES``,
``MEMORIES``); search rows in ``RECORD_CHUNKS`` point at them by
``(record_family, record_pk)``. A record key handed to ``base.py`` is the tuple
``(family, pk)``. Scope, type, expiry and metadata filters are part of every ranking
query, before ``FETCH FIRST`` (docs/oracle.md#filters-in-sql). Times are naive UTC
``TIMESTAMP(6)`` binds; the store clock supplies ``:now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import MESSAGE, PROFILE_TYPES, THREAD
from oam_core.checks import Vector
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import Predicate
from oam_core.store.oracle import windows
from oam_core.store.oracle.filter import OracleFilterCompiler
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.stmt import BindType, Stmt
from oam_core.store.text import WRITTEN_WORD, query_terms

IN_LIST = 500
"""Most ids per ``IN (...)`` list (Oracle allows 1000 expressions)."""
MAX_TEXT_TERMS = 64
"""Most terms in one Oracle Text query."""

_RECORD_COLUMNS = (
    "r.pk, r.id, r.record_type, r.content, r.content_set, r.role, r.seq_no, r.thread_id, "
    "r.user_id, r.agent_id, r.event_ts, r.event_ts_set, "
    "JSON_SERIALIZE(r.metadata RETURNING CLOB) AS metadata, r.created_at, r.expires_at"
)
THREAD_AS_RECORD = (
    "r.pk, r.id, 'thread' AS record_type, NULL AS content, 0 AS content_set, NULL AS role, "
    "NULL AS seq_no, NULL AS thread_id, r.user_id, r.agent_id, NULL AS event_ts, "
    "0 AS event_ts_set, JSON_SERIALIZE(r.metadata RETURNING CLOB) AS metadata, r.created_at, "
    "NULL AS expires_at, NULL AS valid_from, NULL AS valid_until"
)
THREAD_COLUMNS = (
    "r.id, r.user_id, r.agent_id, JSON_SERIALIZE(r.metadata RETURNING CLOB) AS metadata, "
    "JSON_SERIALIZE(r.config RETURNING CLOB) AS config, "
    "JSON_SERIALIZE(r.state RETURNING CLOB) AS state, r.created_at"
)
_RECORD_INSERT_COLS = (
    "id",
    "record_type",
    "content",
    "content_set",
    "role",
    "seq_no",
    "thread_id",
    "user_id",
    "agent_id",
    "event_ts",
    "event_ts_set",
    "metadata",
    "created_at",
    "expires_at",
)
RECORD_TYPES: dict[str, BindType] = {
    "content": "CLOB",
    "metadata": "JSON",
    "created_at": "TIMESTAMP",
    "expires_at": "TIMESTAMP",
    **windows.TYPES,
}
_CHUNK_INSERT_COLS = (
    "record_family",
    "record_pk",
    "record_type",
    "seq",
    "chunk_text",
    "thread_id",
    "user_id",
    "agent_id",
    "expires_at",
)


def record_columns(n: Names) -> str:
    """The columns of a record row (``rows.record_from_row``), alias ``r``: the
    stored ones, the window last (NULL on a schema without it)."""
    return f"{_RECORD_COLUMNS}, {windows.select_columns(n)}"


def naive_utc(dt: datetime) -> datetime:
    """An aware datetime as naive UTC, the form stored in ``TIMESTAMP(6)`` columns
    (python-oracledb ignores ``tzinfo`` on bind; docs/oracle.md#bind-types)."""
    return dt.astimezone(timezone.utc).replace(tzinfo=None)


def _profile_filter(family: str, binds: dict[str, Any], alias: str = "") -> str:
    if family in PROFILE_TYPES:
        binds["family_type"] = family
        return f" AND {alias}record_type = :family_type"
    return ""


# -- writes -------------------------------------------------------------------------


def insert_records(n: Names, family: str, rows: Sequence[dict[str, Any]]) -> Stmt:
    """``executemany`` INSERT of record rows into the family's table (the window
    columns only on a schema with them)."""
    names = [*_RECORD_INSERT_COLS, *(windows.COLUMNS if n.windows else ())]
    cols = ", ".join(names)
    values = ", ".join(f":{c}" for c in names)
    return Stmt(
        f"INSERT INTO {n.record_table(family)} ({cols}) VALUES ({values})",
        types={c: t for c, t in RECORD_TYPES.items() if c in names},
        rows=rows,
    )


def insert_chunks(n: Names, rows: Sequence[dict[str, Any]], with_vectors: bool) -> Stmt:
    """``executemany`` INSERT of search rows; ``embedding`` binds ``array('f')`` as VECTOR."""
    cols = list(_CHUNK_INSERT_COLS) + (list(windows.COLUMNS) if n.windows else [])
    cols += ["embedding"] if with_vectors else []
    types: dict[str, BindType] = {"chunk_text": "CLOB", "expires_at": "TIMESTAMP"}
    if n.windows:
        types.update(windows.TYPES)
    if with_vectors:
        types["embedding"] = "VECTOR"
    return Stmt(
        f"INSERT INTO {n.chunks} ({', '.join(cols)}) VALUES ({', '.join(':' + c for c in cols)})",
        types=types,
        rows=rows,
    )


def lock_messages(n: Names) -> Stmt:
    """Serialise message inserts for the rest of the transaction, so per-thread
    ``seq_no`` values never collide between sessions."""
    return Stmt(f"LOCK TABLE {n.messages} IN SHARE ROW EXCLUSIVE MODE")


def next_seq(n: Names, thread_id: str | None) -> Stmt:
    """The next per-thread message sequence number: after every message the thread
    holds and after its row's high-water mark, so a number freed by a delete is never
    handed out again."""
    if thread_id is None:
        return Stmt(
            f"SELECT COALESCE(MAX(seq_no), -1) + 1 FROM {n.messages} WHERE thread_id IS NULL"
        )
    return Stmt(
        f"SELECT GREATEST(COALESCE((SELECT MAX(seq_no) FROM {n.messages} "
        "WHERE thread_id = :thread_id), -1), "
        f"COALESCE((SELECT MAX(seq_no) FROM {n.threads} WHERE id = :thread_id), -1)) + 1 "
        "FROM dual",
        {"thread_id": thread_id},
    )


def set_thread_seq(n: Names, thread_id: str, seq_no: int) -> Stmt:
    """Record ``seq_no`` as the thread's message-number high-water mark."""
    return Stmt(
        f"UPDATE {n.threads} SET seq_no = :seq_no WHERE id = :thread_id",
        {"seq_no": seq_no, "thread_id": thread_id},
    )


def ids_to_pks(n: Names, family: str, ids: Sequence[str]) -> Stmt:
    """``(id, pk)`` of the given ids (at most ``IN_LIST``) in the family's table."""
    binds: dict[str, Any] = {f"i{j}": rid for j, rid in enumerate(ids)}
    placeholders = ", ".join(f":i{j}" for j in range(len(ids)))
    extra = _profile_filter(family, binds)
    return Stmt(
        f"SELECT id, pk FROM {n.record_table(family)} WHERE id IN ({placeholders}){extra}", binds
    )


def fetch_row(n: Names, family: str, record_id: str) -> Stmt:
    """One record row by id with its window, locked for the rest of the transaction
    (``SELECT ... FOR UPDATE``: a check of it holds for the writes that follow)."""
    binds: dict[str, Any] = {"id": record_id}
    extra = _profile_filter(family, binds, "r.")
    return Stmt(
        f"SELECT r.pk, r.record_type, r.content, r.content_set, r.event_ts, r.event_ts_set, "
        f"JSON_SERIALIZE(r.metadata RETURNING CLOB) AS metadata, r.created_at, r.thread_id, "
        f"r.user_id, r.agent_id, r.expires_at, {windows.select_columns(n)} "
        f"FROM {n.record_table(family)} r "
        f"WHERE r.id = :id{extra} FOR UPDATE",
        binds,
    )


def chunk_texts(n: Names, family: str, pk: int) -> Stmt:
    """A record's search-row texts in order."""
    return Stmt(
        f"SELECT chunk_text FROM {n.chunks} WHERE record_family = :family AND record_pk = :pk "
        "ORDER BY seq",
        {"family": family, "pk": pk},
    )


def chunk_vector_count(n: Names, family: str, pk: int) -> Stmt:
    """How many of a record's search rows hold a local vector."""
    return Stmt(
        f"SELECT COUNT(*) FROM {n.chunks} WHERE record_family = :family AND record_pk = :pk "
        "AND embedding IS NOT NULL",
        {"family": family, "pk": pk},
    )


def record_expiry(n: Names, family: str, pk: int) -> Stmt:
    """A record's ``expires_at`` (copied to the search rows it gets)."""
    return Stmt(f"SELECT expires_at FROM {n.record_table(family)} WHERE pk = :pk", {"pk": pk})


def delete_chunks_of(n: Names, family: str, pk: int) -> Stmt:
    """Delete one record's search rows."""
    return Stmt(
        f"DELETE FROM {n.chunks} WHERE record_family = :family AND record_pk = :pk",
        {"family": family, "pk": pk},
    )


def update_record(n: Names, family: str, pk: int, values: dict[str, Any]) -> Stmt:
    """UPDATE of the given record columns (names from a fixed set; the window columns
    only on a schema with them) by pk."""
    allowed = {"content", "content_set", "metadata", "event_ts", "event_ts_set", "expires_at"}
    if n.windows:
        allowed.update(windows.COLUMNS)
    if not set(values) <= allowed:
        raise InvalidArgumentError(f"cannot update columns {sorted(set(values) - allowed)}")
    sets = ", ".join(f"{c} = :{c}" for c in values)
    types = {c: t for c, t in RECORD_TYPES.items() if c in values}
    return Stmt(
        f"UPDATE {n.record_table(family)} SET {sets} WHERE pk = :pk", {**values, "pk": pk}, types
    )


def update_chunk_expiry(n: Names, family: str, pk: int, expires_at: Any) -> Stmt:
    """Copy a record's new expiry to its search rows."""
    return Stmt(
        f"UPDATE {n.chunks} SET expires_at = :expires_at "
        "WHERE record_family = :family AND record_pk = :pk",
        {"expires_at": expires_at, "family": family, "pk": pk},
        {"expires_at": "TIMESTAMP"},
    )


def find_pk(n: Names, family: str, record_id: str, record_type: str | None, thread_id: Any) -> Stmt:
    """The pk of the row a delete targets (locked), further constrained by type/thread."""
    sql = f"SELECT pk FROM {n.record_table(family)} WHERE id = :id"
    return _locked_match(sql, {"id": record_id}, record_type, thread_id)


def find_pks(
    n: Names, family: str, ids: Sequence[str], record_type: str | None, thread_id: Any
) -> Stmt:
    """``find_pk`` for several ids (at most ``IN_LIST``): the pks of the rows a
    ``delete_records`` targets, locked."""
    binds: dict[str, Any] = {f"i{j}": rid for j, rid in enumerate(ids)}
    placeholders = ", ".join(f":i{j}" for j in range(len(ids)))
    sql = f"SELECT pk FROM {n.record_table(family)} WHERE id IN ({placeholders})"
    return _locked_match(sql, binds, record_type, thread_id)


def _locked_match(sql: str, binds: dict[str, Any], record_type: str | None, thread_id: Any) -> Stmt:
    """``sql`` further constrained by record type and thread, rows locked (the common
    end of ``find_pk`` and ``find_pks``)."""
    if record_type is not None:
        sql += " AND record_type = :record_type"
        binds["record_type"] = record_type
    if thread_id is not NOT_SET:
        sql += " AND thread_id = :thread_id"
        binds["thread_id"] = thread_id
    return Stmt(sql + " FOR UPDATE", binds)


def pk_list(pks: Sequence[int], column: str = "pk") -> tuple[str, dict[str, Any]]:
    """``<column> IN (:p0, ...)`` for at most ``IN_LIST`` pks, and its binds."""
    binds = {f"p{j}": pk for j, pk in enumerate(pks)}
    return f"{column} IN ({', '.join(f':p{j}' for j in range(len(pks)))})", binds


def delete_chunks_of_pks(n: Names, family: str, pks: Sequence[int]) -> Stmt:
    """Delete the search rows of several records (at most ``IN_LIST``) of one family."""
    where, binds = pk_list(pks, "record_pk")
    return Stmt(
        f"DELETE FROM {n.chunks} WHERE record_family = :family AND {where}",
        {**binds, "family": family},
    )


def delete_by_pks(n: Names, family: str, pks: Sequence[int]) -> Stmt:
    """Delete record rows by pk (at most ``IN_LIST``)."""
    where, binds = pk_list(pks)
    return Stmt(f"DELETE FROM {n.record_table(family)} WHERE {where}", binds)


def delete_by_pk(n: Names, family: str, pk: int) -> Stmt:
    """Delete one record row by pk."""
    return Stmt(f"DELETE FROM {n.record_table(family)} WHERE pk = :pk", {"pk": pk})


def lock_thread(n: Names, thread_id: str) -> Stmt:
    """Lock a thread row until the transaction ends (no row: nothing is locked)."""
    return Stmt(
        f"SELECT id FROM {n.threads} WHERE id = :thread_id FOR UPDATE", {"thread_id": thread_id}
    )


def delete_thread(n: Names, thread_id: str) -> list[Stmt]:
    """Delete a thread's search rows, messages, memory-like records, then the thread row
    (the last statement's rowcount is the thread count). Run after ``lock_thread``."""
    b = {"thread_id": thread_id}
    return [
        Stmt(
            f"DELETE FROM {n.chunks} WHERE record_family IN ('message', 'memory') "
            "AND thread_id = :thread_id",
            b,
        ),
        Stmt(f"DELETE FROM {n.messages} WHERE thread_id = :thread_id", b),
        Stmt(f"DELETE FROM {n.memories} WHERE thread_id = :thread_id", b),
        Stmt(f"DELETE FROM {n.threads} WHERE id = :thread_id", b),
    ]


def actor_threads(n: Names, column: str, actor_id: str) -> Stmt:
    """Ids of the threads owned by an actor (``column`` is user_id or agent_id)."""
    _check_scope_column(column)
    return Stmt(f"SELECT id FROM {n.threads} WHERE {column} = :actor_id", {"actor_id": actor_id})


def delete_actor_rows(n: Names, column: str, actor_id: str) -> list[Stmt]:
    """Delete every remaining message and memory-like record scoped to an actor, with
    their search rows (profiles' own search rows are not touched)."""
    _check_scope_column(column)
    b = {"actor_id": actor_id}
    return [
        Stmt(
            f"DELETE FROM {n.chunks} WHERE record_family IN ('message', 'memory') "
            f"AND {column} = :actor_id",
            b,
        ),
        Stmt(f"DELETE FROM {n.messages} WHERE {column} = :actor_id", b),
        Stmt(f"DELETE FROM {n.memories} WHERE {column} = :actor_id", b),
    ]


def _check_scope_column(column: str) -> None:
    if column not in ("user_id", "agent_id"):
        raise InvalidArgumentError(f"unknown scope column {column!r}")


def insert_thread(n: Names, binds: dict[str, Any]) -> Stmt:
    """INSERT of a thread row (metadata/config/state bound as JSON)."""
    return Stmt(
        f"INSERT INTO {n.threads} (id, user_id, agent_id, metadata, config, state, created_at) "
        "VALUES (:id, :user_id, :agent_id, :metadata, :config, :state, :created_at)",
        binds,
        {"metadata": "JSON", "config": "JSON", "state": "JSON", "created_at": "TIMESTAMP"},
    )


def thread_state_for_update(n: Names, thread_id: str) -> Stmt:
    """A thread's state, locked for a compare-and-set."""
    return Stmt(
        f"SELECT JSON_SERIALIZE(state RETURNING CLOB) FROM {n.threads} WHERE id = :id FOR UPDATE",
        {"id": thread_id},
    )


def update_thread(n: Names, thread_id: str, values: dict[str, Any]) -> Stmt:
    """UPDATE of a thread's config and/or state (JSON)."""
    if not set(values) <= {"config", "state"}:
        raise InvalidArgumentError(f"cannot update thread columns {sorted(values)}")
    sets = ", ".join(f"{c} = :{c}" for c in values)
    return Stmt(
        f"UPDATE {n.threads} SET {sets} WHERE id = :id",
        {**values, "id": thread_id},
        dict.fromkeys(values, "JSON"),
    )


def purge(n: Names, now: Any) -> list[Stmt]:
    """Delete expired search rows, then expired messages and memory-like records."""
    b = {"now": now}
    t: dict[str, BindType] = {"now": "TIMESTAMP"}
    return [
        Stmt(f"DELETE FROM {n.chunks} WHERE expires_at <= :now", b, t),
        Stmt(f"DELETE FROM {n.messages} WHERE expires_at <= :now", b, t),
        Stmt(f"DELETE FROM {n.memories} WHERE expires_at <= :now", b, t),
    ]


def upsert_meta(n: Names, rows: Sequence[dict[str, str]]) -> Stmt:
    """MERGE of metadata rows ``{"meta_key", "meta_value"}``."""
    return Stmt(
        f"MERGE INTO {n.meta} m USING (SELECT :meta_key AS k, :meta_value AS v FROM dual) s "
        "ON (m.meta_key = s.k) WHEN MATCHED THEN UPDATE SET m.meta_value = s.v "
        "WHEN NOT MATCHED THEN INSERT (meta_key, meta_value) VALUES (s.k, s.v)",
        rows=rows,
    )


def lock_meta(n: Names) -> Stmt:
    """Lock the ``schema_version`` metadata row (every opened schema has one) until
    the transaction ends: writers recording the vector dimension queue on it, and a
    query after the lock sees what the writer before committed (read committed)."""
    return Stmt(
        f"SELECT meta_value FROM {n.meta} WHERE meta_key = :meta_key FOR UPDATE",
        {"meta_key": "schema_version"},
    )


def meta_value(n: Names, key: str) -> Stmt:
    """One metadata value by key (no row: not recorded)."""
    return Stmt(f"SELECT meta_value FROM {n.meta} WHERE meta_key = :meta_key", {"meta_key": key})


def unembedded(n: Names, limit: int | None) -> Stmt:
    """``(family, id)`` of records with a search row that has text but no vector
    (written without an embedder), up to ``limit`` (None: all)."""
    tables = (
        (n.messages, "c.record_family = 'message'"),
        (n.memories, "c.record_family = 'memory'"),
        (n.profiles, "c.record_family IN ('user_profile', 'agent_profile')"),
    )
    union = "\nUNION\n".join(
        f"SELECT c.record_family AS family, r.id AS id, r.pk AS pk FROM {n.chunks} c "
        f"JOIN {table} r ON r.pk = c.record_pk WHERE {family} "
        "AND c.embedding IS NULL AND c.chunk_text IS NOT NULL"
        for table, family in tables
    )
    text = f"SELECT family, id FROM (\n{union}\n) ORDER BY family, pk"
    if limit is None:
        return Stmt(text)
    return Stmt(text + " FETCH FIRST :lim ROWS ONLY", {"lim": limit})


# -- reads --------------------------------------------------------------------------


def _scope_parts(
    pred: Predicate, alias: str, binds: dict[str, Any], *, thread_id_col: str
) -> list[str]:
    parts = []
    for column, value in (
        ("thread_id", pred.thread_id),
        ("user_id", pred.user_id),
        ("agent_id", pred.agent_id),
    ):
        if value is NOT_SET:
            continue
        col = thread_id_col if column == "thread_id" else column
        if value is None:
            parts.append(f"{alias}.{col} IS NULL")
        else:
            parts.append(f"{alias}.{col} = :{column}")
            binds[column] = value
    return parts


def _types_in(types: Sequence[str], alias: str, binds: dict[str, Any]) -> str:
    names = []
    for j, t in enumerate(sorted(types)):
        binds[f"t{j}"] = t
        names.append(f":t{j}")
    return f"{alias}.record_type IN ({', '.join(names)})"


def _meta_condition(
    pred: Predicate,
    binds: dict[str, Any],
    comp: OracleFilterCompiler,
    types: dict[str, BindType],
) -> str | None:
    if pred.metadata is None:
        return "r.metadata IS NULL"
    if pred.metadata is NOT_SET or not pred.metadata:
        return None
    sql = comp.compile("r.metadata", pred.metadata)
    binds.update(comp.binds)
    types.update(comp.types)
    return sql


def list_records(n: Names, pred: Predicate, limit: int | None, now: Any) -> Stmt:
    """The newest ``limit`` visible rows of one record type, newest first; with
    ``pred.valid_at``, only rows valid then (threads have no window: all pass)."""
    (record_type,) = tuple(pred.record_types)
    binds: dict[str, Any] = {}
    types: dict[str, BindType] = {}
    if record_type == THREAD:
        parts = _scope_parts(pred, "r", binds, thread_id_col="id")
        table, cols = n.threads, THREAD_AS_RECORD
    else:
        family = (
            "memory" if record_type not in PROFILE_TYPES and record_type != MESSAGE else record_type
        )
        table, cols = n.record_table(family), record_columns(n)
        binds["record_type"] = record_type
        binds["now"] = now
        types["now"] = "TIMESTAMP"
        parts = [
            "r.record_type = :record_type",
            "(r.expires_at IS NULL OR r.expires_at > :now)",
            *_scope_parts(pred, "r", binds, thread_id_col="thread_id"),
        ]
        windows.add_filter(n, pred.valid_at, "r", parts, binds, types)
    meta = _meta_condition(pred, binds, OracleFilterCompiler(), types)
    if meta:
        parts.append(meta)
    where = " AND ".join(parts) if parts else "1 = 1"
    sql = f"SELECT {cols} FROM {table} r WHERE {where} ORDER BY r.pk DESC"
    if limit is not None:
        sql += " FETCH FIRST :lim ROWS ONLY"
        binds["lim"] = limit
    return Stmt(sql, binds, types)


def get_record(n: Names, family: str, record_id: str, record_type: str | None, now: Any) -> Stmt:
    """One visible record by type and id; ``record_type`` None: of any type of the
    family (a profile family is its own type)."""
    if family == THREAD:
        return Stmt(
            f"SELECT {THREAD_AS_RECORD} FROM {n.threads} r WHERE r.id = :id", {"id": record_id}
        )
    binds: dict[str, Any] = {"id": record_id, "now": now}
    if record_type is None:
        by_type = _profile_filter(family, binds, "r.")
    else:
        by_type = " AND r.record_type = :record_type"
        binds["record_type"] = record_type
    return Stmt(
        f"SELECT {record_columns(n)} FROM {n.record_table(family)} r WHERE r.id = :id"
        f"{by_type} AND (r.expires_at IS NULL OR r.expires_at > :now)",
        binds,
        {"now": "TIMESTAMP"},
    )


def load_records(n: Names, family: str, pks: Sequence[int]) -> Stmt:
    """Record rows by pk (at most ``IN_LIST``)."""
    binds = {f"p{j}": pk for j, pk in enumerate(pks)}
    placeholders = ", ".join(f":p{j}" for j in range(len(pks)))
    return Stmt(
        f"SELECT {record_columns(n)} FROM {n.record_table(family)} r "
        f"WHERE r.pk IN ({placeholders})",
        binds,
    )


def _visible_messages(n: Names) -> str:
    return (
        f"FROM {n.messages} r WHERE r.thread_id = :thread_id "
        "AND (r.expires_at IS NULL OR r.expires_at > :now)"
    )


def count_messages(n: Names, thread_id: str, now: Any) -> Stmt:
    """How many visible messages a thread holds."""
    return Stmt(
        f"SELECT COUNT(*) {_visible_messages(n)}",
        {"thread_id": thread_id, "now": now},
        {"now": "TIMESTAMP"},
    )


def thread_messages(n: Names, thread_id: str, offset: int, limit: int | None, now: Any) -> Stmt:
    """A window of a thread's visible messages in insertion order."""
    binds: dict[str, Any] = {"thread_id": thread_id, "now": now, "off": offset}
    sql = (
        f"SELECT {record_columns(n)} {_visible_messages(n)} "
        "ORDER BY r.seq_no, r.pk OFFSET :off ROWS"
    )
    if limit is not None:
        sql += " FETCH NEXT :lim ROWS ONLY"
        binds["lim"] = limit
    return Stmt(sql, binds, {"now": "TIMESTAMP"})


def thread_messages_by_seq(
    n: Names,
    thread_id: str,
    after: int | None,
    through: int | None,
    limit: int | None,
    newest: bool,
    now: Any,
) -> Stmt:
    """A thread's visible messages with ``after < seq_no <= through`` (None: no
    bound), in insertion order (``newest``: descending, for the last ``limit``)."""
    binds: dict[str, Any] = {"thread_id": thread_id, "now": now}
    sql = f"SELECT {record_columns(n)} {_visible_messages(n)}"
    if after is not None:
        sql += " AND r.seq_no > :after"
        binds["after"] = after
    if through is not None:
        sql += " AND r.seq_no <= :through"
        binds["through"] = through
    order = "DESC" if newest else "ASC"
    sql += f" ORDER BY r.seq_no {order}, r.pk {order}"
    if limit is not None:
        sql += " FETCH FIRST :lim ROWS ONLY"
        binds["lim"] = limit
    return Stmt(sql, binds, {"now": "TIMESTAMP"})


def get_thread(n: Names, thread_id: str) -> Stmt:
    """A thread row by id."""
    return Stmt(f"SELECT {THREAD_COLUMNS} FROM {n.threads} r WHERE r.id = :id", {"id": thread_id})


def list_threads(n: Names, user_id: Any, agent_id: Any) -> Stmt:
    """Thread rows oldest first, optionally by user and agent (None = NULL)."""
    binds: dict[str, Any] = {}
    parts = []
    for column, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is None:
            parts.append(f"r.{column} IS NULL")
        elif value is not NOT_SET:
            parts.append(f"r.{column} = :{column}")
            binds[column] = value
    where = f" WHERE {' AND '.join(parts)}" if parts else ""
    return Stmt(f"SELECT {THREAD_COLUMNS} FROM {n.threads} r{where} ORDER BY r.pk", binds)


def chunk_where(
    n: Names,
    pred: Predicate,
    binds: dict[str, Any],
    bind_types: dict[str, BindType] | None = None,
) -> str:
    """Condition restricting search rows ``c`` to ``pred`` (type, expiry, scope,
    validity at ``pred.valid_at``, metadata); its binds go to ``binds``, the types it
    declares to ``bind_types``. Every ranking statement puts it before its top-k cut."""
    parts = [
        _types_in(sorted(pred.record_types), "c", binds),
        "(c.expires_at IS NULL OR c.expires_at > :now)",
        *_scope_parts(pred, "c", binds, thread_id_col="thread_id"),
    ]
    binds["now"] = naive_utc(pred.now)
    windows.add_filter(n, pred.valid_at, "c", parts, binds, bind_types)
    comp = OracleFilterCompiler()
    meta = _meta_condition(pred, binds, comp, {} if bind_types is None else bind_types)
    if meta:
        fams = []
        types = pred.record_types
        if MESSAGE in types:
            fams.append(("c.record_family = 'message'", n.messages))
        if types - PROFILE_TYPES - {MESSAGE}:
            fams.append(("c.record_family = 'memory'", n.memories))
        if types & PROFILE_TYPES:
            fams.append(("c.record_family IN ('user_profile', 'agent_profile')", n.profiles))
        ors = [
            f"({cond} AND EXISTS (SELECT 1 FROM {table} r WHERE r.pk = c.record_pk AND {meta}))"
            for cond, table in fams
        ]
        parts.append("(" + " OR ".join(ors) + ")")
    return " AND ".join(parts)


def rank_vector(n: Names, query: Any, k: int, pred: Predicate) -> Stmt:
    """Records nearest to ``query`` (``array('f')``) by the cosine distance of their best
    chunk; exact search, filters before ``FETCH FIRST``."""
    binds: dict[str, Any] = {}
    types: dict[str, BindType] = {"qv": "VECTOR", "now": "TIMESTAMP"}
    where = chunk_where(n, pred, binds, types)
    binds.update(qv=query, k=k)
    return Stmt(
        "SELECT c.record_family, c.record_pk, "
        "MIN(VECTOR_DISTANCE(c.embedding, :qv, COSINE)) AS dist "
        f"FROM {n.chunks} c WHERE c.embedding IS NOT NULL AND {where} "
        "GROUP BY c.record_family, c.record_pk "
        "ORDER BY dist, c.record_family, c.record_pk FETCH FIRST :k ROWS ONLY",
        binds,
        types,
    )


def text_query(terms: Sequence[str]) -> str | None:
    """An Oracle Text query matching any of ``terms``, each escaped with braces and
    joined by ACCUM (ranked by terms matched); None when no term is left.

    Terms are words (letters, digits and the combining marks inside a word,
    ``store/text.query_terms``); any other term is left out, so no brace or operator
    character can get in (docs/oracle.md#keyword-queries).
    """
    clean = [t for t in terms if WRITTEN_WORD.fullmatch(t)][:MAX_TEXT_TERMS]
    if not clean:
        return None
    return " ACCUM ".join(f"{{{t}}}" for t in clean)


def rank_keyword(n: Names, query: str, k: int, pred: Predicate) -> Stmt:
    """Records whose search rows match an Oracle Text query, best ``SCORE`` first."""
    binds: dict[str, Any] = {}
    types: dict[str, BindType] = {"now": "TIMESTAMP"}
    where = chunk_where(n, pred, binds, types)
    binds.update(q=query, k=k)
    return Stmt(
        "SELECT record_family, record_pk, MAX(score) AS score FROM ("
        "SELECT c.record_family, c.record_pk, SCORE(1) AS score "
        f"FROM {n.chunks} c WHERE CONTAINS(c.chunk_text, :q, 1) > 0 AND {where}"
        ") GROUP BY record_family, record_pk "
        "ORDER BY score DESC, record_family, record_pk FETCH FIRST :k ROWS ONLY",
        binds,
        types,
    )


def hybrid_request(n: Names, query: str | None, query_vector: Vector | None) -> dict[str, Any]:
    """The ``DBMS_HYBRID_VECTOR.SEARCH`` request over the managed hybrid index for a
    text query (its vector and its terms, fused by RRF) or a query vector (without
    ``return``, which ``hybrid_search`` of the back end adds)."""
    request: dict[str, Any] = {"hybrid_index_name": n.hybrid_index}
    if query_vector is not None:
        vec = "[" + ",".join(repr(float(x)) for x in query_vector) + "]"
        request["vector"] = {"search_vector": vec}
        return request
    assert query is not None
    request["vector"] = {"search_text": query}
    text = text_query(query_terms(query))
    if text is not None:
        request["text"] = {"contains": text}
        request["search_fusion"] = "UNION"
        request["search_scorer"] = "RRF"
    return request


def hybrid_search(request_json: str) -> Stmt:
    """Call ``DBMS_HYBRID_VECTOR.SEARCH``; returns the JSON result array as a CLOB."""
    return Stmt(
        "SELECT DBMS_HYBRID_VECTOR.SEARCH(JSON(:req)) FROM dual",
        {"req": request_json},
        {"req": "CLOB"},
    )


def hybrid_hits(n: Names, hits_json: str, pred: Predicate) -> Stmt:
    """Map hybrid-search hits (``[{"rowid", "score"}]``) back to search rows that pass
    ``pred``; each row yields ``(family, pk, score)``."""
    binds: dict[str, Any] = {"hits": hits_json}
    types: dict[str, BindType] = {"hits": "CLOB", "now": "TIMESTAMP"}
    where = chunk_where(n, pred, binds, types)
    return Stmt(
        "SELECT c.record_family, c.record_pk, h.score FROM JSON_TABLE(:hits, '$[*]' "
        "COLUMNS (rid VARCHAR2(64) PATH '$.rowid', score NUMBER PATH '$.score')) h "
        f"JOIN {n.chunks} c ON c.ROWID = CHARTOROWID(h.rid) WHERE {where}",
        binds,
        types,
    )


_USERENV_KEYS = ("DB_UNIQUE_NAME", "DB_DOMAIN", "CON_NAME", "SERVER_HOST", "INSTANCE_NAME")


def database_identity() -> Stmt:
    """What names the database and schema a session works in: the database's unique
    name and domain, the pluggable database (container), the server host and
    instance, and the current schema, from ``SYS_CONTEXT('USERENV', ...)`` (no
    privilege needed). Two containers started from one image share the database
    names but not, unless told, the host name."""
    cols = ", ".join(f"SYS_CONTEXT('USERENV', '{key}')" for key in _USERENV_KEYS)
    return Stmt(f"SELECT {cols}, SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA') FROM dual", {})
