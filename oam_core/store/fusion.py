"""One rank fusion for every back end (docs/retrieval.md, docs/store.md#search-strategies).

Back ends rank and never fuse: ``rank_vector``, ``rank_keyword`` and ``rank_hybrid``
(``store/backend.py``) return ranked lists, and Oracle's hybrid index returns its own
ranking. ``store/search.py`` fuses them here, each list once, with the weights of a
``FusionConfig``: the text lists first (their fused head is the pool the query's
signal lists, below, are read from), then those signal lists onto the same
scores. Everything here is pure (no I/O); the distances a search returns say what
they measure (``Distance.kind``), so callers need not guess it from the store's
strategy.

**Signal lists** are read from the candidates' fields. The vector and keyword lists rank records by their text. Two facts a query often
states are better matched against a record's fields than against its words
(docs/retrieval.md):

* **the speaker**: "What kind of art does Caroline make?" is about what Caroline
  said. Her name is in nearly every row of a two-person conversation, so its BM25
  weight is about zero; the participant name of each message
  (``metadata["$message"]["name"]``) is exact.
* **the date**: "What did Nate do for Joanna on 25 May, 2022?" names a day; the
  answering turn carries that day in its timestamp, or speaks of it ("yesterday")
  relative to it (``store/temporal.py``).

* **the kind of answer**: a question asking for a time ("When did ...", "How
  long ...") is answered by a message that states one ("last Friday", "for three
  years", "yesterday").
* **whose own words match**: a message is also found by its context row, which
  quotes the turns before it, so a reply ("Wow, that's great!") can tie with or
  outrank the turn that holds the answer. The candidates whose own content holds the
  query's terms rank ahead of those that match only through the turns they quote.
* **a stated preference**: a question asking for advice ("Can you recommend a
  restaurant for my birthday?") is answered by a preference the user stated ("I am
  vegetarian"), which constrains the answer rather than restating the question: it
  shares few words with it. For such a question (``asks_for_advice``,
  ``store/advicequestions.py``: a request for the asker, not a question about what
  happened, such as "What did my mom suggest on 3 May 2023?") the keyword
  lists weigh little (``FusionConfig.advice_keyword_weight``), the lists made for
  other questions (date, time, own words) do not apply, and the candidates stating a
  preference (``preference_list``) are one more list (``query_signals``). Its
  topic vector (the question less the words that ask, ``store/advice.py``) ranks one
  more vector list, the two at half weight each (``list_weights``).

Each signal is a ranked list of the candidate pool (the best fused records, in
fused order) restricted to the records that match it. Fused with the text lists by
reciprocal rank fusion (``fuse``, with the weights of a ``FusionConfig``), it lifts matching records without letting a non-matching query
change anything: a query naming no participant and no date gets no extra list, and
a list that would hold the whole pool is dropped (it would not discriminate).
"""

from __future__ import annotations

import builtins
import enum
import math
import re
from collections import Counter
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from operator import itemgetter
from typing import TypeVar

from oam_core.apis.records import MESSAGE, MessageRecord, Record
from oam_core.apis.thread import participant_name
from oam_core.checks import MAX_ROWS
from oam_core.errors import InvalidArgumentError
from oam_core.store.advicequestions import asks_for_advice
from oam_core.store.distances import Distance, DistanceKind, distance_type
from oam_core.store.naming import named_speaker
from oam_core.store.temporal import (
    Span,
    asks_for_time,
    overlaps,
    query_spans,
    record_days,
    states_time_each,
)
from oam_core.store.text import (
    STEM,
    query_terms,
    stem_counts_each,
    term_set,
)

