"""Conformance: what the store's own embedder returns is checked like a caller's
vectors (docs/errors.md): a model answering with NaN, infinity, too few rows or the
wrong length raises ``UnusableEmbeddingsError`` naming the embedder, before anything
is written or ranked. NaN vectors used to be stored and returned by every search at
distance ``nan``, and a NaN query ranked every record at distance 1.0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from oam_core import UnusableEmbeddingsError
from oam_core.apis.embedder import IEmbedder
from oam_core.embedders.hashing import HashingEmbedder

DIM = 16


class FaultyEmbedder(IEmbedder):
    """The hashing embedder, except for texts holding a trigger word: ``nan`` and
    ``inf`` give such a vector, ``short`` drops the text's row, ``wide`` makes every
    row one component longer."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(DIM)

    @property
    def embedder_id(self) -> str:
        return "faulty"

    @property
    def embedding_dimension(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        out = self.inner.embed(texts, is_query=is_query)
        for i, text in enumerate(texts):
            if "nan" in text.split():
                out[i, 3] = np.nan
            if "inf" in text.split():
                out[i, 0] = np.inf
        if any("short" in t.split() for t in texts):
            out = out[[i for i, t in enumerate(texts) if "short" not in t.split()]]
        if any("wide" in t.split() for t in texts):
            out = np.hstack([out, np.ones((len(out), 1), np.float32)])
        return out


@pytest.mark.parametrize("word", ["nan", "inf", "short", "wide"])
def test_a_bad_document_vector_writes_nothing(make_store: Any, word: str) -> None:
    store = make_store(embedder=FaultyEmbedder())
    store.add(["a good record"], "memory", record_ids=["good"])
    with pytest.raises(UnusableEmbeddingsError, match="'faulty'") as err:
        store.add(["fine", f"a {word} record"], "memory", record_ids=["x1", "x2"])
    assert "2 texts" in str(err.value) or "NaN or infinity (text 1 of 2)" in str(err.value)
    assert [r.id for r in store.list("memory")] == ["good"]
    assert [r.id for r, _ in store.search("record", k=5)] == ["good"]


@pytest.mark.parametrize("word", ["nan", "inf", "short", "wide"])
def test_a_bad_first_write_leaves_an_empty_store(make_store: Any, word: str) -> None:
    store = make_store(embedder=FaultyEmbedder())
    with pytest.raises(UnusableEmbeddingsError, match="'faulty'"):
        store.add([f"a {word} record"], "memory")
    assert store.list("memory") == []
    store.add(["a good record"], "memory", record_ids=["good"])
    assert [r.id for r, _ in store.search("good record", k=5)] == ["good"]


@pytest.mark.parametrize("word", ["nan", "inf", "short", "wide"])
@pytest.mark.parametrize("strategy", ["VECTOR", "HYBRID"])
def test_a_bad_query_vector_is_refused(make_store: Any, word: str, strategy: str) -> None:
    store = make_store(embedder=FaultyEmbedder())
    store.add(["a good record", "another record"], "memory", record_ids=["a", "b"])
    with store.searching_with(strategy):
        with pytest.raises(UnusableEmbeddingsError, match="'faulty'"):
            store.search(f"{word} record", k=5)
        assert len(store.search("good record", k=5)) == 2
