"""Validity windows in the embedded store's vector index (oam_core/store/sqlite/vector/):
the mirror's ``vfrom``/``vuntil`` arrays filter a search at ``Predicate.valid_at``
before the top-k cut, in the rows and the mask modes of ``ranking.candidates``, exact
and through the ANN index; window changes made by another connection arrive through
the change log; the index file keeps the windows (format 4) and is rebuilt when they
differ from SQLite's, a format-3 file gives only its ANN index, and a version-6 file
opened read-only (no window columns) reads as all windows open. Every check compares
with a brute-force ranking of the rows SQLite holds."""

from __future__ import annotations

import json
import math
import sqlite3
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.backend import SQLiteBackend
from oam_core.store.sqlite.vector import changelog, ranking
from oam_core.store.sqlite.vector import file as indexfile
from oam_core.store.sqlite.vector.mirror import Mirror
from oam_core.store.versions import memory_versions
from tests.small_index import open_store

DIM = 8
N = 300
T0 = 1_700_000_000.0
QUERIES = np.random.default_rng(42).standard_normal((4, DIM)).astype(np.float32)
TIMES = [T0 - 1, T0, T0 + 2500, T0 + 5000, T0 + 5500, T0 + 9000, T0 + 20000]


def window(i: int) -> tuple[float | None, float | None]:
    """Row ``i``'s window: open start for every 4th, open end for 2 of 3."""
    start = None if i % 4 == 0 else T0 + (i % 5) * 1000
    end = None if i % 3 else T0 + 5000 + (i % 7) * 1000
    return start, end


def at(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, UTC)


def fill(store: SQLiteMemoryStore, n: int = N, seed: int = 0) -> np.ndarray:
    vecs = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    windows = [window(i) for i in range(n)]
    store.add(
        [f"t{i}" for i in range(n)],
        "memory",
        embeddings=list(vecs),
        record_ids=[f"r{i}" for i in range(n)],
        user_ids=[f"u{i % 3}" for i in range(n)],
        valid_from=[at(w[0]) for w in windows],
        valid_until=[at(w[1]) for w in windows],
    )
    return vecs


def brute_force(
    path: Path, q: np.ndarray, k: int, t: float | None, user: str | None = None
) -> list[str]:
    """Top-k record ids by exact cosine over the vector chunks SQLite holds that are
    valid at ``t`` (None: all)."""
    sql = (
        "SELECT r.id, c.embedding FROM chunks c JOIN records r ON r.pk = c.record_pk "
        "WHERE c.has_vector = 1 AND (c.expires_at IS NULL OR c.expires_at > ?)"
    )
    args: list[Any] = [time.time()]
    if t is not None:
        sql += " AND (c.valid_from IS NULL OR c.valid_from <= ?) AND (c.valid_until IS NULL OR c.valid_until > ?)"
        args += [t, t]
    if user is not None:
        sql += " AND c.user_id = ?"
        args.append(user)
    with sqlite3.connect(path) as conn:
        rows = conn.execute(sql, args).fetchall()
    if not rows:
        return []
    ids = [r[0] for r in rows]
    mat = np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows])
    sims = mat @ q / np.linalg.norm(mat, axis=1) / np.linalg.norm(q)
    return [ids[i] for i in np.argsort(-sims, kind="stable")[:k]]


def searched(
    store: SQLiteMemoryStore, q: np.ndarray, k: int, t: float | None, user: str | None = None
) -> list[str]:
    kwargs: dict[str, Any] = {"as_of": at(t)}
    if user is not None:
        kwargs.update(user_id=user, exact_user_match=True)
    return [r.id for r, _ in store.search(query_vector=list(q), k=k, **kwargs)]


# -- the arrays and the candidates --------------------------------------------------------


def _windowed_mirror(n: int = 40) -> Mirror:
    m = Mirror()
    vec = np.ones(DIM, "<f4").tobytes()
    rows = [
        (i + 1, i + 1, "memory", None, f"u{i % 2}", None, None, *window(i), vec) for i in range(n)
    ]
    for a in range(0, n, 7):
        m.append(rows[a : a + 7])
    return m


