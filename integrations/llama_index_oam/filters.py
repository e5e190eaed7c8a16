"""LlamaIndex ``MetadataFilters`` as ``oam`` metadata filters (docs/filters.md).

A thin translation: each ``MetadataFilter`` becomes one ``oam`` condition and each
``MetadataFilters`` an ``$and`` / ``$or`` / ``$not`` of its children, so the store
runs the whole filter in its query, before the top-k cut.

Semantics are LlamaIndex's (``llama_index.core.vector_stores.utils.
build_metadata_filter_fn``): a missing or null field fails every operator except NE
and NIN, which it satisfies; IS_EMPTY holds for a missing field, ``null``, ``""`` and
``[]``; ALL with an empty list means "present and not null". Deliberate differences,
from the ``oam`` language: booleans never equal numbers, comparisons of a number with
a string are false (LlamaIndex's evaluator raises ``TypeError``), and CONTAINS / ANY /
ALL test array membership only (LlamaIndex's evaluator also tests substrings of
strings).

TEXT_MATCH and TEXT_MATCH_INSENSITIVE (substring tests) have no equivalent in the
``oam`` language and raise ``UnsupportedFilterError`` naming the operator: a filtered
query never silently runs unfiltered.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from oam_core.errors import InvalidFilterError

Json = Any
"""A JSON value (an ``oam`` filter operand)."""

NEVER: dict[str, Json] = {"$not": {}}
"""The ``oam`` filter no record satisfies."""

_COMPARISONS = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
}
_UNSUPPORTED = {
    FilterOperator.TEXT_MATCH: "substring match",
    FilterOperator.TEXT_MATCH_INSENSITIVE: "case-insensitive substring match",
}


class UnsupportedFilterError(InvalidFilterError):
    """A LlamaIndex filter the ``oam`` filter language cannot express exactly
    (an ``InvalidFilterError``, so a ``ValueError``; raised before any query runs;
    docs/errors.md)."""


def to_oam_filter(filters: MetadataFilters | None) -> dict[str, Json] | None:
    """Translate LlamaIndex ``MetadataFilters`` (nested allowed) to an ``oam`` filter.

    Args:
        filters: The filters; ``None`` or an empty top-level list means no filter.

    Returns:
        The ``oam`` filter dict, or None for no filter.

    Raises:
        UnsupportedFilterError: (a ValueError) for TEXT_MATCH or
            TEXT_MATCH_INSENSITIVE, a null operand, a list operand where one value is
            expected (or the reverse), or an unknown operator or condition. The
            store raises ``ValueError`` for keys or values its language rejects.
    """
    if filters is None or not filters.filters:
        return None
    return _node(filters)


def _node(node: MetadataFilters | MetadataFilter) -> dict[str, Json]:
    if isinstance(node, MetadataFilter):
        return _leaf(node)
    children = [_node(f) for f in node.filters]
    if not children:
        return {}
    condition = node.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return children[0] if len(children) == 1 else {"$and": children}
    if condition == FilterCondition.OR:
        return children[0] if len(children) == 1 else {"$or": children}
    if condition == FilterCondition.NOT:
        # LlamaIndex: NOT(f1, f2, ...) holds when none of them holds.
        return {"$not": children[0] if len(children) == 1 else {"$or": children}}
    raise UnsupportedFilterError(f"unknown filter condition {condition!r}")


def _leaf(f: MetadataFilter) -> dict[str, Json]:
    op, key, value = f.operator, f.key, f.value
    if op in _UNSUPPORTED:
        raise UnsupportedFilterError(
            f"filter on {key!r}: operator {op.name} ({_UNSUPPORTED[op]}) has no equivalent in "
            "the oam metadata filter language (docs/filters.md); refusing to run the query "
            "without it. Store the words to match in a list and use CONTAINS or ANY."
        )
    if op == FilterOperator.IS_EMPTY:
        return {"$or": [{key: {"$exists": False}}, {key: {"$in": [None, ""]}}, {key: []}]}
    if value is None:
        raise UnsupportedFilterError(
            f"filter on {key!r}: operator {op.name} needs a value, got None "
            "(use IS_EMPTY for a missing or null field)"
        )
    if op in _COMPARISONS:
        if isinstance(value, list) and op != FilterOperator.EQ and op != FilterOperator.NE:
            raise UnsupportedFilterError(
                f"filter on {key!r}: operator {op.name} takes one value, got the list {value!r}"
            )
        return {key: {_COMPARISONS[op]: value}}
    if op in (FilterOperator.IN, FilterOperator.NIN):
        values = _list_operand(f)
        if not values:  # in nothing: never; not in nothing: always
            return NEVER if op == FilterOperator.IN else {}
        return {key: {"$in" if op == FilterOperator.IN else "$nin": values}}
    if op == FilterOperator.CONTAINS:
        if isinstance(value, list):
            raise UnsupportedFilterError(
                f"filter on {key!r}: CONTAINS takes one value, got the list {value!r}; "
                "use ALL (contains every value) or ANY (contains one of them)"
            )
        return {key: {"$array_contains": value}}
    if op == FilterOperator.ANY:
        values = _list_operand(f)
        return {key: {"$array_contains_any": values}} if values else NEVER
    if op == FilterOperator.ALL:
        values = _list_operand(f)
        if not values:  # LlamaIndex: all() of nothing, on a present, non-null field
            return {key: {"$exists": True, "$ne": None}}
        return {key: {"$array_contains": values}}
    raise UnsupportedFilterError(f"filter on {key!r}: unknown operator {op!r}")


def _list_operand(f: MetadataFilter) -> list[Any]:
    if not isinstance(f.value, list):
        raise UnsupportedFilterError(
            f"filter on {f.key!r}: operator {f.operator.name} needs a list value, got {f.value!r}"
        )
    return list(f.value)


def and_filters(*parts: dict[str, Json] | None) -> dict[str, Json] | None:
    """The conjunction of ``oam`` filters (None parts are no constraint)."""
    given = [p for p in parts if p is not None]
    if not given:
        return None
    return given[0] if len(given) == 1 else {"$and": given}


__all__ = ["NEVER", "UnsupportedFilterError", "and_filters", "to_oam_filter"]
