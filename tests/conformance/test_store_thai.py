"""Store conformance: what KEYWORD search finds in Thai, Lao, Khmer and Burmese (trial
37, C31 extended; docs/store.md#keyword-search). These scripts are written without
spaces between words and the index does not segment them (CJK runs are cut into
characters and pairs; these are not): accent removal drops some of their vowel and
tone marks and the word tokenizer cuts their runs where the other marks (class-0
vowel signs) stand, so the tokens are pieces of syllables. The query is folded and
cut the same way, so a piece is found by its own spelling: a word standing alone
between spaces, a run between two such signs, a whole run. A word inside a sentence
is not found. Pinned on every back end, so a change (a word segmenter, say) is seen
here and documented.
"""

from __future__ import annotations

import numpy as np
import pytest

THAI = {
    "th-sentence": "ฉันชอบกินข้าวผัดที่กรุงเทพมหานคร",
    "th-weather": "วันนี้อากาศดีมาก ฉันไปเดินเล่นที่สวนสาธารณะ",
    "th-spaced": "ข้าวผัด อร่อย",
}
OTHERS = {
    "lo": "ຂ້ອຍມັກກິນເຂົ້າໜຽວ",  # Lao: "I like to eat sticky rice"
    "km": "ខ្ញុំចូលចិត្តញ៉ាំបាយ",  # Khmer: "I like to eat rice"
    "my": "ကျွန်တော်ထမင်းစားချင်တယ်",  # Burmese: "I want to eat rice"
}


@pytest.fixture
def words(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    texts = {**THAI, **OTHERS}
    store.add(list(texts.values()), "memory", record_ids=list(texts))
    return store


def found(store, query):
    return [r.id for r, _ in store.search(query, 5)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ข้าวผัด", ["th-spaced"]),  # alone between spaces: found, there only
        # alone too; its tone mark folds away in the query as in the index
        ("อร่อย", ["th-spaced"]),
        ("กรุงเทพ", []),  # inside a sentence: not found
        # the run after the last vowel sign of class 0 (ี of ที่): a piece of the index
        ("กรุงเทพมหานคร", ["th-sentence"]),
        ("อากาศ", []),
        ("ชอบ", []),
        ("ເຂົ້າ", []),  # Lao
        ("ញ៉ាំ", []),  # Khmer
        # A query can match another text sharing one of its pieces: "ดี" (good) is
        # in th-weather ("ดีมาก"), but what matches is the piece "ด" of th-spaced.
        ("ดี", ["th-spaced"]),
    ],
)
def test_keyword_finds_pieces_not_words_inside_a_sentence(words, query, expected):
    assert found(words, query) == expected


@pytest.mark.parametrize("record_id", [*THAI, *OTHERS])
def test_keyword_finds_a_whole_run(words, record_id):
    text = {**THAI, **OTHERS}[record_id]
    assert found(words, text.split(" ")[0])[0] == record_id


@pytest.mark.slow
def test_the_local_embedder_cannot_tell_such_sentences_apart():
    """Why the docs send these languages to a multilingual model: the local model's
    English vocabulary reads them as unknown tokens, so different sentences (of one
    run each) get one and the same vector."""
    from oam_core.embedders.local import LocalEmbedder

    vectors = LocalEmbedder().embed(
        [THAI["th-sentence"], OTHERS["lo"], OTHERS["km"], "I like fried rice"]
    )
    sims = np.asarray(vectors) @ np.asarray(vectors).T
    assert sims[0, 1] == pytest.approx(1.0, abs=1e-4)
    assert sims[0, 2] == pytest.approx(1.0, abs=1e-4)
    assert sims[0, 3] < 0.5
