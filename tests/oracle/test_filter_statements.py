"""Oracle filter compilation at statement level: the exact ``JSON_EXISTS`` text of every
operator (comparisons, ``$in``, ``$exists``, boolean combinators), values only ever
bound through ``PASSING`` (docs/filters.md, docs/oracle.md#filters-in-sql), and every
random filter of the language compiling to SQL that sqlglot's Oracle dialect parses,
with each ``$vN`` in a path passed and each ``:fN`` bound."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from oracle_helpers import parse_oracle

from oam_core.filters import InvalidFilterError, parse_filter
from oam_core.store.oracle.filter import OracleFilterCompiler
from tests.filter_strategies import FILTERS

NUM = '(@."n".type() == "number" || @."n".type() == "double" || @."n".type() == "float")'

OPERATOR_CASES: list[tuple[dict[str, Any], str, dict[str, Any]]] = [
    (
        {"n": {"$gt": 2}},
        f"""JSON_EXISTS(m, 'strict $?({NUM} && @."n" > $v0)' PASSING :f0 AS "v0")""",
        {"f0": 2},
    ),
    (
        {"n": {"$lte": 2.5}},
        f"""JSON_EXISTS(m, 'strict $?({NUM} && @."n" <= $v0)' PASSING :f0 AS "v0")""",
        {"f0": 2.5},
    ),
    (
        {"s": {"$gte": "b"}},
        """JSON_EXISTS(m, 'strict $?((@."s".type() == "string") && @."s" >= $v0)' """
        """PASSING :f0 AS "v0")""",
        {"f0": "b"},
    ),
    (
        {"s": {"$in": ["a", True, None, 3]}},
        """JSON_EXISTS(m, 'strict $?((@."s" == $v0) || (@."s" == true) || (@."s" == null) || """
        """(@."s" == $v1))' PASSING :f0 AS "v0", :f1 AS "v1")""",
        {"f0": "a", "f1": 3},
    ),
    (
        {"s": {"$nin": ["a"]}},
        """NOT (JSON_EXISTS(m, 'strict $?((@."s" == $v0))' PASSING :f0 AS "v0"))""",
        {"f0": "a"},
    ),
    ({"s": {"$exists": True}}, """JSON_EXISTS(m, 'strict $."s"')""", {}),
    ({"s": {"$exists": False}}, """NOT (JSON_EXISTS(m, 'strict $."s"'))""", {}),
    (
        {"s": {"$ne": "a"}},
        """NOT (JSON_EXISTS(m, 'strict $?(@."s" == $v0)' PASSING :f0 AS "v0"))""",
        {"f0": "a"},
    ),
    (
        {"$or": [{"s": "a"}, {"t": {"$exists": True}}]},
        """(JSON_EXISTS(m, 'strict $?(@."s" == $v0)' PASSING :f0 AS "v0") OR """
        """JSON_EXISTS(m, 'strict $."t"'))""",
        {"f0": "a"},
    ),
    (
        {"$not": {"s": "a", "t": 1}},
        """NOT ((JSON_EXISTS(m, 'strict $?(@."s" == $v0)' PASSING :f0 AS "v0") AND """
        """JSON_EXISTS(m, 'strict $?(@."t" == $v1)' PASSING :f1 AS "v1")))""",
        {"f0": "a", "f1": 1},
    ),
    (
        {"src": {"kind": {"$in": ["doc"]}}},
        """(JSON_EXISTS(m, 'strict $?(@."src".type() == "object")') AND """
        """JSON_EXISTS(m, 'strict $?((@."src"."kind" == $v0))' PASSING :f0 AS "v0"))""",
        {"f0": "doc"},
    ),
    ({"$or": [{}]}, "(1 = 1)", {}),
]
"""Exact SQL of the comparison, membership, presence and boolean operators; run by
``test_statements.test_filter_compiles_to_json_exists_with_passing`` with the rest."""


def test_comparison_values_never_reach_sql_text() -> None:
    evil = "x' OR 1=1 --"
    comp = OracleFilterCompiler()
    text = comp.compile(
        "m", parse_filter({"$or": [{"k": {"$gt": evil}}, {"k": {"$in": [evil, "b"]}}]})
    )
    assert evil not in text and list(comp.binds.values()) == [evil, evil, "b"]


