"""The feedback keyword list of HYBRID search (oam_core/store/fusion.py, ``feedback_terms``,
docs/retrieval.md#feedback-keyword-list): which words the fused head adds to the
query, and what the extra keyword list does to a real ranking."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from oam_core import SQLiteMemoryStore
from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import MessageRecord, Record
from oam_core.embedders import HashingEmbedder
from oam_core.store import search as flow
from oam_core.store.fusion import FusionConfig, Signal, feedback_terms
from oam_core.store.options import SearchStrategy

TEXTS = {
    "h1": "Ana will play cello with the orchestra on Friday.",
    "h2": "At orchestra rehearsal Ana tuned her cello.",
    "t": "She practises cello every single morning before work.",
    "f1": "We play football on Sundays in the park.",
    "f2": "Let's play cards tonight after dinner.",
    "f3": "The orchestra tickets sold out in an hour.",
    "f4": "Ana loves the garden in spring.",
    "f5": "The morning train was late again.",
    "f6": "Work was busy every day this week.",
    "f7": "Before dinner we walked along the river.",
}
QUESTION = "What does Ana play in the orchestra?"


def _records(record_type: str = "message") -> dict[Hashable, Record]:
    if record_type != "message":
        return {
            key: Record(id=key, record_type=record_type, content=text)
            for key, text in TEXTS.items()
        }
    return {
        key: MessageRecord(id=key, record_type="message", content=text, role="user")
        for key, text in TEXTS.items()
    }


def test_words_of_the_head_rare_in_the_pool_follow_the_query_terms() -> None:
    pool = ["h1", "f4", "h2", "f3", "f1", "f2", "t", "f7", "f5", "f6"]
    terms = feedback_terms(QUESTION, pool, _records())
    # The head is h1, f4, h2. "cello" is in 3 of the 10 (log 11/3, twice: 2.60);
    # "friday", "garden", "loves", ... in one each (log 11 = 2.40), ties in the order
    # first seen (h1's words sorted, then f4's). As many words as the query's terms.
    assert terms == ["ana", "play", "orchestra", "cello", "friday", "garden"]
    # A head of one record: its own words only.
    assert feedback_terms(QUESTION, pool, _records(), head=1) == [
        "ana",
        "play",
        "orchestra",
        "friday",
        "cello",
    ]
    # Memories (distilled facts) give no words, and a pool without messages no list.
    assert feedback_terms(QUESTION, pool, _records("memory")) == []
    mixed = {**_records("memory"), "h2": _records()["h2"]}
    # One message in the pool: the head is that message (h2), the pool all ten.
    assert feedback_terms(QUESTION, pool, mixed) == [
        "ana",
        "play",
        "orchestra",
        "rehearsal",
        "tuned",
        "cello",
    ]


def test_names_numbers_short_words_and_the_querys_terms_are_not_added() -> None:
    def turn(key: str, name: str, text: str) -> MessageRecord:
        return MessageRecord(
            id=key,
            record_type="message",
            content=text,
            role="user",
            metadata={"$message": {"name": name}},
        )

    records: dict[Hashable, Record] = {
        "a": turn("a", "Joanna Lee", "Nate, the 2 of us saw it: a big red kite, Joanna!"),
        "b": turn("b", "Nate", "Joanna, the kite flew over the lake."),
    }
    terms = feedback_terms("When did Nate fly the kite?", ["a", "b"], records)
    # "joanna", "lee" and "nate" are participants, "2" a number, "us", "it" short or
    # function words, "kite" is asked already; "big", "red" and "saw" are in one of
    # the two records (log 3/1), "flew", "lake" only in b.
    assert terms == ["nate", "fly", "kite", "big", "red", "saw"]
    assert feedback_terms("?!", ["a"], records) == []  # a query without terms
    assert feedback_terms(QUESTION, [], records) == []


def _search(store: SQLiteMemoryStore, query: str, fusion: FusionConfig) -> list[str]:
    results = flow.search(
        store.runtime,
        query,
        10,
        strategy=SearchStrategy.HYBRID,
        reranker=None,
        query_vector=None,
        thread_id=NOT_SET,
        user_id="u",
        agent_id=NOT_SET,
        exact_user_match=True,
        exact_agent_match=False,
        exact_thread_match=False,
        record_types=None,
        metadata_filter=None,
        fusion=fusion,
    )
    return [record.id for record, _ in results]


@pytest.fixture
def store() -> SQLiteMemoryStore:
    s = SQLiteMemoryStore(":memory:", embedder=HashingEmbedder(64), search_strategy="HYBRID")
    s.add(list(TEXTS.values()), "message", record_ids=list(TEXTS), user_ids="u", thread_ids="t1")
    return s


def test_the_feedback_list_lifts_a_record_sharing_the_heads_rare_word(
    store: SQLiteMemoryStore,
) -> None:
    without = FusionConfig(signals=frozenset(Signal) - {Signal.FEEDBACK})
    # t shares no word with the question: last without the feedback list, seventh
    # with it ("cello", from h1 and h2), above the records sharing nothing.
    assert _search(store, QUESTION, without) == [
        "h1", "f4", "h2", "f3", "f1", "f2", "f7", "f5", "f6", "t",
    ]  # fmt: skip
    assert _search(store, QUESTION, FusionConfig()) == [
        "h1", "f4", "h2", "f3", "f1", "f2", "t", "f7", "f5", "f6",
    ]  # fmt: skip
    assert [r.id for r, _ in store.search(QUESTION, 10, user_id="u")] == _search(
        store, QUESTION, FusionConfig()
    )


def test_a_question_asking_for_advice_gets_no_feedback_list(store: SQLiteMemoryStore) -> None:
    advice = "Can you recommend something I could play in the orchestra?"
    without = FusionConfig(signals=frozenset(Signal) - {Signal.FEEDBACK})
    assert _search(store, advice, FusionConfig()) == _search(store, advice, without)
