"""DDL, schema policies and the version row of the PostgreSQL store (docs/store.md#schema).

One ``records`` table holds every record family (ids unique per family); a ``chunks``
table holds the search rows: text, a pgvector ``vector(dim)`` with an HNSW cosine
index, a ``tsvector`` with a GIN index, and the copied scope and expiry columns that
the ranking queries filter on. ``metadata`` is kept as the exact JSON text the caller
wrote (so key order and number spelling round-trip) with a generated ``jsonb`` column
that the metadata filters run on. Every object name starts with the
``memory_store_id`` prefix ``{p}``; objects live in the connection's current schema.

``oam_meta`` is the schema-version row set: ``schema_version``, ``vector_dim``,
``search_strategy`` and ``retention`` (docs/store.md#schema).

``chunk_stats`` holds what BM25 needs of the whole chunk table (indexed rows, their
token total, and a change counter), kept by statement triggers on ``chunks`` in up to
16 rows (one per backend pid modulo 16, so concurrent writers rarely wait on one
row); keyword search reads it instead of scanning the chunk table.

Versions: 1 indexed chunk words as they are; 2 indexes ``store/text.index_text`` (CJK
runs as characters and character pairs) and adds ``chunk_stats`` (``UPGRADES[1]``
re-derives the search text of rows holding CJK characters and counts the table once);
3 adds ``chunk_sources``, the records each search row quotes (``store/quotes.py``;
``UPGRADES[2]`` deletes the context rows written before, which do not say what they
quote); 4 indexes the text folded as ``store/text.fold`` folds it (Unicode case
folding: ß -> ss; version 3 lower-cased and removed accents), the same text as the
SQLite index (``UPGRADES[3]`` re-derives the search text of rows holding non-ASCII
characters, whose tokens can change, and counts the table once); 5 adds the validity
window (``valid_from``, ``valid_until``, Unix seconds) to records and chunks
(``UPGRADES[4]`` adds the columns and ends the window of every memory already marked
superseded at its successor's ``created_at``, ``sql/schema.backfill_superseded``, and
lists in each successor's ``supersedes`` the memories that name it); 6 stems with the
original Porter algorithm as FTS5 does (the dictionary's Snowball language was
``english``) and keeps the tokens FTS5 does not stem as they are (``UPGRADES[5]``
switches the dictionary and derives every row's ``tsvector`` and token count again).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from typing import Any

import psycopg

from oam_core.apis.metadatajson import RESERVED_KEY
from oam_core.errors import SchemaError
from oam_core.store.options import SchemaPolicy
from oam_core.store.postgres.dialect import POSTGRES
from oam_core.store.postgres.fulltext import index_input, tsvector_sql
from oam_core.store.sql import statements as st
from oam_core.store.sql.quoting import legacy_context_rows, sources_table
from oam_core.store.sql.schema import (
    ColumnTypes,
    add_window_columns,
    backfill_superseded,
    chunk_index,
    chunks_table,
    meta_table,
    newer_schema,
    record_indexes,
    records_table,
)
from oam_core.store.text import cjk_block_class, has_cjk

SCHEMA_VERSION = 6
"""The schema version this release writes and reads."""

STATS_SHARDS = 16
"""Rows of ``chunk_stats`` (writers pick one by backend pid)."""

TYPES = ColumnTypes(
    pk="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", key="BIGINT", real="DOUBLE PRECISION"
)

TABLES = ("oam_meta", "records", "chunks")
"""The managed tables every schema version has, without prefix."""
LATER_TABLES = ("chunk_stats", "chunk_sources")
"""The managed tables later schema versions added: a current store has them too."""


def lock_key(*parts: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_xact_lock`` from ``parts``."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def vector_type(dim: int | None) -> str:
    """The column type for vectors of ``dim`` (untyped ``vector`` while unknown)."""
    return "vector" if dim is None else f"vector({int(dim)})"


HNSW_VECTOR_MAX_DIM = 2000
"""The most dimensions pgvector's HNSW index takes on a ``vector`` column."""
HNSW_HALFVEC_MAX_DIM = 4000
"""The most dimensions pgvector's HNSW index takes on ``halfvec`` (pgvector 0.7+)."""
HALFVEC_SINCE = (0, 7)
"""The first pgvector version with the ``halfvec`` type."""