def _valid(i: int, t: float) -> bool:
    start, end = window(i)
    return (start is None or start <= t) and (end is None or end > t)


def _chosen(rows: Any, mask: Any, n: int) -> list[int]:
    if rows is not None:
        return [int(r) for r in rows]
    return list(range(n)) if mask is None else [int(r) for r in np.flatnonzero(mask)]


def test_candidates_keep_the_rows_valid_at_the_time_in_mask_and_rows_modes() -> None:
    m = _windowed_mirror()
    n = m.n
    assert (m.max_from, m.min_until) == (T0 + 4000, T0 + 5000)
    for t in TIMES:
        rows, mask = ranking.candidates(m, frozenset({"memory"}), {}, T0, None, valid_at=t)
        assert rows is None and _chosen(rows, mask, n) == [i for i in range(n) if _valid(i, t)]
        rows, mask = ranking.candidates(
            m, frozenset({"memory"}), {"user": "u1"}, T0, None, valid_at=t
        )
        assert mask is None
        assert _chosen(rows, mask, n) == [i for i in range(n) if i % 2 == 1 and _valid(i, t)]
        allowed = np.arange(1, n + 1, 3, dtype=np.int64)  # a metadata filter's chunk keys
        rows, mask = ranking.candidates(m, frozenset({"memory"}), {}, T0, allowed, valid_at=t)
        assert _chosen(rows, mask, n) == [i for i in range(0, n, 3) if _valid(i, t)]
    rows, mask = ranking.candidates(m, frozenset({"memory"}), {}, T0, None, valid_at=None)
    assert rows is None and mask is None  # no validity filter: every row


def test_a_search_pays_for_no_mask_when_no_window_can_exclude_a_row() -> None:
    m = Mirror()
    vec = np.ones(DIM, "<f4").tobytes()
    m.append([(i, i, "memory", None, "u", None, None, None, None, vec) for i in range(1, 9)])
    assert (m.max_from, m.min_until) == (-math.inf, math.inf)

    def chosen(t: float) -> Any:
        return ranking.candidates(m, frozenset({"memory"}), {}, T0, None, valid_at=t)

    assert chosen(T0) == (None, None)
    m.update(2, (None, "memory", None, "u", None, T0 + 10, None))  # starts later
    m.update(5, (None, "memory", None, "u", None, None, T0 + 20))  # ends
    m.forget()
    assert (m.max_from, m.min_until) == (T0 + 10, T0 + 20)
    assert chosen(T0 + 10) == (None, None)  # after every start, before every end
    _, mask = chosen(T0)
    assert mask is not None and np.flatnonzero(~mask).tolist() == [2]
    _, mask = chosen(T0 + 30)
    assert mask is not None and np.flatnonzero(~mask).tolist() == [5]
    m.update(5, (None, "memory", None, "u", None, None, None))  # reopened
    m.forget()
    assert m.min_until == T0 + 20 and chosen(T0 + 30) == (None, None)  # no row ends
    m.live[2], m.n_dead = False, 1
    m.compact()  # the late start is gone: the bounds are recomputed
    assert (m.n, m.max_from, m.min_until) == (7, -math.inf, math.inf)


# -- the store: exact and ANN, rows and mask ----------------------------------------------


def test_search_as_of_filters_before_the_cut_exact_and_through_the_ann_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    store = open_store(path)
    fill(store)
    proposed: list[bool] = []
    approximate = ranking.approximate

    def counting(*args: Any, **kwargs: Any) -> Any:
        best = approximate(*args, **kwargs)
        proposed.append(best is not None)
        return best

    monkeypatch.setattr(ranking, "approximate", counting)
    store._impl.index.exact_max = 60  # above: proposals of the ANN index (at most 4 x 60)
    try:
        for q in QUERIES:
            for t in [*TIMES, None]:
                assert searched(store, q, 10, t) == brute_force(path, q, 10, t), t
                assert searched(store, q, 10, t, "u1") == brute_force(path, q, 10, t, "u1"), t
        assert store._impl.index.ann is not None and any(proposed)  # the ANN path ran
        # Omitted as_of: current (now is after every window's end here).
        got = [r.id for r, _ in store.search(query_vector=list(QUERIES[0]), k=10)]
        assert got == brute_force(path, QUERIES[0], 10, time.time())
        assert all(window(int(i[1:]))[1] is None for i in got)
        proposed.clear()
        store._impl.index.exact_max = 10_000  # every search exact
        for q in QUERIES:
            for t in TIMES:
                assert searched(store, q, 10, t) == brute_force(path, q, 10, t)
        assert proposed == []
    finally:
        store.close()


