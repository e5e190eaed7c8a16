"""DDL of the embedded SQLite store, versioned (docs/store.md#schema, docs/sqlite.md).

One ``records`` table holds every record family (ids unique per family), a ``chunks``
table the search rows (text, float32 vector BLOB, copied scope and expiry), and an
external-content FTS5 index over chunk text (filled by the insert path with one
set-based statement per write, emptied by a delete trigger). ``chunk_changes`` logs
the keys of deleted and updated vector chunks for the in-process vector index of
other connections (``sqlite/vector/``); inserts need no log, chunk keys only
grow. ``{p}`` is the ``memory_store_id`` prefix.

The FTS5 index holds ``store/text.index_text`` of each chunk's text (the text
folded, ``store/text.fold``, CJK runs as characters and character pairs, and every
character that is neither a letter nor a digit a space), through the SQL function
``oam_fts_words`` that every connection of the store registers; its
content table is the view ``chunks_fts_src``, so ``'rebuild'`` re-derives the index
from the chunk texts. ASCII text is indexed as it is (FTS5 lower-cases ASCII, which
is all ``fold`` does to it), so only rows holding other characters call into Python.

Versions: 1 indexed chunk text as it is, with a per-row FTS insert trigger. 2 indexes
``index_text``, fills the FTS index with the insert path's set-based statement (about
twice the bulk-add rate) and adds ``chunk_changes`` with its triggers; ``UPGRADES[1]``
rebuilds the index from the stored chunk texts when a version-1 file is opened
writable. 3 adds ``chunk_sources``, the records each search row quotes
(``store/quotes.py``); ``UPGRADES[2]`` deletes the context rows written before, which
do not say what they quote. 4 makes the records' agent and expiry indexes partial
(rows where the column is set, ``sql/schema.record_indexes``); ``UPGRADES[3]`` drops
them and the DDL creates them again. 5 drops the covering index ``chunks_scope``
(keyed on the user, each insert landed at one of many places of it) and makes the
records' thread index partial (rows with a thread, and messages); scoped searches read
the records' scope indexes and reach the chunk rows through ``chunks_record``
(``sqlite/scoped.py``). It adds two chunk indexes that hold almost nothing in a vector
store: the rows with an expiry (``purge_expired``) and the rows without a vector (so
the vector count reads no vector page, ``vector_count``). ``UPGRADES[4]`` drops the two
indexes and the DDL creates the new ones, once, on the first writable open; a
version-4 file opened read-only is searched through its old indexes by the same
queries. 6 folds the indexed text (``store/text.fold``: Unicode case folding and
accent removal) through the SQL function ``oam_fts_fold`` (a new name: a process of
an older release, which registers only ``oam_fts_text``, fails on a chunk delete
instead of removing unfolded words from a folded index); ``UPGRADES[5]`` replaces
the view and the delete trigger and rebuilds the index from the stored chunk texts.
A version 2-5 file opened read-only is searched with unfolded terms
(``FOLDED_VERSION``), as it was indexed. 7 adds the validity window (``valid_from``,
``valid_until``, Unix seconds) to records and chunks; ``UPGRADES[6]`` adds the
columns and ends the window of every memory already marked superseded at its
successor's ``created_at``, and lists in each successor's ``supersedes`` the memories
that name it. A file before version 7 opened read-only has no window
columns (``WINDOWS_VERSION``): its records read as having no window, so every
validity filter passes them. 8 indexes every character that is neither a letter nor a
digit as a space (``index_text``: FTS5's ``unicode61`` tokenizer knows Unicode 6.1
and counts later characters, most emoji among them, as word characters, so "Bob🙂"
was the one token ``bob🙂``) through the SQL function ``oam_fts_words``;
``UPGRADES[7]`` replaces the view and the delete trigger and rebuilds the index, as
``UPGRADES[5]`` did. Every connection still registers ``oam_fts_fold`` (the form of
versions 6 and 7), so the view of a version 6-7 file opened read-only reads as that
file was indexed; its query words are the same (they never held such characters).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

from oam_core.errors import SchemaError
from oam_core.store.options import SchemaPolicy
from oam_core.store.sql.quoting import legacy_context_rows, sources_table
from oam_core.store.sql.schema import (
    SPARSE_RECORD_INDEXES,
    ColumnTypes,
    add_window_columns,
    backfill_superseded,
    chunk_index,
    chunks_table,
    meta_table,
    record_indexes,
    records_table,
)
from oam_core.store.sqlite.stems import TOKENIZER
from oam_core.store.text import cjk_block_class, index_text

SCHEMA_VERSION = 8

WINDOWS_VERSION = 7
"""The first schema version whose records and chunks have ``valid_from``/``valid_until``."""

FOLDED_VERSION = 6
"""The first schema version whose keyword index holds folded text (``store/text.fold``)."""

FTS_FUNCTION = "oam_fts_words"
"""The one-argument SQL function the FTS view and triggers call (``store/text.index_text``);
versions 6 and 7 called ``FOLD_FUNCTION``, versions 2 to 5 ``oam_fts_text``
(``index_text(text, folded=False, separated=False)``)."""

FOLD_FUNCTION = "oam_fts_fold"
"""The function the FTS view and triggers of versions 6 and 7 call
(``index_text(text, separated=False)``), still registered by every connection."""

CJK_GLOB = f"*{cjk_block_class()}*"
"""A GLOB pattern matching every text that holds a CJK letter (and some that do
not: the ranges are a superset, ``index_text`` decides)."""

_DDL_NAME = re.compile(r"IF NOT EXISTS (\w+)")

TYPES = ColumnTypes(pk="INTEGER PRIMARY KEY AUTOINCREMENT", key="INTEGER", real="REAL")


def ddl(p: str) -> list[str]:
    """The statements that create the current schema version with prefix ``p``."""
    return [
        meta_table(p),
        records_table(p, TYPES),
        *record_indexes(p, partial=True, sparse_thread=True),
        chunks_table(p, TYPES, vector=["embedding BLOB", "has_vector INTEGER NOT NULL"]),
        chunk_index(p),
        *sources_table(p, TYPES),
        f"""CREATE INDEX IF NOT EXISTS {p}chunks_expiry ON {p}chunks (expires_at)
            WHERE expires_at IS NOT NULL""",
        f"""CREATE INDEX IF NOT EXISTS {p}chunks_novector ON {p}chunks (has_vector)
            WHERE has_vector = 0""",
        *fts_ddl(p),
        f"""CREATE TABLE IF NOT EXISTS {p}chunk_changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk_pk INTEGER NOT NULL)""",
        f"""CREATE TRIGGER IF NOT EXISTS {p}chunks_log_delete AFTER DELETE ON {p}chunks
            WHEN old.has_vector = 1 BEGIN
            INSERT INTO {p}chunk_changes (chunk_pk) VALUES (old.pk); END""",
        f"""CREATE TRIGGER IF NOT EXISTS {p}chunks_log_update AFTER UPDATE ON {p}chunks
            WHEN old.has_vector = 1 OR new.has_vector = 1 BEGIN
            INSERT INTO {p}chunk_changes (chunk_pk) VALUES (new.pk); END""",
    ]


def register_functions(conn: sqlite3.Connection) -> None:
    """Register on ``conn`` the SQL functions of the keyword index: ``FTS_FUNCTION``
    (this version's form) and ``FOLD_FUNCTION`` (versions 6 and 7, whose files are
    read, not written, until upgraded; docs/sqlite.md#schema-version-8)."""
    conn.create_function(FTS_FUNCTION, 1, _words, deterministic=True)
    conn.create_function(FOLD_FUNCTION, 1, _folded, deterministic=True)


def _words(text: str | None) -> str | None:
    """``oam_fts_words(text)``: what the FTS index holds for a chunk's text."""
    return index_text(text) if isinstance(text, str) else text


def _folded(text: str | None) -> str | None:
    """``oam_fts_fold(text)``: what the FTS index of versions 6 and 7 holds."""
    return index_text(text, separated=False) if isinstance(text, str) else text


def fts_text(column: str) -> str:
    """The SQL expression of what the FTS index holds for the text ``column`` (a column
    name or a parameter such as ``?2``): ASCII text as it is, other text through
    ``FTS_FUNCTION``."""
    # ASCII text (as many bytes as characters) needs no folding: FTS5 lower-cases it,
    # and its characters other than letters and digits separate words already.
    # The test costs ~0.1 us a row; a call into Python ~1 us.
    return (
        f"CASE WHEN length(CAST({column} AS BLOB)) = length({column}) THEN {column} "
        f"ELSE {FTS_FUNCTION}({column}) END"
    )


def fts_ddl(p: str) -> list[str]:
    """The statements creating the keyword index (schema version 8) with prefix ``p``."""
    return [
        f"""CREATE VIEW IF NOT EXISTS {p}chunks_fts_src AS
            SELECT pk, {fts_text("text")} AS text FROM {p}chunks""",
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {p}chunks_fts USING fts5(
            text, content='{p}chunks_fts_src', content_rowid='pk',
            tokenize='{TOKENIZER}')""",
        f"""CREATE TRIGGER IF NOT EXISTS {p}chunks_ad AFTER DELETE ON {p}chunks
            WHEN old.text IS NOT NULL BEGIN
            INSERT INTO {p}chunks_fts ({p}chunks_fts, rowid, text)
            VALUES ('delete', old.pk, {fts_text("old.text")}); END""",
    ]


def _fts_v2(p: str) -> list[str]:
    """Version 1 -> 2: drop the version-1 keyword index and its triggers, create the
    version-2 one and rebuild it from the chunk texts."""
    old = [f"TRIGGER IF EXISTS {p}chunks_ai", f"TRIGGER IF EXISTS {p}chunks_ad"]
    old.append(f"TABLE IF EXISTS {p}chunks_fts")
    rebuild = f"INSERT INTO {p}chunks_fts ({p}chunks_fts) VALUES ('rebuild')"
    return [*(f"DROP {o}" for o in old), *fts_ddl(p), rebuild]


def _sources_v3(p: str) -> list[str]:
    """Version 2 -> 3: create ``chunk_sources`` and delete the context rows that do
    not say what they quote (``quoting.legacy_context_rows``)."""
    return [*sources_table(p, TYPES), legacy_context_rows(p, "char(10)")]


def _partial_v4(p: str) -> list[str]:
    """Version 3 -> 4: drop the agent and expiry indexes; ``ddl`` creates them again
    holding only the rows where their column is set."""
    return [f"DROP INDEX IF EXISTS {p}{name}" for name in SPARSE_RECORD_INDEXES]


def _fts_form(p: str) -> list[str]:
    """Versions 5 -> 6 (the text folded) and 7 -> 8 (words separated at every
    character that is neither a letter nor a digit): drop the view and the delete
    trigger of the old index form; the new ones are created and the index rebuilt from
    the chunk texts."""
    rebuild = f"INSERT INTO {p}chunks_fts ({p}chunks_fts) VALUES ('rebuild')"
    old = [f"DROP TRIGGER IF EXISTS {p}chunks_ad", f"DROP VIEW IF EXISTS {p}chunks_fts_src"]
    return [*old, *fts_ddl(p), rebuild]


def _sparse_v5(p: str) -> list[str]:
    """Version 4 -> 5: drop the chunks' covering scope index and the records' whole
    thread index; ``ddl`` creates the partial thread index and the sparse chunk
    indexes."""
    return [f"DROP INDEX IF EXISTS {p}{name}" for name in ("chunks_scope", "records_thread")]


def _windows_v7(p: str) -> list[str]:
    """Version 6 -> 7: add the window columns, end the windows of memories already
    marked superseded (``sql/schema.backfill_superseded``), and give each successor
    the ``supersedes`` list of the memories that name it (``_reverse_links``)."""

    def reserved(table: str, key: str) -> str:
        return f"json_extract({table}.metadata, '$.\"$agent_memory\".{key}')"

    # Whole seconds, then the fraction (``created_at`` is written with microseconds,
    # ``ttl.iso``): julianday() would round it to about a millisecond.
    epoch = (
        "(CAST(strftime('%s', s.created_at) AS REAL) + CASE WHEN substr(s.created_at, 20, 1)"
        " = '.' THEN CAST('0' || substr(s.created_at, 20, 7) AS REAL) ELSE 0 END)"
    )
    return [
        *add_window_columns(p, TYPES),
        *backfill_superseded(p, reserved, epoch),
        *_reverse_links(p),
    ]


def _reverse_links(p: str) -> list[str]:
    """Statements giving each memory that an older memory names as ``superseded_by``
    the reserved ``supersedes`` list of those memories, when it has none (an older
    release marked only the replaced memory), so both records of a link name each
    other (docs/versions.md#stores-written-by-an-older-release). Through a temporary
    table of the links, indexed: one pass over the memories, whatever their number."""
    path = "'$.\"$agent_memory\".superseded_by'"
    listed = "'$.\"$agent_memory\".supersedes'"
    links = f"temp.{p}upgrade_links"
    return [
        f"DROP TABLE IF EXISTS {links}",
        f"CREATE TABLE {links} AS SELECT json_extract(metadata, {path}) AS successor, "
        f"json_group_array(id) AS ids FROM (SELECT metadata, id FROM {p}records "
        f"WHERE family = 'memory' AND json_extract(metadata, {path}) IS NOT NULL "
        "ORDER BY created_at, id) GROUP BY 1",
        f"CREATE INDEX temp.{p}upgrade_links_successor ON {p}upgrade_links (successor)",
        f"UPDATE {p}records SET metadata = json_set(coalesce(metadata, '{{}}'), {listed}, "
        f"json((SELECT ids FROM {links} l WHERE l.successor = {p}records.id))) "
        f"WHERE family = 'memory' AND id IN (SELECT successor FROM {links}) "
        f"AND json_extract(metadata, {listed}) IS NULL "
        f"AND coalesce(json_type(metadata, '$.\"$agent_memory\"'), 'object') = 'object'",
        f"DROP TABLE {links}",
    ]


def vector_count(p: str) -> str:
    """The SQL counting the chunk rows of prefix ``p`` that hold a vector: all rows
    (counted on the smallest index) less those without one (the partial index
    ``chunks_novector``, empty in a vector store). The same SQL serves a version-4
    file read where it cannot be upgraded: SQLite's planner then answers the second
    count from that file's covering scope index."""
    return (
        f"SELECT (SELECT count(*) FROM {p}chunks) - "
        f"(SELECT count(*) FROM {p}chunks WHERE has_vector = 0)"
    )


UPGRADES: dict[int, Callable[[str], list[str]]] = {
    1: _fts_v2,
    2: _sources_v3,
    3: _partial_v4,
    4: _sparse_v5,
    5: _fts_form,
    6: _windows_v7,
    7: _fts_form,
}
"""``UPGRADES[v](prefix)``: the statements taking a file from version ``v`` to ``v + 1``."""


def stored_version(conn: sqlite3.Connection, p: str) -> int | None:
    """The schema version of the store with prefix ``p`` in ``conn``'s file, or None
    when the file holds no such store (a ``chunks`` table without a version row is
    version 1)."""
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    if f"{p}oam_meta" in present:
        row = conn.execute(f"SELECT value FROM {p}oam_meta WHERE key = 'schema_version'").fetchone()
        if row is not None:
            return int(row[0])
    return 1 if f"{p}chunks" in present else None


def check_policy(path: str, p: str, policy: SchemaPolicy) -> None:
    """Refuse, before the store opens ``path`` for writing, a partial store under
    ``CREATE_IF_EMPTY`` or ``REQUIRE_EXISTING``: one whose objects of prefix ``p``
    exist in part (a table dropped), which ``prepare`` would complete silently
    (docs/store.md#schema-policies). A store of an older version is left to
    ``prepare`` (its upgrade creates objects it never had); so is a file that cannot
    be read here (``prepare`` reports it).

    ``REQUIRE_EXISTING`` also requires the file to exist (a mistyped path must not
    become a new, empty store).

    Raises:
        SchemaError: (a ValueError) naming the missing objects and the policy to use,
            or the path under ``REQUIRE_EXISTING`` when no database is there.
    """
    if policy is SchemaPolicy.REQUIRE_EXISTING and (path == ":memory:" or not Path(path).exists()):
        raise SchemaError(f"schema_policy=REQUIRE_EXISTING, but no database exists at {path!r}")
    if policy is SchemaPolicy.CREATE_IF_NECESSARY or path == ":memory:":
        return
    if not Path(path).is_file():
        return
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return
    try:
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        version = stored_version(conn, p)
    except sqlite3.Error:
        return
    finally:
        conn.close()
    if version is not None and version != SCHEMA_VERSION:
        return
    wanted = [m.group(1) for m in map(_DDL_NAME.search, ddl(p)) if m]
    missing = [name for name in wanted if name not in present]
    if missing and len(missing) < len(wanted):
        raise SchemaError(
            f"schema_policy={policy.value}, but {path!r} holds part of an oam store: "
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing; open it "
            "with schema_policy=CREATE_IF_NECESSARY to complete it"
        )


def _upgrade_step(conn: sqlite3.Connection, stmt: str) -> None:
    """Run one upgrade statement; adding a column the table has already is a no-op
    (SQLite has no ``ADD COLUMN IF NOT EXISTS``), so an upgrade that stopped half
    way, or a file whose version row lags its tables, upgrades all the same."""
    try:
        conn.execute(stmt)
    except sqlite3.OperationalError as exc:
        if not (stmt.startswith("ALTER TABLE") and "duplicate column" in str(exc)):
            raise


def prepare(conn: sqlite3.Connection, p: str) -> int:
    """Create the store with prefix ``p`` if missing, or upgrade it to
    ``SCHEMA_VERSION``, in one write transaction; return the version it holds after.

    A file of a newer version is left alone (the store refuses it). A file that
    cannot be written (read-only place) keeps its version: an up-to-date one reads as
    usual, an older one is searched as that version indexed it.

    Raises:
        sqlite3.OperationalError: when a new store cannot be written, or on any other
            database error.
    """
    statements = ddl(p)
    names = {m.group(1) for m in map(_DDL_NAME.search, statements) if m}
    version = stored_version(conn, p)
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    if version is not None and (
        version > SCHEMA_VERSION or (version == SCHEMA_VERSION and names <= present)
    ):
        return version
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "readonly" in str(exc) and version is not None:
            return version
        raise
    try:
        version = stored_version(conn, p)  # another process may have upgraded it
        if version is not None and version > SCHEMA_VERSION:
            conn.execute("ROLLBACK")
            return version
        for v in range(version or SCHEMA_VERSION, SCHEMA_VERSION):
            for stmt in UPGRADES[v](p):
                _upgrade_step(conn, stmt)
        for stmt in statements:
            conn.execute(stmt)
        conn.execute(
            f"INSERT OR REPLACE INTO {p}oam_meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
    except sqlite3.OperationalError as exc:
        conn.execute("ROLLBACK")
        if "readonly" in str(exc) and version is not None:
            return version
        raise
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return SCHEMA_VERSION
