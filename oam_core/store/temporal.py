"""Dates in queries and messages, for date-aware ranking (docs/retrieval.md).

A question such as "What did Nate do for Joanna on 25 May, 2022?" names the day it
is about; the turn that answers it was written that day or soon after ("Yesterday
I got her a stuffed animal", stored with the session's timestamp). This module finds
the calendar spans a query names (``query_spans``) and the days a record speaks of
(``record_days``: its timestamp, plus the relative dates in its text such as
"yesterday" or "last week", resolved against that timestamp), so the search can
prefer records whose dates fall in the span.

Spotting a date is a small regular expression over month names, day numbers, years
and ISO dates; turning the spotted text into a date is ``dateutil``'s parser.
Relative words in a *query* ("last week") are resolved against the store clock.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import regex
from dateutil import parser as date_parser
from dateutil.relativedelta import relativedelta

from oam_core.store.text import nul_joined

__all__ = [
    "MEMO_CHARS",
    "MEMO_SIZE",
    "Span",
    "asks_for_time",
    "day_label",
    "names_date",
    "names_past_time",
    "overlaps",
    "query_spans",
    "record_days",
    "states_time",
    "states_time_each",
]

_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
_ABSOLUTE = regex.compile(
    rf"""
    (?P<iso>\b{_YEAR}-[01]\d-[0-3]\d\b)
    | (?P<dmy>\b{_DAY}\s*(?:of\s+)?(?:{_MONTHS})\b\.?,?\s*(?:{_YEAR}\b)?)
    | (?P<mdy>\b(?:{_MONTHS})\b\.?\s+{_DAY}\b,?\s*(?:{_YEAR}\b)?)
    | (?P<my>\b(?:{_MONTHS})\b\.?,?\s+(?:of\s+)?{_YEAR}\b)
    | (?P<y>\b(?:in|of|during|since)\s+{_YEAR}\b)
    """,
    regex.IGNORECASE | regex.VERBOSE,
)
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple of": 2,
    "few": 3,
}
_RELATIVE = regex.compile(
    r"""
    \b(?P<word>yesterday|today|tonight|tomorrow)\b
    | \b(?P<last>last|this|next|past)\s+(?P<unit>weekend|week|month|year)\b
    | \b(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple\s+of|few)\s+
      (?P<ago_unit>day|week|month|year)s?\s+ago\b
    """,
    regex.IGNORECASE | regex.VERBOSE,
)
_PARTS_OF_DAYS = (
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|"
    r"night|morning|afternoon|evening"
)
_STATED_TIME = regex.compile(
    rf"""
    \b(?:last|this|next|past|on|yesterday|tomorrow)\s+(?:{_PARTS_OF_DAYS})\b
    | \b(?:recently|lately|ago|since|tonight)\b
    | \b(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|
          couple\s+of|few|several)\s+(?:minute|hour|day|week|month|year)s?\b
    """,
    regex.IGNORECASE | regex.VERBOSE,
)
_TIME_QUESTION = regex.compile(
    r"""
    ^\W*(?:when\b
      | how\s+long\b
      | how\s+many\s+(?:days|weeks|months|years)\b
      | (?:in\s+)?(?:what|which)\s+(?:year|month|day|date|time)\b)
    """,
    regex.IGNORECASE | regex.VERBOSE,
)
_PAST_TIME = regex.compile(
    rf"""
    \b(?:yesterday|ago|previously|the\s+other\s+day|earlier\s+today|in\s+the\s+past)\b
    | \b(?:last|past)\s+(?:(?:few|couple\s+of|\d+|two|three)\s+)?
      (?:time|{_PARTS_OF_DAYS}|summer|winter|spring|autumn|fall|week|month|year
         |days|nights|weeks|months|years)\b
    """,
    regex.IGNORECASE | regex.VERBOSE,
)
"""Words naming a time before now: "yesterday", "two weeks ago", "last Friday", "the
past few months"."""
_MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_SLACK = timedelta(days=7)
"""How far a record's day may lie outside a query's span and still count: a
conversation mentions an event in the days after it ("last weekend")."""


MEMO_SIZE = 8192
"""Texts (or ``(timestamp, text)`` pairs) whose answers ``states_time_each`` and
``record_days`` keep: the candidates of a store's searches recur from one search to
the next, and each answer is a pure function of the text (bench/README.md, issue
28's latency)."""
MEMO_CHARS = 2048
"""Longer texts are not kept (they are rare, and keeping them would let the memo
hold more than ``MEMO_SIZE * MEMO_CHARS`` characters)."""


@dataclass(frozen=True)
class Span:
    """A half-open calendar interval ``[start, end)`` of days."""

    start: date
    end: date


