"""A filtered search sees every committed write, of this store object or another one
on the same storage, even when the same filter was searched just before (a back end
may keep a filter's candidates between searches: docs/filters.md#how-it-runs)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oam_core.filters import InvalidFilterError, matches, parse_filter
from tests.filter_strategies import FILTERS, METADATA

FLT = {"kind": "x"}


@pytest.fixture
def pair(backend: Any, make_store: Any) -> tuple[Any, Any]:
    """(writer, searcher): two store objects on one storage, or one object twice."""
    searcher = make_store(search_strategy="VECTOR")
    if not backend.shared_storage:
        return searcher, searcher
    return make_store(search_strategy="VECTOR"), searcher


def _found(store: Any, flt: Any, k: int = 50) -> set[str]:
    return {r.id for r, _ in store.search("pizza", k, metadata_filter=flt)}


def test_each_write_kind_reaches_a_repeated_filter(pair: tuple[Any, Any]) -> None:
    writer, searcher = pair
    writer.add(
        ["pizza a", "pizza b"], "memory", record_ids=["a", "b"], metadata=[FLT, {"kind": "y"}]
    )
    assert _found(searcher, FLT) == {"a"}
    assert _found(searcher, FLT) == {"a"}  # searched again: may be served from a cache
    writer.update("memory", "b", metadata={"kind": "x"})
    assert _found(searcher, FLT) == {"a", "b"}
    writer.add(["pizza c"], "memory", record_ids="c", metadata=FLT)
    assert _found(searcher, FLT) == {"a", "b", "c"}
    writer.update("memory", "a", metadata=None)
    assert _found(searcher, FLT) == {"b", "c"}
    assert _found(searcher, None) == {"a"}
    writer.delete("memory", "c")
    assert _found(searcher, FLT) == {"b"}
    searcher.update("memory", "b", metadata={"kind": "z"})  # the searcher's own write
    assert _found(searcher, FLT) == set()


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "update", "text", "delete", "search", "search"]),
        st.integers(0, 5),  # record number
        METADATA,
        st.booleans(),  # the write goes through the searcher itself
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(flt=FILTERS, ops=_OPS)
def test_repeated_filter_equals_a_model_over_random_writes(
    pair: tuple[Any, Any], flt: dict[str, Any], ops: list[tuple[str, int, Any, bool]]
) -> None:
    try:
        tree = parse_filter(flt)
    except InvalidFilterError:
        return  # deeper than the filter depth limit: rejected everywhere
    writer, searcher = pair
    writer.delete_records("memory", [r.id for r in writer.list("memory", limit=None)])
    model: dict[str, Any] = {}
    assert _found(searcher, flt) == set()
    for op, i, meta, own in ops:
        store, rid = (searcher if own else writer), f"r{i}"
        if op == "add" and rid not in model:
            store.add([f"pizza {i}"], "memory", record_ids=rid, metadata=meta)
            model[rid] = meta
        elif op == "update" and rid in model:
            store.update("memory", rid, metadata=meta)
            model[rid] = meta
        elif op == "text" and rid in model:  # new search rows for the record
            store.update("memory", rid, text=f"pizza {i} again")
        elif op == "delete" and rid in model:
            store.delete("memory", rid)
            del model[rid]
        want = {r for r, m in model.items() if matches(m, tree)}
        assert _found(searcher, flt) == want, (flt, ops)
