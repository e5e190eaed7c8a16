"""The embedded store's vector index (oam_core/store/sqlite/vector/): processes sharing
one file, kill -9 mid-write, an unusable index file, no ANN library, the version-1
schema upgrade. Every check compares search results with a brute-force ranking of the
rows SQLite holds."""

from __future__ import annotations

import json
import os
import shutil
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
from oam_core.store.sqlite.schema import SCHEMA_VERSION
from oam_core.store.sqlite.vector import changelog, ivf, ranking
from oam_core.store.sqlite.vector.mirror import LiveRows, Mirror
from tests.small_index import brute_force, ids, open_store

DIM = 8
ROOT = Path(__file__).resolve().parents[2]

# A child process: lowers the index thresholds (so the ANN path and the index file are
# used), then runs the JSON commands given on stdin, printing one line per command.
CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from oam_core import SQLiteMemoryStore
    from oam_core.store.sqlite.vector import builds, ranking
    builds.ANN_MIN_ROWS, ranking.EXACT_MAX = 8, 4
    store = SQLiteMemoryStore(sys.argv[1], vector_dim=8)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "add":
            for start in range(cmd["start"], cmd["stop"], cmd["batch"]):
                stop = min(start + cmd["batch"], cmd["stop"])
                vecs = np.random.default_rng(start).standard_normal((stop - start, 8))
                store.add([f"t{i}" for i in range(start, stop)], "memory",
                          embeddings=list(vecs.astype(np.float32)),
                          record_ids=[f"r{i}" for i in range(start, stop)],
                          user_ids=[f"u{i % 3}" for i in range(start, stop)])
                print("committed", stop, flush=True)
        elif cmd["op"] == "delete":
            for rid in cmd["ids"]:
                store.delete("memory", rid)
            print("deleted", flush=True)
        elif cmd["op"] == "expire":
            store.update("memory", cmd["id"], ttl_days=0)
            print("expired", flush=True)
        elif cmd["op"] == "search":
            hits = store.search(query_vector=cmd["q"], k=cmd["k"])
            print(json.dumps([r.id for r, _ in hits]), flush=True)
        elif cmd["op"] == "reopen":  # closing writes the index file
            store.close()
            store = SQLiteMemoryStore(sys.argv[1], vector_dim=8)
            print("reopened", flush=True)
        elif cmd["op"] == "close":
            store.close()
            print("closed", flush=True)
    """
)


def child(path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def ask(proc: subprocess.Popen[str], **cmd: Any) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(cmd) + "\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


QUERIES = np.random.default_rng(99).standard_normal((5, DIM)).astype(np.float32)


def test_two_processes_write_and_search_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    store = open_store(path)
    other = child(path)
    try:
        assert ask(other, op="add", start=0, stop=60, batch=20) == "committed 20"
        other.stdout.readline(), other.stdout.readline()  # type: ignore[union-attr]
        for q in QUERIES:  # this process builds its index from the other's rows
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert store._impl.index.ann is not None
        store.add(
            [f"mine {i}" for i in range(20)],
            "memory",
            embeddings=list(np.random.default_rng(7).standard_normal((20, DIM)).astype(np.float32)),
            record_ids=[f"m{i}" for i in range(20)],
        )
        for q in QUERIES:  # the other process sees this one's adds
            assert json.loads(ask(other, op="search", q=q.tolist(), k=10)) == brute_force(
                path, q, 10
            )
        top = ids(store, QUERIES[0], 5)
        assert ask(other, op="delete", ids=top[:3]) == "deleted"
        assert ask(other, op="expire", id=top[3]) == "expired"
        after = ids(store, QUERIES[0], 5)
        assert not set(top[:4]) & set(after)
        assert after == brute_force(path, QUERIES[0], 5)
        assert ask(other, op="add", start=100, stop=130, batch=30) == "committed 130"
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
    finally:
        other.communicate(json.dumps({"op": "close"}) + "\n", timeout=60)
        store.close()


def test_kill_9_during_bulk_add_leaves_a_consistent_index(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    proc = child(path)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"op": "add", "start": 0, "stop": 40, "batch": 40}) + "\n")
    proc.stdin.write(json.dumps({"op": "search", "q": QUERIES[0].tolist(), "k": 3}) + "\n")
    proc.stdin.write(json.dumps({"op": "reopen"}) + "\n")
    proc.stdin.write(json.dumps({"op": "add", "start": 40, "stop": 20000, "batch": 500}) + "\n")
    proc.stdin.flush()
    try:
        assert proc.stdout.readline().strip() == "committed 40"
        proc.stdout.readline(), proc.stdout.readline()
        assert proc.stdout.readline().startswith("committed")  # bulk add under way
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert (tmp_path / "killed.db.oamvec").exists()
    store = open_store(path)
    try:
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        with sqlite3.connect(path) as conn:
            held = conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 1").fetchone()[0]
        index = store._impl.index
        assert index.ann is not None and index.mirror.n - index.mirror.n_dead == held
    finally:
        store.close()


def build_index_file(path: Path, n: int = 60, seed: int = 0) -> None:
    store = open_store(path)
    vecs = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    store.add(
        [f"t{i}" for i in range(n)],
        "memory",
        embeddings=list(vecs),
        record_ids=[f"r{i}" for i in range(n)],
    )
    store.search(query_vector=list(QUERIES[0]), k=3)
    store.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "other-dimension"])
def test_unusable_index_file_is_rebuilt_with_a_warning(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "s.db"
    build_index_file(path)
    index_file = tmp_path / "s.db.oamvec"
    data = index_file.read_bytes()
    if damage == "garbage":
        index_file.write_bytes(data[:100] + b"\x00garbage\x00" + data[110:])
    elif damage == "truncated":
        index_file.write_bytes(data[: len(data) // 2])
    elif damage == "foreign":  # another store's index, same dimension and keys
        build_index_file(tmp_path / "other.db", seed=1)
        shutil.copy(tmp_path / "other.db.oamvec", index_file)
    else:
        length = int.from_bytes(data[-16:-8], "little")  # JSON trailer, length, magic
        trailer = json.loads(data[-16 - length : -16])
        trailer["dim"] = 16
        new = json.dumps(trailer).encode()
        index_file.write_bytes(
            data[: -16 - length] + new + len(new).to_bytes(8, "little") + data[-8:]
        )
    store = open_store(path)
    try:
        with pytest.warns(RuntimeWarning, match="is not usable"):
            first = ids(store, QUERIES[0], 10)
        assert first == brute_force(path, QUERIES[0], 10)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for q in QUERIES:
                assert ids(store, q, 10) == brute_force(path, q, 10)
    finally:
        store.close()
    store = open_store(path)  # the rebuilt file is valid again: no warning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert ids(store, QUERIES[1], 10) == brute_force(path, QUERIES[1], 10)
        assert store._impl.index.ann is not None
    finally:
        store.close()


def test_without_the_ann_library_search_is_exact_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ivf, "load_faiss", lambda: None)
    monkeypatch.setattr(ivf, "_warned", set())
    path = tmp_path / "s.db"
    store = open_store(path)
    vecs = np.random.default_rng(3).standard_normal((50, DIM)).astype(np.float32)
    store.add(["x"] * 50, "memory", embeddings=list(vecs), record_ids=[f"r{i}" for i in range(50)])
    try:
        with pytest.warns(RuntimeWarning, match="faiss-cpu is not installed"):
            assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            store.add(["y"], "memory", embeddings=[vecs[0]], record_ids="extra")
            for q in QUERIES:
                assert ids(store, q, 10) == brute_force(path, q, 10)
        assert store._impl.index.ann is None
    finally:
        store.close()
    assert not (tmp_path / "s.db.oamvec").exists()


def test_version_1_file_is_upgraded_and_text_is_indexed_once(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    store = SQLiteMemoryStore(str(path), search_strategy="KEYWORD")
    store.add(["old pizza"], "memory", record_ids="old")
    store.close()
    with sqlite3.connect(path) as conn:  # turn it back into a version-1 file
        conn.executescript(
            """
            DROP TRIGGER chunks_log_delete; DROP TRIGGER chunks_log_update;
            DROP TABLE chunk_changes;
            CREATE TRIGGER chunks_ai AFTER INSERT ON chunks WHEN new.text IS NOT NULL BEGIN
              INSERT INTO chunks_fts (rowid, text) VALUES (new.pk, new.text); END;
            UPDATE oam_meta SET value = '1' WHERE key = 'schema_version';
            """
        )
    store = SQLiteMemoryStore(str(path), search_strategy="KEYWORD")
    try:
        store.add(["new pizza"], "memory", record_ids="new")
        assert sorted(r.id for r, _ in store.search("pizza", 5)) == ["new", "old"]
        conn = store._impl.conn
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "chunks_ai" not in names and "chunk_changes" in names
        fts_rows = conn.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
        assert fts_rows == 2
        version = conn.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'")
        assert int(version.fetchone()[0]) == SCHEMA_VERSION
    finally:
        store.close()


@pytest.mark.parametrize("selected_max", [0, ranking.SELECTED_EXACT_MAX])
def test_scoped_and_filtered_searches_are_exact_on_a_large_candidate_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, selected_max: int
) -> None:
    """Candidates above ``exact_max`` use the ANN index; the masks still apply before
    the top-k cut and every user gets k results (here IVF probes every list). Up to
    ``SELECTED_EXACT_MAX`` candidates that a scope or filter selected rank exactly,
    never through the index's proposals."""
    monkeypatch.setattr(ranking, "SELECTED_EXACT_MAX", selected_max)
    calls: list[int] = []
    approximate = ranking.approximate

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return approximate(*args, **kwargs)

    monkeypatch.setattr(ranking, "approximate", counting)
    store = open_store(tmp_path / "s.db")
    rng = np.random.default_rng(5)
    n = 300
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    store.add(
        [f"t{i}" for i in range(n)],
        "memory",
        embeddings=list(vecs),
        record_ids=[f"r{i}" for i in range(n)],
        user_ids=[f"u{i % 7}" for i in range(n)],
        metadata=[{"even": i % 2 == 0} for i in range(n)],
    )
    try:
        for q in QUERIES:
            sims = vecs @ q / np.linalg.norm(vecs, axis=1)
            for user in ("u0", "u3"):
                rows = [i for i in range(n) if f"u{i % 7}" == user and i % 2 == 0]
                want = [f"r{rows[j]}" for j in np.argsort(-sims[rows], kind="stable")[:10]]
                got = store.search(
                    query_vector=list(q),
                    k=10,
                    user_id=user,
                    exact_user_match=True,
                    metadata_filter={"even": True},
                )
                assert [r.id for r, _ in got] == want
        assert store._impl.index.ann is not None
        assert len(calls) == (len(QUERIES) * 2 if selected_max == 0 else 0)
    finally:
        store.close()