def query_spans(query: str, now: datetime) -> list[Span]:
    """The calendar spans a query names.

    Absolute dates ("25 May, 2022", "October 6, 2022", "May 2023", "in 2022",
    "2023-05-08") give the day, month or year they name; relative words ("yesterday",
    "last week", "two months ago") are resolved against ``now``. A day or month
    without a year gets ``now``'s year.

    Args:
        query: The search query.
        now: The reference time of relative words (the store clock).

    Returns:
        The distinct spans, in order of appearance; empty when the query names no
        date (or only impossible ones, such as "30 February").
    """
    spans: list[Span] = []
    if not _DIGITS.isdisjoint(query):  # every form of _ABSOLUTE holds an ASCII digit
        for match in _ABSOLUTE.finditer(query):
            span = _absolute_span(match, now)
            if span is not None:
                spans.append(span)
    spans.extend(_relative_spans(query, now.date()))
    return list(dict.fromkeys(spans))


def record_days(timestamp: str | None, text: str | None) -> list[date]:
    """The days a record speaks of: its timestamp's day, plus each relative date of
    its text ("yesterday", "last week", "three days ago") resolved against it.

    Args:
        timestamp: The record's event time (ISO-8601), or None.
        text: The record's content, or None.

    Returns:
        The days (a relative week, month or year gives its first day); empty when the
        record has no parseable timestamp.
    """
    if not timestamp:
        return []
    if len(text or "") > MEMO_CHARS:
        return list(_record_days.__wrapped__(timestamp, text or ""))
    return list(_record_days(timestamp, text or ""))


@functools.lru_cache(maxsize=MEMO_SIZE)
def _record_days(timestamp: str, text: str) -> tuple[date, ...]:
    """``record_days`` of a non-empty timestamp, kept for the ``MEMO_SIZE`` most
    recent ``(timestamp, text)`` pairs: a pure function of its two strings, asked
    again for every search whose candidates hold the record."""
    try:
        anchor = date_parser.isoparse(timestamp).date()
    except (ValueError, OverflowError):
        return ()
    if not text:
        return (anchor,)
    return (anchor, *(span.start for span in _relative_spans(text, anchor)))


def asks_for_time(query: str) -> bool:
    """Whether ``query`` asks for a time: it starts with "when", "how long", "how
    many days/weeks/months/years" or "what/which year/month/day/date/time"."""
    return _TIME_QUESTION.search(query) is not None


def names_date(query: str) -> bool:
    """Whether ``query`` names a date ``query_spans`` reads: a day, a month of a year,
    a year or an ISO date ("on 3 May 2023", "May 3", "in July 2023", "in 2022",
    "2023-05-08"); not a month alone ("in May") nor a relative date.

    Args:
        query: The search query.
    """
    return not _DIGITS.isdisjoint(query) and _ABSOLUTE.search(query) is not None


def names_past_time(query: str) -> bool:
    """Whether ``query`` names a time before now: "yesterday", "last Friday", "last
    night", "two weeks ago", "the past few months", "the other day", "previously",
    "in the past" (not "this" or "next" periods, not a date: ``names_date``).

    Args:
        query: The search query.
    """
    return _PAST_TIME.search(query) is not None


def states_time(text: str | None) -> bool:
    """Whether ``text`` states a time: a date ("25 May, 2022", "in 2022"), a relative
    date ("yesterday", "last week", "two months ago"), a day or part of one ("last
    Friday", "on Saturday", "this morning"), "recently", "since", or a duration
    ("for 3 years", "a month now")."""
    return states_time_each([text])[0]


def states_time_each(texts: Sequence[str | None]) -> list[bool]:
    """``states_time`` of each of ``texts`` (a search's ~50 candidates), in order.

    The three patterns cost ~10-30 µs a text; each runs only on the texts meeting a
    necessary condition of it, found for all texts at once: the words every match
    of ``_RELATIVE`` and ``_STATED_TIME`` holds (``_TIME_WORDS``) and the month names
    of ``_ABSOLUTE`` are looked for once in the texts' casefolded join
    (``_texts_holding``), and ``_may_state_date`` checks the rest of ``_ABSOLUTE``'s
    condition. The answers are those of the patterns alone, text by text (a property
    test compares them).

    Args:
        texts: Record contents (None or ``""``: no time stated).

    Returns:
        One bool per text.
    """
    known = _STATES_TIME
    out: list[bool | None] = [known.get(t) if t else False for t in texts]
    todo = [i for i, answer in enumerate(out) if answer is None]
    if todo:
        fresh = _states_time_unkept([texts[i] or "" for i in todo])
        if len(known) + len(todo) > MEMO_SIZE:
            known.clear()
        for i, answer in zip(todo, fresh, strict=True):
            out[i] = answer
            text = texts[i] or ""
            if len(known) < MEMO_SIZE and len(text) <= MEMO_CHARS:
                known[text] = answer
    return [bool(answer) for answer in out]


