"""Metadata filter language: parser errors, reference evaluator, and the SQLite
compilation held equal to the evaluator on random rows and filters (see
docs/filters.md)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from oam_core.filters import Field, In, InvalidFilterError, Nested, matches, parse_filter
from oam_core.store.sqlite.filter import SQLiteFilterCompiler
from tests.filter_strategies import FILTERS, METADATA

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
    {"n": 1, "s": "b", "tags": ["x"]},  # 11
    {"n": 2.5, "s": "a"},  # 12
    {"n": "3", "s": "é"},  # 13: a string that looks like a number
    {"n": True, "s": None},  # 14: a boolean is not a number
    {"n": 10, "src": {"kind": "doc", "n": 4}},  # 15
]

CASES: list[tuple[dict[str, Any], list[int]]] = [
    ({"tags": ["a"]}, [1]),  # C11: a list value means exact list equality
    ({"tags": {"$array_contains": "a"}}, [0, 1, 2]),  # C11: membership
    ({"tags": {"$array_contains": ["a", "b"]}}, [0, 2]),
    ({"tags": {"$array_contains_any": ["b", "z"]}}, [0, 2]),
    ({"tags": ["b", "a"]}, [2]),
    ({"src": {"kind": "doc"}}, [3, 15]),  # C10: nested subset match
    ({"src": {"kind": "pdf"}}, []),
    ({"src": {}}, [3, 15]),
    ({"flag": True}, [4]),  # True never equals 1
    ({"flag": 1}, [5, 6]),  # 1 equals 1.0
    ({"flag": {"$not": 1}}, [0, 1, 2, 3, 4, *range(7, 16)]),
    ({"tags": {"$not": {"$array_contains": "b"}}}, [1, *range(3, 16)]),
    ({"k\"'; DROP TABLE r; --": "v'); --"}, [8]),
    ({"tags": {"$array_contains": "a", "$not": {"$array_contains": "b"}}}, [1]),
    ({}, list(range(len(ROWS)))),
    # comparisons: numbers with numbers, strings with strings (code points)
    ({"n": {"$gt": 1}}, [12, 15]),
    ({"n": {"$gte": 1}}, [11, 12, 15]),
    ({"n": {"$lt": 3}}, [11, 12]),
    ({"n": {"$lte": 2.5}}, [11, 12]),
    ({"n": {"$gt": 1, "$lt": 10}}, [12]),
    ({"n": {"$gt": "2"}}, [13]),
    ({"s": {"$gt": "a"}}, [11, 13]),  # "é" (U+00E9) > "b" > "a"
    ({"s": {"$lt": "b"}}, [12]),
    ({"s": {"$gte": "B"}}, [11, 12, 13]),  # "B" < "a" by code point
    ({"flag": {"$gte": 1}}, [5, 6]),  # True is not >= 1
    # equality operators
    ({"flag": {"$eq": 1}}, [5, 6]),
    ({"flag": {"$eq": True}}, [4]),
    ({"n": {"$ne": 1}}, [i for i in range(16) if i != 11]),  # a missing n is not equal
    ({"n": {"$in": [1, "3"]}}, [11, 13]),
    ({"n": {"$in": [True]}}, [14]),
    ({"n": {"$nin": [1, 2.5]}}, [i for i in range(16) if i not in (11, 12)]),
    ({"s": {"$in": [None]}}, [14]),
    ({"s": {"$exists": True}}, [11, 12, 13, 14]),
    ({"s": {"$exists": False}}, [i for i in range(16) if i not in (11, 12, 13, 14)]),
    ({"src": {"$eq": {"kind": "doc"}}}, []),  # $eq on an object is exact equality
    ({"src": {"$eq": {"kind": "doc", "n": 1}}}, [3]),
    ({"src": {"n": {"$gte": 1}}}, [3, 15]),
    # boolean combinators, top level and at a field
    ({"$or": [{"n": 1}, {"s": "a"}]}, [11, 12]),
    ({"$and": [{"n": {"$gt": 1}}, {"s": "a"}]}, [12]),
    ({"$not": {"n": {"$gt": 1}}}, [i for i in range(16) if i not in (12, 15)]),
    ({"s": {"$exists": True}, "$or": [{"n": 1}, {"n": "3"}]}, [11, 13]),
    ({"n": {"$or": [{"$lt": 2}, {"$gt": 5}]}}, [11, 15]),
    ({"n": {"$and": [{"$gt": 1}, {"$ne": 10}]}}, [12]),
    ({"src": {"$or": [{"kind": "doc", "n": 1}, {"n": 4}]}}, [3, 15]),
    ({"$or": [{}, {"n": 1}]}, list(range(16))),  # {} inside $or: always true
    # a string spelling an array or object as SQLite writes it equals no array/object
    ({"tags": '["a"]'}, []),
    ({"src": '{"kind":"doc","n":1}'}, []),
    ({"tags": {"$in": ['["a"]', "a"]}}, [9]),
    # the JSON text holds "é" escaped (json.dumps): no substring shortcut for it
    ({"s": "é"}, [13]),
    ({"s": {"$in": ["é", "zz"]}}, [13]),
    ({"s": {"$not": {"$in": ["é", "b"]}}}, [i for i in range(16) if i not in (11, 13)]),
]


@pytest.fixture(scope="module")
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (id INTEGER, m TEXT)")
    for i, m in enumerate(ROWS):
        conn.execute("INSERT INTO r VALUES (?, ?)", (i, None if m is None else json.dumps(m)))
    return conn


def sql_ids(
    conn: sqlite3.Connection, flt: dict[str, Any], *, paths: bool = True, inline: int = 16
) -> list[int]:
    comp = SQLiteFilterCompiler(paths=paths, inline=inline)
    where = comp.compile("r.m", parse_filter(flt))
    return [r[0] for r in conn.execute(f"SELECT id FROM r WHERE {where} ORDER BY id", comp.params)]


@pytest.mark.parametrize(("flt", "expected"), CASES)
def test_case_table_python(flt: dict[str, Any], expected: list[int]) -> None:
    tree = parse_filter(flt)
    assert [i for i, m in enumerate(ROWS) if matches(m, tree)] == expected


@pytest.mark.parametrize("inline", [16, 0], ids=["or-lists", "json-lists"])
@pytest.mark.parametrize("paths", [True, False], ids=["paths", "json_each"])
@pytest.mark.parametrize(("flt", "expected"), CASES)
def test_case_table_sqlite(
    db: sqlite3.Connection, flt: dict[str, Any], expected: list[int], paths: bool, inline: int
) -> None:
    """Value lists as ``OR``s of equalities and as bound JSON arrays agree."""
    assert sql_ids(db, flt, paths=paths, inline=inline) == expected


def test_plain_keys_are_read_by_path_and_others_by_json_each() -> None:
    comp = SQLiteFilterCompiler()
    sql = comp.compile("r.m", parse_filter({"user": "u1", "src": {"kind": {"$gt": 1}}}))
    assert "json_each" not in sql
    # "u1" twice: the substring test of the JSON text, then the value's
    assert comp.params == ["u1", '$."user"', "u1", '$."src"', '$."src"."kind"', '$."src"."kind"', 1]
    assert "instr(r.m, ?)" in sql
    for key in ('k"y', "é", "a\\b", "", "x/y"):
        comp = SQLiteFilterCompiler()
        sql = comp.compile("r.m", parse_filter({key: 1}))
        assert "json_each(r.m)" in sql and key in comp.params, key


def test_keys_with_a_dollar_sign_are_read_by_path_with_the_same_result() -> None:
    """``$message`` (the participant name a search filters on) and ``a$b`` are plain
    path labels: one ``json_extract`` a row instead of ``json_each`` subqueries."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (id INTEGER, m TEXT)")
    rows = [
        {"$message": {"name": "Ana"}, "a$b": 1},
        {"$message": {"name": "Ben"}, "a$b": 2},
        {"$message": "Ana"},
        {"name": "Ana"},
        None,
    ]
    for i, m in enumerate(rows):
        conn.execute("INSERT INTO r VALUES (?, ?)", (i, None if m is None else json.dumps(m)))
    named = (Field("$message", Nested((Field("name", In(("Ana",))),))),)
    for conditions, want in ((named, [0]), (parse_filter({"a$b": 2}), [1])):
        got = {}
        for paths in (True, False):
            comp = SQLiteFilterCompiler(paths=paths)
            where = comp.compile("r.m", conditions)
            assert ("json_each" in where) is not paths
            got[paths] = [
                r[0] for r in conn.execute(f"SELECT id FROM r WHERE {where}", comp.params)
            ]
        assert got[True] == got[False] == want
        assert [i for i, m in enumerate(rows) if matches(m, conditions)] == want


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
        {"n": {"$gt": {"a": 1}}},
        {"n": {"$gt": [1]}},
        {"n": {"$gt": True}},
        {"n": {"$lte": None}},
        {"n": {"$in": 1}},
        {"n": {"$in": []}},
        {"n": {"$nin": "ab"}},
        {"n": {"$in": [[1]]}},
        {"n": {"$exists": 1}},
        {"$and": []},
        {"$or": {"n": 1}},
        {"$or": [1]},
        {"$not": [{"n": 1}]},
        {"$bogus": [{"n": 1}]},
        {"n": {"$and": []}},
        {"src": {"kind": "doc", "$or": [{"n": 1}]}},
        {"n": {"$regex": "a"}},
    ],
)
def test_invalid_filters_raise_value_error(bad: Any) -> None:
    with pytest.raises(ValueError):
        parse_filter(bad)
    assert issubclass(InvalidFilterError, ValueError)


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"n": {"$in": 5}}, ["$in", "5"]),
        ({"n": {"$gt": {"a": 1}}}, ["$gt", "{'a': 1}"]),
        ({"$and": []}, ["$and", "[]"]),
        ({"n": {"$regex": "a"}}, ["$regex"]),
        ({"n": {"$exists": "yes"}}, ["$exists", "'yes'"]),
    ],
)
def test_errors_name_the_operator_and_the_value(bad: Any, named: list[str]) -> None:
    with pytest.raises(InvalidFilterError) as err:
        parse_filter(bad)
    for text in named:
        assert text in str(err.value)