# -- the index file as a snapshot of the mirror -----------------------------------------


def add_random(store: SQLiteMemoryStore, start: int, stop: int, seed: int = 0) -> None:
    vecs = np.random.default_rng(seed + start).standard_normal((stop - start, DIM))
    store.add(
        [f"t{i}" for i in range(start, stop)],
        "memory",
        embeddings=list(vecs.astype(np.float32)),
        record_ids=[f"r{i}" for i in range(start, stop)],
        user_ids=[f"u{i % 3}" for i in range(start, stop)],
    )


def test_reopening_reads_the_snapshot_and_catches_up_with_later_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    build_index_file(path, n=200)
    other = SQLiteMemoryStore(str(path))  # writes after the snapshot, from elsewhere
    other.delete("memory", "r5")
    other.update("memory", "r6", ttl_days=0)
    add_random(other, 200, 230)
    other.close()
    loaded: list[int] = []
    load_rows = changelog.ChangeLog._load_rows

    def counting(self: Any, conn: sqlite3.Connection, after: int) -> None:
        loaded.append(after)
        load_rows(self, conn, after)

    monkeypatch.setattr(changelog.ChangeLog, "_load_rows", counting)
    store = open_store(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for q in QUERIES:
                assert ids(store, q, 10) == brute_force(path, q, 10)
        index = store._impl.index
        assert index.file.saved is not None
        assert loaded == [index.file.saved[0]] and index.file.saved[0] >= 200  # only the new rows
        assert (
            index.ann is not None and index.mirror.n - index.mirror.n_dead == 230 - 1
        )  # r6 expired, not gone
        found = {r.id for r, _ in store.search(query_vector=list(QUERIES[0]), k=300)}
        assert "r5" not in found and "r6" not in found and "r229" in found
    finally:
        store.close()


def test_a_snapshot_the_change_log_no_longer_reaches_is_reloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oam_core.store.sqlite import backend as sqlite_backend

    path = tmp_path / "s.db"
    build_index_file(path, n=200)
    monkeypatch.setattr(sqlite_backend, "LOG_KEEP", 2)  # writers keep 2 log rows
    other = SQLiteMemoryStore(str(path))
    for rid in ("r1", "r2", "r3", "r4"):
        other.delete("memory", rid)
    other.close()
    store = open_store(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # its ANN index is checked and kept: no warning
            for q in QUERIES:
                assert ids(store, q, 10) == brute_force(path, q, 10)
        index = store._impl.index
        assert index.ann is not None and index.mirror.n - index.mirror.n_dead == 196
    finally:
        store.close()


def test_a_snapshot_ahead_of_the_database_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    build_index_file(path, n=60)
    shutil.copy(path, tmp_path / "old.db")  # the database as it was
    store = open_store(path)
    add_random(store, 60, 90)
    store.search(query_vector=list(QUERIES[0]), k=3)
    ann = store._impl.index.ann
    assert ann is not None
    ann.rebuilt = True  # force the rewrite at close
    store.close()
    shutil.copy(tmp_path / "old.db", path)  # a restored backup with the newer index file
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"s.db{suffix}").unlink(missing_ok=True)
    store = open_store(path)
    try:
        with pytest.warns(RuntimeWarning, match="ahead of the database"):
            assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
    finally:
        store.close()


def test_a_snapshot_whose_rows_differ_from_the_database_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    build_index_file(path, n=60)
    with sqlite3.connect(path) as conn:  # an edit the change log cannot explain
        conn.execute("DROP TRIGGER chunks_log_update")
        conn.execute("UPDATE chunks SET user_id = 'someone'")
    store = open_store(path)
    try:
        with pytest.warns(RuntimeWarning, match="is not usable"):
            first = store.search(
                query_vector=list(QUERIES[0]), k=60, user_id="someone", exact_user_match=True
            )
        assert len(first) == 60
    finally:
        store.close()


def test_closing_rewrites_the_file_only_when_it_is_far_behind(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    build_index_file(path, n=400)
    index_file = tmp_path / "s.db.oamvec"
    written = index_file.stat().st_mtime_ns
    store = open_store(path)
    add_random(store, 400, 405)  # 5 of 405 rows: under SAVE_SHARE
    assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
    store.close()
    assert index_file.stat().st_mtime_ns == written
    store = open_store(path)
    add_random(store, 405, 460)
    assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
    store.close()
    assert index_file.stat().st_mtime_ns != written
    store = open_store(path)
    try:
        assert store._impl.index.file.saved is None  # not searched yet
        assert ids(store, QUERIES[1], 10) == brute_force(path, QUERIES[1], 10)
        assert store._impl.index.file.saved == (
            store._impl.index.mirror.hwm,
            store._impl.index.mirror.cursor,
        )
    finally:
        store.close()


# -- building in the background -----------------------------------------------------------


def test_searches_are_exact_while_the_index_builds_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build is held at its first slice (the interleaving is injected, not slept
    for); meanwhile searches rank exactly and writes go on; the finished index is
    adopted by the next search with those writes applied."""
    import threading

    started, release = threading.Event(), threading.Event()
    build = ivf.Ann._build.__func__  # type: ignore[attr-defined]

    def held(cls: Any, faiss: Any, source: Any, rng: Any, stop: Any) -> Any:
        rows_after = source.rows_after

        def slow(pk: int, limit: int) -> Any:
            started.set()
            release.wait(60)
            return rows_after(pk, limit)

        source.rows_after = slow
        return build(cls, faiss, source, rng, stop)

    monkeypatch.setattr(ivf.Ann, "_build", classmethod(held))
    path = tmp_path / "s.db"
    store = open_store(path)
    store._impl.index.background_rows = 8
    try:
        add_random(store, 0, 300)
        assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
        assert started.wait(60)
        index = store._impl.index
        assert index.ann is None and index.builds.thread is not None
        store.delete("memory", "r7")
        add_random(store, 300, 340)
        for q in QUERIES:  # exact meanwhile, with the new writes
            assert ids(store, q, 10) == brute_force(path, q, 10)
        release.set()
        assert index.wait_for_build(60)
        for q in QUERIES:  # adopted: rows deleted and added during the build applied
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert index.ann is not None and index.builds.thread is None
        held_pks = set(index.ann.ids().tolist())
        mirror = index.mirror
        live = set(mirror.pks[: mirror.n][mirror.live[: mirror.n]].tolist())
        assert held_pks == live
    finally:
        release.set()
        store.close()


def test_closing_stops_a_background_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build waits at its first slice until it is told to stop; closing the store
    tells it, waits for the thread, and writes nothing."""
    import threading

    started = threading.Event()
    results: list[Any] = []
    rows_after = LiveRows.rows_after
    build = ivf.Ann.build.__func__  # type: ignore[attr-defined]

    def waiting(self: Any, pk: int, limit: int) -> Any:
        started.set()
        store._impl.index.builds._stop.wait(60)  # set by close(); else the build goes on after 60 s
        return rows_after(self, pk, limit)

    def recorded(cls: Any, *args: Any, **kwargs: Any) -> Any:
        results.append(build(cls, *args, **kwargs))
        return results[-1]

    monkeypatch.setattr(LiveRows, "rows_after", waiting)
    monkeypatch.setattr(ivf.Ann, "build", classmethod(recorded))
    path = tmp_path / "s.db"
    store = open_store(path)
    store._impl.index.background_rows = 8
    add_random(store, 0, 300)
    assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
    assert started.wait(60)
    store.close()
    assert results == [None]  # the build stopped instead of finishing
    assert store._impl.index.builds.thread is None and store._impl.index.ann is None
    assert not (tmp_path / "s.db.oamvec").exists()


# -- calibration --------------------------------------------------------------------------


def test_calibration_probes_few_lists_on_clustered_data_and_none_on_noise() -> None:
    import faiss

    class Source:
        def __init__(self, mat: np.ndarray) -> None:
            self.mat, self.pks = mat, np.arange(1, len(mat) + 1, dtype=np.int64)

        def live_count(self) -> int:
            return len(self.mat)

        def sample(self, m: int, rng: np.random.Generator) -> Any:
            pick = rng.choice(len(self.mat), m, replace=False)
            return self.mat[pick], self.pks[pick]

        def rows_after(self, pk: int, limit: int) -> Any:
            rows = self.pks[pk : pk + limit] - 1
            return self.mat[rows], self.pks[rows], int(self.pks[rows[-1]]) if len(rows) else pk

        def vectors(self, pks: np.ndarray) -> Any:
            found = (pks >= 1) & (pks <= len(self.mat))
            out = np.zeros((len(pks), self.mat.shape[1]), np.float32)
            out[found] = self.mat[pks[found] - 1]
            return out, found

    rng = np.random.default_rng(0)
    n, dim = 20_000, 128
    centres = rng.standard_normal((200, dim))  # the peer workload's shape, 128-d
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    clustered = centres[rng.integers(0, 200, n)] + 0.05 * rng.standard_normal((n, dim))
    noise = rng.standard_normal((n, dim))
    for data, clusters in ((clustered, True), (noise, False)):
        mat = (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)
        ann = ivf.Ann.build(faiss, Source(mat), np.random.default_rng(1))
        assert ann is not None and ann.index.ntotal == n
        if clusters:
            assert ivf.MIN_PROBES <= ann.nprobe <= ann.index.nlist // 4
        else:
            assert ann.nprobe == 0  # no probe count reaches the target: rank exactly


def test_an_index_that_misses_the_recall_target_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ivf.Calibration, "probes", lambda self, index, source: (0, 0))
    path = tmp_path / "s.db"
    store = open_store(path)
    store._impl.index.exact_max = 0
    try:
        add_random(store, 0, 400)
        exact = ranking.exact
        calls: list[int] = []

        def counted(*a: Any) -> Any:
            calls.append(1)
            return exact(*a)

        monkeypatch.setattr(ranking, "exact", counted)
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert store._impl.index.ann is not None and store._impl.index.ann.nprobe == 0
        assert len(calls) == len(QUERIES)
    finally:
        store.close()
    store = open_store(path)  # the verdict is kept in the file
    try:
        assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
        assert store._impl.index.ann is not None and store._impl.index.ann.nprobe == 0
    finally:
        store.close()


# -- data that moves -----------------------------------------------------------------------


def _clusters(n: int, seed: int, dim: int = 64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, dim))
    return (centres[rng.integers(0, 200, n)] + 0.5 * rng.standard_normal((n, dim))).astype(
        np.float32
    )


