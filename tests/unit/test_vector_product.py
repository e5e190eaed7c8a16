"""Single-query products of the embedded store's vector index
(oam_core/store/sqlite/vector/ranking.py ``dot`` / ``dot_rows``): a record's distance is the
same bits whichever candidate set ranked it, and identical vectors tie exactly, also
past the 4,096 rows where the product used to go to the threaded BLAS (whose last
rows sum in another order)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite.vector import ranking

DIM = 384


def unit(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)
    return out


@pytest.mark.parametrize("n", [1, 511, 512, 513, 5_000])
def test_gathered_product_is_the_same_bits_as_the_slice_product(n: int) -> None:
    rng = np.random.default_rng(n)
    mat = unit(rng.standard_normal((2 * n + 7, DIM)))
    q = unit(rng.standard_normal((1, DIM)))
    rows = np.sort(rng.choice(len(mat), n, replace=False))
    got = ranking.dot_rows(mat, rows, q)
    assert got.shape == (n, 1) and got.dtype == np.float32
    # each row's product alone, and within a slice of the matrix: the same bits
    alone = np.array([ranking.dot(mat[r : r + 1], q)[0, 0] for r in rows[:50]])
    assert np.array_equal(got[:50, 0], alone)
    assert np.array_equal(got[:, 0], ranking.dot(mat, q)[rows, 0])
    # several queries: each the same bits as alone (FEW_QUERIES, below), and the
    # matrix product to float32 rounding
    qs = unit(rng.standard_normal((3, DIM)))
    np.testing.assert_allclose(ranking.dot_rows(mat, rows, qs), mat[rows] @ qs.T, atol=1e-6)


@pytest.mark.parametrize("n_queries", [2, ranking.FEW_QUERIES, ranking.FEW_QUERIES + 1])
def test_a_few_queries_are_each_the_same_bits_as_alone(n_queries: int) -> None:
    """An advice question ranks its question and topic vectors in one product
    (store/advice.py): each query's distances are those it gets alone, in the
    whole-matrix and the gathered product, up to ``FEW_QUERIES`` queries; more go to
    the BLAS product, equal to float32 rounding."""
    rng = np.random.default_rng(n_queries)
    mat = unit(rng.standard_normal((700, DIM)))
    qs = unit(rng.standard_normal((n_queries, DIM)))
    rows = np.arange(0, 700, 3)
    whole, gathered = ranking.dot(mat, qs), ranking.dot_rows(mat, rows, qs)
    assert whole.shape == (700, n_queries) and gathered.shape == (len(rows), n_queries)
    for j in range(n_queries):
        alone_whole = ranking.dot(mat, qs[j : j + 1])[:, 0]
        alone_rows = ranking.dot_rows(mat, rows, qs[j : j + 1])[:, 0]
        if n_queries <= ranking.FEW_QUERIES:
            assert np.array_equal(whole[:, j], alone_whole)
            assert np.array_equal(gathered[:, j], alone_rows)
        np.testing.assert_allclose(whole[:, j], alone_whole, atol=1e-6)
        np.testing.assert_allclose(gathered[:, j], alone_rows, atol=1e-6)


def test_no_rows_give_an_empty_product() -> None:
    mat = unit(np.ones((4, DIM)))
    assert ranking.dot_rows(mat, np.zeros(0, np.int64), mat[:1]).shape == (0, 1)


def exact_store(path: Path) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(str(path), vector_dim=DIM)
    store._impl.index.exact_max = 10**9  # every search an exact scan
    return store


def test_identical_vectors_past_4096_candidates_tie_and_come_by_id(tmp_path: Path) -> None:
    """4,500 copies of one vector, written last and in reverse id order (so the
    smallest ids are the matrix's last rows), after other users' rows: the
    whole-matrix product (no scope) and the gathered one (a user scope keeping a fifth
    of the rows) give every copy the same distance, so the first ``k`` are the
    smallest ids."""
    rng = np.random.default_rng(3)
    copies, others = 4_500, 18_000
    vec = unit(rng.standard_normal(DIM))
    ids = [f"r{i:05d}" for i in range(copies)][::-1]
    store = exact_store(tmp_path / "s.db")
    try:
        store.add(
            ["y"] * others,
            "memory",
            embeddings=unit(rng.standard_normal((others, DIM))),
            record_ids=[f"o{i:05d}" for i in range(others)],
            user_ids=[f"u{i % 4}" for i in range(others)],
        )
        store.add(
            ["x"] * copies,
            "memory",
            embeddings=np.tile(vec, (copies, 1)),
            record_ids=ids,
            user_ids=["tied"] * copies,
        )
        for noise in (0.02, 0.05):  # per dimension
            q = list(unit(vec + noise * rng.standard_normal(DIM)))
            scopes: list[dict[str, Any]] = [{}, {"user_id": "tied", "exact_user_match": True}]
            for scope in scopes:
                got = store.search(query_vector=q, k=20, **scope)
                assert [r.id for r, _ in got] == sorted(ids)[:20], scope
                assert len({d for _, d in got}) == 1, scope
    finally:
        store.close()


def test_a_records_distance_does_not_depend_on_the_candidate_set(tmp_path: Path) -> None:
    """The same record ranked among all 24,000 rows (the whole matrix), among its
    user's 2,000 and among 5,000 rows a metadata filter keeps (both gathered, the
    second past 4,096 rows): the same distance, to the bit."""
    rng = np.random.default_rng(4)
    n = 24_000
    vecs = unit(rng.standard_normal((n, DIM)))
    store = exact_store(tmp_path / "s.db")
    try:
        store.add(
            ["t"] * n,
            "memory",
            embeddings=vecs,
            record_ids=[f"r{i:05d}" for i in range(n)],
            user_ids=[f"u{i % 12}" for i in range(n)],
            metadata=[{"keep": i % 24 < 5} for i in range(n)],
        )
        for src in (0, 3, 28):
            q = list(unit(vecs[src] + 0.02 * rng.standard_normal(DIM)))
            user = f"u{src % 12}"
            runs = [
                store.search(query_vector=q, k=30),
                store.search(query_vector=q, k=30, user_id=user, exact_user_match=True),
                store.search(query_vector=q, k=30, metadata_filter={"keep": True}),
            ]
            dist = [{r.id: d for r, d in run} for run in runs]
            assert all(f"r{src:05d}" in d for d in dist)
            for other in dist[1:]:
                common = other.keys() & dist[0].keys()
                assert all(other[rid] == dist[0][rid] for rid in common)
    finally:
        store.close()
