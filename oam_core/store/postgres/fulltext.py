"""Keyword search text for the PostgreSQL store: tokens, tsquery terms and BM25 SQL.

The store mirrors the SQLite FTS5 setup (``porter unicode61 remove_diacritics 2``,
BM25 with k1 = 1.2, b = 0.75) so KEYWORD ranks alike on both back ends
(docs/store.md#keyword-search): Python cuts ``store/text.index_text`` (the text
folded by ``store/text.fold``: Unicode case folding and accent removal; CJK runs as
character and character-pair tokens, kept as they are: が stays が) into Unicode word
tokens, the same text the SQLite index holds, PostgreSQL stems the tokens with the
original Porter stemmer (the ``snowball`` template's ``porter`` language, no stop
words: every token stays searchable) into a ``tsvector``, and the BM25 score is
computed in SQL from the tsvector's term frequencies, the row's token count and
corpus statistics. FTS5 stems only tokens of 3 to 64 bytes (``PORTER_BYTES``); the
others (``is``, ``us``) are added to the ``tsvector`` as they are, so PostgreSQL
does not make ``is`` the ``i`` of "I". Snowball's ``porter`` follows Porter's 1980
paper, FTS5 his later C version, so a few rare words stem apart ("ecology",
"incredibly", "trekked": docs/store.md#keyword-search). Query terms are cut and
folded by ``store/text.keyword_terms``, as on SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence

from oam_core.store.text import WORD, index_text, keyword_terms

K1 = 1.2
"""BM25 term-frequency saturation (FTS5's default)."""
B = 0.75
"""BM25 length normalisation (FTS5's default)."""

PORTER_BYTES = (3, 64)
"""The token lengths, in bytes of UTF-8, that FTS5's porter tokenizer stems (shorter
and longer tokens pass through as they are)."""
LEXEME_MAX_BYTES = 2046
"""The longest ``tsvector`` lexeme PostgreSQL holds, in bytes."""
MAX_POSITION = 16383
"""The highest ``tsvector`` position (later tokens share it, as in ``to_tsvector``)."""
MAX_POSITIONS = 255
"""The most positions ``to_tsvector`` keeps of one lexeme (a term frequency cap)."""


def tokens(text: str) -> list[str]:
    """The word tokens of ``index_text(text)``: folded words (``store/text.fold``)
    and each CJK run as its characters and character pairs."""
    return WORD.findall(index_text(text))


def stemmed(token: str) -> bool:
    """Whether FTS5's porter tokenizer stems ``token`` (3 to 64 bytes of UTF-8,
    ``PORTER_BYTES``); it keeps any other token as it is."""
    return PORTER_BYTES[0] <= len(token.encode()) <= PORTER_BYTES[1]


def tsvector_sql(p: str, kept: str = "%s", words: str = "%s") -> str:
    """The SQL of a search row's ``tsvector`` for prefix ``p`` from the first two
    values of ``index_input`` (SQL operands ``kept`` and ``words``, placeholders by
    default): the tokens kept as they are, then the tokens the store's text-search
    configuration stems (NULL text gives NULL)."""
    return f"({kept}::tsvector || to_tsvector('{p}oam_fts', {words}))"


def index_input(text: str | None) -> tuple[str | None, str | None, int]:
    """``(tsvector literal, text for to_tsvector, token count)`` of a search row's text
    (the first two bind ``tsvector_sql``).

    Args:
        text: The search row's text, or None (no keyword index entry).

    Returns:
        The tokens FTS5 does not stem (``stemmed``) as a ``tsvector`` literal with
        their positions (``''`` when there are none; as ``to_tsvector`` does, at
        most ``MAX_POSITIONS`` of a token, and a token over 2,046 bytes, which
        PostgreSQL cannot hold, is left out), the other tokens joined by spaces,
        and the number of tokens; None, None, 0 for None.
    """
    if text is None:
        return None, None, 0
    words = tokens(text)
    kept: dict[str, list[str]] = {}
    stemmed_words: list[str] = []
    for i, word in enumerate(words):
        if stemmed(word):
            stemmed_words.append(word)
        elif len(word.encode()) <= LEXEME_MAX_BYTES:
            at = kept.setdefault(word, [])
            if len(at) < MAX_POSITIONS:
                at.append(str(min(i + 1, MAX_POSITION)))
    literal = " ".join(f"{_quoted(word)}:{','.join(at)}" for word, at in kept.items())
    return literal, " ".join(stemmed_words), len(words)


def query_words(terms: Sequence[str]) -> list[str]:
    """The index tokens to search for the query terms (``store/text.query_terms``),
    folded and cut as ``store/text.keyword_terms`` does for SQLite."""
    return keyword_terms(terms)


def kept_lexemes(words: Sequence[str]) -> list[str | None]:
    """Each query word's lexeme when FTS5 keeps the word as it is (``stemmed`` is
    false) and PostgreSQL can hold it (``LEXEME_MAX_BYTES``): the word itself; else
    None (the store's text-search configuration stems it)."""
    return [w if not stemmed(w) and len(w.encode()) <= LEXEME_MAX_BYTES else None for w in words]


def _quoted(lexeme: str) -> str:
    """``lexeme`` quoted for a ``tsvector`` or ``tsquery`` literal."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_literal(lexemes: Sequence[str]) -> str:
    """A ``tsquery`` matching any of ``lexemes`` (stemmed already), each quoted."""
    return " | ".join(_quoted(lx) for lx in lexemes)