__all__ = [
    "ADVICE_KEYWORD_WEIGHT",
    "ADVICE_SIGNALS",
    "DATE_WEIGHT",
    "DEFAULT_FUSION",
    "FACTS_MEMO_SIZE",
    "FEEDBACK_HEAD",
    "FEEDBACK_MIN_LETTERS",
    "FEEDBACK_VECTOR_WEIGHT",
    "FEEDBACK_WEIGHT",
    "HYBRID_DEPTH",
    "MAX_WEIGHT",
    "MIN_WEIGHT",
    "OWN_TEXT_WEIGHT",
    "POOL",
    "PREFERENCE_WEIGHT",
    "RRF_K",
    "SPEAKER_VECTOR_WEIGHT",
    "SPEAKER_WEIGHT",
    "TIME_WEIGHT",
    "Distance",
    "DistanceKind",
    "FusionConfig",
    "Signal",
    "asks_for_advice",
    "distance_type",
    "feedback_terms",
    "fuse",
    "fusion_arg",
    "list_weights",
    "normalized_distances",
    "own_text_list",
    "preference_list",
    "query_signals",
    "record_facts",
    "rrf_distance",
    "said_at",
    "signal_lists",
    "speaker_names",
    "states_preference",
]


class Signal(enum.Enum):
    """The query signals, each one more ranked list of a HYBRID search's candidates
    (which apply, and their weights: ``fusion.FusionConfig``). ``FEEDBACK`` is the
    keyword index searched again with words of the fused head (``feedback_terms``),
    not a list of the pool's fields; ``SPEAKER_VECTOR`` and ``FEEDBACK_VECTOR`` are
    vector rankings of the whole store that share the question's vector list's
    weight (store/vectorlists.py)."""

    SPEAKER = "speaker"
    DATE = "date"
    TIME = "time"
    OWN_TEXT = "own_text"
    PREFERENCE = "preference"
    FEEDBACK = "feedback"
    SPEAKER_VECTOR = "speaker_vector"
    FEEDBACK_VECTOR = "feedback_vector"


POOL = 50
"""How many of the best fused candidates the signals re-rank."""

SPEAKER_WEIGHT = 1 / 3
"""RRF weight of the speaker list: a soft preference. It is just enough to lift the
named speaker's turn over a turn one place above it in both text lists (a text tie:
with RRF k = 5 that gap is ``2 * (1/6 - 1/7)``, which a weight above 2/7 outweighs),
and far below a text list, because a question may name the wrong person ("What did
Jon find for his store?" when Gina has the store) and the other speaker's turn must
still be found by its words. On LoCoMo, weight 1.0 would add 0.01 recall_all@10 but
lose 0.04 on such questions (category 5); see bench/README.md."""

DATE_WEIGHT = 1.0
"""RRF weight of the date list, the same as each text list."""

TIME_WEIGHT = 1.0
"""RRF weight of the list of candidates stating a time, for a query asking for one:
a date signal, weighted like the date list."""

OWN_TEXT_WEIGHT = 1 / 3
"""RRF weight of the list of candidates whose own content holds query terms: like the
speaker list, a soft preference that breaks a tie between a turn and a reply quoting
it. On LoCoMo (bench/README.md) 1/3 lifts recall_all@10 from 0.708 to 0.712 and each
half of the dev set; 1.0 costs multi-hop questions (0.706)."""

PREFERENCE_WEIGHT = 2.0
"""RRF weight of the list of candidates stating a preference, for a question asking
for advice: two text lists' worth (the weight of a back end's own fused ranking,
``FusionConfig.index_weight``). The preference is the evidence such a question is
answered by, but its words are not the question's, so neither text list ranks it
high; weights 1.0-2.0 held on both PrefEval tasks and halves, 2.0 best on the
conversation task (bench/README.md)."""

ADVICE_KEYWORD_WEIGHT = 0.1
"""RRF weight of each keyword list for a question asking for advice (in place of
``FusionConfig.list_weight``): the words such a question shares with its answer, a
stated preference, are few and incidental ("What movies can I watch this weekend?"
against "I prefer not to watch movies longer than two hours"), so BM25's best hits
are mostly other questions' topics. On PrefEval 0.1 beats 1.0 on both tasks and
halves, and beats 0 (no keyword list) on the memories task (bench/README.md)."""

