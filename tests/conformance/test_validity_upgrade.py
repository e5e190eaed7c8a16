"""Stores written before validity windows (SQLite schema 6, PostgreSQL schema 4) are
upgraded in place at their first writable open (docs/store.md#schema): the
window columns are added, open for every row, except that a memory already marked
superseded ends at its successor's ``created_at``. A SQLite file that cannot be
written is read as it is: no windows, every validity filter passes its rows.

The old files are made from a current store with the old DDL's shape: the window
columns dropped and the version row set back."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from oam_core.apis.metadatajson import RESERVED_KEY
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.postgres import PostgresMemoryStore
from oam_core.store.postgres import schema as pg_schema
from oam_core.store.sqlite import SQLiteMemoryStore
from oam_core.store.sqlite import schema as sqlite_schema
from oam_core.store.sqlite.backend import SQLiteBackend
from oam_core.store.versions import memory_versions

DROP = [
    f"ALTER TABLE {table} DROP COLUMN {column}"
    for table in ("records", "chunks")
    for column in ("valid_from", "valid_until")
]

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
"""The conformance ``clock`` fixture's start time."""


def _populate(store: Any, clock: Any) -> dict[str, str]:
    """An old store's rows: ``old`` marked superseded by ``new`` (written a day
    later), ``dropped`` marked invalid without a successor, ``kept`` and a message."""
    [old, dropped, kept] = store.add(
        ["lives in Lisbon", "owns a car", "likes tea"], "memory", user_ids="u"
    )
    clock.advance(days=1, seconds=0.25)
    [new] = store.add(["lives in Berlin"], "memory", user_ids="u")
    store.add(["lives here"], "message", thread_ids="t")
    clock.advance(seconds=1)
    return {"old": old, "new": new, "dropped": dropped, "kept": kept}


def _mark(old: str, new: str | None) -> tuple[str, tuple[str, str]]:
    meta = {"k": 1, RESERVED_KEY: {"status": "invalid", "superseded_by": new, "reason": "r"}}
    return json.dumps(meta), (old, "memory")


# -- SQLite ----------------------------------------------------------------------------


def _v6_file(tmp_path: Path, clock: Any) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "v6.db"
    store = SQLiteMemoryStore(str(path), embedder=HashingEmbedder(16), clock=clock)
    ids = _populate(store, clock)
    store.close()
    with sqlite3.connect(path) as conn:
        for old, new in ((ids["old"], ids["new"]), (ids["dropped"], None)):
            meta, key = _mark(old, new)
            conn.execute(
                "UPDATE records SET metadata = ? WHERE id = ? AND family = ?", (meta, *key)
            )
        for stmt in DROP:
            conn.execute(stmt)
        conn.execute("UPDATE oam_meta SET value = '6' WHERE key = 'schema_version'")
    return path, ids


