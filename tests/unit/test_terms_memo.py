"""Term lists kept per text (``text.query_terms``) and per term list
(``sqlite.keyword._index_terms``), and each record's speaker and lower-cased
content (``fusion.record_facts``) equal the ones computed each time, for texts of
any script, punctuation only, very long ones (not kept), and a caller changing the
list it got changes nothing kept."""

from __future__ import annotations

import random
from typing import Any

from oam_core.apis.records import Record
from oam_core.apis.thread import MESSAGE_KEY, participant_name
from oam_core.store import fusion, text
from oam_core.store.sqlite import keyword
from oam_core.store.sqlite.schema import FOLDED_VERSION

ODD = [
    "What did Caroline say about the beach last week?",
    "Straße İstanbul café naïve",
    "東京で寿司を食べました。は の を",
    "?!... ---",
    "",
    "the a of",
    "Emoji 🎉 only 🎉",
    "x" * (text.TERMS_MEMO_CHARS + 1) + " tail words",
    "word " * 1000,
]


def test_kept_query_terms_equal_computed_ones() -> None:
    rng = random.Random(1)
    alphabet = "abcdeé İß東京は 🎉?.,'"
    texts = ODD + ["".join(rng.choices(alphabet, k=rng.randint(0, 40))) for _ in range(300)]
    for t in texts:
        for _ in range(2):  # computed, then kept
            assert text.query_terms(t) == text._query_terms(t)
    got = text.query_terms(ODD[0])
    got.append("changed")
    assert text.query_terms(ODD[0]) == text._query_terms(ODD[0])
    assert text._kept_query_terms.cache_info().hits > 0


def test_kept_index_terms_equal_computed_ones() -> None:
    lists = [text._query_terms(t) for t in ODD] + [["a"] * 70, ["Ünïcode", "東京", "x-y"]]
    for terms in lists:
        for version in (1, 2, FOLDED_VERSION):
            for _ in range(2):
                got = keyword._index_terms(terms, version)
                assert got == keyword._index_terms_of(terms, version)
            got.append("changed")
            assert keyword._index_terms(terms, version) == keyword._index_terms_of(terms, version)


def test_record_facts_equal_computed_ones_for_every_object(monkeypatch: Any) -> None:
    """Kept per record object: equal to ``participant_name`` and ``str.lower`` for
    objects made and dropped many times over (their ids reused), through the bound."""
    monkeypatch.setattr(fusion, "FACTS_MEMO_SIZE", 3)
    for i in range(500):
        meta = {MESSAGE_KEY: {"name": f" Speaker{i % 7} "}} if i % 2 else None
        record = Record(id=f"r{i}", record_type="memory", content=f"Text İ {i}", metadata=meta)
        for _ in range(2):
            assert fusion.record_facts(record) == (
                participant_name(record.metadata),
                f"text İ {i}".lower(),
                frozenset(text._query_terms(f"Text İ {i}")),
            )
    empty = Record(id="e", record_type="memory", content=None)
    assert fusion.record_facts(empty) == (None, "", frozenset())


def test_kept_advice_check_equals_the_computed_one() -> None:
    asks = [
        "Can you recommend a restaurant for me?",
        "What did Caroline recommend?",
        "What should I cook tonight? " * 200,  # longer than kept
    ]
    for query in ODD + asks:
        for _ in range(2):
            assert fusion.asks_for_advice(query) == fusion.asks_for_advice.__wrapped__(query)  # type: ignore[attr-defined]
    assert fusion.asks_for_advice(asks[0]) and not fusion.asks_for_advice(asks[1])
