"""Faults around the embedded store's index file (store/sqlite/vector/file.py,
saving.py; docs/sqlite.md#the-index-file): a full disk while the file is written, a
``kill -9`` during a bulk load and during the background write of the file.

Real SQLite files and real processes. The full disk is injected where every byte of
the file but faiss's part is written (``file._put`` raises ``OSError(ENOSPC)``); the
kills pause the child at a known point (it says so on stdout and waits on stdin), not
after a sleep.
"""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.vector import file as indexfile
from tests.small_index import brute_force, ids, open_store

DIM = 8
ROOT = Path(__file__).resolve().parents[2]
QUERIES = np.random.default_rng(99).standard_normal((4, DIM)).astype(np.float32)


def vectors(start: int, stop: int) -> np.ndarray:
    """The vectors of records ``r<start>..r<stop-1>`` (the same in every process)."""
    return np.stack(
        [
            np.random.default_rng(i).standard_normal(DIM).astype(np.float32)
            for i in range(start, stop)
        ]
    )


def add(store: SQLiteMemoryStore, start: int, stop: int) -> None:
    store.add(
        [f"t{i}" for i in range(start, stop)],
        "memory",
        embeddings=list(vectors(start, stop)),
        record_ids=[f"r{i}" for i in range(start, stop)],
        user_ids=[f"u{i % 3}" for i in range(start, stop)],
    )


def assert_consistent(store: SQLiteMemoryStore, path: Path, acknowledged: int) -> None:
    """Every acknowledged record ``r0..`` is found by its own vector; searches equal a
    brute-force ranking of SQLite's rows; the index holds exactly SQLite's vector rows."""
    for q in QUERIES:
        assert ids(store, q, 10) == brute_force(path, q, 10)
    own = vectors(0, acknowledged)
    for i in range(acknowledged):
        assert ids(store, own[i], 1) == [f"r{i}"]
    with sqlite3.connect(path) as conn:
        held = conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 1").fetchone()[0]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    index = store._impl.index
    assert held >= acknowledged
    assert index.ann is not None and index.mirror.n - index.mirror.n_dead == held
    assert sorted(index.ann.ids().tolist()) == sorted(index.mirror.live_keys().tolist())


def index_files(folder: Path) -> list[str]:
    """The index file and its temporary files in ``folder``."""
    return sorted(name for name in os.listdir(folder) if ".oamvec" in name)


