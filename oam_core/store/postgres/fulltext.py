"""Keyword search text for the PostgreSQL store: tokens, tsquery terms and BM25 SQL.

The store mirrors the SQLite FTS5 setup (``porter unicode61 remove_diacritics 2``,
BM25 with k1 = 1.2, b = 0.75) so KEYWORD ranks alike on both back ends
(docs/store.md#keyword-search): Python cuts ``store/text.index_text`` (the text
folded by ``store/text.fold``: Unicode case folding and accent removal; CJK runs as
character and character-pair tokens, kept as they are: が stays が) into Unicode word
tokens, the same text the SQLite index holds, PostgreSQL stems the tokens with the
Snowball English stemmer (no stop words: every token stays searchable) into a
``tsvector``, and the BM25 score is computed in SQL from the tsvector's term
frequencies, the row's token count and corpus statistics. Query terms are cut and
folded by ``store/text.keyword_terms``, as on SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

from oam_core.store.text import index_text, keyword_terms

_WORD = regex.compile(r"[\p{L}\p{N}]+")

K1 = 1.2
"""BM25 term-frequency saturation (FTS5's default)."""
B = 0.75
"""BM25 length normalisation (FTS5's default)."""


def tokens(text: str) -> list[str]:
    """The word tokens of ``index_text(text)``: folded words (``store/text.fold``)
    and each CJK run as its characters and character pairs."""
    return _WORD.findall(index_text(text))


def index_input(text: str | None) -> tuple[str | None, int]:
    """``(text for to_tsvector, token count)`` of a search row's text."""
    if text is None:
        return None, 0
    words = tokens(text)
    return " ".join(words), len(words)


def query_words(terms: Sequence[str]) -> list[str]:
    """The index tokens to search for the query terms (``store/text.query_terms``),
    folded and cut as ``store/text.keyword_terms`` does for SQLite."""
    return keyword_terms(terms)


def tsquery_literal(lexemes: Sequence[str]) -> str:
    """A ``tsquery`` matching any of ``lexemes`` (stemmed already), each quoted."""
    quoted = ["'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexemes]
    return " | ".join(quoted)
