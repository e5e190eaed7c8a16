"""A query is folded and cut as the keyword index is (``oam_core/store/text.py``:
``words``, ``query_terms``, ``keyword_terms`` against ``index_text``;
docs/store.md#keyword-search, trial 48 f02).

The index folds first (every mark of non-zero combining class dropped) and cuts
afterwards; the query once cut first, so a mark NFC cannot compose away split the
word and the two sides shared no token. The property tests below check, for random
multi-script text with combining marks, that the query's tokens of a text are the
index's tokens of that text. The index text itself is pinned: changing it would
change the index format (a schema version that rebuilds every index).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Hashable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oam_core.apis.records import Record
from oam_core.store.fusion import own_text_list
from oam_core.store.naming import named_speaker
from oam_core.store.oracle import sql as oracle_sql
from oam_core.store.sqlite.keyword import _index_terms_of
from oam_core.store.sqlite.schema import FOLDED_VERSION
from oam_core.store.text import (
    FUNCTION_WORDS,
    WORD,
    has_cjk,
    index_text,
    keyword_terms,
    query_terms,
    words,
)

FINDING = {
    "ذَهَبَ الوَلَدُ إلى المدرسة": ("ذهب الولد الى المدرسة", ["ذَهَبَ", "الوَلَدُ", "إلى", "المدرسة"]),
    "שָׁלוֹם עוֹלָם": ("שלום עולם", ["שָׁלוֹם", "עוֹלָם"]),
    "नमस्ते दुनिया": ("नमसत  द न य ", ["नमस्त", "द", "न", "य"]),
    "मुझे स्कूल पसंद है": ("म झ  सक ल पस द ह ", ["म", "झ", "स्क", "ल", "पस", "द", "ह"]),
    "Spın̈al Tap": ("spınal tap", ["Spın̈al", "Tap"]),
    "Ọlọ́run dára": ("olorun dara", ["Ọlọ́run", "dára"]),
}
"""The texts of the finding: their index text (unchanged by the fix) and their words
as written, cut where the index cuts."""


@pytest.mark.parametrize("text", list(FINDING))
def test_the_index_text_is_unchanged(text: str) -> None:
    assert index_text(text) == FINDING[text][0]


@pytest.mark.parametrize("text", list(FINDING))
def test_words_keep_the_marks_the_index_drops_inside_the_word(text: str) -> None:
    assert words(text) == FINDING[text][1]


@pytest.mark.parametrize("text", list(FINDING))
def test_each_word_of_the_text_finds_its_own_index_tokens(text: str) -> None:
    tokens = WORD.findall(index_text(text))
    assert keyword_terms(query_terms(text)) == list(dict.fromkeys(tokens))
    for word in text.split():
        assert set(keyword_terms(query_terms(word))) <= set(tokens)


def test_marks_the_fold_keeps_separate_words_and_marks_start_no_word() -> None:
    # U+0947 (a vowel sign of class 0) and U+FE0F stay after folding: they separate.
    assert words("नमस्ते") == ["नमस्त"]
    assert words("a\ufe0fb") == ["a", "b"]
    # A mark folding away starts no word; one folding to a letter (U+0345 -> ι) does.
    assert words("\u0301ab \u0345x") == ["ab", "\u0345x"]
    assert keyword_terms(query_terms("b\u0345 \u0345x")) == ["bι", "ιx"]
    assert index_text("b\u0345 \u0345x").split() == ["bι", "ιx"]


def test_query_terms_keep_their_marks_lower_cased() -> None:
    assert query_terms("Ọlọ́run SPIN\u0308AL İzmir") == ["ọlọ́run", "spin\u0308al", "izmir"]
    # ... and a word folding to a function word is one: "Ｔｈｅ" is "the".
    assert query_terms("Ｔｈｅ lake") == ["lake"]


def test_oracle_gets_the_whole_word_with_its_marks() -> None:
    assert oracle_sql.text_query(query_terms("שָׁלוֹם Ọlọ́run")) == "{שָׁלוֹם} ACCUM {ọlọ́run}"


def test_an_unfolded_sqlite_index_is_searched_as_before() -> None:
    """Read-only files of schema versions 1 to 5 indexed the text as written: the
    query is cut at the marks there, as it always was."""
    for version in (1, FOLDED_VERSION - 1):
        assert _index_terms_of(["ذَهَبَ"], version) == ["ذ", "ه", "ب"]
    assert _index_terms_of(["ذَهَبَ"], FOLDED_VERSION) == ["ذهب"]


# -- the property: query tokens of a text == index tokens of that text -----------

_MARKS = (
    "\u0301\u0308\u0323\u0307\u0306\u0345\u034f"  # Latin/Greek/Cyrillic; U+034F is class 0
    "\u05b8\u05c1\u05bc\u064e\u0650\u0651\u0670"  # Hebrew niqqud, Arabic harakat
    "\u094d\u0947\u093e\u0902\u093c\u0bcd\u0bbe"  # Devanagari, Tamil: virama, vowel signs
    "\u0e31\u0e38\u0e48\u0eb4\u17d2\u1039\ufe0f\u20e3\u0f73"  # Thai, Lao, Khmer, ...
)
_LETTERS = (
    "abqzAZ09 .-'_ıİßǅéñΣσςήαяйשלוםذهبالنमसतकलகमกขຂខကọ½²ⅷ٣"
    "™🙂\u200d\u00a0\t"  # symbols and other separators
)
_CJK = "狗叫饼干カガｶﾞﾑはの가고양이ー々\u3099"


def _index_tokens(text: str) -> list[str]:
    return list(dict.fromkeys(WORD.findall(index_text(text))))


def _content(tokens: list[str]) -> list[str]:
    """``tokens`` without function words, as ``query_terms`` drops them (each word
    of these alphabets folds to at most one token that could be one)."""
    return [t for t in tokens if t not in FUNCTION_WORDS] or tokens


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=_LETTERS + _MARKS, max_size=40))
def test_query_tokens_are_the_index_tokens(text: str) -> None:
    for form in (text, unicodedata.normalize("NFC", text), unicodedata.normalize("NFD", text)):
        assert keyword_terms(query_terms(form)) == _content(_index_tokens(form))


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=_LETTERS + _MARKS + _CJK, max_size=40))
def test_with_cjk_the_query_searches_index_tokens(text: str) -> None:
    """CJK runs are searched by their pairs (or a lone character), all of them index
    tokens; the other words are the index's words, in its order (a function word
    stuck to a CJK character, "0々A", is part of a word and searched). The text is in
    NFC, as stored text is: the query is NFC-normalised, which can join a kana to a
    voicing mark that a mark of another script stood between."""
    text = unicodedata.normalize("NFC", text)
    index = _index_tokens(text)
    query = keyword_terms(query_terms(text))
    assert set(query) <= set(index)
    others = [t for t in WORD.findall(index_text(text)) if not has_cjk(t)]
    searched = [t for t in query if not has_cjk(t)]
    rest = iter(others)
    assert all(t in rest for t in searched)  # in the index's order
    assert set(others) - set(searched) <= FUNCTION_WORDS


# -- the other readers of query words: own-words list, participant names ---------


def test_the_own_words_list_counts_the_whole_word_not_its_letters() -> None:
    """HYBRID's own-words list compares query words with record contents: a word with
    harakat is one word, not three one-letter words found in any Arabic text."""
    contents = {"letters": "ب ه ذ", "word": "ذَهَبَ الوَلَدُ", "other": "المدرسة"}
    records: dict[Hashable, Record] = {
        key: Record(id=key, record_type="memory", content=text) for key, text in contents.items()
    }
    assert own_text_list("ذَهَبَ", list(contents), records) == ["word"]


def test_a_name_with_marks_is_named_by_its_spelling_with_or_without_them() -> None:
    assert named_speaker("What did Ọlọ́run say?", ["Olorun", "Ada"]) == {"Olorun"}
    assert named_speaker("מה אמר שָׁלוֹם?", ["שלום", "Ada"]) == {"שלום"}
    assert named_speaker("What did Olorun say?", ["Ọlọ́run", "Ada"]) == {"Ọlọ́run"}
