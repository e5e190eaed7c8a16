"""An index file without IVF codes (format 6, store/sqlite/vector/assigned.py,
docs/sqlite.md#the-index-file): the trained lists and each row's list are enough to
code the rows again as their vectors arrive, into the same lists with the same
codes; until a row is coded, a search probing its list still sees it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.vector import assigned, ivf, loading
from oam_core.store.sqlite.vector import file as indexfile
from oam_core.store.sqlite.vector.mirror import LiveRows, Mirror, unit

DIM = 8
N = 3_000


def clustered(n: int, seed: int = 0) -> np.ndarray:
    """``n`` rows around 40 centres (an index with fewer probes than lists)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    pick = rng.integers(0, 40, n)
    return unit(centres[pick] + 0.15 * rng.standard_normal((n, DIM)).astype(np.float32))


def mirror_of(vecs: np.ndarray) -> Mirror:
    m = Mirror()
    rows = [
        (k + 1, k + 1, "memory", None, "u", None, None, None, None, v.astype("<f4").tobytes())
        for k, v in enumerate(vecs)
    ]
    for a in range(0, len(rows), 500):
        m.append(rows[a : a + 500])
    return m


def per_list(ann: ivf.Ann) -> list[tuple[list[int], bytes]]:
    """Each list's keys (sorted) and the codes in that order."""
    inv, out = ann.index.invlists, []
    for i in range(int(inv.nlist)):
        size = inv.list_size(i)
        ids = ann.faiss.rev_swig_ptr(inv.get_ids(i), size).copy()
        codes = ann.faiss.rev_swig_ptr(inv.get_codes(i), size * inv.code_size).copy()
        order = np.argsort(ids)
        rows = codes.reshape(size, inv.code_size)
        out.append((ids[order].tolist(), rows[order].tobytes()))
    return out


def test_the_lists_rebuild_the_same_index_and_a_search_sees_the_rows_not_coded_yet() -> None:
    faiss = pytest.importorskip("faiss")
    vecs = clustered(N)
    m = mirror_of(vecs)
    ann = ivf.Ann.build(faiss, LiveRows(m), np.random.default_rng(0))
    assert ann is not None and 0 < ann.nprobe < ann.index.nlist  # lists are skipped
    pks = m.pks[: m.n]
    lists = assigned.list_of_rows(ann, pks)
    assert lists.dtype == np.int16 and int(lists.min()) >= 0

    empty = assigned.empty_copy(ann)
    assert empty.ntotal == 0 and ivf.is_own_kind(faiss, empty)
    again = ivf.Ann(
        faiss, empty, ann.hwm, ann.trained_on, ann.nprobe, ann.oversample, scale=ann.scale
    )
    assigned.install(again, pks, lists)
    half = N // 2
    assigned.code(again, m.mat[:half], pks[:half], int(pks[half - 1]))
    assert again.unfilled is not None and again.index.ntotal == half
    assert np.array_equal(assigned.list_of_rows(again, pks), lists)  # coded and waiting

    inv = ann.index.invlists
    for q in clustered(20, seed=1):
        probed = assigned.probed(ann, q, ann.nprobe)
        assert len(probed) == ann.nprobe
        whole = {
            int(x)
            for li in probed.tolist()
            for x in faiss.rev_swig_ptr(inv.get_ids(li), inv.list_size(li))
        }
        coded = {int(x) for x in again.search(q, N, ann.nprobe)}
        waiting = {int(x) for x in assigned.pending_in(again, q, ann.nprobe)}
        assert not coded & waiting and coded | waiting == whole

    assigned.code(again, m.mat[half:], pks[half:], int(pks[-1]))
    assert again.unfilled is None
    assert per_list(again) == per_list(ann)  # the same lists, the same codes


def add(store: SQLiteMemoryStore, vecs: np.ndarray) -> None:
    store.add(
        [f"t{i}" for i in range(len(vecs))],
        "memory",
        embeddings=list(vecs),
        record_ids=[f"r{i}" for i in range(len(vecs))],
    )