# -- property: the SQLite compilation agrees with the reference evaluator ----------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(METADATA, min_size=1, max_size=8),
    flt=FILTERS,
    paths=st.booleans(),
    ascii_only=st.booleans(),
    inline=st.sampled_from([16, 0]),
)
def test_sqlite_compilation_equals_reference(
    rows: list[Any], flt: dict[str, Any], paths: bool, ascii_only: bool, inline: int
) -> None:
    """Both ways of reading a field, over JSON text written with or without escapes,
    with value lists inline or bound as JSON arrays."""
    try:
        tree = parse_filter(flt)
    except InvalidFilterError:
        assume(False)  # deeper than MAX_FILTER_DEPTH
        raise
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (id INTEGER, m TEXT)")
    for i, m in enumerate(rows):
        text = None if m is None else json.dumps(m, ensure_ascii=ascii_only)
        conn.execute("INSERT INTO r VALUES (?, ?)", (i, text))
    expected = [i for i, m in enumerate(rows) if matches(m, tree)]
    assert sql_ids(conn, flt, paths=paths, inline=inline) == expected
    conn.close()


def test_long_chains_stay_under_sqlite_expression_depth(db: sqlite3.Connection) -> None:
    """A flat chain of 1,000 terms is an expression tree 1,000 deep, which SQLite
    refuses; the compiler groups long chains (``filters.join_sql``)."""
    for flt in (
        {"$or": [{"n": {"$gt": 1000 + i}} for i in range(5_000)] + [{"n": 1}]},
        {"n": {"$in": [*range(2, 50_000), 1]}},
    ):
        want = [i for i, m in enumerate(ROWS) if matches(m, parse_filter(flt))]
        assert want and sql_ids(db, flt) == want
