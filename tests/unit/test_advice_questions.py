"""Which questions ask for advice, and which ask about what happened
(oam_core/store/advicequestions.py, oam_core/store/temporal.py,
docs/retrieval.md#advice-questions-and-stated-preferences): the classification on a
table of questions both ways, the signal lists each kind gets, and a dated question
about what someone suggested ranked through a real SQLite store."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from pathlib import Path

import pytest

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.apis.records import MessageRecord, Record
from oam_core.store.advicequestions import asks_about_the_past, asks_for_advice
from oam_core.store.fusion import ADVICE_SIGNALS, Signal, query_signals, said_at
from oam_core.store.temporal import names_date, names_past_time

ADVICE = [
    "Can you suggest a board game for us?",
    # A past clause before the request does not make the request about the past.
    "I didn't like the last book, can you suggest another for me?",
    "I had a bad time at the last hotel; could you help me find a better one?",
    "I was wondering if you could recommend a good book for me?",
    "Was wondering if you could suggest a hike for us.",
    "What gift ideas do you have for my dad who was just promoted?",
    # The adjective and the present passive are no past tense.
    "What are some recommended car options for me for my daily commute?",
    "What exercise is recommended for me?",
    "Are there highly recommended cafes near me?",
    # A date or past time in a request or a plan is the date of what is asked for,
    # or the background of a request made now.
    "I hurt my knee yesterday, what should I do?",
    "My flight was cancelled two days ago; can you suggest another route for me?",
    "Can you recommend a restaurant for my birthday on 25 May, 2024?",
    "I'm going to Rome on 3 June 2026, any tips for me?",
    # A month alone, "this" and "next" periods: plans.
    "What are some fun ways I could stay active and fit this July while on vacation?",
    "I'm headed to Paris next month. What dining recommendations do you have for me?",
]

ABOUT_THE_PAST = [
    # A past auxiliary in question word order, whoever the subject.
    "What did my mom suggest for dinner on 3 May 2023?",
    "When did my doctor suggest the new diet?",
    "Which restaurant did my sister recommend?",
    "What advice did my doctor give me?",
    "What ideas did my team have in the meeting last Friday?",
    "What kind of dinner did my mom suggest?",
    "Didn't my doctor suggest a diet for me?",
    "Did my sister recommend anything for my trip?",
    "Has my coach suggested any drills for me?",
    "What was the tip my trainer gave me?",
    "So, what were the ideas you had for our garden?",
    # An advice verb in the past tense after its subject.
    "The diet my doctor suggested, what was in it for me?",
    "Tell me the book my sister recommended.",
    "Give me the stretches the physio advised for my back.",
    # A time before now, or a date outside a request or plan.
    "Any dinner ideas from my mom yesterday?",
    "Tips my coach gave me two weeks ago?",
    "My mom's dinner suggestions on 3 May 2023?",
    "Ideas from our meeting in 2022?",
    # Recalling.
    "Do you remember the restaurant ideas I mentioned?",
]


NOT_ASKED_FOR_SOMEONE = [
    # "we", "us", "our" are not the asker: a group's past reads like a request for ideas.
    "What are some movies we watched together?",
    "What are some places we visited in Portugal?",
    "What ideas came up in our meeting?",
    "What should we do this weekend?",
]


@pytest.mark.parametrize("query", NOT_ASKED_FOR_SOMEONE)
def test_a_question_in_the_first_person_plural_is_no_advice_question(query: str) -> None:
    assert not asks_for_advice(query)
    assert query_signals(query) != ADVICE_SIGNALS


@pytest.mark.parametrize("query", ADVICE)
def test_a_request_for_advice_is_an_advice_question(query: str) -> None:
    assert asks_for_advice(query)
    assert not asks_about_the_past(query)
    assert query_signals(query) == ADVICE_SIGNALS


@pytest.mark.parametrize("query", ABOUT_THE_PAST)
def test_a_question_about_the_past_asks_for_a_memory(query: str) -> None:
    assert asks_about_the_past(query)
    assert not asks_for_advice(query)
    assert query_signals(query) == frozenset(Signal) - {Signal.PREFERENCE}


@pytest.mark.parametrize(
    ("query", "date", "past"),
    [
        ("What did I cook on 31 January 2026?", True, False),
        ("What happened on May 3?", True, False),
        ("Where were we in July 2023?", True, False),
        ("What did I read in 2022?", True, False),
        ("Notes of 2023-05-08", True, False),
        ("What did I do in May?", False, False),
        ("What did I cook yesterday?", False, True),
        ("What did we plan last Friday?", False, True),
        ("Where did I go last night?", False, True),
        ("What did you say two weeks ago?", False, True),
        ("What changed over the past few months?", False, True),
        ("What did I say the other day?", False, True),
        ("What should I do this weekend?", False, False),
        ("What should I do next week?", False, False),
        ("This bag will last for years.", False, False),
    ],
)
def test_dates_and_past_times_a_question_names(query: str, date: bool, past: bool) -> None:
    assert names_date(query) is date
    assert names_past_time(query) is past


def test_a_dated_question_about_a_suggestion_ranks_the_turn_of_that_day_first(
    tmp_path: Path,
) -> None:
    """'my mom' used to make this an advice question: its date list was dropped and the
    February turn ranked first (FINDINGS49 f03)."""
    pytest.importorskip("onnxruntime")
    from oam_core.embedders import LocalEmbedder

    store = SQLiteMemoryStore(
        str(tmp_path / "mom.db"), embedder=LocalEmbedder(), search_strategy="HYBRID"
    )
    try:
        thread = OracleAgentMemory(store=store, extract_memories=False).create_thread(
            thread_id="t", user_id="ana"
        )
        dinners = [("2023-05-03", "lasagna", "may"), ("2023-08-10", "tacos", "aug")]
        dinners += [("2023-11-20", "curry", "nov"), ("2023-02-14", "soup", "feb")]
        thread.add_messages(
            [
                {
                    "role": "user",
                    "content": f"My mom suggested we cook {food} for dinner tonight.",
                    "timestamp": f"{day}T18:00:00",
                    "id": key,
                }
                for day, food, key in dinners
            ]
        )
        for query in (
            "What did mom suggest for dinner on 3 May 2023?",
            "What did my mom suggest for dinner on 3 May 2023?",
        ):
            ranked = [r.id for r, _ in store.search(query, k=4, record_types={"message"})]
            assert ranked[0] == "may", (query, ranked)
            assert sorted(ranked) == ["aug", "feb", "may", "nov"]
    finally:
        store.close()


def test_a_message_without_a_timestamp_is_dated_when_stored_a_memory_is_not() -> None:
    stored = datetime(2026, 1, 31, 12, tzinfo=timezone.utc).isoformat()
    said = "2023-05-08T13:56:00+00:00"
    message = MessageRecord(
        id="m1", record_type="message", content="I cooked sushi.", created_at=stored, role="user"
    )
    memory = Record(id="r1", record_type="memory", content="Cooks sushi.", created_at=stored)
    assert said_at(message) == stored
    assert said_at(memory) is None
    assert said_at(dataclasses.replace(message, timestamp=said)) == said
    assert said_at(dataclasses.replace(memory, timestamp=said)) == said
