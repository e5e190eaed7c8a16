"""A grown store's retrain by splitting the serving index's lists
(oam_core/store/sqlite/vector/split.py, builds.py;
docs/sqlite.md#how-a-search-is-ranked): every live row ends in one child of its old
list, the lists are near the size the grown store asks for, the split is
deterministic, recall@10 against exact numpy holds, a retrain during writes adopts
every row, and the index file round-trips a split index.

The data are clustered unit vectors (the shape of stored embeddings); the
interleavings with writes are injected by wrapping ``split.split``, not slept for."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.vector import ivf, split
from tests.small_index import brute_force, ids

faiss = pytest.importorskip("faiss")


def _clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((60, dim)).astype(np.float32)
    rows = centres[rng.integers(0, 60, n)] + 0.35 * rng.standard_normal((n, dim))
    unit: np.ndarray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit


class _Rows:
    """An ``ivf.RowSource`` over the first ``upto`` rows of a matrix, keys 1.."""

    def __init__(self, mat: np.ndarray, upto: int) -> None:
        self.mat = mat
        self.pks = np.arange(1, len(mat) + 1, dtype=np.int64)
        self.live = np.zeros(len(mat), bool)
        self.live[:upto] = True

    def live_count(self) -> int:
        return int(self.live.sum())

    def sample(self, m: int, rng: np.random.Generator) -> Any:
        rows = np.flatnonzero(self.live)
        pick = rows[rng.choice(len(rows), min(m, len(rows)), replace=False)]
        return self.mat[pick], self.pks[pick]

    def rows_after(self, pk: int, limit: int) -> Any:
        end = int(np.flatnonzero(self.live).max()) + 1
        start, stop = pk, min(end, pk + limit)
        if start >= stop:
            return np.zeros((0, self.mat.shape[1]), np.float32), np.zeros(0, np.int64), pk
        rows = np.flatnonzero(self.live[start:stop]) + start
        return self.mat[rows].copy(), self.pks[rows].copy(), int(self.pks[stop - 1])

    def vectors(self, pks: np.ndarray) -> Any:
        found = self.live[pks - 1]
        out = np.zeros((len(pks), self.mat.shape[1]), np.float32)
        out[found] = self.mat[pks[found] - 1]
        return out, found


def _list_of_each(ann: ivf.Ann) -> dict[int, int]:
    inv = ann.index.invlists
    out: dict[int, int] = {}
    for i in range(int(inv.nlist)):
        size = int(inv.list_size(i))
        if size:
            for key in faiss.rev_swig_ptr(inv.get_ids(i), size).tolist():
                assert key not in out  # in exactly one list
                out[key] = i
    for key, i in zip(ann.side.keys.tolist(), ann.side.lists.tolist(), strict=True):
        assert key not in out
        out[key] = i
    return out


def _grown(n_old: int, n: int, dim: int) -> tuple[ivf.Ann, _Rows, split.Members]:
    """An index trained on ``n_old`` rows, a fourth of the rows after them held
    beside faiss (as the tail assigner leaves them), the source grown to ``n``
    rows of which every 97th is deleted, and the index's members."""
    mat = _clustered(n, dim)
    rows = _Rows(mat, n_old)
    old = ivf.Ann.build(faiss, rows, np.random.default_rng(0))
    assert old is not None and old.nprobe > 0
    side = np.arange(n_old + 1, n_old + (n - n_old) // 4 + 1, dtype=np.int64)
    lists = ivf.assign(old.index, ivf.encode(mat[side - 1], old.scale))
    order = np.argsort(lists, kind="stable")
    old.side = old.side.merged(side[order], lists[order])
    rows.live[:] = True
    rows.live[::97] = False
    return old, rows, split.members(old)


def test_every_live_row_ends_in_one_child_of_its_old_list() -> None:
    old, rows, held = _grown(4_000, 16_000, 32)
    before = _list_of_each(old)
    new = split.split(faiss, old, held, rows, np.random.default_rng(0))
    assert new is not None and new.scale == old.scale and new.trained_on == rows.live_count()
    after = _list_of_each(new)
    live = rows.pks[rows.live]
    assert sorted(after) == live.tolist()  # every live row, once; no deleted one
    # the old list of the rows nobody assigned: the old quantizer's
    rest = np.array(sorted(set(live.tolist()) - set(before)), np.int64)
    found = ivf.assign(old.index, ivf.encode(rows.mat[rest - 1], old.scale))
    before.update(zip(rest.tolist(), found.tolist(), strict=True))
    sizes = np.bincount([before[k] for k in live.tolist()], minlength=int(old.index.nlist))
    counts = split.child_counts(sizes, len(live))
    firsts = np.concatenate([[0], np.cumsum(counts)])
    assert int(new.index.nlist) == int(counts.sum())
    for key in live.tolist():
        parent = before[key]
        assert firsts[parent] <= after[key] < firsts[parent + 1]


def test_list_sizes_are_near_the_target_and_the_split_is_deterministic() -> None:
    old, rows, held = _grown(4_000, 16_000, 32)
    a = split.split(faiss, old, held, rows, np.random.default_rng(0))
    b = split.split(faiss, old, held, rows, np.random.default_rng(0))
    assert a is not None and b is not None
    n = rows.live_count()
    want = ivf.list_count(n)
    assert int(old.index.nlist) < int(a.index.nlist) <= want
    assert int(a.index.nlist) >= 0.8 * want
    sizes = np.array([a.index.invlists.list_size(i) for i in range(a.index.nlist)])
    assert abs(float(np.median(sizes)) / (n / want) - 1) < 0.5
    assert _list_of_each(a) == _list_of_each(b)
    nl = int(a.index.nlist)
    assert np.array_equal(
        a.index.quantizer.reconstruct_n(0, nl), b.index.quantizer.reconstruct_n(0, nl)
    )
    assert (a.nprobe, a.oversample) == (b.nprobe, b.oversample)


def test_recall_of_a_split_index_against_exact_numpy() -> None:
    """recall@10 >= 0.98 for fresh queries near stored rows, through the calibrated
    probes and the exact re-rank, against an exact numpy scan of the live rows."""
    old, rows, held = _grown(10_000, 40_000, 64)
    new = split.split(faiss, old, held, rows, np.random.default_rng(0))
    assert new is not None and new.nprobe > 0
    live = np.flatnonzero(rows.live)
    rng = np.random.default_rng(5)
    queries = rows.mat[rng.choice(live, 200, replace=False)]
    queries = queries + 0.05 * rng.standard_normal(queries.shape).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    hits = 0
    for q in queries:
        cand = new.search(q, 10 * new.oversample)
        top = cand[np.argsort(-(rows.mat[cand - 1] @ q))[:10]]
        truth = live[np.argpartition(-(rows.mat[live] @ q), 10)[:10]] + 1
        hits += len(set(top.tolist()) & set(truth.tolist()))
    assert hits / (10 * len(queries)) >= 0.98


def _store(path: Path, dim: int) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(str(path), vector_dim=dim)
    index = store._impl.index
    index.ann_min_rows = 500
    index.background_rows = 500
    index.builds.write_builds = True
    index.exact_max = 4
    return store


def _add(store: SQLiteMemoryStore, mat: np.ndarray, start: int, stop: int) -> None:
    store.add(
        [f"t{i}" for i in range(start, stop)],
        "memory",
        embeddings=mat[start:stop],
        record_ids=[f"r{i}" for i in range(start, stop)],
    )


def _live_keys(store: SQLiteMemoryStore) -> list[int]:
    m = store._impl.index.mirror
    return sorted(m.pks[: m.n][m.live[: m.n]].tolist())


def test_a_split_retrain_during_writes_adopts_every_row_and_its_file_round_trips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write past 4x the index's training starts the split retrain; writes and a
    delete land while it runs (it waits for them at its start); the adopted index
    holds every live row, searches equal an exact ranking of SQLite's rows, and the
    index file written at close restores the same lists."""
    dim, path = 32, tmp_path / "s.db"
    mat = _clustered(9_000, dim, seed=3)
    started, go = threading.Event(), threading.Event()
    by_split, calls = split.split, []

    def held(faiss: Any, old: Any, rows: Any, source: Any, rng: Any, halt: Any) -> Any:
        calls.append(int(old.index.nlist))
        started.set()
        go.wait(60)
        return by_split(faiss, old, rows, source, rng, halt)

    monkeypatch.setattr(split, "split", held)
    store = _store(path, dim)
    try:
        _add(store, mat, 0, 1_000)  # builds from scratch in the background
        index = store._impl.index
        assert index.wait_for_build(60)
        ids(store, mat[0], 3)  # adopts it
        old = index.ann
        assert old is not None and old.trained_on == 1_000 and old.nprobe > 0
        _add(store, mat, 1_000, 4_100)  # past 4x: this write starts the split
        assert started.wait(60) and calls == [int(old.index.nlist)]
        _add(store, mat, 4_100, 6_000)  # written while it runs
        store.delete("memory", "r10")
        store.delete("memory", "r4500")
        go.set()
        assert index.wait_for_build(60)
        ids(store, mat[0], 3)  # adopts the split index
        assert index.wait_for_build(60)
        ids(store, mat[0], 3)  # takes what its assigner found
        new = index.ann
        assert new is not None and new is not old and new.trained_on >= 4_000
        assert int(new.index.nlist) > int(old.index.nlist)
        assert sorted(new.ids().tolist()) == _live_keys(store)
        for q in mat[[7, 2_222, 5_555]]:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        nlist = int(new.index.nlist)
        cents = new.index.quantizer.reconstruct_n(0, nlist)
    finally:
        go.set()
        store.close()
    store = _store(path, dim)
    try:
        index = store._impl.index
        for q in mat[[7, 2_222, 5_555]]:
            assert ids(store, q, 10) == brute_force(path, q, 10)
        ann = index.ann
        assert ann is not None and int(ann.index.nlist) == nlist
        assert np.array_equal(ann.index.quantizer.reconstruct_n(0, nlist), cents)
        index.mirror.wait_loaded()
        assert sorted(ann.ids().tolist()) == _live_keys(store)
    finally:
        store.close()
