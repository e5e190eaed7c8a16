"""Metadata filter language: parse to a tree, evaluate in Python (SPEC §4; seed 004).

A filter is a dict whose entries are ANDed. A plain value matches exactly (the key must
exist; lists by order and length; nested dicts recursively, an empty dict matching any
object); a dict whose keys all start with ``$`` is an operator dict:
``$array_contains`` (a scalar, or a non-empty list meaning "contains all"),
``$array_contains_any`` (a non-empty list), ``$not`` (negates an operator dict or a
raw value; a missing field satisfies it). ``True`` never equals ``1``.

``parse_filter`` is the only parser; every backend compiles its tree and
``matches`` is the reference evaluator the compiled forms are tested against.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Json = Any
"""A JSON-compatible Python value: None, bool, int, float, str, list, dict[str, ...]."""

OPERATORS = ("$array_contains", "$array_contains_any", "$not")
MAX_DEPTH = 64
"""Deepest nesting accepted in stored metadata (deeper is a ValueError)."""
MAX_FILTER_DEPTH = 8
"""Deepest nesting of a filter (fields within fields, lists within values): each level
is one correlated subquery in SQL, and SQLite's parser stops a little above this."""
_MAX_INT = 2**63 - 1


class InvalidFilterError(ValueError):
    """A metadata filter that cannot be parsed (a ``ValueError``, as the reference)."""


@dataclass(frozen=True)
class Equals:
    """The field equals ``value`` (JSON equality; bool never equals a number)."""

    value: Json


@dataclass(frozen=True)
class Nested:
    """The field is an object and every condition holds inside it."""

    conditions: tuple[Field, ...]


@dataclass(frozen=True)
class Contains:
    """The field is an array containing all (or, with ``any_``, one) of ``values``."""

    values: tuple[Json, ...]
    any_: bool


@dataclass(frozen=True)
class Not:
    """The positive expression fails (a missing field satisfies a ``Not``)."""

    expr: Expr


@dataclass(frozen=True)
class AllOf:
    """Several operators of one operator dict, ANDed."""

    exprs: tuple[Expr, ...]


Expr = Equals | Nested | Contains | Not | AllOf


@dataclass(frozen=True)
class Field:
    """A condition on the field ``key`` of the enclosing object."""

    key: str
    expr: Expr


def parse_filter(value: object) -> tuple[Field, ...]:
    """Parse a metadata filter dict into its condition tree.

    Args:
        value: The filter, a dict mapping field names to values or operator dicts.

    Returns:
        The top-level conditions, ANDed (empty for ``{}``: no constraint).

    Raises:
        InvalidFilterError: (a ValueError) for a non-dict filter, a non-string or
            ``$``-prefixed field name, an unknown operator, an operator dict mixed
            with plain keys, an empty operand list, or a non-JSON value.
    """
    if not isinstance(value, Mapping):
        raise InvalidFilterError(f"metadata_filter must be a dict, got {value!r}")
    tree = _parse_fields(value, "metadata_filter", 0)
    depth = max((_depth(f.expr) for f in tree), default=0)
    if depth > MAX_FILTER_DEPTH:
        raise InvalidFilterError(
            f"metadata_filter nests {depth} levels; at most {MAX_FILTER_DEPTH} are supported"
        )
    return tree


def _depth(expr: Expr) -> int:
    """Subquery levels a condition needs: one per field, list or object level."""
    if isinstance(expr, Not):
        return _depth(expr.expr)
    if isinstance(expr, AllOf):
        return max(_depth(e) for e in expr.exprs)
    if isinstance(expr, Nested):
        return 1 + max((_depth(f.expr) for f in expr.conditions), default=0)
    if isinstance(expr, Contains):
        return 2
    return 1 + _value_depth(expr.value)


def _value_depth(value: Json) -> int:
    if isinstance(value, list):
        return 1 + max((_value_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_value_depth(v) for v in value.values()), default=0)
    return 0


def _parse_fields(obj: Mapping[Any, Any], where: str, depth: int) -> tuple[Field, ...]:
    if depth > MAX_DEPTH:
        raise InvalidFilterError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    fields = []
    for key, val in obj.items():
        if not isinstance(key, str):
            raise InvalidFilterError(f"{where}: field names must be strings, got {key!r}")
        if key.startswith("$"):
            raise InvalidFilterError(
                f"{where}: {key!r} is not a field name; operators go inside a field, "
                f"e.g. {{'tags': {{'$array_contains': 'x'}}}} (known: {list(OPERATORS)})"
            )
        fields.append(Field(key, _parse_value(val, f"{where}[{key!r}]", depth + 1)))
    return tuple(fields)


