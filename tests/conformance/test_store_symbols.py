"""Store conformance: emoji and other symbols separate words in keyword search on
every back end (docs/store.md#keyword-search).

SQLite's FTS5 tokenizer knows Unicode 6.1 and would count later characters as word
characters: "Bob🙂" was the one token ``bob🙂`` there, so "Bob" found it on PostgreSQL
only. Each query below lists every record it must find, and no other, through
KEYWORD and HYBRID; the stored text is returned as it was written.
"""

from __future__ import annotations

import pytest
from _wordstores import WholeTextVector, found

TEXTS = {
    "bob": "See you Bob🙂 likes tea",
    "thinking": "Hmm🤔maybe tomorrow",
    "family": "Picnic\U0001f468\u200d\U0001f469\u200d\U0001f467with grandparents",
    "tone": "Great👍🏽teamwork",
    "keycap": "Locker7️⃣skates",
    "ruble": "Rent 500₽ monthly",
    "isolate": "\u2068Zoltan\u2069 replied",
    "super": "Plot x² against time",
    "melting": "🫠Exhausted",
    "laugh": "Rolling🤣on the floor",
    "love": "Grandma🥰",
    "brand": "I love Acme™ shoes",
    "fever": "Fever 39℃tonight",
    "rice": "Bought 5㎏ rice",
}

CASES = [
    # (query, every record it finds)
    ("Bob", {"bob"}),
    ("bob", {"bob"}),
    ("Bob🙂", {"bob"}),
    ("maybe", {"thinking"}),
    ("hmm", {"thinking"}),
    ("grandparents", {"family"}),
    ("teamwork", {"tone"}),
    ("skates", {"keycap"}),
    ("500", {"ruble"}),
    ("Zoltan", {"isolate"}),
    ("x²", {"super"}),
    ("x2", {"super"}),
    ("exhausted", {"melting"}),
    ("rolling", {"laugh"}),
    ("grandma", {"love"}),
    # A symbol whose compatibility form holds letters (™ -> TM) separates words too.
    ("Acme", {"brand"}),
    ("Acme™", {"brand"}),
    ("tm", set()),
    ("tonight", {"fever"}),
    ("rice", {"rice"}),
    ("kg", set()),
    ("🙂🤔", set()),  # no letter or digit: no terms
]


@pytest.fixture
def keyword(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(list(TEXTS.values()), "memory", record_ids=list(TEXTS))
    return store


FILLER = [f"filler note {i}" for i in range(100)]
"""Records no query below matches, their ids after those of ``TEXTS``: a record of
``TEXTS`` comes first only through the keyword list."""


@pytest.fixture
def hybrid(make_store):
    store = make_store(search_strategy="HYBRID", embedder=WholeTextVector(64))
    store.add(FILLER, "memory", record_ids=[f"zz-{i:03}" for i in range(len(FILLER))])
    store.add(list(TEXTS.values()), "memory", record_ids=list(TEXTS))
    return store


@pytest.mark.parametrize(("query", "expected"), [c for c in CASES if c[1]])
def test_hybrid_finds_words_next_to_symbols_through_its_keyword_list(hybrid, query, expected):
    assert set(found(hybrid.search(query, 1))) == expected


def test_the_stored_text_keeps_its_symbols(keyword):
    assert {r.id: r.content for r, _ in keyword.search("Bob teamwork", 5)} == {
        "bob": TEXTS["bob"],
        "tone": TEXTS["tone"],
    }


def test_updates_and_deletes_of_rows_with_symbols_leave_no_stale_words(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["Bob🙂 likes tea", "Hmm🤔maybe"], "memory", record_ids=["a", "b"])
    store.update("memory", "a", text="Ada🥰 likes coffee")
    assert found(store.search("bob", 5)) == []
    assert found(store.search("Ada", 5)) == ["a"]
    store.delete("memory", "b")
    assert found(store.search("maybe hmm", 5)) == []
    store.add(["🤔Maybe"], "memory", record_ids="c")
    assert found(store.search("maybe", 5)) == ["c"]
