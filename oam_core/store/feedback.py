"""Pseudo-relevance feedback for a HYBRID search's keyword half (docs/retrieval.md#feedback-keyword-list).

A question shares only some of its answer's words: "How many times has Melanie gone
to the beach?" finds the turns about the beach, but the turn saying "we went
camping by the sea" holds neither "beach" nor "times". The best candidates of the
first fusion are, most of the time, about the question's subject, and the words
they share with few other candidates (rare in the pool) name that subject more
precisely than the question does. ``feedback_terms`` picks such words from the
fused head (relevance-model style: each word of a head record scores the log of
the inverse of its share of the pool, summed over the head records holding it), at
most as many as the question has terms, so the expansion never outweighs the
question; the keyword index is searched once more with the question's terms plus
these, and that list joins the fusion at half a text list's weight
(``fusion.FEEDBACK_WEIGHT``): a query the search derived itself is weaker evidence
than the one it was asked.

The words come from messages only: a conversation turn talks around its subject,
and the turns near it in the pool share that talk; a memory or a preference is one
distilled fact, its subject's words already, and three of them at the head are as
often three subjects, whose words pull the query apart (on LoCoMo with its
observations as memories, feedback on the memory search cost 6 questions of half
b, bench/README.md). A search whose candidates hold no message gets no feedback
list.

Words a pool shares with the question are not added (they are there already), nor
a word every pooled candidate holds (it tells none apart), nor the participants'
names (in a conversation they are in every other turn and say nothing about the
subject), numbers, or words under three characters. A question
asking for advice gets no feedback list (its keyword lists weigh little: its words
are not its answer's, ``fusion.ADVICE_KEYWORD_WEIGHT``). English and other
languages alike: the words are the keyword index's terms (``text.query_terms``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from functools import lru_cache

from oam_core.apis.records import MESSAGE, Record
from oam_core.apis.thread import participant_name
from oam_core.store.text import query_terms

__all__ = [
    "FEEDBACK_HEAD",
    "MEMO_CHARS",
    "MEMO_SIZE",
    "MIN_LETTERS",
    "content_terms",
    "feedback_terms",
]

FEEDBACK_HEAD = 3
"""How many of the best fused candidates the expansion words are taken from."""

MIN_LETTERS = 3
"""The shortest word the expansion adds."""


MEMO_SIZE = 8192
"""How many texts' terms ``content_terms`` keeps: a store's candidates recur from one
search to the next, and tokenising the pool is most of the list's cost."""

MEMO_CHARS = 2048
"""Texts longer than this are tokenised each time (not kept)."""


@lru_cache(maxsize=MEMO_SIZE)
def _kept_terms(text: str) -> frozenset[str]:
    return frozenset(query_terms(text))


def content_terms(text: str) -> frozenset[str]:
    """The keyword terms of a record's content (``text.query_terms``, a pure function
    of the text), kept for up to ``MEMO_SIZE`` texts of at most ``MEMO_CHARS``
    characters.

    Args:
        text: A record's content.
    """
    return _kept_terms(text) if len(text) <= MEMO_CHARS else frozenset(query_terms(text))


def feedback_terms(
    query: str,
    pool: Sequence[Hashable],
    records: Mapping[Hashable, Record],
    *,
    head: int = FEEDBACK_HEAD,
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
    names = {
        word
        for key in present
        for word in content_terms(participant_name(records[key].metadata) or "")
    }
    docs = [content_terms(records[key].content or "") for key in present]
    skip = set(asked) | names
    heads = [content_terms(records[key].content or "") for key in turns]
    wanted = set().union(*heads) - skip
    share = Counter(word for words in docs for word in wanted & words)
    scores: dict[str, float] = {}
    for words in heads:
        for word in sorted(words):
            if (
                word in skip
                or len(word) < MIN_LETTERS
                or word.isdigit()
                or share[word] == len(docs)
            ):
                continue
            scores[word] = scores.get(word, 0.0) + math.log((len(docs) + 1) / share[word])
    best = sorted(scores.items(), key=lambda ws: -ws[1])  # stable: ties in first-seen order
    expansion = [word for word, score in best[: len(asked)] if score > 0]
    return [*asked, *expansion] if expansion else []
