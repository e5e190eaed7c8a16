"""Store conformance: keyword search folds case and accents alike on every back end
(docs/store.md#keyword-search, B57).

The SQLite and PostgreSQL stores index and search the folded form of the text
(``store/text.fold``: Unicode case folding, so ß matches ss and İ matches i, and
accent removal, so Αθήνα matches αθηνα and café matches cafe); CJK text keeps its
character and pair tokens unchanged (a voicing mark is not an accent). Each query
below lists every record it must find, and no other, through KEYWORD and HYBRID; the
stored text is returned as it was written.
"""

from __future__ import annotations

import pytest

from oam_core.embedders.hashing import HashingEmbedder

TEXTS = {
    "tr-dotted": "We flew to İstanbul in May.",
    "tr-upper": "ISTANBUL AIRPORT was busy.",
    "de-eszett": "Die Straße ist lang.",
    "de-ss": "STRASSE GESPERRT",
    "el-tonos": "Η Αθήνα είναι όμορφη.",
    "el-upper": "ΑΘΗΝΑ 2004",
    "fr": "Un café à Montréal.",
    "fr-plain": "CAFE MENU",
    "es": "El niño comió piñata en Logroño.",
    "zh": "我的狗叫饼干。",
    "ja": "コーヒーとガム",
    "en": "Plain lake sunrise.",
}

CASES = [
    # (query, every record it finds)
    ("İstanbul", {"tr-dotted", "tr-upper"}),
    ("istanbul", {"tr-dotted", "tr-upper"}),
    ("ISTANBUL", {"tr-dotted", "tr-upper"}),
    ("Straße", {"de-eszett", "de-ss"}),
    ("STRASSE", {"de-eszett", "de-ss"}),
    ("strasse", {"de-eszett", "de-ss"}),
    ("Αθήνα", {"el-tonos", "el-upper"}),
    ("αθηνα", {"el-tonos", "el-upper"}),
    ("ΑΘΗΝΑ", {"el-tonos", "el-upper"}),
    ("όμορφη", {"el-tonos"}),
    ("café", {"fr", "fr-plain"}),
    ("CAFE", {"fr", "fr-plain"}),
    ("montreal", {"fr"}),
    ("MONTRÉAL", {"fr"}),
    ("nino", {"es"}),
    ("NIÑO", {"es"}),
    ("pinata logrono", {"es"}),
    ("饼干", {"zh"}),
    ("ガム", {"ja"}),
    ("ｶﾞﾑ", {"ja"}),
    ("カム", set()),  # ガ keeps its voicing mark: カム is another word
    ("LAKE", {"en"}),
]


def found(results):
    return [r.id for r, _ in results]


@pytest.fixture
def keyword(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(list(TEXTS.values()), "memory", record_ids=list(TEXTS))
    return store


@pytest.fixture
def hybrid(make_store):
    store = make_store(search_strategy="HYBRID", embedder=HashingEmbedder(64))
    store.add(list(TEXTS.values()), "memory", record_ids=list(TEXTS))
    return store


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_b57_keyword_search_folds_case_and_accents(keyword, query, expected):
    results = keyword.search(query, 20)
    assert set(found(results)) == expected
    assert len(results) == len(expected)


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_b57_hybrid_ranks_the_folded_keyword_matches_first(hybrid, query, expected):
    # The vector half ranks every record; the keyword matches lead the fusion.
    results = found(hybrid.search(query, len(TEXTS)))
    assert set(results[: len(expected)]) == expected


def test_b57_the_stored_text_stays_as_written(keyword):
    results = keyword.search("STRASSE ISTANBUL", 10)
    assert {r.id: r.content for r, _ in results} == {
        rid: TEXTS[rid] for rid in ("tr-dotted", "tr-upper", "de-eszett", "de-ss")
    }
    for rid, text in TEXTS.items():
        assert keyword.get("memory", rid).content == text


def test_b57_updates_and_deletes_of_folded_rows_leave_no_stale_words(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["Die Straße ist lang.", "Η Αθήνα"], "memory", record_ids=["a", "b"])
    store.update("memory", "a", text="Der Weg nach İzmir.")
    assert found(store.search("strasse", 5)) == []
    assert found(store.search("IZMIR", 5)) == ["a"]
    store.delete("memory", "b")
    assert found(store.search("αθηνα", 5)) == []
    store.add(["ΑΘΗΝΑ"], "memory", record_ids="c")
    assert found(store.search("Αθήνα", 5)) == ["c"]
