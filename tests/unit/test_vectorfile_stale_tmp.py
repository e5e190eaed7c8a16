"""Temporary index files left by a write that was killed (store/sqlite/vector/file.py,
docs/sqlite.md#the-index-file).

The index file is written to ``<file>.oamvec.tmp-<pid>-<thread id>`` and renamed
over ``<file>.oamvec``; a ``kill -9`` in between leaves the temporary file, as large
as the index. The next writable open removes it, never a live writer's.

The child process pauses inside the write (its ``faiss.write_index`` is wrapped: the
index part is written, then it says so and waits for a line on stdin that never
comes), so the parent kills it at a known point, not after a sleep.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.vector import file as indexfile

DIM = 8
ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys
    import threading
    import faiss
    import numpy as np
    from oam_core import SQLiteMemoryStore
    from oam_core.store.sqlite.vector import builds, ranking
    builds.ANN_MIN_ROWS, ranking.EXACT_MAX = 8, 4
    store = SQLiteMemoryStore(sys.argv[1], vector_dim=8)
    vecs = np.random.default_rng(0).standard_normal((200, 8)).astype(np.float32)
    store.add([f"t{i}" for i in range(200)], "memory", embeddings=list(vecs),
              record_ids=[f"r{i}" for i in range(200)])
    real = faiss.write_index

    def write_index(index, path):
        real(index, path)
        print(path, flush=True)
        sys.stdin.readline()  # the parent kills the process here

    faiss.write_index = write_index
    store.search(query_vector=list(vecs[0]), k=3)  # builds the index, writes the file
    for thread in threading.enumerate():  # the write runs in a daemon thread
        if thread.name == "oam-vector-file":
            thread.join()
    """
)


def _paused_writer(path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A child process paused inside the index file's write, and its temporary file."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    tmp = Path(proc.stdout.readline().strip())
    return proc, tmp


def _open(path: Path) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(str(path), vector_dim=DIM)
    store._impl.index.ann_min_rows = 8
    store._impl.index.exact_max = 4
    return store


def test_a_write_killed_midway_leaves_a_file_the_next_open_removes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    proc, tmp = _paused_writer(path)
    try:
        assert tmp.parent == tmp_path
        assert tmp.name.startswith(f"s.db.oamvec.tmp-{proc.pid}-")
        assert tmp.stat().st_size > 0
        _open(path).close()  # while its writer lives, the file stays
        assert tmp.exists()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert tmp.exists()  # left behind by the killed write
    assert not (tmp_path / "s.db.oamvec").exists()

    store = _open(path)
    try:
        assert not tmp.exists()
        vecs = np.random.default_rng(0).standard_normal((200, DIM)).astype(np.float32)
        hits = store.search(query_vector=list(vecs[5]), k=3)
        assert hits[0][0].id == "r5"
        assert store._impl.index.ann is not None
    finally:
        store.close()
    leftovers = sorted(p.name for p in tmp_path.iterdir() if ".tmp-" in p.name)
    assert leftovers == []
    assert (tmp_path / "s.db.oamvec").exists()  # the search's build wrote the file


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)


def test_only_left_behind_files_of_this_index_are_removed(tmp_path: Path) -> None:
    index = str(tmp_path / "s.db.oamvec")
    alive = _sleeper()
    try:
        live_fresh = Path(f"{index}.tmp-{alive.pid}-1")  # a live process's, recent
        live_old = Path(f"{index}.tmp-{alive.pid}-2")  # its pid reused: old
        other_store = tmp_path / f"s.db.alt.oamvec.tmp-{2**22 + 7}-1"
        not_ours = Path(f"{index}.tmp-x")
        dead = _sleeper()
        dead.communicate(b"")  # ended and reaped: its pid is free
        dead_file = Path(f"{index}.tmp-{dead.pid}-3")
        for f in (live_fresh, live_old, other_store, not_ours, dead_file):
            f.write_bytes(b"x" * 100)
        hour_ago = time.time() - indexfile.STALE_TMP_S - 60
        os.utime(live_old, (hour_ago, hour_ago))
        removed = indexfile.remove_stale(index)
    finally:
        alive.communicate(b"")
    assert sorted(removed) == sorted([str(live_old), str(dead_file)])
    assert live_fresh.exists() and other_store.exists() and not_ours.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file locks")
def test_a_file_whose_writer_holds_its_lock_is_kept_whatever_its_age(tmp_path: Path) -> None:
    index = str(tmp_path / "s.db.oamvec")
    tmp = f"{index}.tmp-{2**22 + 9}-1"  # a process id no process has here
    with indexfile._claimed(tmp):
        hour_ago = time.time() - indexfile.STALE_TMP_S - 60
        os.utime(tmp, (hour_ago, hour_ago))
        assert indexfile.remove_stale(index) == []
        assert os.path.exists(tmp)
    assert indexfile.remove_stale(index) == [tmp]