def test_window_changes_from_another_connection_arrive_through_the_change_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    store = open_store(path)
    fill(store, n=60)
    q = QUERIES[1]
    reloads: list[int] = []
    reload = changelog.ChangeLog._reload

    def counting(self: Any, conn: sqlite3.Connection, last_change: int) -> None:
        reloads.append(last_change)
        reload(self, conn, last_change)

    monkeypatch.setattr(changelog.ChangeLog, "_reload", counting)
    try:
        now = time.time()
        first = searched(store, q, 5, now)
        assert first == brute_force(path, q, 5, now)
        reloads.clear()
        other = SQLiteMemoryStore(str(path))
        other.update("memory", first[0], valid_until=at(now - 60))
        versions = memory_versions(other)
        assert versions.invalidate_memory(first[1], reason="no longer true")
        new_id = versions.update_memory(first[2], "t2 v2")
        other.close()
        again = searched(store, q, 5, time.time())
        assert again == brute_force(path, q, 5, time.time())
        assert first[0] not in again and first[1] not in again and first[2] not in again
        assert reloads == []  # followed the log, no reload
        m = store._impl.index.mirror
        rows = m.rows_of(
            np.array(
                [
                    store._impl.conn.execute(
                        "SELECT c.pk FROM chunks c JOIN records r ON r.pk = c.record_pk WHERE r.id = ?",
                        (first[1],),
                    ).fetchone()[0]
                ]
            )
        )
        assert math.isfinite(m.vuntil[rows[0]]) and m.vuntil[rows[0]] <= time.time()
        # Every version, and the superseded one still valid at a past time.
        everything = searched(store, q, 60, None)
        assert {first[0], first[1], first[2]} <= set(everything)
        assert first[2] in searched(store, q, 60, now)
        assert new_id not in searched(store, q, 60, now - 3600 * 24 * 365 * 30)
    finally:
        store.close()


# -- the index file -----------------------------------------------------------------------


def build_file(path: Path) -> None:
    store = open_store(path)
    fill(store)
    store.search(query_vector=list(QUERIES[0]), k=3)  # builds the ANN index, writes the file
    store.close()


def test_the_index_file_keeps_the_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import faiss

    path = tmp_path / "s.db"
    build_file(path)
    snap = indexfile.read(str(tmp_path / "s.db.oamvec"), DIM, faiss)
    assert snap.windows and snap.ann is not None
    by_key = dict(
        zip(
            snap.pks.tolist(),
            zip(snap.vfrom.tolist(), snap.vuntil.tolist(), strict=True),
            strict=True,
        )
    )
    with sqlite3.connect(path) as conn:
        stored = conn.execute(
            "SELECT pk, valid_from, valid_until FROM chunks WHERE has_vector = 1"
        ).fetchall()
    assert len(stored) == N
    for pk, start, end in stored:
        assert by_key[pk] == (
            -math.inf if start is None else start,
            math.inf if end is None else end,
        )
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
                for t in TIMES:
                    assert searched(store, q, 10, t) == brute_force(path, q, 10, t)
        assert loaded == [] and store._impl.index.ann is not None  # all from the file
    finally:
        store.close()


def vectors_of(index_file: Path, pks: np.ndarray) -> np.ndarray:
    """The unit vectors of chunks ``pks`` from the database beside ``index_file``
    (a format-5 file holds none; older formats did)."""
    with sqlite3.connect(str(index_file).removesuffix(".oamvec")) as conn:
        stored = dict(conn.execute("SELECT pk, embedding FROM chunks WHERE has_vector = 1"))
    mat = np.stack([np.frombuffer(stored[int(pk)], dtype="<f4") for pk in pks])
    return (mat / np.linalg.norm(mat, axis=1, keepdims=True)).astype(np.float32)


