"""Dates in queries and records (oam_core/store/temporal.py; docs/retrieval.md)."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from oam_core.store import temporal
from oam_core.store.temporal import (
    Span,
    asks_for_time,
    overlaps,
    query_spans,
    record_days,
    states_time,
    states_time_each,
)

NOW = datetime(2024, 3, 13, 15, 0, tzinfo=timezone.utc)  # a Wednesday


def spans(query: str) -> list[tuple[str, str]]:
    return [(s.start.isoformat(), s.end.isoformat()) for s in query_spans(query, NOW)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Nate do for Joanna on 25 May, 2022?", [("2022-05-25", "2022-05-26")]),
        ("What movie did Nate watch on October 6, 2022?", [("2022-10-06", "2022-10-07")]),
        ("the weekend before 4th October, 2023", [("2023-10-04", "2023-10-05")]),
        ("What did they paint in July 2023?", [("2023-07-01", "2023-08-01")]),
        ("What setback did Melanie face in October 2023?", [("2023-10-01", "2023-11-01")]),
        ("How many times has she gone to the beach in 2023?", [("2023-01-01", "2024-01-01")]),
        ("notes from 2023-05-08", [("2023-05-08", "2023-05-09")]),
        ("What happened on March 3?", [("2024-03-03", "2024-03-04")]),
        (
            "dinner on 3 May 2023 and lunch on 9 June 2023",
            [
                ("2023-05-03", "2023-05-04"),
                ("2023-06-09", "2023-06-10"),
            ],
        ),
    ],
)
def test_absolute_dates(query: str, expected: list[tuple[str, str]]) -> None:
    assert spans(query) == expected


def test_impossible_and_repeated_dates() -> None:
    assert spans("on 30 February 2023, or 2023-02-30") == []
    assert spans("May 2023 " * 500) == [("2023-05-01", "2023-06-01")]


@pytest.mark.parametrize(
    "query",
    [
        "What kind of art does Caroline make?",
        "What may happen if we march on?",
        "Who won 2 games out of 3?",
        "Call me at 2023 or 5",
        "",
        "!!!",
    ],
)
def test_no_date(query: str) -> None:
    assert query_spans(query, NOW) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did I say yesterday?", [("2024-03-12", "2024-03-13")]),
        ("what did we plan today", [("2024-03-13", "2024-03-14")]),
        ("What did I cook last week?", [("2024-03-04", "2024-03-11")]),
        ("the party last weekend", [("2024-03-09", "2024-03-11")]),
        ("books I read last month", [("2024-02-01", "2024-03-01")]),
        ("trips last year", [("2023-01-01", "2024-01-01")]),
        ("what happened three days ago", [("2024-03-10", "2024-03-11")]),
        ("a couple of weeks ago", [("2024-02-28", "2024-02-29")]),
    ],
)
def test_relative_dates_resolve_against_now(query: str, expected: list[tuple[str, str]]) -> None:
    assert spans(query) == expected


def test_record_days_resolve_relative_words_against_the_timestamp() -> None:
    days = record_days("2023-05-26T13:56:00", "Yesterday I got her a stuffed animal!")
    assert days == [date(2023, 5, 26), date(2023, 5, 25)]
    assert record_days("2023-05-26T13:56:00+02:00", "Two weeks ago we moved.") == [
        date(2023, 5, 26),
        date(2023, 5, 12),
    ]
    assert record_days("2023-05-26", None) == [date(2023, 5, 26)]


def test_dates_outside_the_calendar_name_no_day() -> None:
    """A relative date that falls before year 1 or after 9999 names no day (it used
    to raise OverflowError from a HYBRID search, a card and extraction)."""
    assert spans("what did we do 10000 years ago") == []
    assert spans("a week ago, and 10000 years ago") == [("2024-03-06", "2024-03-07")]
    assert record_days("2023-05-26", "Dinosaurs lived 100000000 years ago.") == [date(2023, 5, 26)]
    assert record_days("0001-01-01T00:00:00Z", "I saw it yesterday, and last year.") == [
        date(1, 1, 1)
    ]
    assert record_days("9999-12-31T00:00:00Z", "See you tomorrow, next week.") == [
        date(9999, 12, 31)
    ]


@pytest.mark.parametrize("timestamp", [None, "", "not a date", "2023-13-45"])
def test_record_days_without_a_usable_timestamp(timestamp: str | None) -> None:
    assert record_days(timestamp, "yesterday") == []


def test_overlaps_allows_a_week_either_side() -> None:
    may_25 = Span(date(2022, 5, 25), date(2022, 5, 26))
    assert overlaps([date(2022, 5, 25)], [may_25])
    assert overlaps([date(2022, 6, 1)], [may_25])
    assert overlaps([date(2022, 5, 18)], [may_25])
    assert not overlaps([date(2022, 6, 2)], [may_25])
    assert not overlaps([date(2022, 5, 17)], [may_25])
    assert not overlaps([], [may_25])
    assert not overlaps([date(2022, 5, 25)], [])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When did Caroline go to the support group?", True),
        ("  when was it", True),
        ("How long has John played the drums?", True),
        ("How many months passed between the two adoptions?", True),
        ("In which year did she move?", True),
        ("What year did they meet?", True),
        ("Which month was the trip?", True),
        ("What did Melanie paint?", False),
        ("How many times did they go?", False),
        ("Tell me when you can", False),
        ("", False),
    ],
)
def test_asks_for_time(query: str, expected: bool) -> None:
    assert asks_for_time(query) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a castle last Friday.", True),
        ("We met on Saturday at the park.", True),
        ("I've been playing for a month now.", True),
        ("I've had them for 3 years!", True),
        ("Yesterday was great.", True),
        ("I moved there in 2022.", True),
        ("It happened on 25 May, 2022.", True),
        ("We went there recently.", True),
        ("We went to the beach with the kids.", False),
        ("Three dogs and a cat.", False),
        ("", False),
        (None, False),
    ],
)
def test_states_time(text: str | None, expected: bool) -> None:
    assert states_time(text) is expected


_FRAGMENTS = [
    "last",
    "on",
    "Friday",
    "WEEKEND",
    "wee\u212a",  # the Kelvin sign: IGNORECASE matches it as "k"
    "\u017fince",  # the long s
    "3",
    "2022",
    "1999",
    "Spk0a:",
    "25th",
    "Jul",
    "of",
    "in",
    "May",
    "a",
    "few",
    "months",
    "ago",
    "tonight",
    "Tomorrow",
    "recently",
    "hours",
    "lately",
    "year",
    "minute",
    "evening",
    "cat",
    "é",
    "ß",
    "?",
    ",",
    "25May",  # a day glued to its month
    "5thmar",
    "Mayday",
    "market",
    "since",
    "Since",
    "Chicago",  # "ago" inside a word
    "agony",
    "today",
    "Sunday",
    "midnight",
    "4pm",
    "x3",
    "3x",
    "March",
    "\u017fept",  # the long s: "sept" to IGNORECASE
    "Sept.",
    "DEC",
    "2022-05-08",
    "\u0662\u0660\u0662\u0662",  # Arabic-Indic digits: Unicode digits, not ASCII
    "\uff12\uff10\uff12\uff12",  # fullwidth digits
    "Spk19a:",
    "_",
    "-",
    "ton\u0130ght",  # "İ": IGNORECASE matches it as "i", casefold gives "i" + U+0307
    "Apr\u0130l",
    "m\u0130nutes",
]


def _patterns_match(text: str) -> bool:
    """``states_time`` without its pre-check: the three patterns alone."""
    return bool(text) and any(
        p.search(text) is not None
        for p in (temporal._ABSOLUTE, temporal._RELATIVE, temporal._STATED_TIME)
    )


def test_states_time_prefilter_on_every_pair_of_fragments() -> None:
    """The cheap pre-check never hides a text the three patterns match: every text
    of one or two fragments."""
    texts = [*_FRAGMENTS, *(f"{a} {b}" for a in _FRAGMENTS for b in _FRAGMENTS)]
    assert [t for t in texts if states_time(t) is not _patterns_match(t)] == []


@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=8), st.sampled_from([" ", "", "  "]))
def test_states_time_prefilter_keeps_every_match(words: list[str], sep: str) -> None:
    text = sep.join(words)
    assert states_time(text) is _patterns_match(text)


@given(st.text(max_size=40))
def test_states_time_prefilter_on_any_text(text: str) -> None:
    assert states_time(text) is _patterns_match(text)


@given(
    st.lists(
        st.one_of(
            st.sampled_from(_FRAGMENTS), st.text(alphabet="19205thmayMAYsepSEP\u017f-.", max_size=6)
        ),
        max_size=6,
    ),
    st.sampled_from([" ", "", ", ", "-"]),
)
def test_date_precheck_never_hides_an_absolute_date(parts: list[str], sep: str) -> None:
    """``_may_state_date`` holds wherever ``_ABSOLUTE`` finds a date (texts dense in
    digits, month letters and separators, where dates are likely)."""
    text = sep.join(parts)
    if temporal._ABSOLUTE.search(text) is not None:
        assert _date_precheck(text)
    assert states_time(text) is _patterns_match(text)


def _date_precheck(text: str) -> bool:
    monthly = temporal._texts_holding([text.casefold()], temporal._MONTH_STEMS)
    return temporal._may_state_date(text, bool(monthly))


@given(
    st.lists(
        st.one_of(
            st.none(),
            st.lists(st.sampled_from([*_FRAGMENTS, "\0", "ag", "o"]), max_size=5).map(" ".join),
            st.lists(st.sampled_from([*_FRAGMENTS, "\0", "ag", "o"]), max_size=5).map("".join),
        ),
        max_size=12,
    )
)
def test_states_time_each_answers_text_by_text(texts: list[str | None]) -> None:
    """Looking for the words in the join of all texts finds what each text's own
    patterns find: no hit spans two texts, none is credited to the wrong one."""
    assert states_time_each(texts) == [_patterns_match(t) if t else False for t in texts]


def test_texts_holding() -> None:
    texts = ["a week", "", "wee", "k ago", "ago\0day", "nothing"]
    assert temporal._texts_holding(texts, ["week", "ago", "day"]) == {0, 3, 4}
    assert temporal._texts_holding([], ["week"]) == set()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We met on 25 May, 2022.", True),
        ("since 1999", True),
        ("Spk20a: hello", False),  # "20" but no year: no date form
        ("Spk20a: back in 2019", True),
        ("on the 3rd of March", True),
        ("25May", True),
        ("May I come? Sure.", False),  # a month name without a number
        ("I went to the market at 5.", False),  # "mar" inside a word
        ("Decide by 3", False),
        ("Spk3a: we went in March", False),  # "3" inside a word starts no day
        ("Spk3a: on 3 March", True),
        ("Spk3a: we went to the mall", False),
        ("\u0662\u0660\u0662\u0662", False),  # no ASCII digit: no date form
        ("", False),
    ],
)
def test_date_precheck(text: str, expected: bool) -> None:
    assert _date_precheck(text) is expected


def test_month_forms_are_the_words_the_month_pattern_matches() -> None:
    names = [m.lower() for m in temporal._MONTH_NAMES]
    candidates = {n[:i] for n in names for i in range(1, len(n) + 1)} | {"sept"}
    month = regex.compile(f"(?:{temporal._MONTHS})", regex.IGNORECASE)
    assert {c for c in candidates if month.fullmatch(c)} == set(temporal._MONTH_FORMS)
    assert {f[:3] for f in temporal._MONTH_FORMS} == set(temporal._MONTH_STEMS)
