"""The vector index following bulk writes (oam_core/store/sqlite/vector/feed.py,
tail.py, builds.py; docs/sqlite.md#how-a-search-is-ranked): the writer hands its new
chunks to the mirror, the ANN index takes the rows written after it in a background
thread while searches rank them exactly, and a process killed (kill -9) during a
background rebuild leaves a store that reopens with every acknowledged record
searchable and an index holding every live chunk.

Every check compares search results with a brute-force ranking of the rows SQLite
holds; the interleavings are injected (events), not slept for."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.vector import builds, feed, ivf, split, tail
from oam_core.store.sqlite.vector.mirror import Mirror
from tests.small_index import brute_force, ids

DIM = 8
ROOT = Path(__file__).resolve().parents[2]
QUERIES = np.random.default_rng(99).standard_normal((5, DIM)).astype(np.float32)


def open_store(
    path: Path, *, ann_min_rows: int = 8, background_rows: int | None = None
) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(str(path), vector_dim=DIM)
    store._impl.index.ann_min_rows = ann_min_rows
    if background_rows is not None:  # writes build from there
        store._impl.index.background_rows = background_rows
        store._impl.index.builds.write_builds = True
    store._impl.index.exact_max = 4
    return store


def add(store: SQLiteMemoryStore, start: int, stop: int) -> None:
    vecs = np.random.default_rng(start).standard_normal((stop - start, DIM)).astype(np.float32)
    store.add(
        [f"t{i}" for i in range(start, stop)],
        "memory",
        embeddings=vecs,
        record_ids=[f"r{i}" for i in range(start, stop)],
        user_ids=[f"u{i % 3}" for i in range(start, stop)],
        ttl_days=[None if i % 5 else 30 for i in range(start, stop)],
    )


def live_keys(mirror: Mirror) -> set[int]:
    return set(mirror.pks[: mirror.n][mirror.live[: mirror.n]].tolist())


def test_a_bulk_write_feeds_the_mirror_the_rows_sqlite_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first bulk write into a new store loads the mirror, the next ones append
    their rows without reading them back; the arrays equal a mirror read from SQLite."""
    path = tmp_path / "s.db"
    store = open_store(path, ann_min_rows=10**9)
    try:
        add(store, 0, feed.FOLLOW_ROWS)
        mirror = store._impl.index.mirror
        assert mirror.n == feed.FOLLOW_ROWS  # loaded by the write, no search yet
        loads: list[int] = []
        load_rows = store._impl.index.log._load_rows
        monkeypatch.setattr(
            store._impl.index.log, "_load_rows", lambda c, a: (loads.append(a), load_rows(c, a))
        )
        add(store, feed.FOLLOW_ROWS, feed.FOLLOW_ROWS + 300)
        add(store, feed.FOLLOW_ROWS + 300, feed.FOLLOW_ROWS + 301)  # a one-record write
        assert mirror.n == feed.FOLLOW_ROWS + 301
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert loads == []  # nothing read back from SQLite
        other = open_store(path, ann_min_rows=10**9)
        try:
            other._impl.index.file.path = None  # read every row from SQLite
            ids(other, QUERIES[0], 3)
            read = other._impl.index.mirror
            n = mirror.n
            assert read.n == n
            for name in ("pks", "rec", "expires", "vfrom", "vuntil", "mat"):
                assert np.array_equal(getattr(read, name)[:n], getattr(mirror, name)[:n]), name
            for scope in ("thread", "user", "agent", "types"):
                table, table_read = (
                    (mirror.types, read.types)
                    if scope == "types"
                    else (mirror.codes[scope], read.codes[scope])
                )
                codes, codes_read = (
                    (mirror.rtype, read.rtype)
                    if scope == "types"
                    else (mirror.scope[scope], read.scope[scope])
                )
                names = np.array([None, *table.names], dtype=object)
                names_read = np.array([None, *table_read.names], dtype=object)
                assert (names[codes[:n] + 1] == names_read[codes_read[:n] + 1]).all(), scope
        finally:
            other.close()
    finally:
        store.close()