def pgvector_version(conn: psycopg.Connection[Any]) -> tuple[int, ...]:
    """The installed pgvector version, as ``(major, minor, patch)`` (``()`` when the
    extension is not installed)."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        return ()
    return tuple(int(part) if part.isdigit() else 0 for part in str(row[0]).split("."))


def ann_kind(dim: int | None, version: tuple[int, ...]) -> str | None:
    """How the chunk vectors of ``dim`` dimensions are indexed on pgvector ``version``:
    ``"vector"`` (an HNSW index on the column, up to 2,000 dimensions), ``"halfvec"``
    (an HNSW index on the expression ``embedding::halfvec(dim)``, 2,001 to 4,000
    dimensions on pgvector 0.7 and later), or None (no ANN index: searches scan
    exactly; also while the dimension is unknown). docs/postgres.md#vector-index."""
    if dim is None:
        return None
    if dim <= HNSW_VECTOR_MAX_DIM:
        return "vector"
    if dim <= HNSW_HALFVEC_MAX_DIM and version >= HALFVEC_SINCE:
        return "halfvec"
    return None


def usable_ann(conn: psycopg.Connection[Any], p: str, dim: int | None, where: str) -> str | None:
    """The HNSW index kind (``ann_kind``) that serves vectors of ``dim`` on this server
    now, or None (VECTOR search then ranks exactly). Warns when none can
    (docs/postgres.md#vector-index); ``where`` names the database."""
    version = pgvector_version(conn)
    kind = ann_kind(dim, version)
    if dim is not None and kind is None:
        warnings.warn(
            f"{where}: pgvector {'.'.join(map(str, version))} has no HNSW index "
            f"for vectors of {dim} dimensions (up to {HNSW_VECTOR_MAX_DIM}, or "
            f"{HNSW_HALFVEC_MAX_DIM} as halfvec on pgvector 0.7 and later); VECTOR "
            "search scans every search row exactly, which slows down as the store "
            "grows (docs/postgres.md#vector-index)",
            UserWarning,
            stacklevel=5,
        )
    elif kind == "halfvec" and not _index_exists(conn, f"{p}chunks_hnsw"):
        # Not built yet (pgvector upgraded since the store was created): ordering
        # by the half-precision expression without its index would only lose
        # precision, so rank exactly until a CREATE_IF_NECESSARY open builds it.
        kind = None
    return kind


def _index_exists(conn: psycopg.Connection[Any], name: str) -> bool:
    """Whether the index ``name`` exists in the connection's search path."""
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    return bool(row and row[0])


def ann_expression(column: str, kind: str | None, dim: int | None) -> str:
    """The indexed expression of ``column`` for ``ann_kind`` ``kind``: a query must
    order by ``ann_expression(...) <=> ...`` for the planner to use the index."""
    return f"({column})::halfvec({int(dim or 0)})" if kind == "halfvec" else column


def hnsw_index(p: str, kind: str | None = "vector", dim: int | None = None) -> str | None:
    """The HNSW cosine index over the chunk vectors for ``ann_kind`` ``kind`` (needs a
    typed column), or None when ``kind`` is None (no index can hold the vectors)."""
    if kind is None:
        return None
    if kind == "halfvec":
        return (
            f"CREATE INDEX IF NOT EXISTS {p}chunks_hnsw ON {p}chunks "
            f"USING hnsw (({ann_expression('embedding', kind, dim)}) halfvec_cosine_ops)"
        )
    return (
        f"CREATE INDEX IF NOT EXISTS {p}chunks_hnsw ON {p}chunks "
        "USING hnsw (embedding vector_cosine_ops)"
    )