def _columns(path: Path, table: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def test_a_read_only_version_6_file_reads_without_windows(
    tmp_path: Path, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, ids = _v6_file(tmp_path, clock)
    before = path.read_bytes()
    connect = SQLiteBackend._connect

    def read_only(target: str, *, uri: bool = False) -> sqlite3.Connection:
        return connect(f"file:{target}?mode=ro", uri=True)

    monkeypatch.setattr(SQLiteBackend, "_connect", staticmethod(read_only))
    store = SQLiteMemoryStore(
        str(path), embedder=HashingEmbedder(16), clock=clock, search_strategy="KEYWORD"
    )
    assert store._impl.schema_version == 6  # type: ignore[attr-defined]
    records = store.list("memory")
    assert len(records) == 4
    assert all(r.valid_from is None and r.valid_until is None for r in records)
    assert len(store.list("memory", as_of=START)) == 4
    assert store.get("memory", ids["old"]).valid_until is None
    # No window to filter on: the superseded memory is still found.
    assert {r.id for r, _ in store.search("lives", k=5)} >= {ids["old"], ids["new"]}
    rows = [r for page in store.dump_rows() for r in page]
    assert all(r.valid_from is None and r.valid_until is None for r in rows)
    store.close()
    assert path.read_bytes() == before
    assert "valid_from" not in _columns(path, "records")


def test_a_writable_open_upgrades_version_6_and_ends_superseded_memories(
    tmp_path: Path, clock: Any
) -> None:
    path, ids = _v6_file(tmp_path, clock)
    store = SQLiteMemoryStore(
        str(path), embedder=HashingEmbedder(16), clock=clock, search_strategy="KEYWORD"
    )
    assert store._impl.schema_version == sqlite_schema.SCHEMA_VERSION == 8  # type: ignore[attr-defined]
    assert {"valid_from", "valid_until"} <= _columns(path, "records")
    assert {"valid_from", "valid_until"} <= _columns(path, "chunks")
    _check_upgraded(store, ids)
    with store._impl.lock:  # type: ignore[attr-defined]
        chunk_ends = store._impl.conn.execute(  # type: ignore[attr-defined]
            "SELECT r.id, c.valid_until FROM chunks c JOIN records r ON r.pk = c.record_pk "
            "WHERE c.valid_until IS NOT NULL"
        ).fetchall()
    assert [rid for rid, _ in chunk_ends] == [ids["old"]]
    store.close()
    # A second open changes nothing more.
    again = SQLiteMemoryStore(str(path), embedder=HashingEmbedder(16), clock=clock)
    _check_upgraded(again, ids)
    _correct_upgraded(again, ids)
    again.close()


def _check_upgraded(store: Any, ids: dict[str, str]) -> None:
    old, new = store.get("memory", ids["old"]), store.get("memory", ids["new"])
    # The successor names what it replaced (the older release marked only the old
    # memory): the history is the same from either end.
    assert new.metadata == {RESERVED_KEY: {"supersedes": [ids["old"]]}}
    assert store.get("memory", ids["kept"]).metadata is None
    versions = memory_versions(store)
    for probe in ("old", "new"):
        history = [r.id for r in versions.get_memory_history(ids[probe])]
        assert history == [ids["old"], ids["new"]], probe
    assert old.valid_from is None
    ended = datetime.fromisoformat(old.valid_until)
    assert abs(ended - datetime.fromisoformat(new.created_at)) <= timedelta(microseconds=1)
    for name in ("new", "kept", "dropped"):
        r = store.get("memory", ids[name])
        assert (r.valid_from, r.valid_until) == (None, None), name
    assert {r.id for r in store.list("memory", as_of=store.clock_now())} == {
        ids["new"],
        ids["kept"],
        ids["dropped"],
    }
    found = {r.id for r, _ in store.search("lives", k=5, record_types=["memory"])}
    if store.search_strategy.name == "KEYWORD":
        assert found == {ids["new"]}
    assert {r.id for r in store.list("memory", as_of=START)} == set(ids.values())


def _correct_upgraded(store: Any, ids: dict[str, str]) -> None:
    """After the upgrade, a memory marked invalid without an end (current by its
    window) can be corrected, and the successor's history grows from either end."""
    versions = memory_versions(store)
    car = versions.update_memory(ids["dropped"], "owns a bike")
    assert [r.id for r in versions.get_memory_history(car)] == [ids["dropped"], car]
    newest = versions.update_memory(ids["new"], "lives in Porto")
    history = [r.id for r in versions.get_memory_history(newest)]
    assert history == [ids["old"], ids["new"], newest]


# -- PostgreSQL -------------------------------------------------------------------------


def test_postgres_version_4_is_upgraded_in_place(conninfo: str, clock: Any) -> None:
    store = PostgresMemoryStore(
        conninfo,
        embedder=HashingEmbedder(16),
        clock=clock,
        search_strategy="KEYWORD",
        schema_policy="CREATE_IF_NECESSARY",
    )
    ids = _populate(store, clock)
    store.close()
    with psycopg.connect(conninfo) as conn:
        for old, new in ((ids["old"], ids["new"]), (ids["dropped"], None)):
            meta, key = _mark(old, new)
            conn.execute(
                "UPDATE records SET metadata = %s WHERE id = %s AND family = %s", (meta, *key)
            )
        for stmt in DROP:
            conn.execute(stmt)
        conn.execute("UPDATE oam_meta SET value = '4' WHERE key = 'schema_version'")
    with pytest.raises(ValueError, match="older than"):
        PostgresMemoryStore(
            conninfo, embedder=HashingEmbedder(16), schema_policy="REQUIRE_EXISTING"
        )
    upgraded = PostgresMemoryStore(
        conninfo,
        embedder=HashingEmbedder(16),
        clock=clock,
        search_strategy="KEYWORD",
        schema_policy="CREATE_IF_NECESSARY",
    )
    with psycopg.connect(conninfo) as conn:
        version = conn.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(pg_schema.SCHEMA_VERSION),)
        chunk_ends = conn.execute(
            "SELECT r.id FROM chunks c JOIN records r ON r.pk = c.record_pk "
            "WHERE c.valid_until IS NOT NULL"
        ).fetchall()
    assert chunk_ends == [(ids["old"],)]
    _check_upgraded(upgraded, ids)
    _correct_upgraded(upgraded, ids)
    upgraded.close()
