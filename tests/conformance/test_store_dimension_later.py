"""A store written without an embedder (keyword search only) records no vector
dimension until a vector is written: opening it with an embedder to search it
records nothing, so ``reindex`` with another embedder stays possible
(docs/store.md#schema). A new, empty store records the dimension it is opened with."""

from __future__ import annotations

from typing import Any

import pytest

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import EmbedderMismatchError, SchemaError


def test_a_search_with_an_embedder_leaves_a_keyword_only_store_free(
    make_store: Any, backend: Any
) -> None:
    if not backend.shared_storage:
        pytest.skip("needs a storage that outlives its store object")
    store = make_store(name="kw.db", embedder=None)
    store.add(["my dog Moose loves the beach"], "fact", record_ids=["moose"])
    store.close()
    trial = make_store(name="kw.db", embedder=HashingEmbedder(64))
    with pytest.warns(UserWarning, match=r"until store\.reindex\(\)"):
        assert [r.id for r, _ in trial.search("Moose", k=3)] == ["moose"]
    trial.close()
    local = make_store(name="kw.db", embedder=HashingEmbedder(128))
    assert local.vector_dim is None  # learned from the first vector written
    local.reindex()
    assert local.vector_dim == 128
    assert [r.id for r, _ in local.search("Moose", k=3)] == ["moose"]
    local.close()
    with pytest.raises((EmbedderMismatchError, SchemaError), match="128"):
        make_store(name="kw.db", embedder=HashingEmbedder(64))


def test_a_new_store_records_the_dimension_it_is_opened_with(make_store: Any, backend: Any) -> None:
    if not backend.shared_storage:
        pytest.skip("needs a storage that outlives its store object")
    make_store(name="new.db", embedder=HashingEmbedder(64)).close()
    with pytest.raises((EmbedderMismatchError, SchemaError), match="64"):
        make_store(name="new.db", embedder=HashingEmbedder(128))
