"""Store conformance: the comparison and boolean operators of the metadata filter
language (docs/filters.md) on every back end, in ``list`` and
``search``, sync and async, and every back end held equal to the reference evaluator
``filters.matches`` on random metadata and random filters."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from oam_core.filters import InvalidFilterError, matches, parse_filter
from tests.filter_strategies import FILTERS, METADATA

DATA: dict[str, dict[str, Any] | None] = {
    "int1": {"n": 1, "s": "b", "tags": ["x"]},
    "float": {"n": 2.5, "s": "a"},
    "numstr": {"n": "3", "s": "é"},
    "bool": {"n": True, "s": None},
    "big": {"n": 10, "src": {"kind": "doc", "n": 4}},
    "none": None,
    "empty": {},
}
ALL = list(DATA)


def _but(*excluded: str) -> list[str]:
    return [r for r in ALL if r not in excluded]


CASES = [
    ("gt-number", {"n": {"$gt": 1}}, ["float", "big"]),
    ("gte-int-float", {"n": {"$gte": 2.5}}, ["float", "big"]),
    ("lt-range", {"n": {"$gt": 1, "$lt": 10}}, ["float"]),
    ("lte", {"n": {"$lte": 1}}, ["int1"]),
    ("gt-string-only-strings", {"n": {"$gt": "2"}}, ["numstr"]),
    ("string-by-code-point", {"s": {"$gt": "a"}}, ["int1", "numstr"]),
    ("uppercase-before-lowercase", {"s": {"$gte": "B"}}, ["int1", "float", "numstr"]),
    ("true-is-not-1-in-gte", {"n": {"$gte": 1, "$lte": 1}}, ["int1"]),
    ("eq", {"n": {"$eq": 1}}, ["int1"]),
    ("eq-true", {"n": {"$eq": True}}, ["bool"]),
    ("ne-matches-missing", {"n": {"$ne": 1}}, _but("int1")),
    ("in", {"n": {"$in": [1, "3", False]}}, ["int1", "numstr"]),
    ("in-null", {"s": {"$in": [None]}}, ["bool"]),
    ("nin-matches-missing", {"n": {"$nin": [1, 2.5]}}, _but("int1", "float")),
    ("exists", {"s": {"$exists": True}}, ["int1", "float", "numstr", "bool"]),
    ("exists-null-value", {"s": {"$exists": True, "$eq": None}}, ["bool"]),
    ("not-exists", {"src": {"$exists": False}}, _but("big")),
    ("eq-object-is-exact", {"src": {"$eq": {"kind": "doc"}}}, []),
    ("nested-compare", {"src": {"n": {"$gte": 4}}}, ["big"]),
    ("top-or", {"$or": [{"n": 1}, {"s": "a"}]}, ["int1", "float"]),
    ("top-and", {"$and": [{"n": {"$gt": 1}}, {"s": "a"}]}, ["float"]),
    ("top-not", {"$not": {"n": {"$gt": 1}}}, _but("float", "big")),
    ("fields-and-or", {"s": {"$exists": True}, "$or": [{"n": 1}, {"n": "3"}]}, ["int1", "numstr"]),
    ("field-or", {"n": {"$or": [{"$lt": 2}, {"$gt": 5}]}}, ["int1", "big"]),
    ("field-and", {"n": {"$and": [{"$gt": 1}, {"$ne": 10}]}}, ["float"]),
    ("or-of-nested", {"src": {"$or": [{"kind": "pdf"}, {"n": 4}]}}, ["big"]),
    (
        "array-contains-in-or",
        {"$or": [{"tags": {"$array_contains": "x"}}, {"n": 10}]},
        ["int1", "big"],
    ),
]


@pytest.fixture
def filtered(store: Any) -> Any:
    for rid, meta in DATA.items():
        store.add([f"pizza {rid}"], "memory", record_ids=rid, metadata=meta)
    return store


def _ids(records: list[Any]) -> list[str]:
    return [r.id for r in records]


@pytest.mark.parametrize(("flt", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_operators_in_list_and_search(filtered: Any, flt: Any, expected: list[str]) -> None:
    assert _ids(filtered.list("memory", metadata_filter=flt)) == expected
    found = filtered.search("pizza", 100, metadata_filter=flt)
    assert sorted(r.id for r, _ in found) == sorted(expected)
    # the reference evaluator agrees with the table
    tree = parse_filter(flt)
    assert [rid for rid, meta in DATA.items() if matches(meta, tree)] == expected


@pytest.mark.parametrize(
    ("flt", "expected"), [c[1:] for c in CASES[:8]], ids=[c[0] for c in CASES[:8]]
)
def test_operators_async_equal_sync(filtered: Any, flt: Any, expected: list[str]) -> None:
    async def both() -> tuple[list[Any], list[Any]]:
        listed = await filtered.list_async("memory", metadata_filter=flt)
        found = await filtered.search_async("pizza", 100, metadata_filter=flt)
        return listed, found

    listed, found = asyncio.run(both())
    assert _ids(listed) == expected
    assert sorted(r.id for r, _ in found) == sorted(expected)


@pytest.mark.parametrize("strategy", ["KEYWORD", "HYBRID"])
def test_operators_filter_before_the_top_k(make_store: Any, strategy: str) -> None:
    """Filters run before the cut on every strategy: the only match is found with k=1
    although nine better-ranked records fail the filter."""
    store = make_store(search_strategy=strategy)
    for i in range(9):
        store.add(["pizza pizza pizza"], "memory", record_ids=f"p{i}", metadata={"n": i})
    store.add(["pizza and salad"], "memory", record_ids="hit", metadata={"n": 50})
    found = store.search("pizza", 1, metadata_filter={"n": {"$gte": 10}})
    assert [r.id for r, _ in found] == ["hit"]


BAD = [
    ("in-scalar", {"n": {"$in": 1}}, r"\$in.*1"),
    ("gt-object", {"n": {"$gt": {"a": 1}}}, r"\$gt.*\{'a': 1\}"),
    ("gt-bool", {"n": {"$gt": True}}, r"\$gt.*True"),
    ("empty-and", {"$and": []}, r"\$and.*\[\]"),
    ("unknown", {"n": {"$like": "a%"}}, r"\$like"),
    ("exists-non-bool", {"n": {"$exists": "yes"}}, r"\$exists.*'yes'"),
]


@pytest.mark.parametrize(("flt", "match"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_operands_are_value_errors_before_any_query(
    filtered: Any, rejected: Any, flt: Any, match: str
) -> None:
    with rejected(filtered, match=match):
        filtered.list("memory", metadata_filter=flt)
    with rejected(filtered, match=match):
        filtered.search("pizza", 5, metadata_filter=flt)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(docs=st.lists(METADATA, min_size=1, max_size=6), flt=FILTERS)
def test_every_back_end_equals_the_reference_evaluator(
    store: Any, docs: list[Any], flt: dict[str, Any]
) -> None:
    try:
        tree = parse_filter(flt)
    except InvalidFilterError:
        assume(False)  # deeper than MAX_FILTER_DEPTH: a ValueError everywhere
        raise
    store.delete_records("memory", [r.id for r in store.list("memory", limit=None)])
    ids = store.add(
        ["x"] * len(docs), "memory", record_ids=[f"d{i}" for i in range(len(docs))], metadata=docs
    )
    want = [i for i, d in zip(ids, docs, strict=True) if matches(d, tree)]
    assert _ids(store.list("memory", limit=None, metadata_filter=flt)) == want, (docs, flt)
