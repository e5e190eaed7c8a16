"""Keyword search text for the PostgreSQL store: tokens, tsquery terms and BM25 SQL.

The store mirrors the SQLite FTS5 setup (``porter unicode61 remove_diacritics 2``,
BM25 with k1 = 1.2, b = 0.75) so KEYWORD ranks alike on both back ends (SPEC §3.5
[oam]): Python cuts text into Unicode word tokens and strips diacritics, PostgreSQL
stems the tokens with the Snowball English stemmer (no stop words: every token stays
searchable) into a ``tsvector``, and the BM25 score is computed in SQL from the
tsvector's term frequencies, the row's token count and corpus statistics.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import regex

_WORD = regex.compile(r"[\p{L}\p{N}]+")

K1 = 1.2
"""BM25 term-frequency saturation (FTS5's default)."""
B = 0.75
"""BM25 length normalisation (FTS5's default)."""


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """The word tokens of ``text``, lower-cased, diacritics removed."""
    return _WORD.findall(_fold(text).lower())


def index_input(text: str | None) -> tuple[str | None, int]:
    """``(text for to_tsvector, token count)`` of a search row's text."""
    if text is None:
        return None, 0
    words = tokens(text)
    return " ".join(words), len(words)


def query_words(terms: Sequence[str]) -> list[str]:
    """The query terms (``store/text.query_terms``) folded like indexed text; a term
    that folds into several tokens keeps its first."""
    out: list[str] = []
    for t in terms:
        words = tokens(t)
        if words and words[0] not in out:
            out.append(words[0])
    return out


def tsquery_literal(lexemes: Sequence[str]) -> str:
    """A ``tsquery`` matching any of ``lexemes`` (stemmed already), each quoted."""
    quoted = ["'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexemes]
    return " | ".join(quoted)
