"""HYBRID search: speaker, date and time signals, and the ``reranker=`` option, on every
back end (docs/retrieval.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

import numpy as np
import numpy.typing as npt
import pytest
from _fused import fused_search

from oam_core import OracleAgentMemory
from oam_core.rerankers import IReranker
from oam_core.store.fusion import FusionConfig, Signal


def speaker(name: str) -> dict[str, object]:
    return {"$message": {"name": name}}


def ids(results) -> list[str]:
    return [r.id for r, _ in results]


def test_the_named_speaker_ranks_first(make_store):
    store = make_store(search_strategy="HYBRID")
    store.add(
        ["I painted a sunrise by the lake.", "I painted a sunrise by the lake."],
        "message",
        record_ids=["ana-1", "ben-1"],
        thread_ids="t1",
        roles=["user", "assistant"],
        metadata=[speaker("Ana"), speaker("Ben")],
    )
    assert ids(store.search("What did Ben paint by the lake?", 2))[0] == "ben-1"
    assert ids(store.search("What did Ana paint by the lake?", 2))[0] == "ana-1"
    # Both named, or neither: no speaker preference, both still found.
    assert sorted(ids(store.search("Ana and Ben painted what?", 2))) == ["ana-1", "ben-1"]


def test_a_named_day_prefers_records_of_that_day(make_store):
    store = make_store(search_strategy="HYBRID")
    store.add(
        ["We went hiking in the hills.", "We went hiking in the hills.", "Dinner was pasta."],
        "memory",
        record_ids=["may", "sept", "other"],
        timestamps=["2023-05-08T13:56:00", "2023-09-01T10:00:00", "2023-05-08T19:00:00"],
    )
    assert ids(store.search("Where did we go hiking on 8 May, 2023?", 3))[0] == "may"
    assert ids(store.search("Where did we go hiking in September 2023?", 3))[0] == "sept"


def test_relative_words_in_a_record_count_for_its_day(make_store):
    store = make_store(search_strategy="HYBRID")
    store.add(
        ["Yesterday I got her a stuffed animal.", "I got her a stuffed animal."],
        "memory",
        record_ids=["yesterday", "later"],
        timestamps=["2022-05-26T10:00:00", "2022-08-26T10:00:00"],
    )
    # 25 May is "yesterday" of the first record.
    assert ids(store.search("What did I get her on 25 May 2022?", 2))[0] == "yesterday"


FOODS = ["pasta", "sushi", "tacos", "curry", "soup", "salad", "pizza"]


def _dinners_without_timestamps(make_store, clock) -> object:
    """Seven user turns added the README's way (no timestamp), one every 45 days from
    1 January 2026 on the store clock: "sushi" is said on 15 February, "tacos" on 1
    April ("two weeks ago": 18 March), "curry" on 16 May, "pizza" on 28 September."""
    store = make_store(search_strategy="HYBRID")
    thread = OracleAgentMemory(store=store, extract_memories=False).create_thread(
        thread_id="t", user_id="ana"
    )
    clock.set(datetime(2026, 1, 1, 12, tzinfo=timezone.utc))
    for food in FOODS:
        content = f"Tonight I cooked {food} for dinner."
        if food == "tacos":
            content = f"Two weeks ago I cooked {food} for dinner."
        thread.add_messages([{"role": "user", "content": content, "id": food}])
        clock.advance(days=45)
    return store


def test_a_named_day_finds_messages_added_without_a_timestamp(make_store, clock):
    store = _dinners_without_timestamps(make_store, clock)
    assert store.get("message", "sushi").timestamp is None

    def first(query: str) -> str:
        return ids(store.search(query, 3, record_types={"message"}))[0]

    # No timestamp: the date list reads when the store wrote the message (created_at).
    assert first("What did I cook for dinner on 15 February 2026?") == "sushi"
    assert first("What did I cook for dinner in May 2026?") == "curry"
    # A relative date in the text counts from created_at.
    assert first("What did I cook for dinner on 18 March 2026?") == "tacos"
    # A relative date in the query, resolved against the clock.
    clock.set(datetime(2026, 9, 29, 12, tzinfo=timezone.utc))
    assert first("What did I cook for dinner yesterday?") == "pizza"


def test_a_question_asking_for_a_time_prefers_records_stating_one(make_store):
    store = make_store(search_strategy="HYBRID")
    store.add(
        ["We visited the old castle with Ben.", "We visited the old castle last Friday."],
        "memory",
        record_ids=["ben", "friday"],
    )
    assert ids(store.search("When did we visit the old castle?", 2)) == ["friday", "ben"]
    assert ids(store.search("Did we visit the old castle with Ben?", 2))[0] == "ben"


class WordCountReranker(IReranker):
    """Scores a passage by how often it contains ``word`` (records the calls)."""

    def __init__(self, word: str, candidates: int = 30) -> None:
        self.word = word
        self.candidates = candidates
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append((query, list(texts)))
        return np.asarray([t.lower().count(self.word) for t in texts], dtype=np.float32)


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_reranker_reorders_the_first_stage(make_store, strategy):
    reranker = WordCountReranker("puppy", candidates=6)
    store = make_store(search_strategy=strategy, reranker=reranker)
    texts = [f"note {i} about the park" for i in range(6)]
    texts[4] = "the park puppy and the puppy trainer"
    texts[5] = "a puppy at the park"
    store.add(texts, "memory", record_ids=[f"m{i}" for i in range(6)])
    results = store.search("park", 2)
    query, seen = reranker.calls[-1]
    assert query == "park"
    assert sorted(seen) == sorted(texts)
    assert ids(results) == ["m4", "m5"]
    assert [d for _, d in results] == pytest.approx([1 / (1 + np.exp(2)), 1 / (1 + np.exp(1))])


@pytest.mark.parametrize(("k", "seen"), [(2, 3), (5, 5)])
def test_reranker_reads_max_k_candidates(make_store, k, seen):
    reranker = WordCountReranker("puppy", candidates=3)
    store = make_store(search_strategy="HYBRID", reranker=reranker)
    store.add([f"note {i} about the park" for i in range(8)], "memory")
    assert len(store.search("park", k)) == k
    assert len(reranker.calls[-1][1]) == seen


def test_reranker_sees_speaker_labelled_messages_and_at_least_k(make_store):
    reranker = WordCountReranker("ben", candidates=1)
    store = make_store(search_strategy="HYBRID", reranker=reranker)
    store.add(
        ["hello there", "hello again"],
        "message",
        record_ids=["a", "b"],
        thread_ids="t1",
        roles=["user", "assistant"],
        metadata=[speaker("Ana"), speaker("Ben")],
    )
    results = store.search("hello", 2)
    assert sorted(reranker.calls[-1][1]) == ["Ana: hello there", "Ben: hello again"]
    assert ids(results) == ["b", "a"]


def test_vector_queries_are_not_reranked(make_store):
    reranker = WordCountReranker("x")
    store = make_store(embedder=None, vector_dim=2, reranker=reranker)
    store.add(["a", "b"], "memory", record_ids=["a", "b"], embeddings=[[1.0, 0.0], [0.0, 1.0]])
    assert ids(store.search(query_vector=[1.0, 0.0], k=1)) == ["a"]
    assert reranker.calls == []


class BrokenReranker(WordCountReranker):
    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray([np.nan] * len(texts), dtype=np.float32)


def test_a_reranker_returning_bad_scores_is_an_error(make_store):
    store = make_store(search_strategy="HYBRID", reranker=BrokenReranker("x"))
    store.add(["alpha"], "memory", record_ids="a")
    with pytest.raises(ValueError, match="finite"):
        store.search("alpha", 1)


@pytest.mark.parametrize("bad", ["cross-encoder", 3, object()])
def test_reranker_must_be_an_ireranker(make_store, bad):
    with pytest.raises(ValueError, match="reranker must be an IReranker"):
        make_store(reranker=bad)


def test_reranker_candidates_must_be_positive(make_store):
    with pytest.raises(ValueError, match="candidates"):
        make_store(reranker=WordCountReranker("x", candidates=0))


def test_own_words_rank_ahead_of_a_reply_matching_only_through_its_quote(make_store):
    """A reply's context row quotes the turns before it, so "Aww, how sweet!" matches a
    query about the rescue dog as well as the question turn before it. The turns whose
    own text holds query terms rank first (the own-text list; docs/retrieval.md)."""
    from oam_core.memory.client import OracleAgentMemory

    store = make_store(search_strategy="HYBRID")
    memory = OracleAgentMemory(store=store, extract_memories=False)
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    turns = [
        ("user", "Did you do anything fun this weekend?"),
        ("assistant", "We adopted a rescue dog named Biscuit."),
        ("user", "Aww, how sweet!"),
    ]
    question, answer, reply = thread.add_messages([{"role": r, "content": c} for r, c in turns])
    query = "fun weekend rescue dog Biscuit"
    found = {r.id: d for r, d in store.search(query, 3)}
    assert min(found, key=found.__getitem__) == answer
    # The reply's context row holds every query word and the question turn only two:
    # the own-text list lifts the question turn level with the reply (a tie, which
    # type then id decide), from behind it without that list.
    assert found[question] == pytest.approx(found[reply], abs=1e-12)
    without = _distances(store, query, FusionConfig(signals=frozenset(Signal) - {Signal.OWN_TEXT}))
    assert without[question] > without[reply] + 0.01
    assert found[question] < without[question] - 0.01


def _distances(store, query, fusion):
    """``{record id: distance}`` of a HYBRID search of ``store`` fused by ``fusion``."""
    return {r.id: d for r, d in fused_search(store, query, 3, fusion)}