def test_a_write_the_mirror_cannot_continue_is_read_by_the_next_search(tmp_path: Path) -> None:
    """Another connection's chunks between the mirror and this write: nothing is
    appended, and the next search reads both writes from SQLite."""
    path = tmp_path / "s.db"
    store = open_store(path, ann_min_rows=10**9)
    other = open_store(path, ann_min_rows=10**9)
    try:
        add(store, 0, feed.FOLLOW_ROWS)
        add(other, feed.FOLLOW_ROWS, feed.FOLLOW_ROWS + 50)
        add(store, feed.FOLLOW_ROWS + 50, feed.FOLLOW_ROWS + 80)
        assert store._impl.index.mirror.n == feed.FOLLOW_ROWS
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert store._impl.index.mirror.n == feed.FOLLOW_ROWS + 80
    finally:
        other.close()
        store.close()


def test_rows_above_the_index_are_ranked_exactly_until_the_tail_thread_adds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk write of more than ``INLINE_ROWS`` rows after the index exists: its rows
    are assigned in a thread (held here); searches meanwhile find them by the exact
    scan of the rows above the index's high-water mark; then the next search adds
    them, and the index holds every live row."""
    monkeypatch.setattr(tail, "INLINE_ROWS", 64)
    release = threading.Event()
    run = tail.TailAssigner._run

    def held(self: Any, after: int) -> None:
        release.wait(60)
        run(self, after)

    monkeypatch.setattr(tail.TailAssigner, "_run", held)
    path = tmp_path / "s.db"
    store = open_store(path)
    try:
        add(store, 0, 1_000)
        index = store._impl.index
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)  # adopts the index built in the background
        assert index.ann is not None and live_keys(index.mirror) == set(index.ann.ids().tolist())
        hwm = index.ann.hwm
        add(store, 1_000, 1_500)
        assert index.builds.tail is not None and index.ann.hwm == hwm
        store.delete("memory", "r1200")
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        release.set()
        assert index.wait_for_build(60)
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert index.builds.tail is None and index.ann.hwm > hwm
        assert set(index.ann.ids().tolist()) == live_keys(index.mirror)
    finally:
        release.set()
        store.close()


def _held_builds(monkeypatch: pytest.MonkeyPatch, hold_from: int) -> threading.Event:
    """Hold every background build (from scratch or a split of the serving
    index's lists) of a source of at least ``hold_from`` live rows at its start
    until the returned event is set."""
    release = threading.Event()
    build = ivf.Ann._build.__func__  # type: ignore[attr-defined]
    by_split = split.split

    def held(cls: Any, faiss: Any, source: Any, rng: Any, halt: Any) -> Any:
        if source.live_count() >= hold_from:
            release.wait(60)
        return build(cls, faiss, source, rng, halt)

    def held_split(faiss: Any, old: Any, rows: Any, source: Any, rng: Any, halt: Any) -> Any:
        if source.live_count() >= hold_from:
            release.wait(60)
        return by_split(faiss, old, rows, source, rng, halt)

    monkeypatch.setattr(ivf.Ann, "_build", classmethod(held))
    monkeypatch.setattr(split, "split", held_split)
    return release


def test_writes_below_background_rows_leave_the_build_to_the_first_search(
    tmp_path: Path,
) -> None:
    """A bulk load smaller than ``background_rows`` starts no build (as a store that
    reads its rows back at the first search): the first search builds the index
    inline and it holds every live row."""
    path = tmp_path / "s.db"
    store = open_store(path, background_rows=10**9)
    try:
        add(store, 0, 1_200)
        index = store._impl.index
        assert index.builds.thread is None and index.ann is None and index.mirror.n == 1_200
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert index.ann is not None and set(index.ann.ids().tolist()) == live_keys(index.mirror)
    finally:
        store.close()


def test_without_write_builds_a_bulk_write_past_background_rows_leaves_the_build_to_a_search(
    tmp_path: Path,
) -> None:
    """Without ``write_builds`` (on by default) a write past ``background_rows``
    feeds the mirror and starts no build; the next search starts it in the
    background and ranks exactly meanwhile."""
    path = tmp_path / "s.db"
    store = open_store(path)
    index = store._impl.index
    index.background_rows = 500
    assert index.builds.write_builds is builds.WRITE_BUILDS is True
    index.builds.write_builds = False
    try:
        add(store, 0, 1_200)
        assert index.builds.thread is None and index.ann is None and index.mirror.n == 1_200
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)  # adopts it
        assert index.ann is not None and set(index.ann.ids().tolist()) == live_keys(index.mirror)
    finally:
        store.close()


def test_an_index_adopted_by_a_search_of_an_unchanged_store_retrains_a_grown_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build finishes after the last write and a search that already saw every
    row adopts it: the store grew past ``REBUILD_GROWTH`` times its training while
    it built, so that search starts the retrain at once, and the adopted index keeps
    the rows written meanwhile beside faiss (one large faiss index, not two)."""
    monkeypatch.setattr(tail, "INLINE_ROWS", 64)
    filled, release = threading.Event(), threading.Event()
    catch_up = builds.AnnBuilds._catch_up

    def held(self: builds.AnnBuilds, built: ivf.Ann, *rest: Any) -> None:
        filled.set()  # its faiss part holds the rows it started with
        release.wait(60)
        catch_up(self, built, *rest)

    monkeypatch.setattr(builds.AnnBuilds, "_catch_up", held)
    path = tmp_path / "s.db"
    store = open_store(path, background_rows=8)
    try:
        add(store, 0, 1_000)  # loads the mirror and starts the build
        index = store._impl.index
        assert filled.wait(60)
        add(store, 1_000, 4_500)
        ids(store, QUERIES[0], 3)  # sees every row; the build still runs
        assert index.ann is None and index.builds.thread is not None
        release.set()
        thread = index.builds.thread
        thread.join(60)
        # The first search adopts it and starts the retrain; read it before a later
        # search may adopt the (small, fast) retrain in turn.
        assert ids(store, QUERIES[0], 10) == brute_force(path, QUERIES[0], 10)
        first = index.ann
        assert first is not None and first.trained_on == 1_000
        assert index.builds.thread is not None and index.builds.thread is not thread
        assert int(first.index.ntotal) == 1_000 and len(first.side) == 3_500  # not stored
        for q in QUERIES[1:]:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)
        assert index.ann is not first and index.ann is not None
        assert index.ann.trained_on == 4_500
        assert sorted(index.ann.ids().tolist()) == sorted(live_keys(index.mirror))
    finally:
        release.set()
        store.close()