def create_ann_index(conn: psycopg.Connection[Any], p: str, dim: int | None) -> str | None:
    """Create the HNSW index that fits ``dim`` on this server's pgvector (``ann_kind``);
    return its kind (None: no index, the vectors have too many dimensions)."""
    kind = ann_kind(dim, pgvector_version(conn))
    stmt = hnsw_index(p, kind, dim)
    if stmt is not None:
        conn.execute(stmt)
    return kind


def ddl(p: str, dim: int | None) -> list[str]:
    """The statements creating the current schema with prefix ``p`` and dimension ``dim``
    (without the HNSW index, which depends on the server: ``create_ann_index``)."""
    stmts = [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = '{p.lower()}oam_stem'
                           AND dictnamespace = current_schema()::regnamespace) THEN
                CREATE TEXT SEARCH DICTIONARY {p}oam_stem (TEMPLATE = snowball, LANGUAGE = porter);
            END IF;
            IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = '{p.lower()}oam_fts'
                           AND cfgnamespace = current_schema()::regnamespace) THEN
                CREATE TEXT SEARCH CONFIGURATION {p}oam_fts (COPY = simple);
                ALTER TEXT SEARCH CONFIGURATION {p}oam_fts
                    ALTER MAPPING FOR asciiword, word, numword, asciihword, hword,
                        hword_asciipart, hword_part, hword_numpart WITH {p}oam_stem;
            END IF;
        END $$""",
        meta_table(p),
        records_table(p, TYPES, extra=["meta JSONB GENERATED ALWAYS AS (metadata::jsonb) STORED"]),
        f"""CREATE UNIQUE INDEX IF NOT EXISTS {p}records_seq ON {p}records (thread_id, seq_no)
            WHERE family = 'message'""",
        *record_indexes(p),
        chunks_table(
            p,
            TYPES,
            vector=[f"embedding {vector_type(dim)}"],
            extra=["tsv TSVECTOR", "n_tokens INTEGER NOT NULL DEFAULT 0"],
        ),
        chunk_index(p),
        *sources_table(p, TYPES),
        f"""CREATE INDEX IF NOT EXISTS {p}chunks_scope ON {p}chunks (
            user_id, record_type, agent_id, thread_id, expires_at, record_pk)""",
        f"CREATE INDEX IF NOT EXISTS {p}chunks_tsv ON {p}chunks USING gin (tsv)",
        *stats_ddl(p),
    ]
    return stmts


def stats_ddl(p: str) -> list[str]:
    """The ``chunk_stats`` table and the statement triggers on ``chunks`` that keep it:
    per statement, the indexed rows inserted (deleted) and their tokens are added to
    (subtracted from) the writer's row, and its change counter grows. Chunk search text
    is never updated in place (an update replaces the chunk rows), so there is no
    UPDATE trigger. Function and triggers are created only when missing."""
    delta = (
        "SELECT count(*), COALESCE(sum(n_tokens), 0) INTO n, t FROM {rows} WHERE tsv IS NOT NULL;"
    )
    name = p.lower()
    triggers = [
        f"""IF NOT EXISTS (SELECT 1 FROM pg_trigger
                WHERE tgrelid = '{p}chunks'::regclass AND tgname = '{name}chunks_stats_{op[0]}') THEN
            CREATE TRIGGER {p}chunks_stats_{op[0]} AFTER {op[1]} ON {p}chunks
                REFERENCING {op[2]} TABLE AS {op[3]}
                FOR EACH STATEMENT EXECUTE FUNCTION {p}oam_chunk_stats();
        END IF;"""
        for op in (("ai", "INSERT", "NEW", "new_rows"), ("ad", "DELETE", "OLD", "old_rows"))
    ]
    return [
        f"""CREATE TABLE IF NOT EXISTS {p}chunk_stats (
            shard INTEGER PRIMARY KEY,
            n_rows BIGINT NOT NULL,
            n_tokens BIGINT NOT NULL,
            changes BIGINT NOT NULL)""",
        f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_proc WHERE proname = '{name}oam_chunk_stats'
                       AND pronamespace = current_schema()::regnamespace) THEN
            CREATE FUNCTION {p}oam_chunk_stats() RETURNS trigger LANGUAGE plpgsql AS $f$
            DECLARE n BIGINT; t BIGINT; sign INTEGER := 1;
            BEGIN
                IF TG_OP = 'INSERT' THEN {delta.format(rows="new_rows")}
                ELSE {delta.format(rows="old_rows")} sign := -1;
                END IF;
                IF n > 0 THEN
                    INSERT INTO {p}chunk_stats AS s (shard, n_rows, n_tokens, changes)
                    VALUES (pg_backend_pid() % {STATS_SHARDS}, sign * n, sign * t, n)
                    ON CONFLICT (shard) DO UPDATE SET n_rows = s.n_rows + EXCLUDED.n_rows,
                        n_tokens = s.n_tokens + EXCLUDED.n_tokens,
                        changes = s.changes + EXCLUDED.changes;
                END IF;
                RETURN NULL;
            END $f$;
        END IF;
        {" ".join(triggers)}
        END $$""",
    ]


