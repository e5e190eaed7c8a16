"""Store conformance: a word holding combining marks is found by its own spelling
(docs/store.md#keyword-search, docs/failure-modes.md#c31; trial 48, f02).

The index folds a row's text (dropping every mark of non-zero combining class) and
then cuts it into words; the query is folded and cut the same way, so Arabic with
harakat, Hebrew with niqqud, Yoruba tones, a Latin n with a diaeresis (no precomposed
letter) and Devanagari with a virama find the stored word spelled exactly the same,
under KEYWORD and through HYBRID's keyword list, on every back end.
"""

from __future__ import annotations

import pytest
from _wordstores import WholeTextVector, found

TEXTS = {
    "ar": "ذَهَبَ الوَلَدُ إلى المدرسة",  # Arabic with harakat
    "he": "שָׁלוֹם עוֹלָם",  # Hebrew with niqqud
    "hi": "नमस्ते दुनिया",  # Hindi: a virama inside namaste
    "hi2": "मुझे स्कूल पसंद है",  # Hindi: "school"
    "la": "Spın̈al Tap played loud",  # n + U+0308: no precomposed letter
    "yo": "Ọlọ́run dára",  # Yoruba: o with a dot below, then an acute
    "en": "Tap water and loud music",
}
EXACT = [
    ("ذَهَبَ", "ar"),
    ("שָׁלוֹם", "he"),
    ("नमस्ते", "hi"),
    ("स्कूल", "hi2"),
    ("Spın̈al", "la"),
    ("Ọlọ́run", "yo"),
]


@pytest.fixture
def keyword(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(list(TEXTS.values()), "memory", record_ids=list(TEXTS))
    return store


@pytest.mark.parametrize(("query", "record_id"), EXACT)
def test_keyword_finds_a_word_with_marks_by_its_own_spelling(keyword, query, record_id):
    assert query in TEXTS[record_id]
    assert found(keyword.search(query, 5)) == [record_id]


@pytest.mark.parametrize(
    ("query", "record_id"),
    [("ذهب", "ar"), ("الولد", "ar"), ("שלום", "he"), ("עולם", "he"), ("OLORUN", "yo")],
)
def test_keyword_finds_it_without_the_marks_too(keyword, query, record_id):
    assert found(keyword.search(query, 5)) == [record_id]


def test_a_query_of_several_such_words_ranks_the_record_holding_all_first(keyword):
    assert found(keyword.search("שָׁלוֹם עוֹלָם ذَهَبَ", 5)) == ["he", "ar"]


FILLER = [f"filler note {i}" for i in range(60)]
"""Records no query below matches: a record of ``TEXTS`` comes first only through the
keyword list."""


@pytest.mark.parametrize(("query", "record_id"), EXACT)
def test_hybrid_finds_it_through_its_keyword_list(make_store, query, record_id):
    store = make_store(search_strategy="HYBRID", embedder=WholeTextVector(64))
    store.add(FILLER, "memory", record_ids=[f"zz-{i:03}" for i in range(len(FILLER))])
    store.add(list(TEXTS.values()), "memory", record_ids=list(TEXTS))
    assert found(store.search(query, 1)) == [record_id]
