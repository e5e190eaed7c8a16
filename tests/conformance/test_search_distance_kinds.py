"""Every search result's distance says what it measures (``Distance.kind``,
docs/store.md#search-strategies), on every back end; and a HYBRID search fuses with
the ``FusionConfig`` it is given (store/fusion.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from _fused import fused_search

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.rerankers import IReranker
from oam_core.store.fusion import Distance, DistanceKind, FusionConfig, Signal

LONG = "the park puppy and the trainer walked along the river in the morning sun"


def _kinds(results: list[tuple[Any, float]]) -> set[DistanceKind]:
    assert results and all(isinstance(d, Distance) for _, d in results)
    return {d.kind for _, d in results}  # type: ignore[attr-defined]


def _fill(store: Any) -> None:
    store.add(
        ["the park puppy", "a puppy trainer by the river", "morning sun on the park"],
        "memory",
        record_ids=["a", "b", "c"],
    )


def test_each_strategy_says_what_its_distances_measure(make_store: Any) -> None:
    small = HashingEmbedder(64, max_input_tokens=12)  # LONG is searched in parts
    vector = make_store(name="v.db", search_strategy="VECTOR", embedder=small)
    keyword = make_store(name="k.db", search_strategy="KEYWORD", embedder=small)
    hybrid = make_store(name="h.db", search_strategy="HYBRID", embedder=small)
    for store in (vector, keyword, hybrid):
        _fill(store)
    assert _kinds(vector.search("park puppy", 3)) == {DistanceKind.COSINE}
    # a long query's parts: each record at its nearest part, still a cosine distance
    assert _kinds(vector.search(LONG, 3)) == {DistanceKind.COSINE}
    # the parts of "zebra quantum" x 40 point where the short query does: same distances
    short = [(r.id, round(d, 6)) for r, d in vector.search("zebra quantum park", 3)]
    long = [(r.id, round(d, 6)) for r, d in vector.search(" ".join(["zebra quantum park"] * 40), 3)]
    assert long == short and min(d for _, d in long) > 0.3
    assert _kinds(keyword.search("park puppy", 3)) == {DistanceKind.KEYWORD}
    assert _kinds(keyword.search(LONG, 3)) == {DistanceKind.FUSED}
    assert _kinds(hybrid.search("park puppy", 3)) == {DistanceKind.FUSED}
    qv = small.embed(["park"], is_query=True)[0]
    assert _kinds(hybrid.search(query_vector=qv, k=3)) == {DistanceKind.COSINE}


class _Counts(IReranker):
    candidates = 5

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray([t.count("puppy") for t in texts], dtype=np.float32)


def test_reranked_distances_say_so(make_store: Any) -> None:
    store = make_store(search_strategy="HYBRID", reranker=_Counts())
    _fill(store)
    assert _kinds(store.search("park puppy", 2)) == {DistanceKind.RERANKED}


def _search(store: Any, query: str, k: int, fusion: FusionConfig) -> list[str]:
    return [r.id for r, _ in fused_search(store, query, k, fusion)]


def test_a_hybrid_search_applies_only_the_signals_its_config_names(make_store: Any) -> None:
    store = make_store(search_strategy="HYBRID")
    store.add(
        ["I painted a sunrise by the lake.", "I painted a sunrise by the lake."],
        "message",
        record_ids=["ana-1", "ben-1"],
        thread_ids="t1",
        roles=["user", "assistant"],
        metadata=[{"$message": {"name": "Ana"}}, {"$message": {"name": "Ben"}}],
    )
    query = "What did Ben paint by the lake?"
    assert _search(store, query, 2, FusionConfig())[0] == "ben-1"
    # The speaker's vector list alone (the question ranked against Ben's messages)
    # lifts him too; without both speaker lists the two identical texts tie: type,
    # then id, decide.
    vector_only = FusionConfig(signals=frozenset(Signal) - {Signal.SPEAKER})
    assert _search(store, query, 2, vector_only) == ["ben-1", "ana-1"]
    no_speaker = FusionConfig(signals=frozenset(Signal) - {Signal.SPEAKER, Signal.SPEAKER_VECTOR})
    assert _search(store, query, 2, no_speaker) == ["ana-1", "ben-1"]
