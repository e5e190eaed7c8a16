"""Conformance: a vector of tiny components keeps its direction
(docs/store.md#what-is-stored-and-what-is-searched).

The squares of components below about 1e-19 underflow float32: such a vector was
accepted but ranked as the zero vector (distance 1 from everything, written or
searched with). It is now scaled to unit length in float64 first, wherever a vector
enters: written vectors, the embedder's vectors, query vectors and the embedded
store's vector index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from oam_core.apis.embedder import IEmbedder
from oam_core.store.sqlite.vector.mirror import unit as _unit

TINY = 1e-25


def _unit_vec(*xs: float) -> list[float]:
    return [*xs, *([0.0] * (4 - len(xs)))]


@pytest.mark.parametrize("strategy", ["VECTOR", "HYBRID"])
def test_tiny_written_and_query_vectors_rank_by_direction(make_store: Any, strategy: str) -> None:
    store = make_store(embedder=None, vector_dim=4, search_strategy=strategy)
    given = np.array([[TINY, TINY, 0, 0], [1, 0, 0, 0], [-1, -1, 0, 0]], np.float32)
    kept = given.copy()
    store.add(["tiny", "x", "opposite"], "memory", embeddings=given, record_ids=["t", "x", "o"])
    assert np.array_equal(given, kept)  # the caller's array is not changed
    got = store.search(query_vector=_unit_vec(1, 1), k=3)
    assert [r.id for r, _ in got] == ["t", "x", "o"]
    assert [d for _, d in got] == pytest.approx([0.0, 1 - 2**-0.5, 2.0], abs=1e-5)
    tiny_query = store.search(query_vector=_unit_vec(TINY, TINY), k=3)
    assert [(r.id, round(d, 4)) for r, d in tiny_query] == [(r.id, round(d, 4)) for r, d in got]
    # one vector at a time (not the bulk matrix) and through update
    store.add(["tiny list"], "memory", embeddings=[_unit_vec(-TINY, -TINY)], record_ids="tl")
    store.update("memory", "x", embedding=_unit_vec(TINY, 0, TINY))
    ranked = dict((r.id, d) for r, d in store.search(query_vector=_unit_vec(1, 1), k=5))
    assert ranked["tl"] == pytest.approx(2.0, abs=1e-5)
    assert ranked["x"] == pytest.approx(0.5, abs=1e-5)


class TinyEmbedder(IEmbedder):
    """An embedder whose vectors have tiny components (the direction is the text's)."""

    @property
    def embedding_dimension(self) -> int:
        return 4

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        rows = {"up": [1, 0, 0, 0], "right": [0, 1, 0, 0], "down": [-1, 0, 0, 0]}
        return np.array([rows[t] for t in texts], np.float32) * np.float32(TINY)


def test_tiny_vectors_of_the_embedder_rank_by_direction(make_store: Any) -> None:
    store = make_store(embedder=TinyEmbedder(), search_strategy="VECTOR")
    store.add(["up", "right", "down"], "memory", record_ids=["u", "r", "d"])
    got = store.search("up", 3)
    assert [(r.id, round(d, 4)) for r, d in got] == [("u", 0.0), ("r", 1.0), ("d", 2.0)]


def test_the_vector_index_scales_tiny_rows_stored_before() -> None:
    rows = np.array([[TINY, 0, -TINY], [0, 0, 0], [3, 0, 4]], np.float32)
    np.testing.assert_allclose(
        _unit(rows), [[2**-0.5, 0, -(2**-0.5)], [0, 0, 0], [0.6, 0, 0.8]], rtol=1e-6
    )