FEEDBACK_WEIGHT = 0.5
"""RRF weight of the feedback keyword list (``feedback_terms``): the keyword index
searched again with the query's terms plus words of the fused head. Half a text
list: a query the search derived itself is weaker evidence than the one it was
asked. On LoCoMo it lifts recall_all@10 0.7125 -> 0.720, both halves of the dev
set, no category lower (bench/README.md)."""

SPEAKER_VECTOR_WEIGHT = 0.5
"""RRF weight of the speaker's vector list, taken from the question's vector list
(store/vectorlists.py)."""

FEEDBACK_VECTOR_WEIGHT = 0.5
"""RRF weight of the feedback vector list, taken from the question's vector list
(store/vectorlists.py)."""

ADVICE_SIGNALS = frozenset({Signal.SPEAKER, Signal.PREFERENCE})
"""The signal lists that apply to a question asking for advice: the speaker (a
question may name whose preferences matter) and the stated preferences. The date,
time and own-words lists were made for questions about what happened; an advice
question's terms and dates are not its answer's."""


def signal_lists(
    query: str,
    pool: Sequence[Hashable],
    records: Mapping[Hashable, Record],
    now: datetime,
    which: Collection[Signal] = frozenset(Signal),
    *,
    speakers: Mapping[Hashable, str | None] | None = None,
    spans: Sequence[Span] | None = None,
) -> builtins.list[tuple[Signal, builtins.list[Hashable]]]:
    """The speaker, date, time, own-text and preference lists of a query over a
    candidate pool.

    Args:
        query: The text query.
        pool: Candidate record keys, best first (the fused ranking's head).
        records: The loaded records of ``pool`` (a key may be missing: skipped).
        now: The store clock, for relative dates in the query ("last week").
        which: The signals that may apply; of these, those that apply to the
            query's kind are read (``query_signals``), the others not computed.
        speakers: ``speaker_names(records)`` when the caller has it already.
        spans: ``temporal.query_spans(query, now)`` when the caller has them.

    Returns:
        Up to five ``(signal, ranked keys)`` pairs in this order, the keys a
        sub-sequence of ``pool``: the candidates spoken by the one participant the
        query names (``SPEAKER``, weighed by ``SPEAKER_WEIGHT``); those whose dates
        (``said_at`` and the relative dates of their text) fall in a span the query
        names (``DATE``, ``DATE_WEIGHT``); for a query asking for a time, those
        stating one (``TIME``, ``TIME_WEIGHT``); those whose own content holds query
        terms (``OWN_TEXT``, ``OWN_TEXT_WEIGHT``, ``own_text_list``); for a query
        asking for advice, those stating a preference (``PREFERENCE``,
        ``PREFERENCE_WEIGHT``, ``preference_list``). A list holding none or all of
        the pool is left out.
    """
    which = query_signals(query, which)
    present = [key for key in pool if key in records]
    lists: builtins.list[tuple[Signal, builtins.list[Hashable]]] = []
    if Signal.SPEAKER in which:
        names = speaker_names(records) if speakers is None else speakers
        named = named_speaker(query, [names[key] for key in present])
        if named:
            lists.append((Signal.SPEAKER, [key for key in present if names[key] in named]))
    if Signal.DATE not in which or spans is None:
        spans = query_spans(query, now) if Signal.DATE in which else []
    if spans:
        dated = [
            key
            for key in present
            if overlaps(record_days(said_at(records[key]), records[key].content), spans)
        ]
        lists.append((Signal.DATE, dated))
    if Signal.TIME in which and asks_for_time(query):
        stated = states_time_each([records[key].content for key in present])
        lists.append((Signal.TIME, [key for key, yes in zip(present, stated, strict=True) if yes]))
    if Signal.OWN_TEXT in which:
        lists.append((Signal.OWN_TEXT, own_text_list(query, present, records)))
    if Signal.PREFERENCE in which:
        lists.append((Signal.PREFERENCE, preference_list(present, records)))
    return [(signal, keys) for signal, keys in lists if 0 < len(keys) < len(present)]