def drop(p: str) -> list[str]:
    """The statements dropping every object of the store with prefix ``p``."""
    return [
        f"DROP TABLE IF EXISTS {p}chunk_sources, {p}chunks, {p}records, {p}oam_meta, "
        f"{p}chunk_stats CASCADE",
        f"DROP FUNCTION IF EXISTS {p}oam_chunk_stats()",
        f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {p}oam_fts",
        f"DROP TEXT SEARCH DICTIONARY IF EXISTS {p}oam_stem",
    ]


def _to_v2(conn: psycopg.Connection[Any], p: str) -> None:
    """Version 1 -> 2: re-derive the search text of rows holding CJK characters (as
    ``index_text`` cuts them), then create ``chunk_stats`` and count the table once."""
    conn.execute(f"LOCK TABLE {p}chunks IN SHARE ROW EXCLUSIVE MODE")
    rows = conn.execute(
        f"SELECT pk, text FROM {p}chunks WHERE text ~ %s", (cjk_block_class(),)
    ).fetchall()
    _reindex(conn, p, [(pk, text) for pk, text in rows if has_cjk(text)])
    for stmt in stats_ddl(p):
        conn.execute(stmt)
    recount_stats(conn, p)


def stats_present(conn: psycopg.Connection[Any], p: str) -> bool:
    """Whether ``chunk_stats`` and both of its triggers exist (else the counts it holds
    cannot be trusted and ``recount_stats`` must run after they are created)."""
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL AND (SELECT count(*) FROM pg_trigger "
        "WHERE tgrelid = to_regclass(%s) AND tgname = ANY(%s)) = 2",
        (
            f"{p}chunk_stats",
            f"{p}chunks",
            [f"{p.lower()}chunks_stats_ai", f"{p.lower()}chunks_stats_ad"],
        ),
    ).fetchone()
    return bool(row and row[0])


def recount_stats(conn: psycopg.Connection[Any], p: str) -> None:
    """Set ``chunk_stats`` from a count of the chunk table (writers wait meanwhile).
    The change counter moves on from its total, so a store object that cached term
    row counts under the old total counts them again."""
    conn.execute(f"LOCK TABLE {p}chunks IN SHARE MODE")
    row = conn.execute(f"SELECT COALESCE(sum(changes), 0) FROM {p}chunk_stats").fetchone()
    changes = int(row[0]) if row else 0
    conn.execute(f"DELETE FROM {p}chunk_stats")
    conn.execute(
        f"INSERT INTO {p}chunk_stats (shard, n_rows, n_tokens, changes) "
        f"SELECT 0, count(*), COALESCE(sum(n_tokens), 0), %s FROM {p}chunks WHERE tsv IS NOT NULL",
        (changes + 1,),
    )


