"""The tables the SQL back ends share (docs/store.md#schema), in each one's column types.

``oam_meta`` holds key/value rows (``schema_version``, ``vector_dim``,
``search_strategy``, ``retention``, the embedder identity); ``records`` every record
family, ids unique per family; ``chunks`` the search rows, with the scope, expiry and
validity window copied from their record so the ranking queries filter without a
join. Each back end
adds its own columns (vectors, full-text) and indexes in ``sqlite/schema.py`` and
``postgres/schema.py``. ``{p}`` is the ``memory_store_id`` prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oam_core.errors import InvalidArgumentError, SchemaError

_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,15}")


@dataclass(frozen=True)
class ColumnTypes:
    """A back end's column types for the shared tables.

    Attributes:
        pk: The generated primary key (``INTEGER PRIMARY KEY AUTOINCREMENT``, an
            identity column).
        key: An integer that can hold a primary key (references, ``seq_no``).
        real: A double-precision float (Unix-second expiry times and validity
            windows).
    """

    pk: str
    key: str
    real: str


def table_prefix(memory_store_id: str | None) -> str:
    """Return the object-name prefix for ``memory_store_id`` (docs/store.md#schema).

    Raises:
        InvalidArgumentError: (a ValueError) unless the id starts with a letter, holds
            only letters, digits and underscores, and has at most 16 characters.
    """
    if memory_store_id is None:
        return ""
    if not isinstance(memory_store_id, str) or not _ID.fullmatch(memory_store_id):
        raise InvalidArgumentError(
            "memory_store_id must start with a letter, hold only letters, digits and "
            f"underscores, and have at most 16 characters; got {memory_store_id!r}"
        )
    return memory_store_id + "_"


def newer_schema(where: str, version: int, supported: int) -> SchemaError:
    """The error for a store written by a newer release (``version > supported``)."""
    return SchemaError(
        f"{where} holds oam schema version {version}; this oam reads up to "
        f"{supported}. Upgrade oam."
    )


def meta_table(p: str) -> str:
    """``oam_meta``: one row per configuration key."""
    return f"CREATE TABLE IF NOT EXISTS {p}oam_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def records_table(p: str, t: ColumnTypes, extra: Sequence[str] = ()) -> str:
    """``records``; ``extra`` column definitions follow ``metadata`` (a generated
    ``jsonb`` copy of it, say)."""
    columns = [
        f"pk {t.pk}",
        "family TEXT NOT NULL",
        "id TEXT NOT NULL",
        "record_type TEXT NOT NULL",
        "content TEXT",
        "role TEXT",
        f"seq_no {t.key}",
        "thread_id TEXT",
        "user_id TEXT",
        "agent_id TEXT",
        "event_ts TEXT",
        "metadata TEXT",
        *extra,
        "created_at TEXT NOT NULL",
        f"expires_at {t.real}",
        *window_columns(t),
        "config TEXT",
        "state TEXT",
        "UNIQUE (family, id)",
    ]
    return f"CREATE TABLE IF NOT EXISTS {p}records (\n    " + ",\n    ".join(columns) + ")"


SPARSE_RECORD_INDEXES = ("records_agent", "records_expiry")
"""The records indexes that ``record_indexes(partial=True)`` limits to rows whose
first column is not NULL."""


THREAD_INDEX_WHERE = "thread_id IS NOT NULL OR family = 'message'"
"""The rows ``record_indexes(sparse_thread=True)`` keeps in the thread index."""


def record_indexes(p: str, *, partial: bool = False, sparse_thread: bool = False) -> list[str]:
    """The records indexes: a thread's messages in order, scope columns, type, expiry.

    With ``partial``, the agent and expiry indexes (``SPARSE_RECORD_INDEXES``) hold
    only rows where that column is set: most records of a store have no agent and no
    expiry, and a write then skips those indexes. A query comparing the column
    (``agent_id = ?``, ``expires_at <= ?``) still uses them; one asking for ``IS
    NULL`` reads the type index instead.

    With ``sparse_thread``, the thread index holds the rows that have a thread and
    every message (``THREAD_INDEX_WHERE``): memories without a thread, most of a
    store, skip it, and the next message number of thread-less messages is still
    read off it (``family = 'message' AND thread_id IS NULL`` implies the index's
    condition). Without it the index is whole.
    """

    def sparse(column: str) -> str:
        return f" WHERE {column} IS NOT NULL" if partial else ""

    thread_where = f" WHERE {THREAD_INDEX_WHERE}" if sparse_thread else ""
    return [
        f"CREATE INDEX IF NOT EXISTS {p}records_thread ON {p}records (thread_id, family, seq_no)"
        + thread_where,
        f"CREATE INDEX IF NOT EXISTS {p}records_user ON {p}records (user_id)",
        f"CREATE INDEX IF NOT EXISTS {p}records_agent ON {p}records (agent_id)"
        + sparse("agent_id"),
        f"CREATE INDEX IF NOT EXISTS {p}records_type ON {p}records (record_type, pk)",
        f"CREATE INDEX IF NOT EXISTS {p}records_expiry ON {p}records (expires_at)"
        + sparse("expires_at"),
    ]


def chunks_table(p: str, t: ColumnTypes, vector: Sequence[str], extra: Sequence[str] = ()) -> str:
    """``chunks``, deleted with their record; ``vector`` column definitions follow
    ``text``, ``extra`` ones (full-text columns) come last."""
    columns = [
        f"pk {t.pk}",
        f"record_pk {t.key} NOT NULL REFERENCES {p}records (pk) ON DELETE CASCADE",
        "record_type TEXT NOT NULL",
        "seq INTEGER NOT NULL",
        "text TEXT",
        *vector,
        "thread_id TEXT",
        "user_id TEXT",
        "agent_id TEXT",
        f"expires_at {t.real}",
        *window_columns(t),
        *extra,
    ]
    return f"CREATE TABLE IF NOT EXISTS {p}chunks (\n    " + ",\n    ".join(columns) + ")"


WINDOW_COLUMNS = ("valid_from", "valid_until")
"""The validity window of a memory-like record (Unix seconds, NULL = open), on
``records`` and copied to its ``chunks`` (docs/store.md#validity-windows)."""


def window_columns(t: ColumnTypes) -> list[str]:
    """The definitions of ``WINDOW_COLUMNS`` in ``t``'s float type."""
    return [f"{name} {t.real}" for name in WINDOW_COLUMNS]


def add_window_columns(p: str, t: ColumnTypes, *, if_not_exists: bool = False) -> list[str]:
    """``ALTER TABLE`` statements adding ``WINDOW_COLUMNS`` to ``records`` and ``chunks``
    (``if_not_exists``: PostgreSQL's ``ADD COLUMN IF NOT EXISTS``)."""
    guard = " IF NOT EXISTS" if if_not_exists else ""
    return [
        f"ALTER TABLE {p}{table} ADD COLUMN{guard} {column}"
        for table in ("records", "chunks")
        for column in window_columns(t)
    ]


def backfill_superseded(p: str, reserved: Callable[[str, str], str], epoch: str) -> list[str]:
    """Statements ending the window of every memory already marked superseded
    (reserved ``status`` ``"invalid"``) at its successor's ``created_at`` (the memory
    its reserved ``superseded_by`` names; none found: the window stays open), then
    copying the windows to the search rows.

    Args:
        p: The object prefix.
        reserved: ``reserved(table, key)``: SQL reading ``key`` of the reserved
            ``$agent_memory`` object of ``table.metadata`` as text.
        epoch: SQL of the Unix seconds of ``s.created_at`` (ISO-8601 text).
    """
    old = f"{p}records"
    return [
        f"UPDATE {old} SET valid_until = (SELECT {epoch} FROM {p}records s "
        f"WHERE s.family = 'memory' AND s.id = {reserved(old, 'superseded_by')}) "
        f"WHERE family = 'memory' AND valid_until IS NULL "
        f"AND {reserved(old, 'status')} = 'invalid'",
        f"UPDATE {p}chunks SET valid_until = (SELECT r.valid_until FROM {p}records r "
        f"WHERE r.pk = {p}chunks.record_pk) WHERE record_pk IN (SELECT pk FROM {p}records "
        "WHERE family = 'memory' AND valid_until IS NOT NULL)",
    ]


def chunk_index(p: str) -> str:
    """A record's search rows in order."""
    return f"CREATE INDEX IF NOT EXISTS {p}chunks_record ON {p}chunks (record_pk, seq)"