def _recall(
    store: SQLiteMemoryStore, mat: np.ndarray, ids_: list[str], queries: np.ndarray
) -> float:
    unit = mat / np.linalg.norm(mat, axis=1, keepdims=True)
    hits = 0
    for q in queries:
        truth = {ids_[j] for j in np.argsort(-(unit @ (q / np.linalg.norm(q))))[:10]}
        hits += len(truth & {r.id for r, _ in store.search(query_vector=q, k=10)})
    return hits / (10 * len(queries))


@pytest.mark.parametrize("shifted", [True, False])
def test_rows_from_new_data_added_after_the_build_keep_recall(
    tmp_path: Path, shifted: bool
) -> None:
    """An index trained on one distribution misses rows of another added later (recall
    0.69 before this check); the growth check retrains it, and only when needed."""
    n = 20_000
    first = _clusters(n, 1)
    later = _clusters(n, 2 if shifted else 1)[::-1].copy()
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), vector_dim=64, search_strategy="VECTOR")
    try:
        ix = store._impl.index
        store.add(
            ["a"] * n, "memory", embeddings=list(first), record_ids=[f"a{i}" for i in range(n)]
        )
        assert ix.wait_for_build(60)  # the bulk write started the build in the background
        store.search(query_vector=first[0], k=10)
        assert ix.ann is not None and ix.ann.nprobe and ix.ann.trained_on == n
        store.add(["b"] * n, "memory", embeddings=later, record_ids=[f"b{i}" for i in range(n)])
        assert ix.wait_for_build(60)  # the rows assigned to the lists in the background
        store.search(query_vector=first[0], k=10)
        rng = np.random.default_rng(0)
        queries = later[rng.integers(0, n, 30)] + 0.2 * rng.standard_normal((30, 64))
        names = [f"a{i}" for i in range(n)] + [f"b{i}" for i in range(n)]
        assert _recall(store, np.vstack([first, later]), names, queries) >= 0.98
        assert ix.ann is not None and ix.ann.checked_on in (n, 2 * n)
        assert ix.ann.trained_on == (2 * n if shifted else n)  # retrained only when needed
    finally:
        store.close()


