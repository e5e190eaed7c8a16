"""Query terms for keyword search (SPEC §3.5 [oam]: BM25 over the query's terms).

A query is cut into lower-cased word tokens (Unicode letters and digits) and English
function words are dropped, so "When did Caroline paint a sunrise?" matches on
``caroline``, ``paint`` and ``sunrise`` rather than on every row holding "a" or
"did". If nothing but function words remain, all tokens are kept. Every back end
gets the same terms and ORs them in its own full-text dialect.
"""

from __future__ import annotations

import regex

_WORD = regex.compile(r"[\p{L}\p{N}]+")

# Articles, auxiliaries, pronouns, prepositions, conjunctions and question words.
FUNCTION_WORDS = frozenset(
    [
        "a",
        "about",
        "after",
        "all",
        "also",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "during",
        "each",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "here",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "just",
        "may",
        "me",
        "might",
        "more",
        "most",
        "much",
        "my",
        "no",
        "not",
        "of",
        "off",
        "on",
        "or",
        "our",
        "out",
        "over",
        "s",
        "shall",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def query_terms(query: str) -> list[str]:
    """Return the distinct search terms of ``query``, in order of first appearance."""
    tokens = list(dict.fromkeys(t.lower() for t in _WORD.findall(query)))
    content = [t for t in tokens if t not in FUNCTION_WORDS]
    return content or tokens
