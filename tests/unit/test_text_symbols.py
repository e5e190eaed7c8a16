"""The keyword-index form of emoji, symbols and other characters that are neither
letters nor digits (``store/text.index_text``; docs/store.md#keyword-search).

SQLite's ``unicode61`` tokenizer classifies characters by Unicode 6.1 and counts
later ones (most emoji, new currency signs and punctuation, bidi isolates, skin-tone
modifiers) and private-use characters as word characters. ``index_text`` turns every
character that is neither a letter nor a digit into a space, so FTS5 holds the words
``keyword_terms`` searches, the words PostgreSQL holds.
"""

from __future__ import annotations

import sqlite3
import unicodedata

import pytest
import regex

from oam_core.store.postgres import fulltext
from oam_core.store.text import fold, index_text, keyword_terms, query_terms

_WORD = regex.compile(r"[\p{L}\p{N}]+")

TOKENIZER = "porter unicode61 remove_diacritics 2"
"""The SQLite store's tokenizer (``sqlite/schema.fts_ddl``)."""


def fts_tokens(*texts: str, tokenize: str = TOKENIZER) -> list[list[str]]:
    """The tokens FTS5 makes of each text, in order."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{tokenize}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(texts))
    out: list[list[str]] = [[] for _ in texts]
    for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        out[doc].append(term)
    return out


@pytest.mark.parametrize(
    ("text", "expected", "tokens"),
    [
        ("Bob🙂 likes tea", "bob  likes tea", ["bob", "like", "tea"]),
        # an emoji ZWJ sequence: man, ZWJ, woman, ZWJ, girl (two UTF-16 units each)
        (
            "Mom\U0001f468\u200d\U0001f469\u200d\U0001f467Dad",
            "mom" + " " * 5 + "dad",
            ["mom", "dad"],
        ),
        ("Great👍🏽teamwork", "great  teamwork", ["great", "teamwork"]),  # skin tone: Sk
        ("1️⃣", "1  ", ["1"]),  # keycap: digit, U+FE0F (Mn), U+20E3 (Me)
        ("€5", " 5", ["5"]),
        ("500₽ or ₿1", "500  or  1", ["500", "or", "1"]),  # currency signs of Unicode 7, 10
        ("x²", "x2", ["x2"]),  # superscript two: a digit (No), folded to 2
        ("\u2068Zoltan\u2069 replied", " zoltan  replied", ["zoltan", "repli"]),  # bidi isolates
        ("north⹀south", "north south", ["north", "south"]),  # U+2E40 double hyphen (Pd)
        ("\uf8ffApple", " apple", ["appl"]),  # private use
        ("🫠Tired🥰🤣", " tired  ", ["tire"]),
        ("我的狗🙂", " 我 我的 的 的狗 狗  ", ["我", "我的", "的", "的狗", "狗"]),
        ("Straße🤔", "strasse ", ["strass"]),
    ],
)
def test_index_text_turns_symbols_into_spaces(text: str, expected: str, tokens: list[str]) -> None:
    form = index_text(text)
    assert form == expected
    assert fts_tokens(form) == [tokens]
    # A query for the text searches tokens the index holds (CJK by its pairs).
    [searched] = fts_tokens(" ".join(keyword_terms(query_terms(text))))
    assert searched and set(searched) <= set(tokens)


def test_the_categories_of_emoji_parts() -> None:
    cats = {ch: unicodedata.category(ch) for ch in "\ufe0f\u20e3\u200d\U0001f3fd²€🙂"}
    assert list(cats.values()) == ["Mn", "Me", "Cf", "Sk", "No", "Sc", "So"]


def test_the_old_form_kept_emoji_inside_words() -> None:
    assert index_text("Bob🙂 likes tea", separated=False) == "bob🙂 likes tea"
    assert fts_tokens(index_text("Bob🙂 likes tea", separated=False)) == [["bob🙂", "like", "tea"]]
    assert index_text("Straße🙂", folded=False, separated=False) == "Straße🙂"


SAMPLED = [
    cp
    for cp in [*range(0x20, 0x20000), 0x2A6D6, 0x30000, *range(0xE0000, 0xE1000), 0xF0000]
    if not 0xD800 <= cp <= 0xDFFF
]
"""The code points below the CJK extension planes (every block of letters, marks,
symbols and punctuation), one of each CJK plane, the tags and variation selectors,
and a private-use one of plane 15."""

MARKS_IN_UNICODE_6_1 = {*range(0x19B0, 0x19C1), 0x19C8, 0x19C9, 0x1CF2, 0x1CF3}
"""New Tai Lue vowel signs and tone marks and two Vedic signs: spacing marks (Mc) in
Unicode 6.1, letters (Lo) since. ``unicode61`` cuts words at them; a query word
holding one is not found on SQLite."""


def test_fts5_cuts_the_index_form_into_the_query_words_for_every_character() -> None:
    texts = [f"x{chr(cp)}y" for cp in SAMPLED]
    tokens = fts_tokens(*(index_text(t) for t in texts), tokenize="unicode61 remove_diacritics 2")
    differ = {
        cp for cp, t, got in zip(SAMPLED, texts, tokens, strict=True) if got != fulltext.tokens(t)
    }
    assert differ == MARKS_IN_UNICODE_6_1


def test_postgres_tokens_change_only_where_a_symbol_decomposes_into_letters() -> None:
    """PostgreSQL indexes the ``[\\p{L}\\p{N}]+`` runs of ``index_text``: the new form
    changes them only for a symbol whose compatibility form holds a letter or digit
    (™ -> TM: "Acme™" was ``acmetm``), which its schema upgrade re-derives."""
    decomposing = {
        cp
        for cp in SAMPLED
        if cp > 0x7F
        and unicodedata.category(chr(cp)).startswith("S")
        and _WORD.search(fold(chr(cp)))
    }
    assert {0x2122, 0x2103, 0x338F, 0x2116} <= decomposing  # ™ ℃ ㎏ №
    differ = {
        cp
        for cp in SAMPLED
        if fulltext.tokens(f"Ab{chr(cp)}c d")
        != _WORD.findall(index_text(f"Ab{chr(cp)}c d", separated=False))
    }
    assert differ == decomposing


def test_a_symbol_that_decomposes_into_letters_separates_words() -> None:
    assert index_text("I love Acme™ shoes") == "i love acme  shoes"
    assert fulltext.tokens("5㎏ of rice at 20℃, №5") == ["5", "of", "rice", "at", "20", "5"]
    # Letters and digits with compatibility forms stay letters and digits.
    assert fulltext.tokens("ﬁne ½ x²") == ["fine", "1", "2", "x2"]


def test_the_index_form_keeps_the_length_of_the_folded_text() -> None:
    text = "Ünïcode 🙂 text👩\u200d💻, 500₽ 狗叫 ok"
    assert len(index_text(text)) == len(index_text(text, separated=False))
    assert index_text("plain ascii, as it was!") == "plain ascii, as it was!"