_PATH_VARS = re.compile(r"\$v(\d+)")
_PASSED = re.compile(r':f(\d+) AS "v(\d+)"')


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flt=FILTERS)
def test_every_filter_compiles_to_parseable_sql_with_every_variable_bound(
    flt: dict[str, Any],
) -> None:
    try:
        tree = parse_filter(flt)
    except InvalidFilterError:
        assume(False)
        raise
    try:
        comp = OracleFilterCompiler()
        text = comp.compile("r.metadata", tree)
    except InvalidFilterError:
        assume(False)  # a key the Oracle path cannot quote (none in the strategy)
        raise
    parse_oracle(f"SELECT 1 FROM t r WHERE {text}")
    for call in re.findall(r"JSON_EXISTS\(r\.metadata, '((?:[^']|'')*)'([^)]*)\)", text):
        path, passing = call
        used = set(_PATH_VARS.findall(path))
        passed = dict((v, f) for f, v in _PASSED.findall(passing))
        assert used == set(passed), (path, passing)
        assert all(v == f for v, f in passed.items())
        assert path.count("(") == path.count(")")
    assert set(re.findall(r":(f\d+)", text)) == set(comp.binds)


def test_long_in_lists_are_two_json_array_binds() -> None:
    """A 100,000-value ``$in``/``$nin`` binds its strings and its numbers as one JSON
    array each (CLOB, read by JSON_TABLE after a type() test), whatever its length;
    true/false/null, ``""`` and numbers past NUMBER's range stay path equalities
    (docs/filters.md#long-lists)."""
    values: list[Any] = [f"v{i}" for i in range(100_000)] + [7, 2.5, True, None, "", 1e40]
    for op in ("$in", "$nin"):
        comp = OracleFilterCompiler()
        text = comp.compile("r.metadata", parse_filter({"src": {"k": {op: values}}}))
        parse_oracle(f"SELECT 1 FROM t r WHERE {text}")
        assert json.loads(comp.binds["f0"]) == values[:100_000]
        assert json.loads(comp.binds["f1"]) == [7, 2.5]
        assert comp.binds["f2"] == "" and comp.binds["f3"] == 1e40
        assert len(comp.binds) == 4 and comp.types == {"f0": "CLOB", "f1": "CLOB"}
        assert (
            """(JSON_EXISTS(r.metadata, 'strict $?(@."src"."k".type() == "string")') AND """
            """EXISTS (SELECT 1 FROM JSON_TABLE(:f0, '$[*]' COLUMNS (v VARCHAR2(4000) """
            """PATH '$')) jt_f0 WHERE jt_f0.v = JSON_VALUE(r.metadata, 'strict $."src"."k"' """
            """RETURNING VARCHAR2(4000) NULL ON ERROR)))"""
        ) in text
        assert "RETURNING NUMBER NULL ON ERROR" in text
        assert (
            """JSON_EXISTS(r.metadata, 'strict $?((@."src"."k" == true) || (@."src"."k" == null) """
            """|| (@."src"."k" == $v2) || (@."src"."k" == $v3))' PASSING :f2 AS "v2", :f3 AS "v3")"""
        ) in text
        assert ("AND NOT (((JSON_EXISTS" in text) == (op == "$nin")


def test_long_in_list_binds_are_declared_clob_in_every_query() -> None:
    from oracle_helpers import NOW

    from oam_core.apis.records import SEARCHABLE_TYPES
    from oam_core.store.backend import Predicate
    from oam_core.store.oracle import sql
    from oam_core.store.oracle.names import Names

    flt = parse_filter({"k": {"$in": [f"v{i}" for i in range(50)]}})
    pred = Predicate(record_types=SEARCHABLE_TYPES, now=NOW, metadata=flt)
    n = Names("S1_")
    listed = sql.list_records(
        n, Predicate(record_types=frozenset({"fact"}), now=NOW, metadata=flt), 5, NOW
    )
    for stmt in (
        listed,
        sql.rank_vector(n, [1.0], 5, pred),
        sql.rank_keyword(n, "{a}", 5, pred),
        sql.hybrid_hits(n, "[]", pred),
    ):
        assert stmt.types["f0"] == "CLOB", stmt.sql
        assert json.loads(stmt.binds["f0"])[-1] == "v49"


def test_a_filter_with_too_many_binds_is_an_invalid_filter_error() -> None:
    flt = parse_filter({"$or": [{"k": f"v{i}"} for i in range(70_000)]})
    with pytest.raises(InvalidFilterError, match=r"metadata_filter binds 70,000 .*at most 65,000"):
        OracleFilterCompiler().compile("m", flt)
