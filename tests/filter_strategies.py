"""Hypothesis strategies for metadata and metadata filters (the whole language of docs/filters.md),
shared by the unit tests (SQLite compiler, Oracle statements) and the conformance
suite (every back end against the reference evaluator ``filters.matches``)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

KEYS = st.sampled_from(["a", "b", "c.d", "t'ag", "é"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([1.0, 0.5, -0.0]),
    st.sampled_from(["x", "y", "", "X", "é", "10", "9", "[1]"]),
)
COMPARABLE = st.one_of(
    st.integers(-2, 2), st.sampled_from([0.5, 1.0]), st.sampled_from(["x", "y", "", "X", "é", "10"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=6,
)
METADATA = st.one_of(st.none(), st.dictionaries(KEYS, JSON, max_size=4))


def _scalar_lists(min_size: int = 1) -> st.SearchStrategy[list[Any]]:
    return st.lists(SCALARS, min_size=min_size, max_size=3)


def _single_operator() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.one_of(SCALARS, _scalar_lists()).map(lambda v: {"$array_contains": v}),
        _scalar_lists().map(lambda v: {"$array_contains_any": v}),
        JSON.map(lambda v: {"$eq": v}),
        JSON.map(lambda v: {"$ne": v}),
        st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), COMPARABLE).map(
            lambda t: {t[0]: t[1]}
        ),
        st.tuples(st.sampled_from(["$in", "$nin"]), _scalar_lists()).map(lambda t: {t[0]: t[1]}),
        st.booleans().map(lambda v: {"$exists": v}),
    )


def _operator_dict() -> st.SearchStrategy[dict[str, Any]]:
    """One or two operators in one dict (ANDed)."""
    return st.lists(_single_operator(), min_size=1, max_size=2).map(
        lambda ops: {k: v for op in ops for k, v in op.items()}
    )


def _field_value() -> st.SearchStrategy[Any]:
    """What may stand at a field: a plain value, an operator dict, a nested filter,
    or a field-level combinator over those."""
    plain = JSON.filter(lambda v: not isinstance(v, dict))
    base = st.one_of(plain, _operator_dict())
    return st.recursive(
        base,
        lambda inner: st.one_of(
            st.dictionaries(KEYS, inner, max_size=2),  # nested object filter
            inner.map(lambda v: {"$not": v}),
            st.tuples(
                st.sampled_from(["$and", "$or"]), st.lists(inner, min_size=1, max_size=2)
            ).map(lambda t: {t[0]: t[1]}),
        ),
        max_leaves=4,
    )


FIELD_FILTERS = st.dictionaries(KEYS, _field_value(), max_size=3)
"""Filters of fields only."""

FILTERS = st.recursive(
    FIELD_FILTERS,
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["$and", "$or"]), st.lists(inner, min_size=1, max_size=3)).map(
            lambda t: {t[0]: t[1]}
        ),
        inner.map(lambda f: {"$not": f}),
        st.tuples(FIELD_FILTERS, st.lists(inner, min_size=1, max_size=2)).map(
            lambda t: {**t[0], "$or": t[1]}
        ),
    ),
    max_leaves=4,
)
"""Any filter of the language, top-level combinators included."""