def _to_v3(conn: psycopg.Connection[Any], p: str) -> None:
    """Version 2 -> 3: create ``chunk_sources`` and delete the context rows that do
    not say what they quote (``quoting.legacy_context_rows``)."""
    for stmt in sources_table(p, TYPES):
        conn.execute(stmt)
    conn.execute(legacy_context_rows(p, "chr(10)"))


def _to_v4(conn: psycopg.Connection[Any], p: str) -> None:
    """Version 3 -> 4: re-derive the search text and token count of every row holding
    a non-ASCII character (``store/text.fold``; ASCII text folds as before), then
    count the table once."""
    conn.execute(f"LOCK TABLE {p}chunks IN SHARE ROW EXCLUSIVE MODE")
    rows = conn.execute(
        f"SELECT pk, text FROM {p}chunks "
        "WHERE text IS NOT NULL AND octet_length(text) <> char_length(text)"
    ).fetchall()
    _reindex(conn, p, rows)
    recount_stats(conn, p)


def _to_v5(conn: psycopg.Connection[Any], p: str) -> None:
    """Version 4 -> 5: add the window columns, end the windows of memories already
    marked superseded."""

    def reserved(table: str, key: str) -> str:
        return f"({table}.meta -> '$agent_memory' ->> '{key}')"

    epoch = "extract(epoch FROM s.created_at::timestamptz)::float8"
    for stmt in add_window_columns(p, TYPES, if_not_exists=True):
        conn.execute(stmt)
    for stmt in backfill_superseded(p, reserved, epoch):
        conn.execute(stmt)
    _reverse_links(conn, p)


def _reverse_links(conn: psycopg.Connection[Any], p: str) -> None:
    """Give each memory that an older memory names as ``superseded_by`` the reserved
    ``supersedes`` list of those memories, when it has none (an older release marked
    only the replaced memory), so both records of a link name each other
    (docs/versions.md#stores-written-by-an-older-release). The metadata text is
    rewritten in Python, which keeps the caller's key order (``jsonb`` would not)."""
    found = conn.execute(
        f"SELECT meta -> '$agent_memory' ->> 'superseded_by', id FROM {p}records "
        "WHERE family = 'memory' AND meta -> '$agent_memory' ->> 'superseded_by' IS NOT NULL "
        "ORDER BY created_at, id"
    ).fetchall()
    replaced: dict[str, list[str]] = {}
    for successor, old in found:
        replaced.setdefault(successor, []).append(old)
    if not replaced:
        return
    rows = conn.execute(
        f"SELECT pk, id, metadata FROM {p}records WHERE family = 'memory' "
        "AND id = ANY(%s) AND meta -> '$agent_memory' -> 'supersedes' IS NULL",
        [list(replaced)],
    ).fetchall()
    updates = []
    for pk, rid, text in rows:
        meta = json.loads(text) if text else {}
        keys = meta.setdefault(RESERVED_KEY, {}) if isinstance(meta, dict) else None
        if isinstance(keys, dict):
            keys["supersedes"] = replaced[rid]
            updates.append((json.dumps(meta, ensure_ascii=False), pk))
    with conn.cursor() as cur:
        cur.executemany(f"UPDATE {p}records SET metadata = %s WHERE pk = %s", updates)


REINDEX_BATCH = 5000
"""Search rows read and rewritten per statement when ``_to_v6`` indexes every row."""


