"""HYBRID search: the speaker's vector list and the feedback vector list, on every back
end (store/vectorlists.py; docs/retrieval.md#second-stage-vector-lists).

The store here embeds with a table of hand-placed unit vectors, so what each vector
ranking holds is known: a record the question's own vector list cannot reach (beyond
the fusion's ``depth``) is found only through the list under test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from _fused import fused_search

from oam_core.apis.embedder import IEmbedder
from oam_core.errors import InvalidArgumentError
from oam_core.store.fusion import MAX_WEIGHT, MIN_WEIGHT, FusionConfig, Signal

DIM = 4


def _unit(*parts: float) -> npt.NDArray[np.float32]:
    v = np.zeros(DIM, np.float32)
    v[: len(parts)] = parts
    return v / np.linalg.norm(v)


class PlacedEmbedder(IEmbedder):
    """Each text's vector looked up in ``table``; any other text gets ``other`` (a
    ``KeyError`` without one)."""

    def __init__(
        self,
        table: Mapping[str, npt.NDArray[np.float32]],
        other: npt.NDArray[np.float32] | None = None,
    ) -> None:
        self.table = dict(table)
        self.other = other

    @property
    def embedder_id(self) -> str:
        return "placed"

    @property
    def embedding_dimension(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        if self.other is None:
            return np.stack([self.table[t] for t in texts]).astype(np.float32)
        return np.stack([self.table.get(t, self.other) for t in texts]).astype(np.float32)


def _search(store: Any, query: str, k: int, fusion: FusionConfig, **scope: Any) -> list[str]:
    """The ids ``fused_search`` finds (``scope``: its ``user_id``, ``metadata_filter``)."""
    return [r.id for r, _ in fused_search(store, query, k, fusion, **scope)]


SHALLOW = FusionConfig(depth=3, pool=3)
"""Each list ranks 3 deep, so the question's vector list holds the 3 nearest only."""


def _without(*signals: Signal, base: FusionConfig = SHALLOW) -> FusionConfig:
    return FusionConfig(depth=base.depth, pool=base.pool, signals=frozenset(Signal) - set(signals))


# -- the speaker's vector list ----------------------------------------------------------

ASKED = "What does Caroline enjoy?"
SPEAKER_TEXTS = {
    ASKED: _unit(1, 0),
    # Melanie's turns are all nearer the question than Caroline's answer.
    "Swimming laps at dawn.": _unit(0.95, 0.31),
    "Baking bread on Sundays.": _unit(0.9, 0.44),
    "Reading novels on the train.": _unit(0.85, 0.53),
    "Gardening with the neighbours.": _unit(0.8, 0.6),
    # Caroline's answer, and a greeting that names her (found by its words).
    "Pottery is my favourite thing.": _unit(0.5, 0, 0.866),
    "Caroline here, hello!": _unit(0, 0, 0, 1),
    # Another user's Caroline, nearest of all.
    "Pottery and painting, always.": _unit(1, 0, 0.05),
}
MELANIE = [
    ("m1", "Swimming laps at dawn."),
    ("m2", "Baking bread on Sundays."),
    ("m3", "Reading novels on the train."),
    ("m4", "Gardening with the neighbours."),
]


def _speaker_store(make_store: Any, *, other_user: bool = False, caroline: str = "Caroline") -> Any:
    store = make_store(search_strategy="HYBRID", embedder=PlacedEmbedder(SPEAKER_TEXTS))
    rows = [(i, t, "Melanie", {}) for i, t in MELANIE] + [
        ("c-answer", "Pottery is my favourite thing.", caroline, {"topic": "art"}),
        ("c-hello", "Caroline here, hello!", caroline, {}),
    ]
    store.add(
        [t for _, t, _, _ in rows],
        "message",
        record_ids=[i for i, _, _, _ in rows],
        thread_ids="t1",
        user_ids="u1",
        roles=["user"] * len(rows),
        metadata=[{"$message": {"name": name}, **extra} for _, _, name, extra in rows],
    )
    if other_user:
        store.add(
            ["Pottery and painting, always."],
            "message",
            record_ids=["c-elsewhere"],
            thread_ids="t2",
            user_ids="u2",
            roles=["user"],
            metadata=[{"$message": {"name": "Caroline"}, "topic": "art"}],
        )
    return store


