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
(``fusion.FEEDBACK_WEIGHT``): a query the search derived itself is weaker evidence than
the one it was asked.

Words a pool shares with the question are not added (they are there already), nor
a word every pooled candidate holds (it tells none apart), nor the participants' names (in a conversation they are in every other turn and say
nothing about the subject), numbers, or words under three characters. A question
asking for advice gets no feedback list (its keyword lists weigh little: its words
are not its answer's, ``fusion.ADVICE_KEYWORD_WEIGHT``). English and other
languages alike: the words are the keyword index's terms (``text.query_terms``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence

from oam_core.apis.records import Record
from oam_core.apis.thread import participant_name
from oam_core.store.text import query_terms

__all__ = ["FEEDBACK_HEAD", "MIN_LETTERS", "feedback_terms"]

FEEDBACK_HEAD = 3
"""How many of the best fused candidates the expansion words are taken from."""

MIN_LETTERS = 3
"""The shortest word the expansion adds."""


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
        head: How many of the best present candidates the words come from (>= 1).

    Returns:
        ``text.query_terms(query)`` plus up to ``len(query_terms(query))`` words of
        the head records' own content, best score first (ties in order of first
        appearance), each absent from the query's terms and from at least one
        pooled candidate.
    """
    asked = query_terms(query)
    present = [key for key in pool if key in records]
    if not asked or not present:
        return []
    names = {
        word
        for key in present
        for word in query_terms(participant_name(records[key].metadata) or "")
    }
    docs = [set(query_terms(records[key].content or "")) for key in present]
    share: Counter[str] = Counter()
    for words in docs:
        share.update(words)
    skip = set(asked) | names
    scores: dict[str, float] = {}
    for words in docs[:head]:
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