def _to_v6(conn: psycopg.Connection[Any], p: str) -> None:
    """Version 5 -> 6: stem with the original Porter algorithm, as FTS5 does (the
    dictionary's language was Snowball ``english``), and keep the tokens FTS5 does not
    stem as they are (``fulltext.index_input``): the ``tsvector`` and token count of
    every search row are derived again from its text, in batches of
    ``REINDEX_BATCH`` rows read through a server-side cursor, then the table is
    counted once. Writers wait for the transaction; readers see the old index until
    it commits."""
    conn.execute(f"LOCK TABLE {p}chunks IN SHARE ROW EXCLUSIVE MODE")
    conn.execute(f"ALTER TEXT SEARCH DICTIONARY {p}oam_stem (Language = porter)")
    with conn.cursor(name=f"{p}oam_reindex") as rows:
        rows.execute(f"SELECT pk, text FROM {p}chunks WHERE text IS NOT NULL ORDER BY pk")
        while batch := rows.fetchmany(REINDEX_BATCH):
            _reindex(conn, p, batch)
    recount_stats(conn, p)


def _reindex(conn: psycopg.Connection[Any], p: str, rows: list[tuple[int, str]]) -> None:
    """Set the ``tsvector`` and token count of the search rows ``(pk, text)`` from their
    text (``fulltext.index_input``), in one UPDATE."""
    if not rows:
        return
    columns: list[list[Any]] = [[], [], [], []]
    for pk, text in rows:
        for column, value in zip(columns, (pk, *index_input(text)), strict=True):
            column.append(value)
    conn.execute(
        f"UPDATE {p}chunks c SET tsv = {tsvector_sql(p, 'u.kept', 'u.words')}, "
        "n_tokens = u.n FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::int[]) "
        "AS u(pk, kept, words, n) WHERE c.pk = u.pk",
        columns,
    )


UPGRADES: dict[int, Callable[[psycopg.Connection[Any], str], None]] = {
    1: _to_v2,
    2: _to_v3,
    3: _to_v4,
    4: _to_v5,
    5: _to_v6,
}
"""``UPGRADES[v](conn, prefix)`` takes a store from version ``v`` to ``v + 1`` inside the
caller's transaction; applied in order by ``CREATE_IF_NECESSARY``."""


def present_tables(
    conn: psycopg.Connection[Any], p: str, names: tuple[str, ...] = TABLES
) -> set[str]:
    """Which of the managed tables ``names`` of prefix ``p`` exist in the current schema."""
    rows = conn.execute(
        "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(%s || t) IS NOT NULL",
        (list(names), p),
    ).fetchall()
    return {r[0] for r in rows}


def read_meta(conn: psycopg.Connection[Any], p: str) -> dict[str, str]:
    """The store's ``oam_meta`` rows as a dict."""
    return dict(conn.execute(st.read_meta(p).sql).fetchall())


def lock_meta(conn: psycopg.Connection[Any], p: str) -> None:
    """Hold ``oam_meta`` against other writers of the configuration until the
    transaction ends (``SHARE ROW EXCLUSIVE`` conflicts with itself and with row
    writes, not with reads): two first writes, or opens, learning a vector dimension
    take turns, and the second reads what the first committed."""
    conn.execute(f"LOCK TABLE {p}oam_meta IN SHARE ROW EXCLUSIVE MODE")


def write_meta(conn: psycopg.Connection[Any], p: str, values: dict[str, str]) -> None:
    """Upsert ``values`` into ``oam_meta``."""
    for key, value in values.items():
        stmt = st.upsert_meta(POSTGRES, p, key, value)
        conn.execute(stmt.sql, stmt.params)