def said_at(record: Record) -> str | None:
    """When ``record`` was said, for the date list: its event time (``timestamp``),
    else, for a message, the time the store wrote it (``created_at``), as the context
    card shows it (docs/context-card.md): a message added without a timestamp in a
    live chat was said when it was stored (docs/retrieval.md). A memory's
    ``created_at`` is when it was written down, not when what it states happened, so
    a memory without a timestamp has no date. ISO-8601, or None."""
    if record.timestamp is not None or record.record_type != MESSAGE:
        return record.timestamp
    return record.created_at


def query_signals(query: str, which: Collection[Signal] = frozenset(Signal)) -> frozenset[Signal]:
    """The signals of ``which`` that apply to ``query``: for a question asking for
    advice (``asks_for_advice``) those of ``ADVICE_SIGNALS``, for any other query all
    but ``Signal.PREFERENCE``.

    Args:
        query: The text query.
        which: The signals that may apply (a ``FusionConfig``'s ``signals``).
    """
    if asks_for_advice(query):
        return frozenset(which) & ADVICE_SIGNALS
    return frozenset(which) - {Signal.PREFERENCE}


def list_weights(
    query: str,
    n_vector: int,
    n_keyword: int,
    fusion: FusionConfig,
    *,
    vector_share: float = 1.0,
) -> builtins.list[float]:
    """The RRF weights of a HYBRID search's text lists, its ``n_vector`` vector lists
    followed by its ``n_keyword`` keyword lists (one each per part of the query):
    ``fusion.list_weight`` each, except a keyword list of a question asking for
    advice (``asks_for_advice``), which weighs ``fusion.advice_keyword_weight``.

    Args:
        query: The text query (the whole of it, not a part).
        n_vector, n_keyword: How many lists of each kind (ints >= 0).
        fusion: The fusion's settings.
        vector_share: The share of ``fusion.list_weight`` each vector list weighs
            (``advice.search_vectors``: an advice question's question and topic
            lists weigh half each).
    """
    keyword = fusion.advice_keyword_weight if asks_for_advice(query) else fusion.list_weight
    return [fusion.list_weight * vector_share] * n_vector + [keyword] * n_keyword


# English patterns, as those of store/advicequestions.py: a record in another language
# matches none of their words (except by coincidence), and states no preference.
_APOSTROPHE = "['\u2019]"
_GAP = 40
_PREFERENCE_WORDS = (
    r"\b(?:prefer\w*|like|love|enjoy|hate|dislike|avoid"
    rf"|can{_APOSTROPHE}t stand|cannot stand|not a fan"
    rf"|don{_APOSTROPHE}t (?:like|enjoy|eat|want|care)|do not (?:like|enjoy|eat|want)"
    r"|allergic|vegetarian|vegan|fear|phobia|favorite|favourite|interested|averse"
    r"|intoleran\w*|sensitive|rather|only (?:want|eat|buy|watch|play|use)|never)\b"
)
_PREFERENCE_WORD = re.compile(_PREFERENCE_WORDS, re.IGNORECASE)
_STATES_PREFERENCE = re.compile(
    rf"\b(?:i|i{_APOSTROPHE}m|i am|i{_APOSTROPHE}ve|my)\b[^.?!]{{0,{_GAP}}}?" + _PREFERENCE_WORDS,
    re.IGNORECASE,
)
"""A first-person pronoun, then within ``_GAP`` characters of the same sentence a
word stating a preference."""


def states_preference(record: Record) -> bool:
    """Whether ``record`` states a preference of the user: a ``preference`` record, or
    a record whose content states one in the first person ("I prefer ...", "I am
    allergic to ...", "my favorite ...", "I can't stand ...", "I never ..."; English
    patterns), a message only when the user (role ``user``) wrote it.

    Args:
        record: A loaded record (a ``MessageRecord`` for a message).
    """
    if record.record_type == "preference":
        return True
    if isinstance(record, MessageRecord) and record.role != "user":
        return False
    return bool(record.content) and _states_preference(record.content or "")


