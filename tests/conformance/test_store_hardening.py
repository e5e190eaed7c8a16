"""Inputs found by a break-it review: deep nesting, the reserved metadata key, bad
text and retention settings. Every rejected call leaves the store unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from _fixtures import add_derived

from oam_core.apis.batch import PendingRecordBatch
from oam_core.store.options import MemoryRetentionConfig


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"n": value}
    return value


def test_deep_metadata_is_a_value_error_not_a_recursion_error(store, rejected):
    with rejected(store, match="nested deeper"):
        store.add(["m"], "memory", metadata=_nested(5000))


@pytest.mark.parametrize("method", ["list", "search"])
def test_deep_filter_is_a_value_error(store, method):
    store.add(["pizza"], "memory", record_ids="m1")
    call = store.list if method == "list" else store.search
    args = ("memory",) if method == "list" else ("pizza",)
    with pytest.raises(ValueError, match="nested deeper"):
        call(*args, metadata_filter=_nested(5000))


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_filters_up_to_the_documented_depth_work_everywhere(make_store, strategy):
    from oam_core.filters import MAX_FILTER_DEPTH

    store = make_store(search_strategy=strategy)
    deepest = _nested(MAX_FILTER_DEPTH - 1)  # MAX_FILTER_DEPTH levels of fields
    store.add(["pizza"], "memory", record_ids="m1", metadata=_nested(40))
    store.add(["pizza"], "memory", record_ids="m2", metadata=deepest)
    assert [r.id for r in store.list("memory", metadata_filter=deepest)] == ["m2"]
    assert [r.id for r, _ in store.search("pizza", 5, metadata_filter=deepest)] == ["m2"]
    with pytest.raises(ValueError, match=f"at most {MAX_FILTER_DEPTH}"):
        store.list("memory", metadata_filter=_nested(MAX_FILTER_DEPTH))


@pytest.mark.parametrize("value", ["str", {}, {"source_message_ids": ["forged"]}])
def test_reserved_key_is_written_only_by_the_library(store, rejected, value):
    """Issue 14 (9): ``$agent_memory`` is the library's; callers cannot set it through
    ``metadata=`` on any write path."""
    batch = PendingRecordBatch(texts=["m"], record_type="memory", metadata={"$agent_memory": value})
    with rejected(store, match=r"metadata\[0\]\['\$agent_memory'\] is reserved"):
        store.add(["m"], "memory", metadata={"$agent_memory": value})
    with rejected(store, match=r"\$agent_memory"):
        store.add_batches([batch])
    with rejected(store, match=r"\$agent_memory"):
        store.upsert(["m"], "memory", record_ids="m1", metadata={"$agent_memory": value})
    with rejected(store, match=r"\$agent_memory"):
        store.add(
            ["hi"], "message", thread_ids="t", roles="user", metadata=[{"$agent_memory": value}]
        )


def test_reserved_key_survives_metadata_updates(store):
    add_derived(store, "m", "memory", "y", {"source_message_ids": ["a"]}, thread_id="t")
    assert store.update("memory", "y", metadata={"k": 2}) == 1
    assert store.get("memory", "y").metadata == {
        "k": 2,
        "$agent_memory": {"source_message_ids": ["a"]},
    }
    assert store.update("memory", "y", metadata=None) == 1
    assert store.get("memory", "y").metadata == {"$agent_memory": {"source_message_ids": ["a"]}}


def test_lone_surrogate_in_metadata_is_rejected(store, rejected):
    with rejected(store, match="not valid Unicode"):
        store.add(["m"], "memory", metadata={"k": "\ud800"})


def test_retention_default_above_max_is_rejected():
    with pytest.raises(ValueError, match="default_ttl_days=40 exceeds max_ttl_days=30"):
        MemoryRetentionConfig(default_ttl_days=40, max_ttl_days=30)
    assert MemoryRetentionConfig(default_ttl_days=30, max_ttl_days=30).max_ttl_days == 30


def test_keyword_ranks_common_terms_when_nothing_rarer_matches(make_store):
    """A term in most rows is still ranked by BM25 when no rarer query term is found
    (unknown words must not push it to the unranked tail), and a query of unknown
    words finds nothing."""
    store = make_store(search_strategy="KEYWORD")
    store.add(
        [
            "ben ben ben",
            "ben said something long and winding about many other things",
            "ben",
            "ana",
        ],
        "memory",
        record_ids=["b3", "long", "b1", "ana"],
    )
    hits = [r.id for r, _ in store.search("what did ben say zzzz", 4)]
    assert hits[:1] == ["b3"] and set(hits) == {"b3", "b1", "long"}
    assert hits.index("long") == 2
    assert store.search("zzzz qqqq", 4) == []


def test_keyword_returns_rows_matching_only_common_terms_after_ranked_ones(make_store):
    store = make_store(search_strategy="KEYWORD")
    store.add(
        ["fox one", "fox two", "fox three", "quick fox", "slow turtle"],
        "memory",
        record_ids=["f1", "f2", "f3", "q", "t"],
    )
    hits = [r.id for r, _ in store.search("quick fox", 10)]
    assert hits[0] == "q" and set(hits) == {"q", "f1", "f2", "f3"}
