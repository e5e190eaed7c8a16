"""The SQLite store reads its file through a memory map on 64-bit builds
(oam_core/store/sqlite/backend.py, docs/sqlite.md#reading-through-a-memory-map)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite import backend


def _effective(path: Path, size: int) -> int:
    """What this SQLite build makes of ``PRAGMA mmap_size = size`` (it caps the value
    at its compile-time maximum)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"PRAGMA mmap_size = {size}")
        return int(conn.execute("PRAGMA mmap_size").fetchone()[0])
    finally:
        conn.close()


def test_file_connection_is_memory_mapped_on_64_bit(tmp_path: Path) -> None:
    mapped = backend.MMAP_BYTES
    assert mapped == (1 << 30 if sys.maxsize > 2**32 else 0)
    store = SQLiteMemoryStore(tmp_path / "m.db", search_strategy="KEYWORD")
    try:
        conn = store.runtime.backend.conn  # type: ignore[attr-defined]
        got = conn.execute("PRAGMA mmap_size").fetchone()[0]
        assert got == _effective(tmp_path / "other.db", backend.MMAP_BYTES)
        store.add(["a mapped row"], "memory", record_ids=["m"])
        assert [r.id for r, _ in store.search("mapped", 1)] == ["m"]
    finally:
        store.close()


def test_the_map_can_be_turned_off_before_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "MMAP_BYTES", 0)
    store = SQLiteMemoryStore(tmp_path / "m.db", search_strategy="KEYWORD")
    try:
        assert store.runtime.backend.conn.execute("PRAGMA mmap_size").fetchone()[0] == 0  # type: ignore[attr-defined]
    finally:
        store.close()


def test_memory_store_is_not_mapped() -> None:
    """An in-memory database has no file to map: the setting is not made (SQLite
    answers the pragma with no row there)."""
    store = SQLiteMemoryStore(":memory:", search_strategy="KEYWORD")
    try:
        row = store.runtime.backend.conn.execute("PRAGMA mmap_size").fetchone()  # type: ignore[attr-defined]
        assert row is None or row[0] == 0
    finally:
        store.close()
