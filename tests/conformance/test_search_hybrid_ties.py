"""HYBRID search over exactly equally relevant records: they share one distance and
come back by record type then id, as under VECTOR and KEYWORD, whatever order they
were written in (docs/store.md#search-strategies; store/search.py, tied_ranks)."""

from __future__ import annotations

from typing import Any

import pytest


def rows(results: Any) -> list[tuple[str, str, float]]:
    return [(r.record_type, r.id, round(d, 6)) for r, d in results]


def six_copies(store: Any) -> None:
    """One text under six ids and types, written in an order that is neither type
    nor id order."""
    store.add(["same text"], "memory", record_ids="b")
    store.add(["same text"], "preference", record_ids="a")
    store.add(["same text"], "memory", record_ids="a2")
    store.add(["same text"], "fact", record_ids="z")
    store.add(["same text"], "message", record_ids="m", thread_ids="t", roles="user")
    store.add_user("u", "same text")


BY_TYPE_THEN_ID = [
    ("fact", "z", 0.0),
    ("memory", "a2", 0.0),
    ("memory", "b", 0.0),
    ("message", "m", 0.0),
    ("preference", "a", 0.0),
    ("user_profile", "u", 0.0),
]


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_identical_records_tie_at_one_distance_by_type_then_id(
    make_store: Any, strategy: str
) -> None:
    store = make_store(search_strategy=strategy)
    six_copies(store)
    assert rows(store.search("same text", 10)) == BY_TYPE_THEN_ID
    # A smaller k gives the first results of a larger one.
    for k in (1, 2, 3, 5):
        assert rows(store.search("same text", k)) == BY_TYPE_THEN_ID[:k]


def test_copies_written_in_any_order_get_the_same_results(make_store: Any) -> None:
    texts = ["We went hiking in the hills.", "Dinner was pasta.", "We went hiking in the hills."]
    forward = make_store(name="f.db", search_strategy="HYBRID")
    backward = make_store(name="b.db", search_strategy="HYBRID")
    forward.add(texts, "memory", record_ids=["h1", "p", "h2"])
    backward.add(texts[::-1], "memory", record_ids=["h2", "p", "h1"])
    got = rows(forward.search("hiking in the hills", 3))
    assert got == rows(backward.search("hiking in the hills", 3))
    assert [i for _, i, _ in got] == ["h1", "h2", "p"]
    assert got[0][2] == got[1][2] == 0.0 < got[2][2]


def speaker(name: str) -> dict[str, object]:
    return {"$message": {"name": name}}


def test_signal_lists_tie_copies_they_cannot_tell_apart(make_store: Any) -> None:
    """The query names a speaker (the speaker list applies) and holds words of the
    records (the own-text list applies): Ben's two copies stay tied, ahead of Ana's
    copy of the same text, which the speaker list tells apart."""
    store = make_store(search_strategy="HYBRID")
    text = "I painted a sunrise by the lake."
    store.add(
        [text, "Dinner was pasta.", text, text],
        "message",
        record_ids=["ben-2", "other", "ana-1", "ben-1"],
        thread_ids="t1",
        roles="user",
        metadata=[speaker("Ben"), speaker("Ana"), speaker("Ana"), speaker("Ben")],
    )
    got = rows(store.search("What did Ben paint by the lake?", 4))
    assert [i for _, i, _ in got[:3]] == ["ben-1", "ben-2", "ana-1"]
    assert got[0][2] == got[1][2] < got[2][2]