def no_space(f: Any, data: Any) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_leaves_the_database_and_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No file at all: the build's background write and the close's write both meet
    a full disk; one warning, no file and no temporary file; the next open, with
    space again, rebuilds the index and writes the file."""
    path = tmp_path / "s.db"
    monkeypatch.setattr(indexfile, "_put", no_space)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = open_store(path)
        add(store, 0, 300)
        assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
        assert store._impl.index.builds.writes.wait(60)
        add(store, 300, 340)
        assert ids(store, QUERIES[1], 10) == brute_force(path, QUERIES[1], 10)
        store.close()  # the index was built and never written: close tries again
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "not written" in messages[0]
    assert os.strerror(errno.ENOSPC) in messages[0]
    assert index_files(tmp_path) == []
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store = open_store(path)
        try:
            assert_consistent(store, path, 340)
            assert store._impl.index.builds.writes.wait(60)
            assert store._impl.index.builds.writes.written == 1
        finally:
            store.close()
    assert (tmp_path / "s.db.oamvec").exists()
    store = open_store(path)
    try:
        assert ids(store, QUERIES[2], 10) == brute_force(path, QUERIES[2], 10)
        assert store._impl.index.file.saved == (store._impl.index.mirror.hwm, 0)
    finally:
        store.close()


def test_a_full_disk_keeps_the_older_file_which_is_caught_up_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    store = open_store(path)
    add(store, 0, 300)
    ids(store, QUERIES[0], 3)
    store.close()
    index_file = tmp_path / "s.db.oamvec"
    before = index_file.read_bytes()
    store = open_store(path)
    add(store, 300, 400)  # a third more rows: closing rewrites the file
    store.delete("memory", "r5")
    assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
    monkeypatch.setattr(indexfile, "_put", no_space)
    with pytest.warns(RuntimeWarning, match="not written") as caught:
        store.close()
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
    assert index_file.read_bytes() == before
    assert index_files(tmp_path) == ["s.db.oamvec"]
    monkeypatch.undo()
    store = open_store(path)
    try:
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert "r5" not in ids(store, vectors(5, 6)[0], 3)
        assert store._impl.index.mirror.n - store._impl.index.mirror.n_dead == 399
    finally:
        store.close()


def test_a_read_only_place_writes_nothing_and_does_not_warn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(f: Any, data: Any) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    path = tmp_path / "s.db"
    monkeypatch.setattr(indexfile, "_put", read_only)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store = open_store(path)
        add(store, 0, 300)
        assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
        store.close()
    assert index_files(tmp_path) == []


# -- kill -9 ------------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from oam_core import SQLiteMemoryStore
    from oam_core.store.sqlite.vector import builds, file, ranking
    builds.ANN_MIN_ROWS, ranking.EXACT_MAX = 8, 4
    DIM = 8

    def vectors(start, stop):
        return [np.random.default_rng(i).standard_normal(DIM).astype(np.float32)
                for i in range(start, stop)]

    def add(store, start, stop):
        store.add([f"t{i}" for i in range(start, stop)], "memory",
                  embeddings=vectors(start, stop),
                  record_ids=[f"r{i}" for i in range(start, stop)],
                  user_ids=[f"u{i % 3}" for i in range(start, stop)])

    store = SQLiteMemoryStore(sys.argv[1], vector_dim=DIM)
    if sys.argv[2] == "load":  # an index file, then a bulk load acknowledged batch by batch
        add(store, 0, 200)
        store.search(query_vector=[1.0] * DIM, k=3)
        store.close()
        store = SQLiteMemoryStore(sys.argv[1], vector_dim=DIM)
        for start in range(200, 100_000, 200):
            add(store, start, start + 200)
            print("committed", start + 200, flush=True)
    else:  # paused inside the background write of the file, after a background build
        store._impl.index.background_rows = 8
        add(store, 0, 400)
        real = file._put
        calls = []

        def paused(f, data):
            real(f, data)
            calls.append(1)
            if len(calls) == 3:
                sys.stdout.write("writing\\n")  # one write: two threads print
                sys.stdout.flush()
                sys.stdin.readline()  # the parent kills the process here

        file._put = paused
        store.search(query_vector=[1.0] * DIM, k=3)  # starts the build
        assert store._impl.index.wait_for_build(60)
        store.search(query_vector=[1.0] * DIM, k=3)  # adopts it: the write starts
        add(store, 400, 450)
        sys.stdout.write("committed 450\\n")
        sys.stdout.flush()
        sys.stdin.readline()
    """
)


def child(path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_kill_9_during_a_bulk_load_keeps_every_acknowledged_record(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    proc = child(path, "load")
    assert proc.stdout is not None
    acknowledged = 0
    try:
        while acknowledged < 2_000:  # ten batches acknowledged, more under way
            line = proc.stdout.readline().split()
            assert line and line[0] == "committed"
            acknowledged = int(line[1])
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    store = open_store(path)
    try:
        assert_consistent(store, path, acknowledged)
        assert store._impl.index.file.saved is not None  # caught up from the older file
    finally:
        store.close()


def test_kill_9_during_the_background_write_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    proc = child(path, "write")
    assert proc.stdout is not None
    try:
        lines = {proc.stdout.readline().strip(), proc.stdout.readline().strip()}
        assert lines == {"writing", "committed 450"}  # the write is held, the adds go on
        assert any(name.startswith("killed.db.oamvec.tmp-") for name in os.listdir(tmp_path))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert not (tmp_path / "killed.db.oamvec").exists()
    store = open_store(path)  # removes the temporary file the killed write left
    try:
        assert index_files(tmp_path) == []
        assert_consistent(store, path, 450)  # rebuilt from SQLite
        assert store._impl.index.builds.writes.wait(60)
    finally:
        store.close()
    assert index_files(tmp_path) == ["killed.db.oamvec"]
