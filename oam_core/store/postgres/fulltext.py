"""Keyword search text for the PostgreSQL store: tokens, tsquery terms and BM25 SQL.

The store mirrors the SQLite FTS5 setup (``porter unicode61 remove_diacritics 2``,
BM25 with k1 = 1.2, b = 0.75) so KEYWORD ranks alike on both back ends
(docs/store.md#keyword-search): Python cuts text into Unicode word tokens and strips diacritics, PostgreSQL
stems the tokens with the Snowball English stemmer (no stop words: every token stays
searchable) into a ``tsvector``, and the BM25 score is computed in SQL from the
tsvector's term frequencies, the row's token count and corpus statistics. CJK runs
become the same character and character-pair tokens as in SQLite
(``store/text.index_text``), kept as they are (no diacritics folding: が stays が).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import regex

from oam_core.store.text import cjk_grams, has_cjk, keyword_terms, split_cjk

_WORD = regex.compile(r"[\p{L}\p{N}]+")

K1 = 1.2
"""BM25 term-frequency saturation (FTS5's default)."""
B = 0.75
"""BM25 length normalisation (FTS5's default)."""


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """The word tokens of ``text``: lower-cased with diacritics removed, and each
    CJK run as its characters and character pairs (``store/text.cjk_grams``)."""
    if not has_cjk(text):
        return _fold_words(text)
    out: list[str] = []
    for other, segments in split_cjk(text):
        out += _fold_words(other)
        out += cjk_grams(segments)
    return out


def _fold_words(text: str) -> list[str]:
    return _WORD.findall(_fold(text).lower())


def index_input(text: str | None) -> tuple[str | None, int]:
    """``(text for to_tsvector, token count)`` of a search row's text."""
    if text is None:
        return None, 0
    words = tokens(text)
    return " ".join(words), len(words)


def query_words(terms: Sequence[str]) -> list[str]:
    """The index tokens to search for the query terms (``store/text.query_terms``):
    CJK parts as ``store/text.keyword_terms`` cuts them, other words folded like
    indexed text (a word that folds into several tokens keeps its first)."""
    out: list[str] = []
    for t in keyword_terms(terms):
        words = [t] if has_cjk(t) else _fold_words(t)
        if words and words[0] not in out:
            out.append(words[0])
    return out


def tsquery_literal(lexemes: Sequence[str]) -> str:
    """A ``tsquery`` matching any of ``lexemes`` (stemmed already), each quoted."""
    quoted = ["'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexemes]
    return " | ".join(quoted)