@pytest.mark.parametrize("stored", ["Caroline", " Caroline ", "caroline"])
def test_the_speakers_vector_list_finds_her_turn_beyond_the_questions_list(
    make_store: Any, stored: str
) -> None:
    # However the name is stored (spaces around it, another case), the question names her.
    store = _speaker_store(make_store, caroline=stored)
    # The question's vector list holds Melanie's three nearest turns; the keyword
    # list the greeting naming Caroline; her answer is in neither.
    assert "c-answer" not in _search(store, ASKED, 3, _without(Signal.SPEAKER_VECTOR))
    found = _search(store, ASKED, 3, SHALLOW)
    assert "c-answer" in found
    assert "c-hello" in found


def test_the_speakers_vector_list_keeps_the_searchs_scope_and_filter(make_store: Any) -> None:
    store = _speaker_store(make_store, other_user=True)
    # Another user's Caroline turn is the nearest of all, yet never leaves its scope.
    assert "c-elsewhere" not in _search(store, ASKED, 3, SHALLOW, user_id="u1")
    assert "c-answer" in _search(store, ASKED, 3, SHALLOW, user_id="u1")
    # The caller's metadata filter holds on the speaker's list too: no other topic.
    art = _search(store, ASKED, 3, SHALLOW, user_id="u1", metadata_filter={"topic": "art"})
    assert art == ["c-answer"]


def test_a_question_naming_no_participant_gets_no_speakers_list(make_store: Any) -> None:
    table = {**SPEAKER_TEXTS, "What do they enjoy?": _unit(1, 0)}
    store = _speaker_store(make_store)
    store.runtime.embedder = PlacedEmbedder(table)
    default = _search(store, "What do they enjoy?", 3, SHALLOW)
    assert default == _search(store, "What do they enjoy?", 3, _without(Signal.SPEAKER_VECTOR))
    assert "c-answer" not in default


# -- the feedback vector list -----------------------------------------------------------

TRAVEL = "Where should we go this spring?"
FEEDBACK_TEXTS = {
    TRAVEL: _unit(1, 0),
    # The head: exchanges between the question and the topic they were about.
    "Lisbon trams were lovely.": _unit(1, 1, 0, 0.02),
    "Porto bridges at sunset.": _unit(1, 1, 0, 0.04),
    "Sintra palaces next time.": _unit(1, 1, 0, 0.06),
    # Said only in the topic's words: far from the question itself.
    "The Algarve coast is booked.": _unit(0, 1),
    # Nearer the question than the booking, on another subject.
    "Quarterly taxes are due.": _unit(0.3, 0, 0.954),
    "Dentist on Tuesday.": _unit(0.3, 0, 0.954),
    "Car insurance renewal.": _unit(0.3, 0, 0.954),
}
FEEDBACK_IDS = ["h1", "h2", "h3", "booking", "d1", "d2", "d3"]


def _feedback_store(make_store: Any, record_type: str = "message") -> Any:
    store = make_store(search_strategy="HYBRID", embedder=PlacedEmbedder(FEEDBACK_TEXTS))
    texts = [t for t in FEEDBACK_TEXTS if t != TRAVEL]
    extra: dict[str, Any] = {"thread_ids": "t1", "roles": ["user"] * len(texts)}
    store.add(
        texts, record_type, record_ids=FEEDBACK_IDS, **(extra if record_type == "message" else {})
    )
    return store


DEEPER = FusionConfig(depth=4, pool=4)


def test_the_feedback_vector_list_reaches_what_the_head_was_about(make_store: Any) -> None:
    store = _feedback_store(make_store)
    without = _search(store, TRAVEL, 5, _without(Signal.FEEDBACK_VECTOR, base=DEEPER))
    assert "booking" not in without
    found = _search(store, TRAVEL, 5, DEEPER)
    assert "booking" in found
    assert found[:3] == without[:3] == ["h1", "h2", "h3"]


def test_the_feedback_vector_list_needs_messages_in_the_head(make_store: Any) -> None:
    # Memories have no context rows and no conversation to follow: nothing changes.
    store = _feedback_store(make_store, record_type="memory")
    assert _search(store, TRAVEL, 5, DEEPER) == _search(
        store, TRAVEL, 5, _without(Signal.FEEDBACK_VECTOR, Signal.SPEAKER_VECTOR, base=DEEPER)
    )