_STATES_TIME: dict[str, bool] = {}
"""``states_time`` of recently asked texts; emptied when it would exceed
``MEMO_SIZE`` (a dict's item reads and writes are atomic under threads)."""


def _states_time_unkept(texts: Sequence[str]) -> list[bool]:
    """``states_time_each`` without the kept answers: the three patterns, each run
    only on the texts meeting its necessary condition (``states_time_each``)."""
    folded = [_word_fold(t) for t in texts]
    timed = _texts_holding(folded, _TIME_WORDS)
    monthly = _texts_holding(folded, _MONTH_STEMS)
    out = []
    for i, text in enumerate(texts):
        if not text:
            out.append(False)
        elif _may_state_date(text, i in monthly) and _ABSOLUTE.search(text) is not None:
            out.append(True)
        else:
            out.append(
                i in timed
                and _may_state_relative(text)
                and (_RELATIVE.search(text) is not None or _STATED_TIME.search(text) is not None)
            )
    return out


_TIME_WORDS = (
    "day",
    "week",
    "month",
    "year",
    "minute",
    "hour",
    "night",
    "morning",
    "afternoon",
    "evening",
    "tomorrow",
    "recently",
    "lately",
    "ago",
    "since",
)
"""Every match of ``_RELATIVE`` and ``_STATED_TIME`` holds one of these (``"day"``
covers the weekdays, "today" and "yesterday", ``"night"`` covers "tonight", a count
of days or years its unit, "2 weeks ago" its "ago"). ``states_time`` looks for them in
the folded text (``_word_fold``): every character the patterns' IGNORECASE matches
to an ASCII letter (the Kelvin sign, the long s, "İ") becomes that letter, so no
match is missed."""

_TIME_HINT = re.compile(
    r"\b(?:week|month|year|minute|hour|morning|afternoon|evening|tomorrow|recently|lately|"
    r"ago|since)|day|night",
    re.IGNORECASE,
)
"""Where each ``_TIME_WORDS`` word sits in a match of ``_RELATIVE`` or
``_STATED_TIME``: at the start of a word, but for "day" ("yesterday", "Monday") and
"night" ("tonight"), which may end one. So "Chicago" or "dragon" holds no time."""
_DIGIT_STARTS_WORD = regex.compile(r"\b[0-9]", regex.IGNORECASE)
"""Every form of ``_ABSOLUTE`` starts a word with an ASCII digit: the day or year
follows ``\b`` or white space (so "Spk24a" holds no date)."""
_DIGITS = frozenset("0123456789")
_MONTH_STEMS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_FORMS = (
    *("jan", "january", "feb", "february", "mar", "march", "apr", "april", "may"),
    *("jun", "june", "jul", "july", "aug", "august", "sep", "sept", "september"),
    *("oct", "october", "nov", "november", "dec", "december"),
)
"""Every word ``_MONTHS`` matches, lower case."""
_WORD_RUN = regex.compile(r"\w+")
_YEAR_RUN = regex.compile(_YEAR)


def _texts_holding(texts: Sequence[str], words: Sequence[str]) -> set[int]:
    """The indexes of ``texts`` holding any of ``words`` (none of which holds a NUL):
    each word is looked for in the NUL-joined texts, skipping to the next text after
    a hit, so a search runs ``len(words)`` scans however many texts there are."""
    joined, starts = nul_joined(texts)
    found: set[int] = set()
    for word in words:
        hit = joined.find(word)
        while hit >= 0:
            i = bisect.bisect_right(starts, hit) - 1
            found.add(i)
            hit = joined.find(word, starts[i + 1])
    return found


def _may_state_date(text: str, has_month_stem: bool) -> bool:
    """A necessary condition for ``_ABSOLUTE``, the costliest of the three patterns
    (~30 µs on a chat turn). Each of its forms holds an ASCII digit (no character
    case-folds to one) and either a year (``_YEAR``: "19"/"20" and two digits) or a
    month name followed by a word boundary: so "may I" or "in March" without a
    number, "market 25" or "Spk20a" is never a date it matches. Such a month is the
    end of a run of word characters (``_WORD_RUN``, the patterns' own definition of a
    word character), and that run casefolds to a text ending with the month's name
    (``_TIME_WORDS`` says why casefolding is safe). ``has_month_stem``: whether the
    casefolded text holds one of ``_MONTH_STEMS``. The digit that starts the day or
    year starts a word (``_DIGIT_STARTS_WORD``)."""
    if _DIGITS.isdisjoint(text):
        return False
    if ("19" in text or "20" in text) and _YEAR_RUN.search(text) is not None:
        return True
    if not has_month_stem or _DIGIT_STARTS_WORD.search(text) is None:
        return False
    return any(_word_fold(w).endswith(_MONTH_FORMS) for w in _WORD_RUN.findall(text))