# -- memory of the build and key lookups ----------------------------------------------------


class _Rows:
    """An ``ivf.RowSource`` over a matrix; ``between_passes`` runs once, when the
    build has read every row the first time (a writer adding and deleting rows)."""

    def __init__(self, mat: np.ndarray, between_passes: Any = None) -> None:
        self.mat = mat
        self.pks = np.arange(1, len(mat) + 1, dtype=np.int64) * 2  # keys with gaps
        self.live = np.ones(len(mat), bool)
        self.between_passes = between_passes

    def live_count(self) -> int:
        return int(self.live.sum())

    def sample(self, m: int, rng: np.random.Generator) -> Any:
        rows = np.flatnonzero(self.live)
        pick = rows[rng.choice(len(rows), m, replace=False)]
        return self.mat[pick], self.pks[pick]

    def rows_after(self, pk: int, limit: int) -> Any:
        start = int(np.searchsorted(self.pks, pk, side="right"))
        stop = min(len(self.pks), start + limit)
        if start >= stop:
            if self.between_passes is not None:
                hook, self.between_passes = self.between_passes, None
                hook(self)
            return np.zeros((0, self.mat.shape[1]), np.float32), np.zeros(0, np.int64), pk
        rows = np.flatnonzero(self.live[start:stop]) + start
        return self.mat[rows].copy(), self.pks[rows].copy(), int(self.pks[stop - 1])

    def vectors(self, pks: np.ndarray) -> Any:
        pos = np.minimum(np.searchsorted(self.pks, pks), len(self.pks) - 1)
        found = (self.pks[pos] == pks) & self.live[pos]
        out = np.zeros((len(pks), self.mat.shape[1]), np.float32)
        out[found] = self.mat[pos[found]]
        return out, found


