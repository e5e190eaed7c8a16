"""DDL of the embedded SQLite store, versioned (SPEC §3.8; DESIGN "Schema per backend").

One ``records`` table holds every record family (ids unique per family), a ``chunks``
table the search rows (text, float32 vector BLOB, copied scope and expiry), and an
external-content FTS5 index over chunk text (filled by the insert path with one
set-based statement per write, emptied by a delete trigger). ``chunk_changes`` logs
the keys of deleted and updated vector chunks for the in-process vector index of
other connections (``store/vectorindex.py``); inserts need no log, chunk keys only
grow. ``{p}`` is the ``memory_store_id`` prefix.

Version 2 (from 1): the per-row FTS insert trigger is replaced by the insert path's
set-based statement (about twice the bulk-add rate), and ``chunk_changes`` with its
triggers is added. Version 1 files are upgraded when opened writable.
"""

from __future__ import annotations

import re

SCHEMA_VERSION = 2

_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,15}")


def table_prefix(memory_store_id: str | None) -> str:
    """Return the object-name prefix for ``memory_store_id`` (SPEC §3.8).

    Raises:
        ValueError: unless the id starts with a letter, holds only letters, digits
            and underscores, and has at most 16 characters.
    """
    if memory_store_id is None:
        return ""
    if not isinstance(memory_store_id, str) or not _ID.fullmatch(memory_store_id):
        raise ValueError(
            "memory_store_id must start with a letter, hold only letters, digits and "
            f"underscores, and have at most 16 characters; got {memory_store_id!r}"
        )
    return memory_store_id + "_"


def ddl(p: str) -> list[str]:
    """The statements that create (or upgrade to) schema version 2 with prefix ``p``."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {p}oam_meta (
            key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS {p}records (
            pk INTEGER PRIMARY KEY AUTOINCREMENT,
            family TEXT NOT NULL,
            id TEXT NOT NULL,
            record_type TEXT NOT NULL,
            content TEXT,
            role TEXT,
            seq_no INTEGER,
            thread_id TEXT,
            user_id TEXT,
            agent_id TEXT,
            event_ts TEXT,
            metadata TEXT,
            created_at TEXT NOT NULL,
            expires_at REAL,
            config TEXT,
            state TEXT,
            UNIQUE (family, id))""",
        f"CREATE INDEX IF NOT EXISTS {p}records_thread ON {p}records (thread_id, family, seq_no)",
        f"CREATE INDEX IF NOT EXISTS {p}records_user ON {p}records (user_id)",
        f"CREATE INDEX IF NOT EXISTS {p}records_agent ON {p}records (agent_id)",
        f"CREATE INDEX IF NOT EXISTS {p}records_type ON {p}records (record_type, pk)",
        f"CREATE INDEX IF NOT EXISTS {p}records_expiry ON {p}records (expires_at)",
        f"""CREATE TABLE IF NOT EXISTS {p}chunks (
            pk INTEGER PRIMARY KEY AUTOINCREMENT,
            record_pk INTEGER NOT NULL REFERENCES {p}records (pk) ON DELETE CASCADE,
            record_type TEXT NOT NULL,
            seq INTEGER NOT NULL,
            text TEXT,
            embedding BLOB,
            has_vector INTEGER NOT NULL,
            thread_id TEXT,
            user_id TEXT,
            agent_id TEXT,
            expires_at REAL)""",
        f"CREATE INDEX IF NOT EXISTS {p}chunks_record ON {p}chunks (record_pk, seq)",
        # Covering index for ranking candidates: scans it instead of rows holding vectors.
        f"""CREATE INDEX IF NOT EXISTS {p}chunks_scope ON {p}chunks (
            user_id, record_type, has_vector, agent_id, thread_id, expires_at, record_pk)""",
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {p}chunks_fts USING fts5(
            text, content='{p}chunks', content_rowid='pk',
            tokenize='porter unicode61 remove_diacritics 2')""",
        f"DROP TRIGGER IF EXISTS {p}chunks_ai",  # version 1 indexed text per row
        f"""CREATE TRIGGER IF NOT EXISTS {p}chunks_ad AFTER DELETE ON {p}chunks
            WHEN old.text IS NOT NULL BEGIN
            INSERT INTO {p}chunks_fts ({p}chunks_fts, rowid, text)
            VALUES ('delete', old.pk, old.text); END""",
        f"""CREATE TABLE IF NOT EXISTS {p}chunk_changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk_pk INTEGER NOT NULL)""",
        f"""CREATE TRIGGER IF NOT EXISTS {p}chunks_log_delete AFTER DELETE ON {p}chunks
            WHEN old.has_vector = 1 BEGIN
            INSERT INTO {p}chunk_changes (chunk_pk) VALUES (old.pk); END""",
        f"""CREATE TRIGGER IF NOT EXISTS {p}chunks_log_update AFTER UPDATE ON {p}chunks
            WHEN old.has_vector = 1 OR new.has_vector = 1 BEGIN
            INSERT INTO {p}chunk_changes (chunk_pk) VALUES (new.pk); END""",
    ]