def _states_preference(text: str) -> bool:
    """``_STATES_PREFERENCE.search(text)``, in time linear in the text: the pattern
    alone retries its 40-character gap after every "I" of a long text (seconds for
    100,000 characters of "I I I ..."). The preference words are found first, and the
    pattern is tried only in the window before each (a pronoun of at most 4
    characters, the gap), where ``\\b`` still sees the character before the window
    (tests/unit/test_fusion_advice.py compares the two)."""
    for word in _PREFERENCE_WORD.finditer(text):
        start = max(0, word.start() - _GAP - 5)
        if _STATES_PREFERENCE.search(text, start, word.end()) is not None:
            return True
    return False


def preference_list(
    pool: Sequence[Hashable], records: Mapping[Hashable, Record]
) -> builtins.list[Hashable]:
    """The candidates stating a preference (``states_preference``), in ``pool`` order.

    Args:
        pool: Candidate record keys, best first, all in ``records``.
        records: The loaded records.
    """
    return [key for key in pool if states_preference(records[key])]


def own_text_list(
    query: str, pool: Sequence[Hashable], records: Mapping[Hashable, Record]
) -> builtins.list[Hashable]:
    """The candidates whose own content (not the speaker's name, not the turns their
    context row quotes) holds terms of ``query``, most distinct terms first, ties in
    ``pool`` order.

    Args:
        query: The text query (its terms: ``text.query_terms``, function words out).
        pool: Candidate record keys, best first, all in ``records``.
        records: The loaded records.
    """
    stems = sorted({t[:STEM] for t in query_terms(query)})
    if not stems:
        return []
    counts = stem_counts_each(stems, [record_facts(records[key])[1] for key in pool])
    held = [
        (-found, rank, key)
        for rank, (key, found) in enumerate(zip(pool, counts, strict=True))
        if found
    ]
    return [key for _, _, key in sorted(held)]


RRF_K = 5
"""Reciprocal-rank-fusion constant. The classic 60 (Cormack et al., 2009) suits fusing
many systems; with two lists a small constant keeps the weight on each list's top
ranks, which measured better on LoCoMo (bench/locomo_recall.py)."""

HYBRID_DEPTH = 50
"""Candidates each list of a HYBRID search ranks at least, before fusion."""

K = TypeVar("K", bound=Hashable)


MIN_WEIGHT = 1e-6
"""The smallest weight a ``FusionConfig`` takes."""

