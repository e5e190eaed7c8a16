"""What the tests of SQLite files written by an older schema version share: unpacking
the fixture file, its version row, FTS5's own checks, searches, a read-only open and
the old release's delete (tests/unit/test_sqlite_*_upgrade.py)."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from oam_core import SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.sqlite import schema as sqlite_schema
from oam_core.store.sqlite.backend import SQLiteBackend

DATA = Path(__file__).resolve().parents[1] / "data"


def unpack(fixture: str, to: Path) -> Path:
    """``tests/data/<fixture>`` (gzip) unpacked to the file ``to``."""
    with gzip.open(DATA / fixture) as src, to.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return to


def file_version(path: Path) -> str:
    """The schema version row of the SQLite file ``path``."""
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'").fetchone()
        return str(row[0])


def integrity_check(store: SQLiteMemoryStore) -> None:
    """FTS5 compares its index with the content view row by row (raises on a mismatch)."""
    impl = store._impl  # type: ignore[attr-defined]
    with impl.lock:
        impl.conn.execute("INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)")


def found(store: SQLiteMemoryStore, query: str) -> list[str]:
    return sorted(r.id for r, _ in store.search(query, 10))


def open_read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every SQLite store opened after this call connects with ``mode=ro``."""
    connect = SQLiteBackend._connect

    def read_only(target: str, *, uri: bool = False) -> sqlite3.Connection:
        return connect(f"file:{target}?mode=ro", uri=True)

    monkeypatch.setattr(SQLiteBackend, "_connect", staticmethod(read_only))


def assert_vectors_untouched(path: Path, text: str, record_id: str) -> None:
    """The stored embedding (``HashingEmbedder(16)``) of ``text`` is still nearest to
    the record ``record_id`` of the file ``path``."""
    hybrid = SQLiteMemoryStore(path, embedder=HashingEmbedder(16), search_strategy="HYBRID")
    vec = HashingEmbedder(16).embed([text])[0]
    assert [r.id for r, _ in hybrid.search(query_vector=vec, k=1)] == [record_id]
    hybrid.close()


def assert_old_release_cannot_delete(path: Path, name: str, old: Callable[[str], str]) -> None:
    """A connection of the release before (its index function ``name`` = ``old``)
    fails on a delete instead of removing tokens the new index does not hold."""
    SQLiteMemoryStore(path, search_strategy="KEYWORD").close()
    with sqlite3.connect(path) as conn:
        conn.create_function(name, 1, old)
        with pytest.raises(
            sqlite3.OperationalError, match=f"no such function: {sqlite_schema.FTS_FUNCTION}"
        ):
            conn.execute("DELETE FROM chunks")
