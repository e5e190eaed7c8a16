"""Export and import read a SQLite file without its memory map (docs/transfer.md#memory):
through the map, every page a pass over the store touches would count in the process's
resident memory, which would then grow with the store. Real SQLite files."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from oam_core import SQLiteMemoryStore, export_store, import_store
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.sqlite.backend import MMAP_BYTES, SQLiteBackend, SQLiteTx

pytestmark = pytest.mark.skipif(not MMAP_BYTES, reason="no memory map on 32-bit builds")


def _mmap(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA mmap_size").fetchone()[0])


def test_export_and_import_read_without_the_memory_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = SQLiteMemoryStore(str(tmp_path / "a.db"), embedder=HashingEmbedder(16))
    source.add([f"fact {i}" for i in range(30)], "fact", user_ids="u1")
    target = SQLiteMemoryStore(str(tmp_path / "b.db"), embedder=HashingEmbedder(16))
    seen: dict[str, list[int]] = {"count": [], "page": [], "restore": []}

    dump_counts = SQLiteBackend.dump_counts

    def count(self: SQLiteBackend, *args: Any) -> Any:
        seen["count"].append(_mmap(self.conn))
        return dump_counts(self, *args)

    dump_page = SQLiteBackend.dump_page

    def page(self: SQLiteBackend, *args: Any) -> Any:
        seen["page"].append(_mmap(self.conn))
        return dump_page(self, *args)

    restore = SQLiteTx.restore

    def write(self: SQLiteTx, *args: Any) -> None:
        seen["restore"].append(_mmap(self.c))
        restore(self, *args)

    monkeypatch.setattr(SQLiteBackend, "dump_counts", count)
    monkeypatch.setattr(SQLiteBackend, "dump_page", page)
    monkeypatch.setattr(SQLiteTx, "restore", write)
    assert _mmap(source.runtime.backend.conn) == MMAP_BYTES
    export_store(source, tmp_path / "a.jsonl")
    import_store(target, tmp_path / "a.jsonl", batch_rows=10)
    # The header's counts read every record too; the last page is empty.
    assert seen == {"count": [0], "page": [0, 0], "restore": [0, 0, 0]}
    # The map is back for the store's own reads.
    assert _mmap(source.runtime.backend.conn) == MMAP_BYTES
    assert _mmap(target.runtime.backend.conn) == MMAP_BYTES
    assert [r.id for r in target.list("fact", limit=None)] == [
        r.id for r in source.list("fact", limit=None)
    ]
    source.close()
    target.close()
