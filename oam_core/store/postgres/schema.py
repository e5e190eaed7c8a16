"""DDL, schema policies and the version row of the PostgreSQL store (SPEC §3.8).

One ``records`` table holds every record family (ids unique per family); a ``chunks``
table holds the search rows: text, a pgvector ``vector(dim)`` with an HNSW cosine
index, a ``tsvector`` with a GIN index, and the copied scope and expiry columns that
the ranking queries filter on. ``metadata`` is kept as the exact JSON text the caller
wrote (so key order and number spelling round-trip) with a generated ``jsonb`` column
that the metadata filters run on. Every object name starts with the
``memory_store_id`` prefix ``{p}``; objects live in the connection's current schema.

``oam_meta`` is the schema-version row set: ``schema_version``, ``vector_dim``,
``search_strategy`` and ``retention`` (SPEC §3.8).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from oam_core.store.options import SchemaPolicy

SCHEMA_VERSION = 1
"""The schema version this release writes and reads."""

UPGRADES: dict[int, Callable[[str], list[str]]] = {}
"""``UPGRADES[v](prefix)`` returns the statements that take a store from version ``v``
to ``v + 1``; applied in order by ``CREATE_IF_NECESSARY``. Version 1 is the first
PostgreSQL schema, so the table is empty until a release changes the schema."""

TABLES = ("oam_meta", "records", "chunks")
"""The managed tables, without prefix."""


def lock_key(*parts: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_xact_lock`` from ``parts``."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def vector_type(dim: int | None) -> str:
    """The column type for vectors of ``dim`` (untyped ``vector`` while unknown)."""
    return "vector" if dim is None else f"vector({int(dim)})"


def hnsw_index(p: str) -> str:
    """The HNSW cosine index over the chunk vectors (needs a typed column)."""
    return (
        f"CREATE INDEX IF NOT EXISTS {p}chunks_hnsw ON {p}chunks "
        "USING hnsw (embedding vector_cosine_ops)"
    )


def ddl(p: str, dim: int | None) -> list[str]:
    """The statements creating schema version 1 with prefix ``p`` and dimension ``dim``."""
    stmts = [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = '{p.lower()}oam_stem'
                           AND dictnamespace = current_schema()::regnamespace) THEN
                CREATE TEXT SEARCH DICTIONARY {p}oam_stem (TEMPLATE = snowball, LANGUAGE = english);
            END IF;
            IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = '{p.lower()}oam_fts'
                           AND cfgnamespace = current_schema()::regnamespace) THEN
                CREATE TEXT SEARCH CONFIGURATION {p}oam_fts (COPY = simple);
                ALTER TEXT SEARCH CONFIGURATION {p}oam_fts
                    ALTER MAPPING FOR asciiword, word, numword, asciihword, hword,
                        hword_asciipart, hword_part, hword_numpart WITH {p}oam_stem;
            END IF;
        END $$""",
        f"""CREATE TABLE IF NOT EXISTS {p}oam_meta (
            key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS {p}records (
            pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            family TEXT NOT NULL,
            id TEXT NOT NULL,
            record_type TEXT NOT NULL,
            content TEXT,
            role TEXT,
            seq_no BIGINT,
            thread_id TEXT,
            user_id TEXT,
            agent_id TEXT,
            event_ts TEXT,
            metadata TEXT,
            meta JSONB GENERATED ALWAYS AS (metadata::jsonb) STORED,
            created_at TEXT NOT NULL,
            expires_at DOUBLE PRECISION,
            config TEXT,
            state TEXT,
            UNIQUE (family, id))""",
        f"""CREATE UNIQUE INDEX IF NOT EXISTS {p}records_seq ON {p}records (thread_id, seq_no)
            WHERE family = 'message'""",
        f"CREATE INDEX IF NOT EXISTS {p}records_thread ON {p}records (thread_id, family, seq_no)",
        f"CREATE INDEX IF NOT EXISTS {p}records_user ON {p}records (user_id)",
        f"CREATE INDEX IF NOT EXISTS {p}records_agent ON {p}records (agent_id)",
        f"CREATE INDEX IF NOT EXISTS {p}records_type ON {p}records (record_type, pk)",
        f"CREATE INDEX IF NOT EXISTS {p}records_expiry ON {p}records (expires_at)",
        f"""CREATE TABLE IF NOT EXISTS {p}chunks (
            pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            record_pk BIGINT NOT NULL REFERENCES {p}records (pk) ON DELETE CASCADE,
            record_type TEXT NOT NULL,
            seq INTEGER NOT NULL,
            text TEXT,
            embedding {vector_type(dim)},
            thread_id TEXT,
            user_id TEXT,
            agent_id TEXT,
            expires_at DOUBLE PRECISION,
            tsv TSVECTOR,
            n_tokens INTEGER NOT NULL DEFAULT 0)""",
        f"CREATE INDEX IF NOT EXISTS {p}chunks_record ON {p}chunks (record_pk, seq)",
        f"""CREATE INDEX IF NOT EXISTS {p}chunks_scope ON {p}chunks (
            user_id, record_type, agent_id, thread_id, expires_at, record_pk)""",
        f"CREATE INDEX IF NOT EXISTS {p}chunks_tsv ON {p}chunks USING gin (tsv)",
    ]
    if dim is not None:
        stmts.append(hnsw_index(p))
    return stmts