def _as_format_3(index_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewrite the file as format 3 wrote it (no window sections)."""
    import faiss

    snap = indexfile.read(str(index_file), DIM, faiss)
    snap.mat = vectors_of(index_file, snap.pks)
    with monkeypatch.context() as patch:
        patch.setattr(indexfile, "FORMAT_VERSION", 3)
        patch.setattr(indexfile, "_COLUMNS", indexfile._WINDOWLESS_COLUMNS)
        assert indexfile.write(str(index_file), snap, faiss)
    data = index_file.read_bytes()
    length = int.from_bytes(data[-16:-8], "little")
    trailer = json.loads(data[-16 - length : -16])
    assert trailer["format"] == 3 and "vfrom" not in [s[0] for s in trailer["sections"]]


def test_a_format_3_file_gives_its_ann_index_and_the_rows_come_from_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    path = tmp_path / "s.db"
    build_file(path)
    index_file = tmp_path / "s.db.oamvec"
    _as_format_3(index_file, monkeypatch)
    old = indexfile.read(str(index_file), DIM, faiss)
    assert not old.windows and bool(np.isinf(old.vuntil).all())  # read, never trusted for rows
    loaded: list[int] = []
    load_rows = changelog.ChangeLog._load_rows

    def counting(self: Any, conn: sqlite3.Connection, after: int) -> None:
        loaded.append(after)
        load_rows(self, conn, after)

    monkeypatch.setattr(changelog.ChangeLog, "_load_rows", counting)
    store = open_store(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # its ANN index is checked and kept: no warning
            for q in QUERIES:
                for t in TIMES:
                    assert searched(store, q, 10, t) == brute_force(path, q, 10, t)
        index = store._impl.index
        assert loaded == [0] and index.ann is not None  # every row read from SQLite
        ends = sum(window(i)[1] is not None for i in range(N))
        assert len(ranking.ending(index.mirror)) == ends
    finally:
        store.close()
    new = indexfile.read(str(index_file), DIM, faiss)  # rewritten at close, as format 5
    assert new.windows and int(np.isfinite(new.vuntil).sum()) == ends


def test_a_format_4_file_is_read_with_its_matrix_and_rewritten_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The previous version's file (format 4: the columns and a float32 copy of every
    vector) is trusted as it is: no vector is read from SQLite, its searches equal an
    exact search, and closing rewrites it as format 5, without the matrix."""
    import faiss

    path = tmp_path / "s.db"
    build_file(path)
    index_file = tmp_path / "s.db.oamvec"
    snap = indexfile.read(str(index_file), DIM, faiss)
    assert snap.mat is None  # format 5: no vectors in the file
    new_size = index_file.stat().st_size
    snap.mat = vectors_of(index_file, snap.pks)
    with monkeypatch.context() as patch:
        patch.setattr(indexfile, "FORMAT_VERSION", 4)
        patch.setattr(indexfile, "_COLUMNS", indexfile._MATRIX_COLUMNS)
        assert indexfile.write(str(index_file), snap, faiss)
    old = indexfile.read(str(index_file), DIM, faiss)
    assert old.mat is not None and old.mat.shape == (N, DIM) and old.windows
    assert index_file.stat().st_size - new_size > N * DIM * 4  # and uncompressed columns
    read: list[int] = []
    load_vectors = changelog.ChangeLog._load_vectors

    def counting(self: Any, conn: sqlite3.Connection, lo: int, hi: int) -> None:
        read.append(hi)
        load_vectors(self, conn, lo, hi)

    monkeypatch.setattr(changelog.ChangeLog, "_load_vectors", counting)
    store = open_store(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for q in QUERIES:
                for t in TIMES:
                    assert searched(store, q, 10, t) == brute_force(path, q, 10, t)
        assert read == [] and store._impl.index.ann is not None  # all from the file
    finally:
        store.close()
    again = indexfile.read(str(index_file), DIM, faiss)
    assert again.mat is None and index_file.stat().st_size == new_size
    store = open_store(path)
    try:
        for q in QUERIES:
            assert searched(store, q, 10, None) == brute_force(path, q, 10, None)
        assert read  # the vectors came from SQLite
    finally:
        store.close()


def _as_version_6(path: Path) -> None:
    """Turn a version-7 file back into a version-6 one (no window columns)."""
    with sqlite3.connect(path) as conn:
        for table in ("records", "chunks"):
            for column in ("valid_from", "valid_until"):
                conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.execute("UPDATE oam_meta SET value = '6' WHERE key = 'schema_version'")


def test_a_read_only_version_6_file_is_searched_with_every_window_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    build_file(path)
    (tmp_path / "s.db.oamvec").unlink()
    _as_version_6(path)
    connect = SQLiteBackend._connect

    def read_only(target: str, *, uri: bool = False) -> sqlite3.Connection:
        return connect(f"file:{target}?mode=ro", uri=True)

    monkeypatch.setattr(SQLiteBackend, "_connect", staticmethod(read_only))
    store = open_store(path)
    try:
        assert store._impl.schema_version == 6
        with sqlite3.connect(path) as conn:  # no window columns: brute force without them
            rows = conn.execute(
                "SELECT r.id, c.embedding FROM chunks c JOIN records r ON r.pk = c.record_pk "
                "WHERE c.has_vector = 1"
            ).fetchall()
        mat = np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows])
        for q in QUERIES:
            sims = mat @ q / np.linalg.norm(mat, axis=1)
            want = [rows[i][0] for i in np.argsort(-sims, kind="stable")[:10]]
            for t in [T0 + 9000, None]:
                assert searched(store, q, 10, t) == want
            assert [r.id for r, _ in store.search(query_vector=list(q), k=10)] == want
        m = store._impl.index.mirror
        assert (m.n, m.max_from, m.min_until) == (N, -math.inf, math.inf)
        assert not store._impl.index.log.windows
    finally:
        store.close()


