"""Store conformance: results tied in distance are broken by record type, then id,
and a smaller k gives the first results of a larger one (docs/store.md#searching),
whatever order the tied records were written in."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("copies", [3, 30])
def test_tied_vectors_come_by_id(make_store, copies):
    store = make_store(embedder=None, vector_dim=4)
    ids = [f"r{i:02d}" for i in range(copies)][::-1]
    store.add(["x"] * copies, "memory", embeddings=np.ones((copies, 4), np.float32), record_ids=ids)
    for k in (1, 2, 5):
        got = [r.id for r, _ in store.search(query_vector=np.ones(4, np.float32), k=k)]
        assert got == sorted(ids)[:k]


def test_tied_keyword_results_come_by_id(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["apple pie"] * 3, "memory", record_ids=["b", "a", "c"])
    store.add(["apple pie and more words"], "memory", record_ids=["0"])
    # The longer text scores lower (BM25 length normalisation): the three tied
    # records come first, by id.
    assert [r.id for r, _ in store.search("apple", 4)] == ["a", "b", "c", "0"]
    for k in (1, 2, 3):
        assert [r.id for r, _ in store.search("apple", k)] == ["a", "b", "c"][:k]
