"""Oracle filter compilation at statement level: the exact ``JSON_EXISTS`` text of every
operator (comparisons, ``$in``, ``$exists``, boolean combinators), values only ever
bound through ``PASSING`` (docs/filters.md, docs/oracle.md#filters-in-sql), and every
random filter of the language compiling to SQL that sqlglot's Oracle dialect parses,
with each ``$vN`` in a path passed and each ``:fN`` bound."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from oracle_helpers import parse_oracle

from oam_core.store.filters import InvalidFilterError, parse_filter
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