def _unit_clusters(n: int, seed: int, dim: int = 32) -> np.ndarray:
    data = _clusters(n, seed, dim)
    unit: np.ndarray = (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _lists(index: Any) -> list[tuple[list[int], bytes]]:
    import faiss

    inv = index.invlists
    out = []
    for i in range(inv.nlist):
        size = inv.list_size(i)
        ids_ = faiss.rev_swig_ptr(inv.get_ids(i), size).tolist() if size else []
        codes = bytes(faiss.rev_swig_ptr(inv.get_codes(i), size * inv.code_size)) if size else b""
        out.append((ids_, codes))
    return out


def test_the_two_pass_build_fills_the_lists_as_faiss_own_add_does() -> None:
    """Rows are assigned first and added to pre-sized lists second: the lists hold the
    same keys and codes, in the same order, as faiss's ``add_with_ids`` gives."""
    import faiss

    source = _Rows(_unit_clusters(6_000, 3))
    ann = ivf.Ann.build(faiss, source, np.random.default_rng(0))
    assert ann is not None and ann.index.ntotal == 6_000
    reference = faiss.clone_index(ann.index)
    reference.reset()  # keeps the trained lists
    reference.add_with_ids(ivf.encode(source.mat, ann.scale), source.pks)
    assert _lists(ann.index) == _lists(reference)
    assert ann.hwm == int(source.pks[-1])


def test_rows_written_or_deleted_between_the_build_passes_are_handled() -> None:
    import faiss

    first = _unit_clusters(3_000, 4)
    later = _unit_clusters(500, 5)

    def writer(src: _Rows) -> None:  # after pass 1: 500 rows added, 300 deleted
        src.mat = np.vstack([src.mat, later])
        src.pks = np.concatenate([src.pks, src.pks[-1] + 2 * np.arange(1, 501)])
        src.live = np.concatenate([src.live, np.ones(500, bool)])
        src.live[100:400] = False

    source = _Rows(first, writer)
    ann = ivf.Ann.build(faiss, source, np.random.default_rng(0))
    assert ann is not None
    live = source.pks[source.live]
    assert sorted(ann.ids().tolist()) == live.tolist()
    _, want = ann.index.quantizer.search(ivf.encode(source.mat[source.live], ann.scale), 1)
    inv = ann.index.invlists
    got = {}
    for i in range(inv.nlist):
        for key in faiss.rev_swig_ptr(inv.get_ids(i), inv.list_size(i)).tolist():
            got[key] = i
    assert [got[int(k)] for k in live] == want[:, 0].tolist()  # each row in its own list
    assert ann.hwm == int(source.pks[-1])


def test_codes_are_rounded_scaled_vectors_clipped_to_the_signed_byte_range() -> None:
    import faiss

    rows = np.array([[0.1, -0.2, 0.05, 0.0], [0.3, 0.0, -0.01, 0.02]], np.float32)
    scale = ivf.code_scale(rows)
    assert scale == pytest.approx(127 / np.quantile([0.2, 0.3], ivf.SCALE_QUANTILE))
    assert ivf.code_scale(np.zeros((3, 4), np.float32)) == 1.0
    assert ivf.code_scale(np.zeros((0, 4), np.float32)) == 1.0
    coded = ivf.encode(np.array([[0.3, -0.3, 0.0049, 2.0]], np.float32), 100.0)
    assert coded.tolist() == [[30.0, -30.0, 0.0, 127.0]]  # rounded; 200 clipped, not wrapped
    sq = faiss.ScalarQuantizer(4, faiss.ScalarQuantizer.QT_8bit_direct_signed)
    assert sq.decode(sq.compute_codes(coded)).tolist() == coded.tolist()  # faiss keeps them


def test_an_index_file_of_format_2_or_of_another_index_kind_is_not_trusted(
    tmp_path: Path,
) -> None:
    """A format-2 file (4-bit residual codes) and a file claiming format 3 whose faiss
    index has other codes are both refused: the store rebuilds them (with a warning)."""
    import faiss

    from oam_core.store.sqlite.vector import file as indexfile

    path = tmp_path / "s.db"
    build_index_file(path, n=400)
    index_file = str(tmp_path / "s.db.oamvec")
    snap = indexfile.read(index_file, DIM, faiss)
    assert snap.ann is not None and snap.ann.scale > 1.0
    assert ivf.is_own_kind(faiss, snap.ann.index)
    data = Path(index_file).read_bytes()
    length = int.from_bytes(data[-16:-8], "little")
    trailer = json.loads(data[-16 - length : -16])
    old = dict(trailer, format=2)
    old_bytes = json.dumps(old).encode()
    Path(index_file).write_bytes(
        data[: -16 - length] + old_bytes + len(old_bytes).to_bytes(8, "little") + data[-8:]
    )
    with pytest.raises(ValueError, match="format 2"):
        indexfile.read(index_file, DIM, faiss)
    four_bit = faiss.IndexIVFScalarQuantizer(
        faiss.IndexFlatIP(DIM), DIM, 4, faiss.ScalarQuantizer.QT_4bit, faiss.METRIC_INNER_PRODUCT
    )
    vecs = np.random.default_rng(0).standard_normal((400, DIM)).astype(np.float32)
    four_bit.train(vecs)
    four_bit.add(vecs)
    snap.ann.index = four_bit
    snap.ann.unfilled = None
    with pytest.MonkeyPatch.context() as patch:  # a format holding the codes
        patch.setattr(indexfile, "FORMAT_VERSION", indexfile.CODES_VERSION)
        patch.setattr(indexfile, "_COLUMNS", indexfile._CODES_COLUMNS)
        assert indexfile.write(index_file, snap, faiss)
    with pytest.raises(ValueError, match="another kind"):
        indexfile.read(index_file, DIM, faiss)
    store = open_store(path)
    try:
        with pytest.warns(RuntimeWarning, match="is not usable"):
            assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
    finally:
        store.close()


def test_format_6_stores_the_columns_compressed_and_reads_them_back(tmp_path: Path) -> None:
    """The columns of a format-6 file are compressed (the keys as differences) and read
    back equal, with keys that skip, decrease in step and reach past 2**32; the file
    holds no float32 vector and no IVF code, only each row's list."""
    import faiss

    from oam_core.store.sqlite.vector import file as indexfile

    path = tmp_path / "s.db"
    build_index_file(path, n=400)
    index_file = str(tmp_path / "s.db.oamvec")
    snap = indexfile.read(index_file, DIM, faiss)
    assert snap.mat is None and snap.n == 400
    snap.pks = np.cumsum(np.arange(1, 401, dtype=np.int64) ** 3) + 2**33  # ascending, sparse
    snap.rec = np.arange(400, dtype=np.int64)[::-1].copy()  # descending: negative steps
    snap.expires = np.where(np.arange(400) % 7 == 0, 1.8e9 + np.arange(400), np.inf)
    assert indexfile.write(index_file, snap, faiss)
    again = indexfile.read(index_file, DIM, faiss)
    for name in ("pks", "rec", "expires", "vfrom", "vuntil"):
        assert np.array_equal(getattr(again, name), getattr(snap, name)), name
        assert getattr(again, name).flags.writeable
    for name, codes in snap.columns.items():
        assert np.array_equal(again.columns[name], codes), name
    data = Path(index_file).read_bytes()
    length = int.from_bytes(data[-16:-8], "little")
    trailer = json.loads(data[-16 - length : -16])
    assert trailer["format"] == 6 and "mat" not in [s[0] for s in trailer["sections"]]
    assert {s[5] for s in trailer["sections"]} == {"zlib", "delta+zlib"}
    assert sum(s[2] for s in trailer["sections"]) < 400 * 8 * 5  # less than the raw columns


def _mirror(keys: list[int], dim: int = 4) -> Mirror:
    ix = Mirror()
    vec = np.ones(dim, "<f4").tobytes()
    rows = [(k, k, "memory", None, "u", None, None, None, None, vec) for k in keys]
    for a in range(0, len(rows), 7):  # appended in batches, like a catch-up
        ix.append(rows[a : a + 7])
    return ix


def _searched(ix: Mirror, keys: np.ndarray) -> list[int]:
    have = ix.pks[: ix.n]
    pos = np.minimum(np.searchsorted(have, keys), ix.n - 1)
    rows: list[int] = np.where(have[pos] == keys, pos, -1).tolist()
    return rows


def test_key_lookup_table_gives_the_rows_a_binary_search_gives() -> None:
    keys = [3, 4, 5, 9, 10, 11, 12, 20, 21, 40]
    ix = _mirror(keys)
    assert ix._slots is not None and ix._slot_base == 3
    probe = np.array([0, 2, 3, 4, 6, 9, 12, 13, 20, 39, 40, 41, 1000, -5], np.int64)
    assert ix.rows_of(probe).tolist() == _searched(ix, probe)
    assert ix.rows_of(probe).tolist()[:4] == [-1, -1, 0, 1]
    ix.live[[1, 4, 7]] = False  # deleted, then compacted: rows move
    ix.n_dead = 3
    ix.compact()
    assert ix.pks[: ix.n].tolist() == [3, 5, 9, 11, 12, 21, 40]
    assert ix.rows_of(probe).tolist() == _searched(ix, probe)
    assert ix.rows_of(np.array([21, 4], np.int64)).tolist() == [5, -1]


def test_sparse_keys_fall_back_to_a_binary_search_and_come_back() -> None:
    keys = [1, 2, *range(10_000, 10_020)]  # span 10,020 > 4 x 22 + 1024
    ix = _mirror(keys)
    assert ix._slots is None
    probe = np.array([1, 2, 3, 9_999, 10_000, 10_019, 10_020], np.int64)
    assert ix.rows_of(probe).tolist() == _searched(ix, probe) == [0, 1, -1, -1, 2, 21, -1]
    ix.live[:2] = False  # the two far keys are deleted: dense again after compaction
    ix.n_dead = 2
    ix.compact()
    assert ix._slots is not None and ix._slot_base == 10_000
    assert ix.rows_of(probe).tolist() == _searched(ix, probe) == [-1, -1, -1, -1, 0, 19, -1]
