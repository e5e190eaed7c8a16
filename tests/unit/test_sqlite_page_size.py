"""A file the SQLite store creates uses 16 KiB pages; a file created before keeps its
own (oam_core/store/sqlite/backend.py PAGE_BYTES, docs/sqlite.md#page-size)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite import backend


def _page_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def _vectors(n: int) -> np.ndarray:
    return np.random.default_rng(7).standard_normal((n, 8)).astype(np.float32)


def test_a_new_file_gets_16_kib_pages(tmp_path: Path) -> None:
    assert backend.PAGE_BYTES == 16384
    path = tmp_path / "new.db"
    store = SQLiteMemoryStore(path, vector_dim=8)
    try:
        store.add(["first"], "memory", embeddings=_vectors(1), record_ids=["a"])
    finally:
        store.close()
    assert _page_size(path) == 16384
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_with_4_kib_pages_keeps_them_through_writes_and_compact(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("CREATE TABLE unrelated (x)")  # the file is no longer empty
    conn.commit()
    conn.close()
    vectors = _vectors(40)
    store = SQLiteMemoryStore(path, vector_dim=8)
    try:
        store.add(
            [f"row {i}" for i in range(40)],
            "memory",
            embeddings=vectors,
            record_ids=[f"r{i}" for i in range(40)],
        )
        store.delete("memory", "r3")
        store.compact()
        hits = store.search(query_vector=vectors[5].tolist(), k=1)
        assert [r.id for r, _ in hits] == ["r5"]
    finally:
        store.close()
    assert _page_size(path) == 4096
    reopened = SQLiteMemoryStore(path)
    try:
        assert reopened.get("memory", "r7") is not None and reopened.get("memory", "r3") is None
    finally:
        reopened.close()


def test_an_in_memory_store_uses_the_same_page_size() -> None:
    store = SQLiteMemoryStore(":memory:", vector_dim=8)
    try:
        conn = store.runtime.backend.conn  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 16384
    finally:
        store.close()