def test_a_retrain_keeps_the_serving_index_out_of_faiss_growth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a retrain of a grown store builds (held here), the serving index stores
    no more rows in faiss: the rows written meanwhile are assigned to its lists and
    held beside faiss (``ivf.Side``), where searches of those lists find them. Rows
    deleted during the build are dropped when it is adopted; the adopted index holds
    every live row and replaces the old one."""
    monkeypatch.setattr(tail, "INLINE_ROWS", 64)
    release = _held_builds(monkeypatch, 4_000)
    path = tmp_path / "s.db"
    store = open_store(path, background_rows=8)
    try:
        add(store, 0, 1_000)  # loads the mirror and builds in the background
        index = store._impl.index
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)  # adopts it
        old = index.ann
        assert old is not None and old.trained_on == 1_000
        in_faiss = int(old.index.ntotal)
        add(store, 1_000, 4_100)  # past 4x: the retrain starts in this write and waits
        assert index.builds.thread is not None
        add(store, 4_100, 4_600)
        assigner = index.builds.tail
        assert assigner is not None and assigner.ann is old
        assigner.thread.join(60)
        store.delete("memory", "r10")  # a row both indexes hold
        store.delete("memory", "r4200")  # a row above the index the retrain read
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert index.ann is old and int(old.index.ntotal) == in_faiss
        assert len(old.side) > 3_000 and old.hwm == int(index.mirror.pks[index.mirror.n - 1])
        own = index.mirror.mat[index.mirror.n - 1]  # a row held beside faiss only
        assert ids(store, own, 1) == [f"r{4_599}"]
        release.set()
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)  # adopts it
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)  # takes what its assigner found
        assert index.ann is not old and index.ann is not None
        assert index.ann.trained_on >= 4_000
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert sorted(index.ann.ids().tolist()) == sorted(live_keys(index.mirror))
    finally:
        release.set()
        store.close()


def test_a_bulk_load_leaves_assigned_rows_to_the_next_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes do not add the rows the assigner finished to the index (the writer
    keeps its rate); the next search adds them, and the assigner ended by one write
    is resumed by the next from where it stopped."""
    monkeypatch.setattr(tail, "INLINE_ROWS", 64)
    path = tmp_path / "s.db"
    store = open_store(path, background_rows=10**9)
    try:
        add(store, 0, 1_000)
        ids(store, QUERIES[0], 3)  # builds inline
        index = store._impl.index
        ann = index.ann
        assert ann is not None
        hwm = ann.hwm
        add(store, 1_000, 1_300)
        assigner = index.builds.tail
        assert assigner is not None
        assigner.thread.join(60)
        add(store, 1_300, 1_600)  # resumes it; nothing added to the index
        assert index.builds.tail is assigner and ann.hwm == hwm
        assigner.thread.join(60)
        assert assigner.assigned == int(index.mirror.pks[index.mirror.n - 1])
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        assert index.builds.tail is None and ann.hwm > hwm
        assert sorted(ann.ids().tolist()) == sorted(live_keys(index.mirror))
        assert len(ann.side) == 0  # stored in faiss: 600 rows beside 1,000 (SIDE_SHARE)
    finally:
        store.close()


