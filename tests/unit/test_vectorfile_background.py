"""The index file written by a background thread (store/sqlite/vector/saving.py,
docs/sqlite.md#the-index-file): searches and writes go on during the write; a
compaction meanwhile does not disturb it (the file holds copies of the columns taken
at its start and no vector), and ``close`` writes the file again when the store moved
far from it. The thread is held inside the write (``file._put`` waits on an
event), so the interleaving is injected, not slept for."""

from __future__ import annotations

import sqlite3
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.vector import file as indexfile
from tests.small_index import open_store

DIM = 8
QUERIES = np.random.default_rng(99).standard_normal((4, DIM)).astype(np.float32)


def add(store: SQLiteMemoryStore, start: int, stop: int) -> None:
    vecs = np.random.default_rng(start).standard_normal((stop - start, DIM)).astype(np.float32)
    store.add(
        [f"t{i}" for i in range(start, stop)],
        "memory",
        embeddings=list(vecs),
        record_ids=[f"r{i}" for i in range(start, stop)],
    )


def exact(store: SQLiteMemoryStore, q: np.ndarray, k: int) -> list[str]:
    """Top-k record ids by exact cosine over the vector chunks the store's file holds."""
    path = str(store._impl.index.file.path).removesuffix(".oamvec")
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT r.id, c.embedding FROM chunks c JOIN records r ON r.pk = c.record_pk "
            "WHERE c.has_vector = 1"
        ).fetchall()
    mat = np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows])
    sims = mat @ q / np.linalg.norm(mat, axis=1) / np.linalg.norm(q)
    return [rows[i][0] for i in np.argsort(-sims, kind="stable")[:k]]


def ids(store: SQLiteMemoryStore, q: np.ndarray, k: int) -> list[str]:
    return [r.id for r, _ in store.search(query_vector=list(q), k=k)]


def held_write(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Hold the next write of an index file at its third ``_put`` (the columns,
    after faiss's part): ``(reached, release)``."""
    reached, release = threading.Event(), threading.Event()
    real = indexfile._put
    calls: list[int] = []

    def paused(f: Any, data: Any) -> None:
        real(f, data)
        calls.append(1)
        if len(calls) == 3:
            reached.set()
            release.wait(60)

    monkeypatch.setattr(indexfile, "_put", paused)
    return reached, release


def test_searches_and_writes_go_on_while_the_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    reached, release = held_write(monkeypatch)
    store = open_store(path)
    try:
        add(store, 0, 300)
        assert ids(store, QUERIES[0], 10) == exact(store, QUERIES[0], 10)  # builds, writes
        assert reached.wait(60)
        writes = store._impl.index.builds.writes
        assert writes.running()
        add(store, 300, 320)
        store.delete("memory", "r3")
        for q in QUERIES:
            assert ids(store, q, 10) == exact(store, q, 10)
        release.set()
        assert writes.wait(60) and writes.written == 1
        assert store._impl.index.file.saved == (300, 0)  # the snapshot taken at the start
    finally:
        release.set()
        store.close()
    store = open_store(path)  # catches up from the snapshot: the add and the delete
    try:
        for q in QUERIES:
            assert ids(store, q, 10) == exact(store, q, 10)
        assert store._impl.index.mirror.n - store._impl.index.mirror.n_dead == 319
    finally:
        store.close()


def test_a_write_whose_rows_were_compacted_meanwhile_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    path = tmp_path / "s.db"
    reached, release = held_write(monkeypatch)
    store = open_store(path)
    try:
        store._impl.index.compact_min = 1
        add(store, 0, 300)
        assert ids(store, QUERIES[0], 10) == exact(store, QUERIES[0], 10)
        assert reached.wait(60)
        for i in range(0, 200, 2):
            store.delete("memory", f"r{i}")
        assert ids(store, QUERIES[1], 10) == exact(store, QUERIES[1], 10)  # compacts
        mirror = store._impl.index.mirror
        assert mirror.n == 200 and mirror.n_dead == 0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            release.set()
            writes = store._impl.index.builds.writes
            assert writes.wait(60) and writes.written == 1
        assert [n.name for n in path.parent.iterdir() if ".oamvec" in n.name] == ["s.db.oamvec"]
        assert indexfile.read(str(tmp_path / "s.db.oamvec"), DIM, faiss).n == 300  # the copy
        monkeypatch.undo()
    finally:
        release.set()
        store.close()  # 100 deletes since the copy: far behind, closing writes it again
    assert indexfile.read(str(tmp_path / "s.db.oamvec"), DIM, faiss).n == 200
    store = open_store(path)
    try:
        for q in QUERIES:
            assert ids(store, q, 10) == exact(store, q, 10)
        assert store._impl.index.file.saved is not None
        assert store._impl.index.mirror.n == 200
    finally:
        store.close()
