"""LlamaIndex ``MetadataFilters`` mapped onto the ``oam`` filter language (SPEC §4).

The ``oam`` language has equality, ``$not``, ``$array_contains`` and
``$array_contains_any``, entries ANDed, one operator of each kind per field. LlamaIndex
filters add OR, IN and negated forms. The mapping keeps the results exact:

1. The filter tree is rewritten to disjunctive normal form over *literals*: a field,
   a positive ``oam`` condition (a value to equal, or an array-membership operator
   dict), and whether it is negated. NOT is pushed down to the literals (De Morgan),
   IN becomes one branch per value, NIN a conjunction of negated equalities.
2. Each branch (a conjunction) becomes one ``oam`` filter dict (``pushed``, applied
   by the store before the top-k cut) plus, only when one field carries two
   conditions of the same ``oam`` kind (e.g. NIN with several values), a *residual*
   of parsed ``oam`` conditions checked in Python with ``oam``'s reference evaluator.
3. The vector store runs one search per branch (re-fetching deeper while a residual
   rejects rows) and merges the branches by distance. A record's distance does not
   depend on the filter, so the merged top k is exactly the top k of the union.

Semantics are LlamaIndex's (``llama_index.core.vector_stores.utils.
build_metadata_filter_fn``): a missing or null field fails every operator except NE
and NIN, which it satisfies. Two deliberate differences, both from SPEC §4: booleans
never equal numbers (Python's ``True == 1``), and CONTAINS/ANY/ALL test array
membership only (LlamaIndex's evaluator also does substring tests on strings).

Operators with no ``oam`` equivalent (GT, GTE, LT, LTE, TEXT_MATCH,
TEXT_MATCH_INSENSITIVE, IS_EMPTY) raise ``UnsupportedFilterError``: a filtered query
never silently runs unfiltered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from oam_core.store.filters import Field, Json, matches, parse_filter

MAX_BRANCHES = 64
"""Most OR branches a filter may expand to (each branch is one store query)."""

_UNSUPPORTED = {
    FilterOperator.GT: "greater-than",
    FilterOperator.GTE: "greater-or-equal",
    FilterOperator.LT: "less-than",
    FilterOperator.LTE: "less-or-equal",
    FilterOperator.TEXT_MATCH: "substring match",
    FilterOperator.TEXT_MATCH_INSENSITIVE: "case-insensitive substring match",
    FilterOperator.IS_EMPTY: "missing-or-empty test",
}


class UnsupportedFilterError(ValueError):
    """A LlamaIndex filter the ``oam`` filter language cannot express exactly
    (a ``ValueError``; raised before any query runs)."""


@dataclass(frozen=True)
class Literal:
    """One condition on one metadata field.

    Attributes:
        key: The metadata field name.
        positive: The positive ``oam`` condition: a JSON value the field must equal,
            or an operator dict ``{"$array_contains": ...}`` /
            ``{"$array_contains_any": [...]}``.
        negated: True when the literal holds where the positive condition fails
            (including a missing field).
    """

    key: str
    positive: Json
    negated: bool

    @property
    def is_equality(self) -> bool:
        """True when ``positive`` is a value to equal (not an operator dict)."""
        return not (isinstance(self.positive, dict) and _is_operator_dict(self.positive))

    def as_filter_value(self) -> Json:
        """The literal as the value of its field in an ``oam`` filter dict."""
        return {"$not": self.positive} if self.negated else self.positive

    def negate(self) -> Literal:
        """The literal that holds exactly where this one fails."""
        return Literal(self.key, self.positive, not self.negated)


@dataclass(frozen=True)
class Branch:
    """One conjunction of a compiled filter.

    Attributes:
        pushed: The ``oam`` metadata filter dict the store applies (``{}``: none).
        residual: Parsed ``oam`` conditions the store could not take in the same
            dict (several conditions of one kind on one field); checked in Python.
        literals: The conjunction the branch was compiled from.
    """

    pushed: dict[str, Json]
    residual: tuple[Field, ...]
    literals: tuple[Literal, ...] = ()

    def matches(self, metadata: Mapping[str, Json] | None) -> bool:
        """Does a record with ``metadata`` satisfy the whole branch?"""
        return matches(metadata, parse_filter(self.pushed)) and matches(metadata, self.residual)


@dataclass(frozen=True)
class CompiledFilter:
    """A LlamaIndex filter as an OR of ``Branch`` es (none: matches nothing).

    ``CompiledFilter.everything()`` is the unfiltered case: one empty branch.
    """

    branches: tuple[Branch, ...]

    @staticmethod
    def everything() -> CompiledFilter:
        """The filter that every record satisfies."""
        return CompiledFilter((Branch({}, ()),))

    @property
    def is_unfiltered(self) -> bool:
        """True when every record satisfies the filter."""
        return any(not b.pushed and not b.residual for b in self.branches)

    def matches(self, metadata: Mapping[str, Json] | None) -> bool:
        """Does a record with ``metadata`` satisfy the filter? (Python evaluation.)"""
        return any(b.matches(metadata) for b in self.branches)

    def restrict(self, other: CompiledFilter) -> CompiledFilter:
        """The conjunction of this filter and ``other``.

        Raises:
            UnsupportedFilterError: when the product has more than ``MAX_BRANCHES``.
        """
        if other.is_unfiltered:
            return self
        if self.is_unfiltered:
            return other
        _check_size(len(self.branches) * len(other.branches))
        dnf = [[*a.literals, *b.literals] for a in self.branches for b in other.branches]
        return _compile_dnf(dnf)


def compile_filters(filters: MetadataFilters | None) -> CompiledFilter:
    """Compile LlamaIndex ``MetadataFilters`` (nested allowed) for ``oam`` stores.

    Args:
        filters: The filters; ``None`` or an empty top-level list means no filter.

    Returns:
        The compiled OR of branches.

    Raises:
        UnsupportedFilterError: (a ValueError) for an operator without an ``oam``
            equivalent, a null operand, a list operand where one value is expected
            (or the reverse), an empty ALL list, or more than ``MAX_BRANCHES``
            branches.
        ValueError: for a key or value the ``oam`` language rejects (e.g. a key
            starting with ``$``).
    """
    if filters is None or not filters.filters:
        return CompiledFilter.everything()
    return _compile_dnf(_dnf(filters, negate=False))


def equals_any(key: str, values: Sequence[Json]) -> CompiledFilter:
    """The filter "metadata ``key`` equals one of ``values``" (none: matches nothing)."""
    return _compile_dnf([[Literal(key, v, False)] for v in values])


Dnf = list[list[Literal]]


def _dnf(node: MetadataFilters | MetadataFilter, *, negate: bool) -> Dnf:
    if isinstance(node, MetadataFilter):
        return _leaf(node, negate=negate)
    condition = node.condition or FilterCondition.AND
    if condition == FilterCondition.NOT:
        # NOT(f1, f2, ...) holds when none holds: AND of the negations.
        children = [_dnf(f, negate=not negate) for f in node.filters]
        return _or(children) if negate else _and(children)
    if condition not in (FilterCondition.AND, FilterCondition.OR):
        raise UnsupportedFilterError(f"unknown filter condition {condition!r}")
    children = [_dnf(f, negate=negate) for f in node.filters]
    conjunctive = (condition == FilterCondition.AND) != negate
    return _and(children) if conjunctive else _or(children)


def _and(children: Sequence[Dnf]) -> Dnf:
    out: Dnf = [[]]
    for child in children:
        out = [a + b for a in out for b in child]
        _check_size(len(out))
    return out


def _or(children: Sequence[Dnf]) -> Dnf:
    out = [branch for child in children for branch in child]
    _check_size(len(out))
    return out


def _check_size(n: int) -> None:
    if n > MAX_BRANCHES:
        raise UnsupportedFilterError(
            f"the filter expands to more than {MAX_BRANCHES} OR branches (one store query "
            "each); simplify it, e.g. use fewer IN values under NOT/OR combinations"
        )


def _leaf(f: MetadataFilter, *, negate: bool) -> Dnf:
    op, key, value = f.operator, f.key, f.value
    if op in _UNSUPPORTED:
        raise UnsupportedFilterError(
            f"filter on {key!r}: operator {op.name} ({_UNSUPPORTED[op]}) has no equivalent in "
            "the oam metadata filter language (SPEC §4: equality, $not, $array_contains, "
            "$array_contains_any); refusing to run the query without it"
        )
    if value is None:
        raise UnsupportedFilterError(
            f"filter on {key!r}: operator {op.name} needs a value, got None"
        )
    if op in (FilterOperator.EQ, FilterOperator.NE):
        lit = Literal(key, value, negated=(op == FilterOperator.NE))
        return [[lit.negate() if negate else lit]]
    if op in (FilterOperator.IN, FilterOperator.NIN):
        values = _list_operand(f)
        # IN is an OR of equalities; NIN (and NOT IN) an AND of inequalities.
        if (op == FilterOperator.IN) != negate:
            return [[Literal(key, v, False)] for v in values]
        return [[Literal(key, v, True) for v in values]]
    if op == FilterOperator.CONTAINS:
        if isinstance(value, list):
            raise UnsupportedFilterError(
                f"filter on {key!r}: CONTAINS takes one value, got the list {value!r}; "
                "use ALL (contains every value) or ANY (contains one of them)"
            )
        return [[Literal(key, {"$array_contains": value}, negate)]]
    if op == FilterOperator.ANY:
        values = _list_operand(f)
        if not values:  # contains one of nothing: never
            return [[]] if negate else []
        return [[Literal(key, {"$array_contains_any": values}, negate)]]
    if op == FilterOperator.ALL:
        values = _list_operand(f)
        if not values:
            raise UnsupportedFilterError(
                f"filter on {key!r}: ALL with an empty list (LlamaIndex: 'the field is "
                "present') has no oam equivalent"
            )
        return [[Literal(key, {"$array_contains": values}, negate)]]
    raise UnsupportedFilterError(f"filter on {key!r}: unknown operator {op!r}")


def _list_operand(f: MetadataFilter) -> list[Json]:
    if not isinstance(f.value, list):
        raise UnsupportedFilterError(
            f"filter on {f.key!r}: operator {f.operator.name} needs a list value, got {f.value!r}"
        )
    return list(f.value)


def _compile_dnf(dnf: Dnf) -> CompiledFilter:
    branches = []
    for literals in dnf:
        branch = _compile_branch(literals)
        if branch is not None:
            branches.append(branch)
    return CompiledFilter(tuple(branches))


def _compile_branch(literals: Sequence[Literal]) -> Branch | None:
    """One conjunction as a pushed dict plus residual; None if it can never hold."""
    seen: dict[str, Literal] = {}
    for lit in literals:
        seen.setdefault(json.dumps([lit.key, lit.positive, lit.negated], sort_keys=True), lit)
    unique = list(seen.values())
    by_key: dict[str, list[Literal]] = {}
    for lit in unique:
        parse_filter({lit.key: lit.as_filter_value()})  # reject bad keys/values now
        by_key.setdefault(lit.key, []).append(lit)
    pushed: dict[str, Json] = {}
    residual: list[Field] = []
    for key, lits in by_key.items():
        equal = next((lit for lit in lits if lit.is_equality and not lit.negated), None)
        if equal is not None:
            # The field's value is fixed: every other condition on it is decided now.
            probe = {key: equal.positive}
            if not all(matches(probe, parse_filter({key: lit.as_filter_value()})) for lit in lits):
                return None
            pushed[key] = equal.positive
            continue
        ops: dict[str, Json] = {}
        for lit in lits:
            name = "$not" if lit.negated else next(iter(lit.positive))
            operand = lit.positive if lit.negated else lit.positive[name]
            if name in ops:
                residual.extend(parse_filter({key: lit.as_filter_value()}))
            else:
                ops[name] = operand
        pushed[key] = ops
    return Branch(pushed, tuple(residual), tuple(unique))


def _is_operator_dict(value: Mapping[str, Any]) -> bool:
    return bool(value) and all(isinstance(k, str) and k.startswith("$") for k in value)


__all__ = [
    "MAX_BRANCHES",
    "Branch",
    "CompiledFilter",
    "Literal",
    "UnsupportedFilterError",
    "compile_filters",
    "equals_any",
]
