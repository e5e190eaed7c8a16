"""``SQLiteMemoryStore.compact`` (docs/sqlite.md#deleted-text): after a delete the FTS5
keyword index still holds the deleted words in its segments until they are merged;
after ``compact`` no byte of deleted text is left in the file or its write-ahead log,
and what was kept is still found."""

from __future__ import annotations

from pathlib import Path

import pytest

from oam_core.store.sqlite import SQLiteMemoryStore


def _on_disk(path: Path, token: str) -> bool:
    files = [path, path.with_name(path.name + "-wal")]
    return any(f.exists() and token.encode() in f.read_bytes() for f in files)


@pytest.mark.parametrize("how", ["delete", "update", "purge"])
def test_compact_leaves_no_byte_of_deleted_text(tmp_path: Path, how: str) -> None:
    path = tmp_path / "s.db"
    store = SQLiteMemoryStore(str(path), search_strategy="KEYWORD")
    try:
        store.add(["the door code is 4417zq"], "message", record_ids="kept")
        store.add([f"filler note {i}" for i in range(50)], "memory")
        store.add(["another secret 9931xk"], "message", record_ids="gone")
        if how == "delete":
            store.delete("message", "gone")
        elif how == "update":
            store.update("message", "gone", text="nothing to see")
        else:
            store.update("message", "gone", ttl_days=0)
            assert store.purge_expired() == 1
        assert store.search("9931xk", 5) == []
        assert _on_disk(path, "9931xk")  # the keyword index's segments still hold it
        store.compact()
        assert not _on_disk(path, "9931xk")
        assert store.search("4417zq", 5)[0][0].id == "kept"
        assert len(store.search("filler", 100)) == 50
    finally:
        store.close()


def test_compact_on_an_in_memory_store_keeps_its_records() -> None:
    store = SQLiteMemoryStore(":memory:", search_strategy="KEYWORD")
    try:
        store.add(["alpha beta"], "memory", record_ids="a")
        store.compact()
        assert [r.id for r, _ in store.search("alpha", 3)] == ["a"]
    finally:
        store.close()