def set_dimension(conn: psycopg.Connection[Any], p: str, dim: int) -> None:
    """Type the vector column as ``vector(dim)`` and build the HNSW index that fits
    ``dim`` (``create_ann_index``; a store created before its dimension was known
    learns it from the first vector)."""
    conn.execute(
        f"ALTER TABLE {p}chunks ALTER COLUMN embedding TYPE {vector_type(dim)} "
        f"USING embedding::{vector_type(dim)}"
    )
    create_ann_index(conn, p, dim)
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
        policy: See ``SchemaPolicy`` (docs/store.md#schema-policies).
        dim: Vector dimension for a new store, or None when not known yet.
        where: Text naming the store in error messages.

    Raises:
        SchemaError: (a ValueError) REQUIRE_EXISTING on a missing or outdated store;
            REQUIRE_EXISTING or CREATE_IF_EMPTY on a partial store (a table dropped),
            naming what is missing; any policy on a store of a newer schema version.
    """
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("oam-schema", p),))
    if policy is SchemaPolicy.RECREATE:
        for stmt in drop(p):
            conn.execute(stmt)
    present = present_tables(conn, p)
    missing = [t for t in TABLES if t not in present]
    if missing:
        if policy is not SchemaPolicy.CREATE_IF_NECESSARY and present:
            raise _partial(policy, where, [p + t for t in missing])
        if policy is SchemaPolicy.REQUIRE_EXISTING:
            raise SchemaError(
                f"schema_policy=REQUIRE_EXISTING, but {where} has no oam store "
                f"(missing tables: {', '.join(p + t for t in missing)}); open it once with "
                "schema_policy=CREATE_IF_NECESSARY to create it"
            )
        for stmt in ddl(p, dim):
            conn.execute(stmt)
        create_ann_index(conn, p, dim)
        write_meta(conn, p, {"schema_version": str(SCHEMA_VERSION)})
        return
    meta = read_meta(conn, p)
    version = int(meta.get("schema_version", "0"))
    if version > SCHEMA_VERSION:
        raise newer_schema(where, version, SCHEMA_VERSION)
    if version < SCHEMA_VERSION:
        if policy is not SchemaPolicy.CREATE_IF_NECESSARY:
            raise SchemaError(
                f"{where} holds oam schema version {version}, older than {SCHEMA_VERSION}; "
                f"open it with schema_policy=CREATE_IF_NECESSARY to upgrade it"
            )
        upgrade(conn, p, version)
    if policy is not SchemaPolicy.CREATE_IF_NECESSARY:
        # A current store has every table: one dropped is refused, not created.
        later = present_tables(conn, p, LATER_TABLES)
        gone = [p + t for t in LATER_TABLES if t not in later]
        if not gone and not stats_present(conn, p):
            gone.append(f"the triggers of {p}chunk_stats")
        if gone:
            raise _partial(policy, where, gone)
    if policy is SchemaPolicy.CREATE_IF_NECESSARY:
        # Recreate any dropped index (all statements are IF NOT EXISTS).
        stored = meta.get("vector_dim")
        counted = stats_present(conn, p)
        known = int(stored) if stored is not None else None
        for stmt in ddl(p, known):
            conn.execute(stmt)
        create_ann_index(conn, p, known)
        if not counted:
            recount_stats(conn, p)


def _partial(policy: SchemaPolicy, where: str, missing: list[str]) -> SchemaError:
    """The error of a store ``policy`` may not complete: what is missing, and the fix."""
    return SchemaError(
        f"schema_policy={policy.value}, but {where} holds part of an oam store: "
        f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing; use "
        "CREATE_IF_NECESSARY to complete it or RECREATE to start over"
    )


def upgrade(conn: psycopg.Connection[Any], p: str, version: int) -> None:
    """Apply ``UPGRADES`` from ``version`` up to ``SCHEMA_VERSION``.

    Raises:
        SchemaError: (a ValueError) when no upgrade step exists for a version on the way.
    """
    while version < SCHEMA_VERSION:
        step = UPGRADES.get(version)
        if step is None:
            raise SchemaError(
                f"no upgrade from oam schema version {version} to {version + 1}; "
                "recreate the store (schema_policy=RECREATE) or migrate it by hand"
            )
        step(conn, p)
        version += 1
        write_meta(conn, p, {"schema_version": str(version)})