MAX_WEIGHT = 1e6
"""The largest weight a ``FusionConfig`` takes."""


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """How a HYBRID search fuses its lists (modelled on langchain-postgres's
    ``HybridSearchConfig``; docs/retrieval.md).

    Attributes:
        rrf_k: The RRF constant ``k`` of ``w / (k + rank)``, an int >= 1.
        list_weight: The weight ``w`` of each vector and keyword list. Every weight
            is a number from ``MIN_WEIGHT`` to ``MAX_WEIGHT`` (only their ratios
            matter; outside that range their sum overflows or their scores vanish).
        index_weight: The weight of a ranking a back end's index fused by itself
            (Oracle's hybrid vector index fuses a vector and a keyword list: two
            lists' worth), against which the signal lists are weighed.
        signals: Which of the query's signal lists may apply (``Signal``); of these,
            those of the query's kind (``query_signals``).
        speaker_weight, date_weight, time_weight, own_text_weight,
            preference_weight, feedback_weight: The weight of each signal list (the
            defaults and why: the ``*_WEIGHT`` constants above).
        speaker_vector_weight, feedback_vector_weight: The weight of the speaker's
            vector list and of the feedback vector list, each taken from the
            question's vector list when it applies (together at most
            ``list_weight``; store/vectorlists.py).
        advice_keyword_weight: The weight of each keyword list for a question asking
            for advice (``ADVICE_KEYWORD_WEIGHT``, ``list_weights``).
        advice_topic: Whether a question asking for advice also ranks by its topic
            vector (a bool; ``store/advice.py``).
        pool: How many of the best fused candidates the signal lists re-rank (>= 1).
        depth: How many candidates each list ranks at least (>= 1).

    Raises:
        InvalidArgumentError: naming the field, for a value out of its range.
    """

    rrf_k: int = RRF_K
    list_weight: float = 1.0
    index_weight: float = 2.0
    signals: frozenset[Signal] = frozenset(Signal)
    speaker_weight: float = SPEAKER_WEIGHT
    date_weight: float = DATE_WEIGHT
    time_weight: float = TIME_WEIGHT
    own_text_weight: float = OWN_TEXT_WEIGHT
    preference_weight: float = PREFERENCE_WEIGHT
    feedback_weight: float = FEEDBACK_WEIGHT
    speaker_vector_weight: float = SPEAKER_VECTOR_WEIGHT
    feedback_vector_weight: float = FEEDBACK_VECTOR_WEIGHT
    advice_keyword_weight: float = ADVICE_KEYWORD_WEIGHT
    advice_topic: bool = True
    pool: int = POOL
    depth: int = HYBRID_DEPTH

    def __post_init__(self) -> None:
        for name in ("rrf_k", "pool", "depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ROWS:
                raise InvalidArgumentError(
                    f"{name} must be an int from 1 to {MAX_ROWS}, got {value!r}"
                )
        for name in (
            "list_weight",
            "index_weight",
            "speaker_weight",
            "date_weight",
            "time_weight",
            "own_text_weight",
            "preference_weight",
            "feedback_weight",
            "speaker_vector_weight",
            "feedback_vector_weight",
            "advice_keyword_weight",
        ):
            weight = getattr(self, name)
            if (
                isinstance(weight, bool)
                or not isinstance(weight, int | float)
                or not math.isfinite(weight)
                or not MIN_WEIGHT <= weight <= MAX_WEIGHT
            ):
                raise InvalidArgumentError(
                    f"{name} must be a number from {MIN_WEIGHT:g} to {MAX_WEIGHT:g}, got {weight!r}"
                )
        shared = self.speaker_vector_weight + self.feedback_vector_weight
        # A relative tolerance: 0.1 + 0.2 is 0.30000000000000004 in binary floating point.
        if shared > self.list_weight * (1 + 1e-9):
            raise InvalidArgumentError(
                "speaker_vector_weight + feedback_vector_weight must be at most "
                f"list_weight ({self.list_weight!r}): they share the question's vector "
                f"list's weight, got {self.speaker_vector_weight!r} + "
                f"{self.feedback_vector_weight!r} = {shared!r}"
            )
        if not isinstance(self.advice_topic, bool):
            raise InvalidArgumentError(f"advice_topic must be a bool, got {self.advice_topic!r}")
        if not isinstance(self.signals, frozenset) or not all(
            isinstance(s, Signal) for s in self.signals
        ):
            raise InvalidArgumentError(
                f"signals must be a frozenset of Signal, got {self.signals!r}"
            )

    def weight(self, signal: Signal) -> float:
        """The weight of ``signal``'s list."""
        weight: float = getattr(self, f"{signal.value}_weight")
        return weight


DEFAULT_FUSION = FusionConfig()
"""The fusion a store searches with unless given another (``fusion=``)."""


def fusion_arg(value: object) -> FusionConfig:
    """A store's ``fusion`` argument checked: a ``FusionConfig``, or None for
    ``DEFAULT_FUSION`` (docs/retrieval.md#one-fusion-for-every-back-end).

    Raises:
        InvalidArgumentError: for any other value.
    """
    if value is None:
        return DEFAULT_FUSION
    if not isinstance(value, FusionConfig):
        raise InvalidArgumentError(f"fusion must be a FusionConfig or None, got {value!r}")
    return value


def fuse(
    lists: Sequence[Sequence[K]],
    weights: Sequence[float] | None = None,
    *,
    rrf_k: int = RRF_K,
    onto: Sequence[tuple[K, float]] = (),
    ranks: Sequence[Sequence[int]] | None = None,
) -> list[tuple[K, float]]:
    """Weighted reciprocal rank fusion: ``score(x) = sum over lists of w / (rrf_k +
    rank of x)``, ranks from 1.

    Args:
        lists: Ranked key lists, best first (a key at most once a list).
        weights: One weight per list (default 1.0 each).
        rrf_k: The RRF constant.
        onto: ``(key, score)`` pairs of an earlier fusion the lists add to (the
            text lists' fusion, for the signal lists of the same search): the
            same scores, to the last bit, as fusing all the lists at once.
        ranks: Per list, each key's rank from 1 (tied keys share one:
            ``search.tied_ranks``); default: its position in the list.

    Returns:
        ``(key, fused score)`` of every key, best first; ties in first-seen order
        (``onto``'s keys first).
    """
    scores = dict(onto)
    for i, ranked in enumerate(lists):
        weight = 1.0 if weights is None else weights[i]
        positions = ranks[i] if ranks is not None else range(1, len(ranked) + 1)
        for rank, key in zip(positions, ranked, strict=True):
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
    return sorted(scores.items(), key=itemgetter(1), reverse=True)  # stable: ties keep order


def rrf_distance(score: float, n_lists: float, k: int = RRF_K) -> float:
    """Map a fused RRF score to a distance in [0, 1]: ``1 - score / best possible``,
    the best possible being rank 1 in every list (``n_lists``: the number of lists,
    or the sum of their weights). A record first in every list gets exactly 0 (its
    score, a sum of floats, may differ from the best possible in the last bit)."""
    best = n_lists / (k + 1)
    distance = 1.0 - score / best
    return 0.0 if distance < RRF_EXACT else min(1.0, distance)


RRF_EXACT = 1e-12
"""Fused distances below this are rounding, not a shortfall: 0."""


def normalized_distances(scored: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    """Turn ``(key, score)`` pairs (higher is better, >= 0) into ``(key, 1 - score /
    best score)``: the best match gets 0, the others their shortfall from it, in [0, 1].

    BM25 scores have no fixed scale (they grow with corpus statistics and query
    length), so keyword distances are relative to the query's best match.
    """
    best = max((s for _, s in scored), default=0.0)
    if best <= 0:
        return [(key, 0.0) for key, _ in scored]
    return [(key, max(0.0, min(1.0, 1.0 - s / best))) for key, s in scored]


# -- the feedback keyword list (docs/retrieval.md#feedback-keyword-list) ------
# Pseudo-relevance feedback for a HYBRID search's keyword half (docs/retrieval.md#feedback-keyword-list).
#
# A question shares only some of its answer's words: "How many times has Melanie gone
# to the beach?" finds the turns about the beach, but the turn saying "we went
# camping by the sea" holds neither "beach" nor "times". The best candidates of the
# first fusion are, most of the time, about the question's subject, and the words
# they share with few other candidates (rare in the pool) name that subject more
# precisely than the question does. ``feedback_terms`` picks such words from the
# fused head (relevance-model style: each word of a head record scores the log of
# the inverse of its share of the pool, summed over the head records holding it), at
# most as many as the question has terms, so the expansion never outweighs the
# question; the keyword index is searched once more with the question's terms plus
# these, and that list joins the fusion at half a text list's weight
# (``fusion.FEEDBACK_WEIGHT``): a query the search derived itself is weaker evidence
# than the one it was asked.
#
# The words come from messages only: a conversation turn talks around its subject,
# and the turns near it in the pool share that talk; a memory or a preference is one
# distilled fact, its subject's words already, and three of them at the head are as
# often three subjects, whose words pull the query apart (on LoCoMo with its
# observations as memories, feedback on the memory search cost 6 questions of half
# b, bench/README.md). A search whose candidates hold no message gets no feedback
# list.
#
# Words a pool shares with the question are not added (they are there already), nor
# a word every pooled candidate holds (it tells none apart), nor the participants'
# names (in a conversation they are in every other turn and say nothing about the
# subject), numbers, or words under three characters. A question
# asking for advice gets no feedback list (its keyword lists weigh little: its words
# are not its answer's, ``fusion.ADVICE_KEYWORD_WEIGHT``). English and other
# languages alike: the words are the keyword index's terms (``text.query_terms``).

FEEDBACK_HEAD = 3
"""How many of the best fused candidates the expansion words are taken from."""

FEEDBACK_MIN_LETTERS = 3
"""The shortest word the expansion adds."""


FACTS_MEMO_SIZE = 16_384
"""How many records' speaker and lower-cased content ``record_facts`` keeps."""

_FACTS: dict[int, tuple[Record, str | None, str, frozenset[str]]] = {}


def record_facts(record: Record) -> tuple[str | None, str, frozenset[str]]:
    """``(speaker, lower-cased content, content terms)`` of a loaded record
    (``participant_name`` of its metadata; ``""`` for no content; ``text.term_set``
    of the content), kept per record object (held with them,
    so its ``id`` is not reused while kept): a back end sharing its loaded records
    (``Backend.shares_loaded``) hands out the same ones until a write.

    Args:
        record: A loaded record, not changed after loading.
    """
    kept = _FACTS.get(id(record))
    if kept is not None and kept[0] is record:
        return kept[1:]
    if len(_FACTS) >= FACTS_MEMO_SIZE:
        _FACTS.clear()
    content = record.content or ""
    facts = (participant_name(record.metadata), content.lower(), term_set(content))
    _FACTS[id(record)] = (record, *facts)
    return facts


def speaker_names(records: Mapping[Hashable, Record]) -> dict[Hashable, str | None]:
    """Each record's speaker (``record_facts``), by key: read once for a search's
    signal lists and feedback words.

    Args:
        records: Loaded records by key.
    """
    return {key: record_facts(record)[0] for key, record in records.items()}


def feedback_terms(
    query: str,
    pool: Sequence[Hashable],
    records: Mapping[Hashable, Record],
    *,
    head: int = FEEDBACK_HEAD,
    speakers: Mapping[Hashable, str | None] | None = None,
) -> list[str]:
    """The question's keyword terms followed by its expansion words, or ``[]`` when no
    word qualifies (then no feedback list is searched).

    Args:
        query: The text query.
        pool: Candidate record keys, best first (the first fusion's head); a key
            missing from ``records`` is skipped.
        records: The loaded records of ``pool``.
        head: How many of the best messages among the candidates the words come
            from (>= 1).
        speakers: ``speaker_names(records)`` when the caller has it already.

    Returns:
        ``[]`` when the pool holds no message; else ``text.query_terms(query)`` plus up to ``len(query_terms(query))`` words of
        the head records' own content, best score first (ties in order of first
        appearance), each absent from the query's terms and from at least one
        pooled candidate.
    """
    asked = query_terms(query)
    present = [key for key in pool if key in records]
    turns = [key for key in present if records[key].record_type == MESSAGE][:head]
    if not asked or not turns:
        return []
    said = speaker_names(records) if speakers is None else speakers
    names = {word for name in {said[key] or "" for key in present} for word in term_set(name)}
    terms_of = {key: record_facts(records[key])[2] for key in present}
    docs = [terms_of[key] for key in present]
    heads = [terms_of[key] for key in turns]
    wanted = {
        word
        for word in set().union(*heads) - set(asked) - names
        if len(word) >= FEEDBACK_MIN_LETTERS and not word.isdigit()
    }
    share = Counter(chain.from_iterable(wanted & words for words in docs))
    weight = {  # each word's score per head holding it; the others score nothing
        word: math.log((len(docs) + 1) / count)
        for word, count in share.items()
        if count != len(docs)
    }
    scores: dict[str, float] = {}
    for words in heads:
        for word in sorted(words & weight.keys()):
            scores[word] = scores.get(word, 0.0) + weight[word]
    best = sorted(scores.items(), key=lambda ws: -ws[1])  # stable: ties in first-seen order
    expansion = [word for word, score in best[: len(asked)] if score > 0]
    return [*asked, *expansion] if expansion else []