def test_a_question_asking_for_advice_gets_neither_list(make_store: Any) -> None:
    ask = "Can you recommend where we should go this spring?"
    # The question and its topic (the words that ask removed) point where TRAVEL does.
    embedder = PlacedEmbedder(FEEDBACK_TEXTS, other=_unit(1, 0))
    store = make_store(search_strategy="HYBRID", embedder=embedder)
    texts = [t for t in FEEDBACK_TEXTS if t != TRAVEL]
    store.add(texts, "message", record_ids=FEEDBACK_IDS, thread_ids="t1", roles=["user"] * 7)
    neither = _without(Signal.FEEDBACK_VECTOR, Signal.SPEAKER_VECTOR, base=DEEPER)
    assert _search(store, ask, 5, DEEPER) == _search(store, ask, 5, neither)


# -- configuration ----------------------------------------------------------------------


@pytest.mark.parametrize(("speaker", "feedback", "list_weight"), [(0.8, 0.5, 1.0), (0.5, 0.5, 0.9)])
def test_the_two_lists_may_not_weigh_more_than_the_question_list(
    speaker: float, feedback: float, list_weight: float
) -> None:
    with pytest.raises(
        InvalidArgumentError, match="speaker_vector_weight \\+ feedback_vector_weight"
    ):
        FusionConfig(
            speaker_vector_weight=speaker, feedback_vector_weight=feedback, list_weight=list_weight
        )


# -- the back end's read of stored row vectors -------------------------------------------


def test_row_vectors_are_each_records_stored_rows_context_row_last(make_store: Any) -> None:
    from oam_core.memory.client import OracleAgentMemory

    store = make_store()
    thread = OracleAgentMemory(store=store, extract_memories=False).create_thread(
        thread_id="t1", user_id="u1"
    )
    turns = [("user", "We adopted a dog."), ("assistant", "Nice, what is its name?")]
    first, second = thread.add_messages([{"role": r, "content": c} for r, c in turns])
    backend = store.runtime.backend
    with backend.transaction() as tx:
        key = {rid: tx.fetch("message", rid).key for rid in (first, second)}
    dumped: dict[str, list[Any]] = {}
    after = None
    while True:  # threads first, then the records
        page, after = backend.dump_page(after, 100, None)
        if not page:
            break
        dumped.update({row.id: [c.vector for c in row.chunks] for row in page})
    rows = backend.row_vectors([key[second], key[first]], store.runtime.now())
    assert set(rows) == {key[first], key[second]}
    for rid in (first, second):
        assert len(rows[key[rid]]) == len(dumped[rid])
        for got, want in zip(rows[key[rid]], dumped[rid], strict=True):
            assert got.dtype == np.float32
            assert got.shape == (store.runtime.vector_dim,)
            np.testing.assert_array_equal(got, want)
    # The second message: its own row, then the context row quoting the first.
    assert len(rows[key[second]]) == 2
    assert not np.allclose(rows[key[second]][0], rows[key[second]][1])
    assert backend.row_vectors([], store.runtime.now()) == {}


@pytest.mark.parametrize(
    "field", ["speaker_vector_weight", "feedback_vector_weight", "date_weight"]
)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.5, 0, 1e308, 5e-324, 1e-7])
def test_a_weight_must_be_a_number_in_range(field: str, bad: float) -> None:
    # 1e308: the weights' sum would overflow (every distance 1.0); 5e-324: the
    # scores would vanish. Only the ratios of the weights matter.
    with pytest.raises(InvalidArgumentError, match=f"{field} must be a number from 1e-06 to 1e"):
        FusionConfig(**{field: bad})


def test_the_largest_weights_still_rank() -> None:
    fusion = FusionConfig(list_weight=MAX_WEIGHT, speaker_vector_weight=MAX_WEIGHT / 2)
    assert fusion.list_weight == 1e6
    assert FusionConfig(date_weight=MIN_WEIGHT).date_weight == 1e-6


def test_vector_shares_that_sum_to_the_list_weight_in_decimals_are_accepted() -> None:
    # 0.1 + 0.2 == 0.30000000000000004 in binary floating point.
    fusion = FusionConfig(list_weight=0.3, speaker_vector_weight=0.1, feedback_vector_weight=0.2)
    assert fusion.speaker_vector_weight + fusion.feedback_vector_weight > 0.3
    with pytest.raises(InvalidArgumentError, match=r"got 0\.2 \+ 0\.2 = 0\.4"):
        FusionConfig(list_weight=0.3, speaker_vector_weight=0.2, feedback_vector_weight=0.2)