def drop(p: str) -> list[str]:
    """The statements dropping every object of the store with prefix ``p``."""
    return [
        f"DROP TABLE IF EXISTS {p}chunks, {p}records, {p}oam_meta CASCADE",
        f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {p}oam_fts",
        f"DROP TEXT SEARCH DICTIONARY IF EXISTS {p}oam_stem",
    ]


def present_tables(conn: psycopg.Connection[Any], p: str) -> set[str]:
    """Which managed tables of prefix ``p`` exist in the current schema."""
    rows = conn.execute(
        "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(%s || t) IS NOT NULL",
        (list(TABLES), p),
    ).fetchall()
    return {r[0] for r in rows}


def read_meta(conn: psycopg.Connection[Any], p: str) -> dict[str, str]:
    """The store's ``oam_meta`` rows as a dict."""
    return dict(conn.execute(f"SELECT key, value FROM {p}oam_meta").fetchall())


def write_meta(conn: psycopg.Connection[Any], p: str, values: dict[str, str]) -> None:
    """Upsert ``values`` into ``oam_meta``."""
    for key, value in values.items():
        conn.execute(
            f"INSERT INTO {p}oam_meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (key, value),
        )


def set_dimension(conn: psycopg.Connection[Any], p: str, dim: int) -> None:
    """Type the vector column as ``vector(dim)`` and build the HNSW index (a store
    created before its dimension was known learns it from the first vector)."""
    conn.execute(
        f"ALTER TABLE {p}chunks ALTER COLUMN embedding TYPE {vector_type(dim)} "
        f"USING embedding::{vector_type(dim)}"
    )
    conn.execute(hnsw_index(p))
    write_meta(conn, p, {"vector_dim": str(dim)})


def apply_policy(
    conn: psycopg.Connection[Any], p: str, policy: SchemaPolicy, dim: int | None, where: str
) -> None:
    """Create, upgrade, recreate or only check the store's objects per ``policy``.

    Runs inside the caller's transaction, under an advisory lock on the prefix, so
    processes opening one store at once do not race each other's DDL.

    Args:
        conn: A connection inside an open transaction.
        p: Object prefix (``memory_store_id`` + ``_``, or ``""``).
        policy: See ``SchemaPolicy`` (SPEC §3.8).
        dim: Vector dimension for a new store, or None when not known yet.
        where: Text naming the store in error messages.

    Raises:
        ValueError: REQUIRE_EXISTING on a missing or outdated store; CREATE_IF_EMPTY
            on a partial store; any policy on a store of a newer schema version.
    """
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("oam-schema", p),))
    if policy is SchemaPolicy.RECREATE:
        for stmt in drop(p):
            conn.execute(stmt)
    present = present_tables(conn, p)
    missing = [t for t in TABLES if t not in present]
    if missing:
        if policy is SchemaPolicy.REQUIRE_EXISTING:
            raise ValueError(
                f"schema_policy=REQUIRE_EXISTING, but {where} has no oam store "
                f"(missing tables: {', '.join(p + t for t in missing)}); open it once with "
                "schema_policy=CREATE_IF_NECESSARY to create it"
            )
        if policy is SchemaPolicy.CREATE_IF_EMPTY and present:
            raise ValueError(
                f"schema_policy=CREATE_IF_EMPTY, but {where} holds part of an oam store "
                f"(found {', '.join(sorted(p + t for t in present))}); use "
                "CREATE_IF_NECESSARY to complete it or RECREATE to start over"
            )
        for stmt in ddl(p, dim):
            conn.execute(stmt)
        write_meta(conn, p, {"schema_version": str(SCHEMA_VERSION)})
        return
    meta = read_meta(conn, p)
    version = int(meta.get("schema_version", "0"))
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"{where} holds oam schema version {version}; this oam reads up to "
            f"{SCHEMA_VERSION}. Upgrade oam."
        )
    if version < SCHEMA_VERSION:
        if policy is not SchemaPolicy.CREATE_IF_NECESSARY:
            raise ValueError(
                f"{where} holds oam schema version {version}, older than {SCHEMA_VERSION}; "
                f"open it with schema_policy=CREATE_IF_NECESSARY to upgrade it"
            )
        upgrade(conn, p, version)
    if policy is SchemaPolicy.CREATE_IF_NECESSARY:
        # Recreate any dropped index (all statements are IF NOT EXISTS).
        stored = meta.get("vector_dim")
        for stmt in ddl(p, int(stored) if stored is not None else None):
            conn.execute(stmt)


def upgrade(conn: psycopg.Connection[Any], p: str, version: int) -> None:
    """Apply ``UPGRADES`` from ``version`` up to ``SCHEMA_VERSION``.

    Raises:
        ValueError: when no upgrade step exists for a version on the way.
    """
    while version < SCHEMA_VERSION:
        step = UPGRADES.get(version)
        if step is None:
            raise ValueError(
                f"no upgrade from oam schema version {version} to {version + 1}; "
                "recreate the store (schema_policy=RECREATE) or migrate it by hand"
            )
        statements: Sequence[str] = step(p)
        for stmt in statements:
            conn.execute(stmt)
        version += 1
        write_meta(conn, p, {"schema_version": str(version)})