def _parse_value(val: object, where: str, depth: int) -> Expr:
    if depth > MAX_DEPTH:
        raise InvalidFilterError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(val, Mapping):
        op_keys = [k for k in val if isinstance(k, str) and k.startswith("$")]
        if not op_keys:
            return Nested(_parse_fields(val, where, depth + 1))
        if len(op_keys) != len(val):
            raise InvalidFilterError(
                f"{where}: an operator dict may hold only operators, got keys {list(val)!r}"
            )
        exprs = [_parse_operator(op, val[op], where, depth) for op in op_keys]
        return exprs[0] if len(exprs) == 1 else AllOf(tuple(exprs))
    return Equals(check_json(val, where, depth))


def _parse_operator(op: str, operand: object, where: str, depth: int) -> Expr:
    if op == "$not":
        return Not(_parse_value(operand, f"{where}.$not", depth + 1))
    if op == "$array_contains":
        if isinstance(operand, (list, tuple)):
            if not operand:
                raise InvalidFilterError(f"{where}: $array_contains needs a non-empty list")
            return Contains(tuple(_scalar(v, where, op) for v in operand), any_=False)
        return Contains((_scalar(operand, where, op),), any_=False)
    if op == "$array_contains_any":
        if not isinstance(operand, (list, tuple)) or not operand:
            raise InvalidFilterError(
                f"{where}: $array_contains_any needs a non-empty list, got {operand!r}"
            )
        return Contains(tuple(_scalar(v, where, op) for v in operand), any_=True)
    raise InvalidFilterError(f"{where}: unknown operator {op!r} (known: {list(OPERATORS)})")


def _scalar(value: object, where: str, op: str) -> Json:
    if value is not None and not isinstance(value, (str, bool, int, float)):
        raise InvalidFilterError(f"{where}: {op} operands must be JSON scalars, got {value!r}")
    return check_json(value, where)


def check_json(value: object, where: str, depth: int = 0) -> Json:
    """Return ``value`` if it is JSON-compatible, else raise ``InvalidFilterError``.

    Tuples are accepted as lists. Floats must be finite, ints fit in 64 bits, strings
    be valid Unicode (no lone surrogates), and nesting stay within ``MAX_DEPTH``.
    """
    if depth > MAX_DEPTH:
        raise InvalidFilterError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidFilterError(f"{where}: {value!r} is not valid Unicode text") from None
        return value
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        if abs(value) > _MAX_INT:
            raise InvalidFilterError(f"{where}: integer {value} does not fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidFilterError(f"{where}: {value!r} is not a JSON number")
        return value
    if isinstance(value, (list, tuple)):
        return [check_json(v, where, depth + 1) for v in value]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidFilterError(f"{where}: object keys must be strings, got {k!r}")
            out[check_json(k, where, depth + 1)] = check_json(v, where, depth + 1)
        return out
    raise InvalidFilterError(f"{where}: {value!r} is not a JSON value")


def json_equal(a: Json, b: Json) -> bool:
    """JSON equality: numbers by value, bools only equal bools, containers deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    return bool(a == b)


def matches(metadata: Mapping[str, Json] | None, conditions: tuple[Field, ...]) -> bool:
    """Reference evaluator: does ``metadata`` satisfy all ``conditions``?

    ``None`` metadata behaves as an object with no fields.
    """
    obj = metadata if metadata is not None else {}
    return all(_field_holds(obj, f) for f in conditions)


def _field_holds(obj: Mapping[str, Json], field: Field) -> bool:
    expr = field.expr
    if isinstance(expr, Not):
        return not _field_holds(obj, Field(field.key, expr.expr))
    if isinstance(expr, AllOf):
        return all(_field_holds(obj, Field(field.key, e)) for e in expr.exprs)
    return field.key in obj and _value_matches(obj[field.key], expr)


def _value_matches(value: Json, expr: Expr) -> bool:
    if isinstance(expr, Equals):
        return json_equal(value, expr.value)
    if isinstance(expr, Nested):
        return isinstance(value, dict) and all(_field_holds(value, f) for f in expr.conditions)
    if isinstance(expr, Contains):
        if not isinstance(value, list):
            return False
        found = [any(json_equal(item, v) for item in value) for v in expr.values]
        return any(found) if expr.any_ else all(found)
    raise AssertionError(f"unexpected expression {expr!r}")  # Not/AllOf handled by caller