def test_an_expired_context_row_is_not_read_back(make_store: Any, clock: Any) -> None:
    """A context row quoting a message that expired expires with it: the feedback
    vector is made of live rows only, so an expired message's text steers nothing."""
    from oam_core.memory.client import OracleAgentMemory

    start = clock.now

    def searched(name: str, secret: str) -> tuple[int, int, list[tuple[str, float]]]:
        clock.set(start)
        store = make_store(name=name, search_strategy="HYBRID")
        thread = OracleAgentMemory(store=store, extract_memories=False).create_thread(
            thread_id="t1", user_id="u1"
        )
        notes = [f"Filler note {i} about gardening and tomatoes." for i in range(20)]
        thread.add_messages([{"role": "user", "content": t} for t in notes])
        thread.add_messages([{"role": "user", "content": secret}], ttl_days=1)
        (reply,) = thread.add_messages([{"role": "assistant", "content": "Noted for the trip."}])
        boots = [f"Another filler {i} on volcano hiking boots and maps." for i in range(20)]
        thread.add_messages([{"role": "user", "content": t} for t in boots])
        backend = store.runtime.backend
        with backend.transaction() as tx:
            key = tx.fetch("message", reply).key
        live = len(backend.row_vectors([key], clock.now)[key])
        clock.advance(days=2)
        after = len(backend.row_vectors([key], clock.now)[key])
        found = store.search("What will you remember for the trip?", k=8)
        return live, after, [(r.content or "", float(d)) for r, d in found]

    iceland = searched("iceland.db", "I am flying to Iceland for volcano hiking.")
    spain = searched("spain.db", "I am flying to Spain for beach tennis.")
    assert iceland[:2] == spain[:2] == (2, 1)  # own row and context row, then own row only
    assert iceland[2] == spain[2]
    assert all("flying" not in text for text, _ in iceland[2])


def test_a_store_searches_with_the_fusion_it_was_given(make_store: Any) -> None:
    config = _without(Signal.SPEAKER_VECTOR)
    store = make_store(
        search_strategy="HYBRID", embedder=PlacedEmbedder(SPEAKER_TEXTS), fusion=config
    )
    assert store.fusion is config
    rows = [(i, t, "Melanie") for i, t in MELANIE] + [
        ("c-answer", "Pottery is my favourite thing.", "Caroline"),
        ("c-hello", "Caroline here, hello!", "Caroline"),
    ]
    store.add(
        [t for _, t, _ in rows],
        "message",
        record_ids=[i for i, _, _ in rows],
        thread_ids="t1",
        roles="user",
        metadata=[{"$message": {"name": name}} for _, _, name in rows],
    )
    got = store.search(ASKED, 3)
    assert [(r.id, d) for r, d in got] == [
        (r.id, d) for r, d in fused_search(store, ASKED, 3, config)
    ]
    assert "c-answer" not in [r.id for r, _ in got]
    assert "c-answer" in [r.id for r, _ in fused_search(store, ASKED, 3, SHALLOW)]


@pytest.mark.parametrize("bad", [{"depth": 3}, "default", 1])
def test_a_store_refuses_a_fusion_that_is_not_a_fusion_config(make_store: Any, bad: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="fusion must be a FusionConfig or None"):
        make_store(fusion=bad)


@pytest.mark.parametrize("field", ["depth", "pool", "rrf_k"])
@pytest.mark.parametrize("bad", [0, 2**31, 2**63, 1.5, True])
def test_a_depth_must_be_an_int_a_search_can_bind(field: str, bad: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=f"{field} must be an int from 1 to"):
        FusionConfig(**{field: bad})


def test_a_stores_fusion_can_be_replaced_and_is_checked(make_store: Any) -> None:
    store = make_store(search_strategy="HYBRID")
    store.add(["We walked along the river."], "memory", record_ids="m1")
    config = FusionConfig(signals=frozenset())
    store.fusion = config
    assert store.fusion is config
    with pytest.raises(InvalidArgumentError, match="fusion must be a FusionConfig or None"):
        store.fusion = {"signals": ()}  # type: ignore[assignment]
    assert store.fusion is config
    store.fusion = None
    assert store.fusion == FusionConfig()
    assert [r.id for r, _ in store.search("river walk", 1)] == ["m1"]
