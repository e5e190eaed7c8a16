"""Review rev3: failing cases found on the write path (bulk shape and row shape).

Each test states the rule it checks (docs/store.md) and fails on the current code.
"""

from __future__ import annotations

import numpy as np
import pytest

from oam_core.apis.batch import PendingRecordBatch


def _vecs(n: int, dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


@pytest.mark.parametrize("shape", ["bulk", "lists"])
def test_a_second_store_object_cannot_learn_another_dimension(make_store, backend, shape):
    """docs/store.md#schema: "Opening a store with another vector dimension than the
    recorded one fails ... A store created without a dimension learns it from its
    first vector." A second store object opened before the first vector was written
    must not record another dimension over it (SQLite today: it does, and every
    vector search of the file then raises "chunk vectors of different dimensions")."""
    if not backend.shared_storage:
        pytest.skip("needs two store objects on one storage")
    first = make_store(embedder=None, name="shared.db")
    second = make_store(embedder=None, name="shared.db")
    first.add(["alpha"], "memory", embeddings=_vecs(1, 8), record_ids=["a1"])
    other = _vecs(1, 4, seed=1)
    with pytest.raises(ValueError, match=r"(?s)(?=.*\b4\b)(?=.*\b8\b)(?=.*dimension)") as info:
        second.add(
            ["beta"],
            "memory",
            embeddings=other if shape == "bulk" else other.tolist(),
            record_ids=["b1"],
        )
    assert "NUL" not in str(info.value)  # PostgreSQL today blames NUL characters
    reopened = make_store(embedder=None, name="shared.db")
    assert reopened.vector_dim == 8
    assert [r.id for r, _ in reopened.search(query_vector=_vecs(1, 8)[0], k=5)] == ["a1"]


def test_add_batches_names_the_batch_of_a_bad_row(make_store, rejected):
    """HELPER_RULES / docs/store.md: bad input is "a clear exception naming the
    argument and the value". In add_batches the argument is batches[i]; today the
    message is only "metadata[1]: nan is not a JSON number", for any batch."""
    store = make_store(embedder=None, vector_dim=8)
    batches = [
        PendingRecordBatch(texts=["a"], record_type="memory", embeddings=_vecs(1, 8)),
        PendingRecordBatch(
            texts=["b", "c"],
            record_type="memory",
            embeddings=_vecs(2, 8),
            metadata=[None, {"x": float("nan")}],
        ),
    ]
    with rejected(store, match=r"batches\[1\]"):
        store.add_batches(batches)


def test_add_batches_names_an_id_repeated_across_batches(make_store, rejected):
    """One add call names its duplicate ids ("duplicate record ids in one call:
    ['x']"); across batches the message names only the family."""
    store = make_store(embedder=None, vector_dim=8)
    batches = [
        PendingRecordBatch(
            texts=["a"], record_type="memory", embeddings=_vecs(1, 8), record_ids="x"
        ),
        PendingRecordBatch(texts=["b"], record_type="fact", embeddings=_vecs(1, 8), record_ids="x"),
    ]
    with rejected(store, match=r"'x'"):
        store.add_batches(batches)


@pytest.mark.filterwarnings("error")
def test_a_vector_whose_norm_overflows_is_refused_or_ranked_right(make_store):
    """A float32 vector of 1e20s is finite (accepted today) but its norm overflows
    float32: search then puts a vector of exactly the query's direction at distance
    1.0 (SQLite with a numpy RuntimeWarning, PostgreSQL silently). Either refuse it at
    write time naming embeddings[0] (as NaN is refused), or rank it at distance 0."""
    store = make_store(embedder=None, vector_dim=8)
    big = np.full((1, 8), 1e20, np.float32)
    try:
        store.add(["big"], "memory", embeddings=big, record_ids=["big"])
    except ValueError as exc:
        assert "embeddings[0]" in str(exc)
        return
    [(record, distance)] = store.search(query_vector=np.ones(8, np.float32), k=1)
    assert record.id == "big"
    assert distance == pytest.approx(0.0, abs=1e-4)


@pytest.mark.parametrize("where", ["rows", "after the rows"])
def test_a_write_that_fails_after_learning_the_dimension_forgets_it(make_store, monkeypatch, where):
    """The dimension is learned inside the write; when the write fails after that (a
    database error on the rows, or later in the same transaction), the transaction
    drops it and so does the store."""
    from oam_core.store import writes
    from oam_core.store.runtime import StoreRuntime

    store = make_store(embedder=None)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    if where == "rows":
        monkeypatch.setattr(writes, "_insert_parts", broken)
    else:
        monkeypatch.setattr(StoreRuntime, "record_identity", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        store.add(["a"], "memory", embeddings=_vecs(1, 8), record_ids=["a1"])
    monkeypatch.undo()
    assert store.vector_dim is None
    assert store.get("memory", "a1") is None
    store.add(["b"], "memory", embeddings=_vecs(1, 4), record_ids=["b1"])  # another dim: fine
    assert store.vector_dim == 4
    assert [r.id for r, _ in store.search(query_vector=_vecs(1, 4)[0], k=5)] == ["b1"]


def test_an_update_that_fails_after_learning_the_dimension_forgets_it(make_store, monkeypatch):
    """The same for ``update(..., embedding=...)``, the first vector of a store whose
    records were written without vectors."""
    from oam_core.store.runtime import StoreRuntime

    store = make_store(embedder=None)
    store.add(["plain text"], "memory", record_ids=["t1"])
    assert store.vector_dim is None

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(StoreRuntime, "record_identity", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        store.update("memory", "t1", embedding=_vecs(1, 8)[0].tolist())
    monkeypatch.undo()
    assert store.vector_dim is None
    assert store.update("memory", "t1", embedding=_vecs(1, 4)[0].tolist()) == 1
    assert store.vector_dim == 4
    [(record, distance)] = store.search(query_vector=_vecs(1, 4)[0], k=1)
    assert record.id == "t1" and distance == pytest.approx(0.0, abs=1e-4)