# A child process that writes batches, acknowledging each on stdout, with every
# background build held at its first slice once the store passed ``HOLD_FROM`` rows.
CHILD = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    from oam_core import SQLiteMemoryStore
    from oam_core.store.sqlite.vector import builds, ivf, ranking, split
    builds.ANN_MIN_ROWS, builds.BACKGROUND_ROWS, ranking.EXACT_MAX = 8, 8, 4
    builds.WRITE_BUILDS = True
    start, stop, batch, hold_from = map(int, sys.argv[2:6])
    build, by_split = ivf.Ann._build.__func__, split.split

    def say(line):  # one write per line: the build thread's line never splits another
        sys.stdout.write(line + "\\n")
        sys.stdout.flush()

    def held(cls, faiss, source, rng, halt):
        if source.live_count() >= hold_from:
            say("building")
            threading.Event().wait()  # the parent kills the process here
        return build(cls, faiss, source, rng, halt)

    def held_split(faiss, old, rows, source, rng, halt):
        if source.live_count() >= hold_from:
            say("building")
            threading.Event().wait()
        return by_split(faiss, old, rows, source, rng, halt)

    ivf.Ann._build = classmethod(held)
    split.split = held_split
    store = SQLiteMemoryStore(sys.argv[1], vector_dim=8)
    for a in range(start, stop, batch):
        b = min(a + batch, stop)
        vecs = np.random.default_rng(a).standard_normal((b - a, 8)).astype(np.float32)
        store.add([f"t{i}" for i in range(a, b)], "memory", embeddings=vecs,
                  record_ids=[f"r{i}" for i in range(a, b)])
        say(f"committed {b}")
    for _ in range(2):  # a build the search started, then the adoption
        store._impl.index.wait_for_build()
        store.search(query_vector=[1.0] * 8, k=3)
    store.close()  # writes the index file
    say("closed")
    threading.Event().wait()
    """
)


def _child(path: Path, start: int, stop: int, batch: int, hold_from: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), *map(str, (start, stop, batch, hold_from))],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _run_until(proc: subprocess.Popen[str], last: str) -> int:
    """Read the child's lines up to ``last`` (then kill it -9); the last record count
    it acknowledged."""
    assert proc.stdout is not None
    acknowledged = 0
    try:
        for line in proc.stdout:
            words = line.split()
            if words[0] == "committed":
                acknowledged = int(words[1])
            if words[0] == last:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    return acknowledged


@pytest.mark.parametrize("with_file", [False, True])
def test_kill_9_during_a_background_rebuild_reopens_with_every_record(
    tmp_path: Path, with_file: bool
) -> None:
    """The first build (no index file) or a retrain of a grown store (its index file
    written before) is under way when the process is killed; the reopened store finds
    every acknowledged record by its own vector, ranks as SQLite's rows do, and
    builds an index holding every live chunk."""
    path = tmp_path / "s.db"
    if with_file:
        assert _run_until(_child(path, 0, 400, 400, 10**9), "closed") == 400
        assert (tmp_path / "s.db.oamvec").exists()
    start, hold_from = (400, 1_600) if with_file else (0, 3_000)
    acknowledged = _run_until(_child(path, start, start + 12_000, 1_000, hold_from), "building")
    # the build may see a batch whose add has not returned (nor been acknowledged) yet
    assert acknowledged >= hold_from - 1_000
    store = open_store(path)
    try:
        for q in QUERIES:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        rng = np.random.default_rng(1)
        for i in rng.choice(acknowledged, 40, replace=False).tolist():
            own = _vector_of(path, f"r{i}")
            assert ids(store, own, 1) == [f"r{i}"]
        index = store._impl.index
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)
        assert index.wait_for_build(60)
        ids(store, QUERIES[0], 3)
        with sqlite3.connect(path) as conn:
            held = conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 1").fetchone()[0]
        assert held >= acknowledged
        assert index.ann is not None
        assert len(live_keys(index.mirror)) == held
        assert set(index.ann.ids().tolist()) == live_keys(index.mirror)
    finally:
        store.close()


def _vector_of(path: Path, rid: str) -> np.ndarray:
    with sqlite3.connect(path) as conn:
        blob = conn.execute(
            "SELECT c.embedding FROM chunks c JOIN records r ON r.pk = c.record_pk WHERE r.id = ?",
            (rid,),
        ).fetchone()[0]
    out: np.ndarray = np.frombuffer(blob, dtype="<f4")
    return out


def test_messages_written_after_a_search_feed_the_mirror_as_sqlite_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages (own rows and context rows, through the row-by-row write path) are
    appended by the writer to a mirror a search loaded; it equals one read from SQLite."""
    from oam_core import OracleAgentMemory
    from oam_core.embedders.hashing import HashingEmbedder

    path = tmp_path / "m.db"
    memory = OracleAgentMemory.open(
        f"sqlite:///{path}", embedder=HashingEmbedder(), extract_memories=False
    )
    try:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "I adopted a dog."}])
        memory.store.search("dog", k=3, record_types={"message"})  # loads the mirror
        impl: Any = memory.store._impl  # type: ignore[attr-defined]
        reads: list[int] = []
        load_rows = impl.index.log._load_rows
        monkeypatch.setattr(
            impl.index.log, "_load_rows", lambda c, a: (reads.append(a), load_rows(c, a))
        )
        before = impl.index.mirror.n
        thread.add_messages(
            [
                {"role": "assistant", "content": "What breed?"},
                {"role": "user", "content": "A beagle."},
            ]
        )
        mirror = impl.index.mirror
        assert mirror.n > before and reads == []
        hits = memory.store.search("beagle", k=3, record_types={"message"})
        assert hits and reads == []
        other = SQLiteMemoryStore(str(path))
        try:
            other._impl.index.file.path = None
            other.search(query_vector=list(mirror.mat[0]), k=3, record_types={"message"})
            read = other._impl.index.mirror
            n = mirror.n
            assert read.n == n
            for name in ("pks", "rec", "expires", "vfrom", "vuntil", "mat"):
                assert np.array_equal(getattr(read, name)[:n], getattr(mirror, name)[:n]), name
            assert [mirror.types.names[c] for c in mirror.rtype[:n]] == [
                read.types.names[c] for c in read.rtype[:n]
            ]
        finally:
            other.close()
    finally:
        memory.close()