def exact(path: Path, q: np.ndarray, k: int, keys: set[int] | None = None) -> list[str]:
    """Top-k record ids by exact cosine over SQLite's vector chunks (those of chunk
    keys ``keys`` only, when given)."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT r.id, c.embedding, c.pk FROM chunks c JOIN records r ON r.pk = c.record_pk "
            "WHERE c.has_vector = 1"
        ).fetchall()
    rows = [r for r in rows if keys is None or r[2] in keys]
    mat = unit(np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows]))
    sims = mat @ (q / np.linalg.norm(q))
    return [rows[i][0] for i in np.argsort(-sims, kind="stable")[:k]]


def ids(store: SQLiteMemoryStore, q: np.ndarray, k: int) -> list[str]:
    return [r.id for r, _ in store.search(query_vector=list(q), k=k)]


def open_store(path: Path) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(str(path), vector_dim=DIM)
    store._impl.index.ann_min_rows = 8
    store._impl.index.exact_max = 100  # the ANN path (40 candidates fit under 4x this)
    return store


def test_a_store_opened_from_a_file_without_codes_searches_before_and_after_the_fill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file holds no code; with the fill held, a search reads the rows of the
    lists it probes from SQLite and equals an exact search over those lists (every
    row the complete index could propose); once the fill is through, the index
    holds every row in the lists it had before, and searches as it did."""
    faiss = pytest.importorskip("faiss")
    path = tmp_path / "s.db"
    store = open_store(path)
    add(store, clustered(N))
    queries = clustered(8, seed=2)
    found = [ids(store, q, 10) for q in queries]
    ann = store._impl.index.ann
    assert ann is not None and 0 < ann.nprobe < ann.index.nlist
    before = per_list(ann)
    probed = [
        {k for li in assigned.probed(ann, q, ann.nprobe).tolist() for k in before[li][0]}
        for q in queries
    ]
    assert all(len(p) < N for p in probed)
    store.close()
    snap = indexfile.read(f"{path}.oamvec", DIM, faiss)
    assert snap.ann is not None and snap.ann.index.ntotal == 0  # no code in the file
    assert snap.ann.unfilled is not None and len(snap.ann.unfilled.pks) == N

    release = threading.Event()
    real = loading.VectorLoader._step
    fetched: list[int] = []
    real_gather = loading.VectorLoader.gather

    def step(self: loading.VectorLoader) -> bool:
        if threading.current_thread().name == "oam-vector-load":
            while not release.wait(0.02) and not self._stop.is_set():
                pass
        return real(self)

    def gather(self: loading.VectorLoader, rows: Any, limit: Any = None) -> Any:
        fetched.append(len(rows))
        return real_gather(self, rows, limit)

    monkeypatch.setattr(loading.VectorLoader, "_step", step)
    monkeypatch.setattr(loading.VectorLoader, "gather", gather)
    store = open_store(path)
    try:
        for q, keys in zip(queries, probed, strict=True):
            assert ids(store, q, 10) == exact(path, q, 10, keys)
        index = store._impl.index
        assert fetched and 0 < max(fetched) < N  # the probed lists' rows, not all
        # the lists those searches read whole were coded at once, as the file names them
        ann_now = index.ann
        assert ann_now is not None and ann_now.unfilled is not None
        whole = np.flatnonzero(ann_now.unfilled.whole)
        assert len(whole) and ann_now.index.ntotal == sum(len(before[li][0]) for li in whole)
        assert all(per_list(ann_now)[li] == before[li] for li in whole)
        fetched.clear()
        again = [ids(store, q, 10) for q in queries]  # from the codes of those lists now
        assert again == found and max(fetched) <= 4 * 10 * ann.oversample
        loader = index.log.loader
        assert loader is not None and loader.thread is not None
        release.set()
        loader.thread.join(30)
        assert index.mirror.missing is None and index.ann.unfilled is None
        assert per_list(index.ann) == before
        assert [ids(store, q, 10) for q in queries] == found
    finally:
        release.set()
        store.close()
