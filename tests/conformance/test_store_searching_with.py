"""``store.searching_with(strategy)``: the searches inside the block rank by
``strategy``, the store's recorded one is unchanged, other threads and stores are not
affected (docs/store.md#search-strategies)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from oam_core import SearchStrategy


def test_the_block_ranks_by_its_strategy_and_records_nothing(make_store: Any) -> None:
    store = make_store(embedder=None, search_strategy="HYBRID")
    store.add(["my dog is called Biscuit", "Lisbon in March"], "memory", record_ids=["d", "l"])
    with store.searching_with(SearchStrategy.KEYWORD):
        assert [(r.id, d) for r, d in store.search("Biscuit", 5)] == [("d", 0.0)]
    assert store.search_strategy is SearchStrategy.HYBRID
    with pytest.raises(ValueError, match="embedder"):
        store.search("Biscuit", 5)  # HYBRID again: a text query needs an embedder


def test_other_threads_keep_the_store_strategy(make_store: Any) -> None:
    store = make_store(embedder=None, search_strategy="HYBRID")
    store.add(["my dog is called Biscuit"], "memory", record_ids=["d"])
    seen: list[BaseException | None] = []

    def other() -> None:
        try:
            store.search("Biscuit", 5)
            seen.append(None)
        except ValueError as exc:
            seen.append(exc)

    with store.searching_with("KEYWORD"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert [r.id for r, _ in store.search("Biscuit", 5)] == ["d"]
    assert len(seen) == 1 and isinstance(seen[0], ValueError)


def test_none_and_unknown_strategies(make_store: Any) -> None:
    store = make_store(search_strategy="KEYWORD")
    store.add(["my dog is called Biscuit"], "memory", record_ids=["d"])
    with store.searching_with(None):
        assert [r.id for r, _ in store.search("Biscuit", 5)] == ["d"]
    with pytest.raises(ValueError, match="FUZZY"), store.searching_with("FUZZY"):
        pass


def test_blocks_for_two_stores_nest(make_store: Any) -> None:
    a = make_store(name="a.db", embedder=None, search_strategy="HYBRID")
    b = make_store(name="b.db", embedder=None, search_strategy="HYBRID")
    for store in (a, b):
        store.add(["my dog is called Biscuit"], "memory", record_ids=["d"])
    with a.searching_with("KEYWORD"), b.searching_with("KEYWORD"):
        # a's block held before b's opened, and holds inside it
        assert [r.id for r, _ in a.search("Biscuit", 5)] == ["d"]
        assert [r.id for r, _ in b.search("Biscuit", 5)] == ["d"]
        with a.searching_with("HYBRID"):  # the innermost block of a store rules
            with pytest.raises(ValueError, match="embedder"):
                a.search("Biscuit", 5)
            assert [r.id for r, _ in b.search("Biscuit", 5)] == ["d"]
        assert [r.id for r, _ in a.search("Biscuit", 5)] == ["d"]
    with pytest.raises(ValueError, match="embedder"):
        a.search("Biscuit", 5)
