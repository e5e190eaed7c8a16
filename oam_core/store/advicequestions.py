"""Which questions ask for advice (docs/retrieval.md#advice-questions-and-stated-preferences).

A question asking for advice ("Can you recommend a restaurant for my birthday?") is
answered by a preference the user stated, and HYBRID ranks it by its own rule
(``fusion.query_signals``, ``fusion.list_weights``, ``store/advice.py``). A question
about what happened is not one, even when it holds the same words: what someone
advised ("What did my mom suggest for dinner on 3 May 2023?") is a memory, and its
date, time and own-words lists are what finds it.

So ``asks_for_advice`` reads three things, all English patterns (a query in another
language matches none of their words, and is searched like any other query):

* the words that ask for advice (a recommendation, a suggestion, ideas, tips,
  options, "what should ...", "can you help me plan ...");
* the person asking, spoken of or to: "I", "me", "my", "you", "your" (advice is
  asked for someone; "What did Caroline recommend?" is about her). Not "we", "us",
  "our": "What are some movies we watched together?" asks what a group did;
* and that the question is not about the past: no past auxiliary in question word
  order ("What did my mom suggest", "Which restaurant did my sister recommend",
  "When was it suggested"), no advice verb in the past tense ("the diet my doctor
  suggested"), no time before now ("last Friday", "two weeks ago",
  ``temporal.names_past_time``) nor date ("on 3 May 2023", ``temporal.names_date``)
  unless the question is a request or a plan ("Can you recommend a restaurant for my
  birthday on 25 May?", "I hurt my knee yesterday, what should I do?": the request
  is made now, whatever time it mentions), none of the words of recalling
  ("remember", "I told you", "What are some books I read ...").
"""

from __future__ import annotations

import re

from oam_core.store.temporal import names_date, names_past_time
from oam_core.store.text import kept_per_text

__all__ = ["asks_about_the_past", "asks_for_advice"]

_APOSTROPHE = "['\u2019]"
_ASKS_ADVICE = re.compile(
    r"\b(?:recommend\w*|suggest\w*|advice|advise|ideas|tips?|what should|which should"
    r"|should i|(?:could|can) you (?:help|find|plan|pick|choose)"
    r"|help me (?:plan|choose|pick|find|decide)|options? for me|what are some|any good)\b",
    re.IGNORECASE,
)
_ASKS_RECALL = re.compile(
    r"\b(?:did (?:i|we|you)|have i|had i|was i|were we"
    r"|(?:i|we) (?:told|said|mentioned|asked|read|watched|bought|visited|tried|went|saw|ate"
    r"|played|used)"
    r"|you (?:told|said|mentioned|recommended|suggested)"
    r"|remember|recall)\b",
    re.IGNORECASE,
)
"""Words of recalling ("What are some books I read ...?", "Do you remember ...?")."""
_ASKER = re.compile(rf"\b(?:i|i{_APOSTROPHE}m|i{_APOSTROPHE}ve|me|my|you|your)\b", re.IGNORECASE)
"""The person asking, spoken of ("I", "me", "my") or to ("you", "your"). Not "we",
"us", "our": a question about what a group did reads like one asking for ideas ("What
are some movies we watched together?", "What ideas came up in our meeting?"), and no
tense rule tells the two apart reliably."""
_NOT_AN_AUXILIARY = (
    r"(?:should|can|could|would|will|do|does|is|are|am|may|might|must|shall"
    rf"|i|you|we|they|he|she|it|i{_APOSTROPHE}m|you{_APOSTROPHE}re)"
)
_PAST_QUESTION = re.compile(
    r"(?:^|[.?!;:,\n])\s*"
    r"(?:(?:what|which|when|where|who|whom|whose|why|how)\b"
    rf"(?:\s+(?!{_NOT_AN_AUXILIARY}\b)[\w'\u2019-]+){{0,3}}\s+)?"
    rf"(?:did|was|were|had|has)(?:n{_APOSTROPHE}t)?\s+(?!wondering\b|hoping\b|thinking\b)\w",
    re.IGNORECASE,
)
"""A past auxiliary in question word order: opening the sentence ("Did my sister
recommend ...?", "Has my doctor suggested ...?") or after its question word and up to
three words that are no other auxiliary or pronoun ("What did my mom suggest",
"Which restaurant did my sister recommend", "What advice did my doctor give me",
"What was the tip ..."). "I was wondering if you could recommend ..." is not one
(the subject comes first), nor "Was wondering if ..." (a request)."""
_PAST_ADVICE_VERB = re.compile(
    r"(?<![\w'\u2019])(?!(?:a|an|the|some|any|most|more|highly|best|well|other|often"
    r"|commonly|widely|usually|generally|is|are|be)\b)[\w'\u2019]+"
    r"\s+(?:recommended|suggested|advised)\b",
    re.IGNORECASE,
)
"""An advice verb in the past tense after its subject ("the diet my doctor
suggested", "a book Tim recommended", "what was advised"); not the adjective ("some
recommended cars", "the recommended dose", "highly recommended") nor the present
passive ("What is recommended for me?")."""

_REQUEST_OR_PLAN = re.compile(
    r"\b(?:(?:can|could|would|will) you|should (?:i|we)|help (?:me|us)|(?:i|we) need"
    r"|looking for|planning|plan to|going to|next|upcoming|coming up|will"
    rf"|(?:i|we){_APOSTROPHE}ll)\b",
    re.IGNORECASE,
)
"""Words of a request to the assistant or of a plan: a date or past time in such a
question is the date of what is asked for ("Can you suggest a gift for my sister's
birthday on 3 May?") or the background of a request made now ("I hurt my knee
yesterday, what should I do?"), not what the question asks about."""


def asks_about_the_past(query: str) -> bool:
    """Whether ``query`` asks about what happened: a past auxiliary in question word
    order, an advice verb in the past tense, a time before now
    (``temporal.names_past_time``) or a date (``temporal.names_date``) in a question
    that is no request and no plan, or words of recalling (English patterns; the
    module docstring lists them).

    Args:
        query: The text query.
    """
    return (
        _ASKS_RECALL.search(query) is not None
        or _PAST_QUESTION.search(query) is not None
        or _PAST_ADVICE_VERB.search(query) is not None
        or (
            (names_past_time(query) or names_date(query)) and _REQUEST_OR_PLAN.search(query) is None
        )
    )


@kept_per_text
def asks_for_advice(query: str) -> bool:
    """Whether ``query`` asks for advice: it asks for a recommendation, a suggestion,
    ideas, tips, options, "what should I ...", "can you help/find/plan ...", "what
    are some ..." (English words), speaks of or to the person asking ("I", "me",
    "my", "you", "your"), and is not about the past
    (``asks_about_the_past``).

    A question about what happened is not one asking for advice, whoever advised:
    "What did Caroline recommend?", "What did my mom suggest for dinner on 3 May
    2023?", "What ideas did my team have in the meeting last Friday?", "What are some
    books I read last year?", "What did you recommend for my trip?". A query in
    another language is not an advice question (docs/retrieval.md).

    Args:
        query: The text query (kept as ``text.query_terms`` keeps texts).
    """
    return (
        _ASKS_ADVICE.search(query) is not None
        and _ASKER.search(query) is not None
        and not asks_about_the_past(query)
    )
