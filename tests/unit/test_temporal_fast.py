"""The shortcuts of store/temporal.py that keep a HYBRID search fast (issue 28's
latency, bench/README.md): kept answers per text and the word pre-checks of
``query_spans`` and ``record_days`` give what the patterns alone give."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from dateutil import parser as date_parser
from hypothesis import given
from hypothesis import strategies as st

from oam_core.store import temporal
from oam_core.store.temporal import Span, query_spans, record_days, states_time_each
from tests.unit.test_temporal import _FRAGMENTS, _patterns_match

NOW = datetime(2023, 6, 14, 12, 0, tzinfo=timezone.utc)


def _spans_unchecked(text: str, anchor: date) -> list[Span]:
    """``_relative_spans`` without its word pre-check: the pattern alone."""
    saved = temporal._RELATIVE_WORDS
    temporal._RELATIVE_WORDS = ("",)  # every text holds ""
    try:
        return temporal._relative_spans(text, anchor)
    finally:
        temporal._RELATIVE_WORDS = saved


def _query_spans_unchecked(query: str, now: datetime) -> list[Span]:
    spans = [
        span
        for match in temporal._ABSOLUTE.finditer(query)
        if (span := temporal._absolute_span(match, now)) is not None
    ]
    spans.extend(_spans_unchecked(query, now.date()))
    return list(dict.fromkeys(spans))


def _record_days_unkept(timestamp: str, text: str) -> list[date]:
    anchor = date_parser.isoparse(timestamp).date()
    return [anchor, *(span.start for span in _spans_unchecked(text, anchor))]


_TEXTS = [*_FRAGMENTS, *(f"{a} {b}" for a in _FRAGMENTS for b in _FRAGMENTS)]


def test_pre_checks_on_every_pair_of_fragments() -> None:
    assert [t for t in _TEXTS if query_spans(t, NOW) != _query_spans_unchecked(t, NOW)] == []
    stamp = "2023-05-26T13:56:00"
    assert [t for t in _TEXTS if record_days(stamp, t) != _record_days_unkept(stamp, t)] == []


@given(st.lists(st.sampled_from([*_FRAGMENTS, "two", "weeks", "next", "week"]), max_size=8))
def test_pre_checks_keep_every_date(words: list[str]) -> None:
    text = " ".join(words)
    assert query_spans(text, NOW) == _query_spans_unchecked(text, NOW)
    assert record_days("2023-05-26", text) == _record_days_unkept("2023-05-26", text)


@given(st.text(max_size=30))
def test_pre_checks_on_any_text(text: str) -> None:
    assert query_spans(text, NOW) == _query_spans_unchecked(text, NOW)


def test_word_fold_keeps_every_letter_ignorecase_matches() -> None:
    """Each character that ``regex``'s IGNORECASE matches to an ASCII letter folds to
    that letter (the pre-checks look for ASCII words in the folded text)."""
    import sys

    import regex

    everything = "".join(chr(cp) for cp in range(0x80, sys.maxunicode + 1))
    for letter in "abcdefghijklmnopqrstuvwxyz":
        for ch in regex.findall(letter, everything, regex.IGNORECASE):
            assert temporal._word_fold(ch) == letter, hex(ord(ch))
    assert temporal._relative_spans("ton\u0130ght", date(2023, 1, 2)) == [
        Span(date(2023, 1, 2), date(2023, 1, 3))
    ]


def test_kept_answers_are_the_patterns_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked again, a text gets its kept answer; the memo empties when full, and an
    answer is always the one of the three patterns."""
    monkeypatch.setattr(temporal, "_STATES_TIME", {})
    monkeypatch.setattr(temporal, "MEMO_SIZE", 5)
    texts = ["last Friday", "a cat", "", None, "3 years ago", "since May", "hello", "a week"]
    for _ in range(3):
        for start in range(len(texts)):
            batch = texts[start:] + texts[:start]
            assert states_time_each(batch) == [_patterns_match(t) if t else False for t in batch]
            assert len(temporal._STATES_TIME) <= 5


def test_record_days_memo_returns_a_fresh_list() -> None:
    days = record_days("2023-05-26T13:56:00", "Yesterday I got her a stuffed animal!")
    days.append(date(1999, 1, 1))
    again = record_days("2023-05-26T13:56:00", "Yesterday I got her a stuffed animal!")
    assert again == [date(2023, 5, 26), date(2023, 5, 26) - timedelta(days=1)]
    assert record_days("not a date", "yesterday") == []


def test_long_texts_are_answered_but_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(temporal, "_STATES_TIME", {})
    long = "x " * temporal.MEMO_CHARS + "last Friday"
    assert states_time_each([long, "last Friday"]) == [True, True]
    assert list(temporal._STATES_TIME) == ["last Friday"]
    before = temporal._record_days.cache_info().currsize
    assert record_days("2023-05-26", "yesterday " + long) == [date(2023, 5, 26), date(2023, 5, 25)]
    assert temporal._record_days.cache_info().currsize == before
