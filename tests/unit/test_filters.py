"""Metadata filter language: parser errors, reference evaluator, and the SQLite
compilation held equal to the evaluator on random rows (SPEC §4)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oam_core.store.filters import InvalidFilterError, matches, parse_filter
from oam_core.store.sqlite_filter import SQLiteFilterCompiler

ROWS: list[dict[str, Any] | None] = [
    {"tags": ["a", "b"]},
    {"tags": ["a"]},
    {"tags": ["b", "a"]},
    {"src": {"kind": "doc", "n": 1}},
    {"flag": True},
    {"flag": 1},
    {"flag": 1.0},
    None,
    {"k\"'; DROP TABLE r; --": "v'); --"},
    {"tags": "a"},
    {},
]

CASES: list[tuple[dict[str, Any], list[int]]] = [
    ({"tags": ["a"]}, [1]),  # C11: a list value means exact list equality
    ({"tags": {"$array_contains": "a"}}, [0, 1, 2]),  # C11: membership
    ({"tags": {"$array_contains": ["a", "b"]}}, [0, 2]),
    ({"tags": {"$array_contains_any": ["b", "z"]}}, [0, 2]),
    ({"tags": ["b", "a"]}, [2]),
    ({"src": {"kind": "doc"}}, [3]),  # C10: nested subset match
    ({"src": {"kind": "pdf"}}, []),
    ({"src": {}}, [3]),
    ({"flag": True}, [4]),  # True never equals 1
    ({"flag": 1}, [5, 6]),  # 1 equals 1.0
    ({"flag": {"$not": 1}}, [0, 1, 2, 3, 4, 7, 8, 9, 10]),
    ({"tags": {"$not": {"$array_contains": "b"}}}, [1, 3, 4, 5, 6, 7, 8, 9, 10]),
    ({"k\"'; DROP TABLE r; --": "v'); --"}, [8]),
    ({"tags": {"$array_contains": "a", "$not": {"$array_contains": "b"}}}, [1]),
    ({}, list(range(len(ROWS)))),
]


@pytest.fixture(scope="module")
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (id INTEGER, m TEXT)")
    for i, m in enumerate(ROWS):
        conn.execute("INSERT INTO r VALUES (?, ?)", (i, None if m is None else json.dumps(m)))
    return conn


def sql_ids(conn: sqlite3.Connection, flt: dict[str, Any]) -> list[int]:
    comp = SQLiteFilterCompiler()
    where = comp.compile("r.m", parse_filter(flt))
    return [r[0] for r in conn.execute(f"SELECT id FROM r WHERE {where} ORDER BY id", comp.params)]


@pytest.mark.parametrize(("flt", "expected"), CASES)
def test_case_table_python(flt: dict[str, Any], expected: list[int]) -> None:
    tree = parse_filter(flt)
    assert [i for i, m in enumerate(ROWS) if matches(m, tree)] == expected


@pytest.mark.parametrize(("flt", "expected"), CASES)
def test_case_table_sqlite(
    db: sqlite3.Connection, flt: dict[str, Any], expected: list[int]
) -> None:
    assert sql_ids(db, flt) == expected


def test_keys_and_values_never_reach_sql_text() -> None:
    comp = SQLiteFilterCompiler()
    sql = comp.compile("r.m", parse_filter({"x'; DROP TABLE r; --": {"$not": "y'--"}}))
    assert "DROP" not in sql and "y'--" not in sql
    assert comp.params == ["x'; DROP TABLE r; --", "y'--"]


@pytest.mark.parametrize(
    "bad",
    [
        "tags",
        ["tags"],
        {"$array_contains": "a"},
        {"tags": {"$contains": "a"}},
        {"tags": {"$array_contains": "a", "plain": 1}},
        {"tags": {"$array_contains": []}},
        {"tags": {"$array_contains_any": []}},
        {"tags": {"$array_contains_any": "a"}},
        {"tags": {"$array_contains": {"x": 1}}},
        {"x": float("nan")},
        {"x": {1, 2}},
        {1: "a"},
        {"x": object()},
    ],
)
def test_invalid_filters_raise_value_error(bad: Any) -> None:
    with pytest.raises(ValueError):
        parse_filter(bad)
    assert issubclass(InvalidFilterError, ValueError)


# -- property: the SQLite compilation agrees with the reference evaluator ----------

KEYS = st.sampled_from(["a", "b", "c.d", "t'ag"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([1.0, 0.5]),
    st.sampled_from(["x", "y", ""]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=6,
)
METADATA = st.one_of(st.none(), st.dictionaries(KEYS, JSON, max_size=4))


def _operator() -> st.SearchStrategy[Any]:
    contains = st.one_of(SCALARS, st.lists(SCALARS, min_size=1, max_size=3)).map(
        lambda v: {"$array_contains": v}
    )
    contains_any = st.lists(SCALARS, min_size=1, max_size=3).map(
        lambda v: {"$array_contains_any": v}
    )
    positive = st.one_of(contains, contains_any, JSON.filter(lambda v: not isinstance(v, dict)))
    return st.one_of(positive, positive.map(lambda v: {"$not": v}))


FIELD_VALUE = st.recursive(
    st.one_of(_operator(), JSON.filter(lambda v: not isinstance(v, dict))),
    lambda inner: st.dictionaries(KEYS, inner, max_size=2),
    max_leaves=4,
)
FILTERS = st.dictionaries(KEYS, FIELD_VALUE, max_size=3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(METADATA, min_size=1, max_size=8), flt=FILTERS)
def test_sqlite_compilation_equals_reference(rows: list[Any], flt: dict[str, Any]) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (id INTEGER, m TEXT)")
    for i, m in enumerate(rows):
        conn.execute("INSERT INTO r VALUES (?, ?)", (i, None if m is None else json.dumps(m)))
    tree = parse_filter(flt)
    expected = [i for i, m in enumerate(rows) if matches(m, tree)]
    assert sql_ids(conn, flt) == expected
    conn.close()
