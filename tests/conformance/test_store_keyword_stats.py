"""Store conformance: KEYWORD's corpus statistics follow every write.

Back ends keep term statistics between searches (SQLite until the file changes,
PostgreSQL until ``chunk_stats`` moves). A term that becomes common (in more than
half of the rows) stops being ranked; a search after a write, through the same store
object or another one on the same storage, ranks as a store opened afterwards does.
"""

from __future__ import annotations

import pytest


def _grow_zebra(store):
    store.add(
        [f"zebra {i}" for i in range(6)] + ["zebra stripes"],
        "memory",
        record_ids=[f"z{i}" for i in range(6)] + ["s"],
    )


def _ids(results):
    return [r.id for r, _ in results]


def test_own_writes_move_the_statistics(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["zebra crossing", "lion", "tiger"], "memory", record_ids=["z", "l", "t"])
    assert _ids(store.search("zebra stripes", 3)) == ["z"]
    _grow_zebra(store)
    # zebra is now in 8 of 10 rows: only "stripes" ranks, zebra rows follow unranked.
    results = store.search("zebra stripes", 3)
    assert results[0][0].id == "s" and results[0][1] == 0.0
    assert [d for _, d in results[1:]] == [1.0, 1.0]
    store.delete("memory", "s")
    assert _ids(store.search("stripes", 3)) == []


def test_another_store_objects_writes_move_the_statistics(make_store, backend):
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage is private to one store object")
    reader = make_store(search_strategy="KEYWORD", embedder=None)
    writer = make_store(search_strategy="KEYWORD", embedder=None)
    writer.add(["zebra crossing", "lion", "tiger"], "memory", record_ids=["z", "l", "t"])
    assert _ids(reader.search("zebra", 5)) == ["z"]
    _grow_zebra(writer)
    fresh = make_store(search_strategy="KEYWORD", embedder=None)
    assert reader.search("zebra stripes", 3) == fresh.search("zebra stripes", 3)
    assert reader.search("zebra stripes", 3)[0][0].id == "s"


@pytest.mark.parametrize("scoped", [False, True])
def test_rows_matching_only_common_terms_follow_in_insertion_order(make_store, scoped):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    for i in range(8):  # "note" is in every row: common
        store.add([f"note {i}"], "memory", record_ids=f"n{i}", user_ids=f"u{i % 2}")
    store.add(["note about stripes"], "memory", record_ids="s", user_ids="u1")
    scope = {"user_id": "u1", "exact_user_match": True} if scoped else {}
    results = store.search("note stripes", 4, **scope)
    expected = ["s", "n1", "n3", "n5"] if scoped else ["s", "n0", "n1", "n2"]
    assert sorted(_ids(results)[1:]) == sorted(expected[1:])  # ties: by type, then id
    assert _ids(results)[0] == "s" and [d for _, d in results[1:]] == [1.0, 1.0, 1.0]