def test_window_columns_added_by_another_connection_reload_the_mirror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader of a version-6 file whose file another connection upgrades to
    version 7 (and then ends a window in) reads the new columns from then on."""
    path = tmp_path / "s.db"
    build_file(path)
    (tmp_path / "s.db.oamvec").unlink()
    _as_version_6(path)
    connect = SQLiteBackend._connect

    def read_only(target: str, *, uri: bool = False) -> sqlite3.Connection:
        return connect(f"file:{target}?mode=ro", uri=True)

    with monkeypatch.context() as patch:
        patch.setattr(SQLiteBackend, "_connect", staticmethod(read_only))
        reader = open_store(path)
    try:
        q = QUERIES[2]
        first = searched(reader, q, 5, T0 + 9000)
        assert not reader._impl.index.log.windows
        writer = SQLiteMemoryStore(str(path))  # upgrades the file
        writer.update("memory", first[0], valid_until=at(T0 + 100))
        writer.close()
        reloads: list[int] = []
        reload = changelog.ChangeLog._reload

        def counting(self: Any, conn: sqlite3.Connection, last_change: int) -> None:
            reloads.append(last_change)
            reload(self, conn, last_change)

        monkeypatch.setattr(changelog.ChangeLog, "_reload", counting)
        again = searched(reader, q, 5, T0 + 9000)
        assert reader._impl.index.log.windows and len(reloads) == 1
        assert first[0] not in again
        assert again == brute_force(path, q, 5, T0 + 9000)
    finally:
        reader.close()


def test_a_file_whose_windows_differ_from_the_database_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    build_file(path)
    with sqlite3.connect(path) as conn:  # an edit the change log cannot explain
        conn.execute("DROP TRIGGER chunks_log_update")
        conn.execute("UPDATE chunks SET valid_until = ?", (T0 + 100,))
    store = open_store(path)
    try:
        with pytest.warns(RuntimeWarning, match="is not usable"):
            assert searched(store, QUERIES[0], 10, T0 + 9000) == []
        assert len(searched(store, QUERIES[0], 10, T0 + 50)) == 10
        assert searched(store, QUERIES[0], 10, T0 + 50) == brute_force(
            path, QUERIES[0], 10, T0 + 50
        )
    finally:
        store.close()