def _may_state_relative(text: str) -> bool:
    """A necessary condition for ``_RELATIVE`` and ``_STATED_TIME`` on a text holding
    one of ``_TIME_WORDS``: for an ASCII text, that word where ``_TIME_HINT`` puts it
    (``re`` and ``regex`` agree on ASCII word boundaries and case); any other text
    passes (a non-ASCII character may case-fold to a letter of the word)."""
    return not text.isascii() or _TIME_HINT.search(text) is not None


def day_label(timestamp: str | None) -> str | None:
    """The day of an ISO-8601 timestamp in words, ``"8 May 2023"`` (English month
    names whatever the locale), or None when ``timestamp`` is missing or unparseable."""
    if not timestamp:
        return None
    try:
        day = date_parser.isoparse(timestamp).date()
    except (ValueError, OverflowError):
        return None
    return f"{day.day} {_MONTH_NAMES[day.month - 1]} {day.year}"


def overlaps(days: Iterable[date], spans: Iterable[Span]) -> bool:
    """Whether any day lies in any span widened by a week on each side."""
    spans = list(spans)
    return any(s.start - _SLACK <= d < s.end + _SLACK for d in days for s in spans)


def _absolute_span(match: regex.Match[str], now: datetime) -> Span | None:
    text = match.group(0)
    kind = match.lastgroup
    default = datetime(now.year, 1, 1)
    try:
        if kind == "y":
            year = int(regex.search(_YEAR, text).group(0))  # type: ignore[union-attr]
            return Span(date(year, 1, 1), date(year + 1, 1, 1))
        parsed = date_parser.parse(text.replace(" of ", " "), default=default, fuzzy=True)
    except (ValueError, OverflowError):
        return None
    day = parsed.date()
    if kind == "my":
        start = day.replace(day=1)
        return Span(start, start + relativedelta(months=1))
    return Span(day, day + timedelta(days=1))


_RELATIVE_WORDS = ("day", "night", "tomorrow", "week", "month", "year", "ago")
"""Every match of ``_RELATIVE`` holds one of these, casefolded ("day" covers "today"
and "yesterday", "night" "tonight", "week" "weekend"; ``_TIME_WORDS`` says why
casefolding is safe)."""


def _word_fold(text: str) -> str:
    """``text`` where every character the patterns' IGNORECASE matches to an ASCII
    letter is that letter: ASCII lower-cased, else casefolded (the Kelvin sign, the
    long s) without the combining dot above that "İ" casefolds to (``regex`` matches
    "İ" to "i")."""
    if text.isascii():
        return text.lower()
    return text.casefold().replace("\u0307", "")


def _relative_spans(text: str, anchor: date) -> list[Span]:
    spans: list[Span] = []
    folded = _word_fold(text)
    if not any(word in folded for word in _RELATIVE_WORDS):
        return spans
    for match in _RELATIVE.finditer(text):
        try:
            spans.append(_relative_span(match, anchor))
        except (OverflowError, ValueError):
            continue  # "10000 years ago", "tomorrow" of 9999-12-31: no date holds it
    return spans


def _relative_span(match: regex.Match[str], anchor: date) -> Span:
    """The days one ``_RELATIVE`` match names, counted from ``anchor``.

    Raises:
        OverflowError, ValueError: when they fall outside the years 1-9999.
    """
    word = (match.group("word") or "").lower()
    if word:
        offset = {"yesterday": -1, "tomorrow": 1}.get(word, 0)
        day = anchor + timedelta(days=offset)
        return Span(day, day + timedelta(days=1))
    if match.group("last"):
        return _named_period(match.group("last").lower(), match.group("unit").lower(), anchor)
    count = _count(match.group("n"))
    day = anchor - timedelta(days=count * _UNITS[match.group("ago_unit").lower()])
    return Span(day, day + timedelta(days=1))


def _named_period(which: str, unit: str, anchor: date) -> Span:
    step = {"last": -1, "past": -1, "this": 0, "next": 1}[which]
    if unit in ("week", "weekend"):
        monday = anchor - timedelta(days=anchor.weekday()) + timedelta(weeks=step)
        if unit == "weekend":
            return Span(monday + timedelta(days=5), monday + timedelta(days=7))
        return Span(monday, monday + timedelta(days=7))
    if unit == "month":
        start = anchor.replace(day=1) + relativedelta(months=step)
        return Span(start, start + relativedelta(months=1))
    start = date(anchor.year + step, 1, 1)
    return Span(start, date(start.year + 1, 1, 1))


def _count(text: str) -> int:
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else _NUMBERS.get(text, 1)
