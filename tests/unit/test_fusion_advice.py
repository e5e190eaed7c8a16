"""Advice questions and stated preferences (oam_core/store/fusion.py,
docs/retrieval.md#advice-questions-and-stated-preferences): the detector, the
preference list, which signal lists apply to which query, and the keyword lists'
weight."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oam_core.apis.records import MessageRecord, Record
from oam_core.errors import InvalidArgumentError
from oam_core.store.fusion import (
    _STATES_PREFERENCE,
    ADVICE_KEYWORD_WEIGHT,
    ADVICE_SIGNALS,
    DEFAULT_FUSION,
    PREFERENCE_WEIGHT,
    FusionConfig,
    Signal,
    _states_preference,
    asks_for_advice,
    list_weights,
    preference_list,
    query_signals,
    signal_lists,
    states_preference,
)

NOW = datetime(2024, 6, 1, tzinfo=UTC)

ADVICE = [
    "Can you recommend a restaurant for my birthday dinner?",
    "What should I cook tonight?",
    "Any tips for my trip to Japan?",
    "Do you have any suggestions for a weekend getaway?",
    "What are some good books for me to read this summer?",
    "Could you help me plan a workout routine?",
    "Which should I buy, a Kindle or a Kobo?",
    "I need ideas for a gift for my sister.",
    "what movies can you recommend for me this weekend",  # lower case, no "?"
    "Can you find me a hotel in Rome?",
    "I\u2019m looking for advice on learning Spanish.",  # curly apostrophe
    "What are some good resources for me to learn data science?",
]

NOT_ADVICE = [
    # Questions about what happened, in the first or second person: recall, not advice.
    "What are some books I read last year?",
    "What did you recommend for my trip to Lisbon?",
    "What movies did I say I liked?",
    "Do you remember the restaurant I mentioned?",
    # Third person: what someone else recommended is what happened (LoCoMo style).
    "What did Caroline recommend?",
    "What did Melanie suggest to Caroline about the adoption agencies?",
    "What advice did Caroline give Melanie?",
    "What are some of Caroline's hobbies?",
    "What book did Melanie recommend to Caroline in May 2023?",
    # First person, but not asking for advice.
    "When did I go to the support group?",
    "What did I say about my sister's wedding?",
    "Do you have any idea when I went to Paris?",  # "any idea": not "ideas"
    "How long have I been running?",
    # Neither.
    "pottery class with the kids",
    "",
    "?!...",
    # Other languages: English patterns, the rule does not apply.
    "Kannst du mir ein Restaurant empfehlen?",
    "Peux-tu me conseiller un bon livre ?",
    "我应该买什么礼物给我妹妹？",
    "Что ты мне посоветуешь почитать?",
    "おすすめのレストランを教えてください",
]


@pytest.mark.parametrize("query", ADVICE)
def test_an_advice_question_is_one(query: str) -> None:
    assert asks_for_advice(query)


@pytest.mark.parametrize("query", NOT_ADVICE)
def test_other_questions_are_not_advice_questions(query: str) -> None:
    assert not asks_for_advice(query)


def test_a_very_long_query_is_read_whole() -> None:
    long = "the weather was fine and we walked along the river. " * 200
    assert not asks_for_advice(long)
    assert asks_for_advice(long + " Can you recommend a cafe for me?")


def _message(content: str, role: str = "user", timestamp: str | None = None) -> Record:
    return MessageRecord(
        id=content[:12], record_type="message", content=content, role=role, timestamp=timestamp
    )


STATES = [
    "I prefer quiet restaurants over loud bars.",
    "I'm allergic to peanuts.",
    "I am vegetarian, so no meat please.",
    "My favorite genre is science fiction.",
    "I can\u2019t stand horror movies.",
    "I don't eat gluten.",
    "I have a strong aversion to crowds and I avoid them.",
    "I really enjoy hiking in the mountains.",
    "I'm not a fan of long flights.",
    "I would rather take the train.",
]

DOES_NOT_STATE = [
    "We went camping in the mountains with the whole family.",
    "Caroline prefers quiet restaurants.",  # third person
    "The restaurant was loud.",
    "I went to the store. Prefer the red one?",  # the sentence ends before the verb
    "Я не люблю шумные рестораны.",  # another language
    "",
]


@pytest.mark.parametrize("text", STATES)
def test_a_user_turn_stating_a_preference_states_one(text: str) -> None:
    assert states_preference(_message(text))
    assert states_preference(Record(id="m", record_type="memory", content=text))


@pytest.mark.parametrize("text", DOES_NOT_STATE)
def test_other_texts_state_no_preference(text: str) -> None:
    assert not states_preference(_message(text))


def test_a_preference_record_states_one_and_an_assistant_turn_never() -> None:
    assert states_preference(Record(id="p", record_type="preference", content="Likes tea."))
    assert states_preference(Record(id="p", record_type="preference", content=None))
    assert not states_preference(_message("I prefer quiet restaurants.", role="assistant"))
    assert not states_preference(Record(id="m", record_type="memory", content=None))


def test_the_preference_list_keeps_pool_order() -> None:
    records = {
        "a": _message("We went camping."),
        "b": _message("I love spicy food."),
        "c": _message("I love spicy food too!", role="assistant"),
        "d": Record(id="d", record_type="preference", content="Prefers window seats."),
    }
    assert preference_list(["d", "c", "b", "a"], records) == ["d", "b"]


def test_an_advice_question_reads_the_speaker_and_preference_lists_only() -> None:
    advice = "Can you recommend a restaurant for my birthday on 25 May, 2024?"
    assert query_signals(advice) == ADVICE_SIGNALS == {Signal.SPEAKER, Signal.PREFERENCE}
    assert query_signals(advice, {Signal.DATE, Signal.PREFERENCE}) == {Signal.PREFERENCE}
    other = "What did Caroline recommend on 25 May, 2024?"
    assert query_signals(other) == frozenset(Signal) - {Signal.PREFERENCE}


def test_signal_lists_of_an_advice_question() -> None:
    records = {
        "filler": _message("We had dinner at the new place.", timestamp="2024-05-25T20:00:00"),
        "pref": _message("I am vegetarian, and I prefer quiet places."),
        "reply": _message("I prefer quiet places too.", role="assistant"),
    }
    pool = ["filler", "reply", "pref"]
    advice = "Can you recommend a restaurant for my dinner on 25 May, 2024?"
    assert signal_lists(advice, pool, records, NOW) == [(Signal.PREFERENCE, ["pref"])]
    # The same words, not asking for advice: the date list applies, no preference list.
    other = "Where did we have dinner on 25 May, 2024?"
    got = dict(signal_lists(other, pool, records, NOW))
    assert Signal.PREFERENCE not in got and got[Signal.DATE] == ["filler"]


def test_a_preference_list_holding_the_whole_pool_is_left_out() -> None:
    records = {k: Record(id=k, record_type="preference", content=k) for k in "abc"}
    assert signal_lists("What should I cook for you?", list("abc"), records, NOW) == []


def test_an_advice_question_weighs_its_keyword_lists_less() -> None:
    advice = "What should I cook for my friends tonight?"
    assert list_weights(advice, 2, 2, DEFAULT_FUSION) == [1.0, 1.0, 0.1, 0.1]
    assert list_weights("What did I cook last night?", 1, 1, DEFAULT_FUSION) == [1.0, 1.0]
    own = FusionConfig(list_weight=2.0, advice_keyword_weight=0.5)
    assert list_weights(advice, 1, 1, own) == [2.0, 0.5]


def test_the_default_weights_are_the_measured_ones() -> None:
    assert DEFAULT_FUSION.advice_keyword_weight == ADVICE_KEYWORD_WEIGHT == 0.1
    assert DEFAULT_FUSION.weight(Signal.PREFERENCE) == PREFERENCE_WEIGHT == 2.0


@pytest.mark.parametrize("field", ["preference_weight", "advice_keyword_weight"])
@pytest.mark.parametrize("value", [0, -0.5, "1", True])
def test_a_bad_weight_is_refused_naming_it(field: str, value: object) -> None:
    with pytest.raises(InvalidArgumentError, match=field):
        FusionConfig(**{field: value})  # type: ignore[arg-type]


_PIECES = [
    "I",
    "i",
    "I'm",
    "I\u2019ve",
    "I am",
    "my",
    "My",
    "me",
    "like",
    "likely",
    "prefer",
    "preferably",
    "never",
    "can't stand",
    "don't eat",
    "only want",
    "not a fan",
    "xi",
    "the",
    "dinner",
    "restaurant",
    "and",
    "really",
    "a very long filler word",
    ".",
    "?",
    "!",
    ",",
    " ",
    "  ",
    "\n",
    "-",
    "'",
]


@given(st.lists(st.sampled_from(_PIECES), max_size=60), st.sampled_from([" ", "", "_"]))
def test_the_windowed_search_finds_what_the_pattern_finds(pieces: list[str], sep: str) -> None:
    text = sep.join(pieces)
    assert _states_preference(text) is (_STATES_PREFERENCE.search(text) is not None)


def test_a_long_text_is_read_in_linear_time() -> None:
    # The pattern alone would retry its gap after each "I" (seconds); the answer is
    # what it would give, and the last sentence is read too.
    text = "I " * 50_000
    assert not _states_preference(text)
    assert _states_preference(text + ". Honestly I prefer tea.")


def test_a_speaker_is_named_without_accents_as_the_keyword_index_reads_it() -> None:
    """ "Jose" and "JOSÉ" name the speaker José, as a keyword search of "Jose" finds
    "José" (both folded: docs/store.md#keyword-search)."""

    def said(name: str, text: str) -> Record:
        return MessageRecord(
            id=name,
            record_type="message",
            content=text,
            role="user",
            metadata={"$message": {"name": name}},
        )

    records = {"jose": said("José", "I went hiking."), "ana": said("Ana", "I went swimming.")}
    for query in ("What did Jose do?", "What did JOSÉ do?", "What did josé do?"):
        assert dict(signal_lists(query, ["ana", "jose"], records, NOW))[Signal.SPEAKER] == ["jose"]
