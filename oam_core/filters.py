"""Metadata filter language: parse to a tree, evaluate in Python (docs/filters.md).

A filter is a dict whose entries are ANDed. A plain value matches exactly (the key must
exist; lists by order and length; nested dicts recursively, an empty dict matching any
object); a dict whose keys all start with ``$`` is an operator dict. Operators on a
field: ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin``,
``$exists``, ``$array_contains``, ``$array_contains_any``, and the combinators
``$and``, ``$or``, ``$not``; at the top level a filter may also hold ``$and`` /
``$or`` (lists of filters) and ``$not`` (a filter). ``True`` never equals ``1``, and
comparisons only relate numbers with numbers and strings with strings. The full
language, with examples, is in ``docs/filters.md``.

``parse_filter`` is the only parser. Its tree has boolean combinators (``And``,
``Or``, ``Not``) only at the condition level: a field's ``{"$not": e}`` becomes
``Not(Field(key, e))`` and a field's ``$or`` an ``Or`` of fields, which is the same
predicate, so each compiler handles four condition kinds and six atoms. ``matches``
is the reference evaluator the compiled SQL forms are tested against.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sized
from dataclasses import dataclass
from typing import Any, Literal

from oam_core.errors import InvalidFilterError

Json = Any
"""A JSON-compatible Python value: None, bool, int, float, str, list, dict[str, ...]."""

FIELD_OPERATORS = (
    "$eq",
    "$ne",
    "$gt",
    "$gte",
    "$lt",
    "$lte",
    "$in",
    "$nin",
    "$exists",
    "$array_contains",
    "$array_contains_any",
    "$and",
    "$or",
    "$not",
)
"""Operators allowed in a field's operator dict."""
FILTER_OPERATORS = ("$and", "$or", "$not")
"""Operators allowed as keys of a filter dict (beside field names)."""
OPERATORS = FIELD_OPERATORS
MAX_DEPTH = 64
"""Deepest nesting accepted in stored metadata (deeper is a ValueError)."""
MAX_FILTER_DEPTH = 8
"""Deepest nesting of a filter (fields within fields, lists within values, boolean
combinators): each level is one correlated subquery or parenthesis in SQL, and
SQLite's parser stops a little above this."""
_MAX_INT = 2**63 - 1

CompareOp = Literal["$gt", "$gte", "$lt", "$lte"]


# -- atoms: positive tests on one field's value (the field must exist) ---------------


@dataclass(frozen=True)
class Equals:
    """The field equals ``value`` (JSON equality; bool never equals a number)."""

    value: Json


@dataclass(frozen=True)
class Nested:
    """The field is an object and every condition holds inside it."""

    conditions: tuple[Cond, ...]


@dataclass(frozen=True)
class Contains:
    """The field is an array containing all (or, with ``any_``, one) of ``values``."""

    values: tuple[Json, ...]
    any_: bool


@dataclass(frozen=True)
class Compare:
    """The field and ``value`` are both numbers (not booleans) or both strings, and
    ``field <op> value`` holds (strings by code point)."""

    op: CompareOp
    value: int | float | str


@dataclass(frozen=True)
class In:
    """The field equals one of ``values`` (JSON scalars)."""

    values: tuple[Json, ...]


@dataclass(frozen=True)
class Exists:
    """The field is present (with any value, ``null`` included)."""


Atom = Equals | Nested | Contains | Compare | In | Exists


# -- conditions on an object ---------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """The field ``key`` of the enclosing object exists and satisfies ``atom``."""

    key: str
    atom: Atom


@dataclass(frozen=True)
class And:
    """Every condition holds."""

    conditions: tuple[Cond, ...]


@dataclass(frozen=True)
class Or:
    """At least one condition holds."""

    conditions: tuple[Cond, ...]


@dataclass(frozen=True)
class Not:
    """The condition fails (so a missing field satisfies ``Not(Field(...))``)."""

    condition: Cond


Cond = Field | And | Or | Not


def parse_filter(value: object, name: str = "metadata_filter") -> tuple[Cond, ...]:
    """Parse a metadata filter dict into its condition tree.

    Args:
        value: The filter, a dict mapping field names to values or operator dicts,
            optionally with ``$and`` / ``$or`` / ``$not`` keys (see ``docs/filters.md``).
        name: The argument errors name (an adapter's ``filter``), with the path
            inside it (``filter['v'].$gt``).

    Returns:
        The top-level conditions, ANDed (empty for ``{}``: no constraint).

    Raises:
        InvalidFilterError: (a ValueError naming the operator and the value) for a
            non-dict filter, a non-string field name, an unknown operator, an
            operator dict mixed with plain keys, an empty operand list, an operand of
            the wrong shape, a non-JSON value, or a filter nested deeper than
            ``MAX_FILTER_DEPTH``.
    """
    if not isinstance(value, Mapping):
        raise InvalidFilterError(f"{name} must be a dict, got {value!r}")
    tree = _parse_filter_dict(value, name, 0, top=True)
    depth = max((_depth(c) for c in tree), default=0)
    if depth > MAX_FILTER_DEPTH:
        raise InvalidFilterError(
            f"{name} nests {depth} levels; at most {MAX_FILTER_DEPTH} are supported"
        )
    return tree


def _depth(cond: Cond) -> int:
    """Subquery (or parenthesis) levels a condition needs."""
    if isinstance(cond, Not):
        return 1 + _depth(cond.condition)
    if isinstance(cond, (And, Or)):
        return 1 + max((_depth(c) for c in cond.conditions), default=0)
    atom = cond.atom
    if isinstance(atom, Nested):
        return 1 + max((_depth(c) for c in atom.conditions), default=0)
    if isinstance(atom, Contains):
        return 2
    if isinstance(atom, Equals):
        return 1 + _value_depth(atom.value)
    return 1


def _value_depth(value: Json) -> int:
    if isinstance(value, list):
        return 1 + max((_value_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_value_depth(v) for v in value.values()), default=0)
    return 0


def _check_depth(depth: int, where: str) -> None:
    if depth > MAX_DEPTH:
        raise InvalidFilterError(f"{where}: nested deeper than {MAX_DEPTH} levels")


def _parse_filter_dict(
    obj: Mapping[Any, Any], where: str, depth: int, *, top: bool
) -> tuple[Cond, ...]:
    """A filter dict (fields, and at the top level ``$and``/``$or``/``$not``)."""
    _check_depth(depth, where)
    conds: list[Cond] = []
    for key, val in obj.items():
        if not isinstance(key, str):
            raise InvalidFilterError(f"{where}: field names must be strings, got {key!r}")
        if key.startswith("$"):
            if not top or key not in FILTER_OPERATORS:
                raise InvalidFilterError(
                    f"{where}: {key!r} is not a field name; a filter's keys are fields, "
                    f"and at its top level also {list(FILTER_OPERATORS)}; field operators go "
                    f"inside a field, e.g. {{'tags': {{'$array_contains': 'x'}}}} "
                    f"(known: {list(FIELD_OPERATORS)})"
                )
            conds.append(_parse_filter_combinator(key, val, f"{where}.{key}", depth + 1))
            continue
        conds.append(_parse_field(key, val, f"{where}[{key!r}]", depth + 1))
    return tuple(conds)


def _parse_filter_combinator(op: str, operand: object, where: str, depth: int) -> Cond:
    if op == "$not":
        if not isinstance(operand, Mapping):
            raise InvalidFilterError(
                f"{where}: $not at the top level needs a filter dict, got {operand!r}"
            )
        return Not(_all(_parse_filter_dict(operand, where, depth + 1, top=True)))
    subs = _operand_list(op, operand, where)
    parsed = []
    for i, sub in enumerate(subs):
        if not isinstance(sub, Mapping):
            raise InvalidFilterError(
                f"{where}[{i}]: {op} needs a list of filter dicts, got {sub!r}"
            )
        parsed.append(_all(_parse_filter_dict(sub, f"{where}[{i}]", depth + 1, top=True)))
    return And(tuple(parsed)) if op == "$and" else Or(tuple(parsed))


def _all(conds: tuple[Cond, ...]) -> Cond:
    """One condition for an ANDed tuple (``{}`` inside a combinator: always true)."""
    return conds[0] if len(conds) == 1 else And(conds)


def _operand_list(op: str, operand: object, where: str) -> list[Any]:
    if not isinstance(operand, (list, tuple)) or not operand:
        raise InvalidFilterError(f"{where}: {op} needs a non-empty list, got {operand!r}")
    return list(operand)


def _parse_field(key: str, val: object, where: str, depth: int) -> Cond:
    """The condition "field ``key`` satisfies ``val``" (a value or an operator dict)."""
    _check_depth(depth, where)
    if isinstance(val, Mapping):
        op_keys = [k for k in val if isinstance(k, str) and k.startswith("$")]
        if not op_keys:
            return Field(key, Nested(_parse_filter_dict(val, where, depth + 1, top=False)))
        if len(op_keys) != len(val):
            raise InvalidFilterError(
                f"{where}: an operator dict may hold only operators, got keys {list(val)!r}"
            )
        conds = [_parse_operator(key, op, val[op], f"{where}.{op}", depth) for op in op_keys]
        return _all(tuple(conds))
    return Field(key, Equals(check_json(val, where, depth)))


def _parse_operator(key: str, op: str, operand: object, where: str, depth: int) -> Cond:
    if op == "$not":
        return Not(_parse_field(key, operand, where, depth + 1))
    if op in ("$and", "$or"):
        subs = _operand_list(op, operand, where)
        conds = tuple(_parse_field(key, s, f"{where}[{i}]", depth + 1) for i, s in enumerate(subs))
        return And(conds) if op == "$and" else Or(conds)
    if op == "$eq":
        return Field(key, Equals(check_json(operand, where, depth)))
    if op == "$ne":
        return Not(Field(key, Equals(check_json(operand, where, depth))))
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if isinstance(operand, bool) or not isinstance(operand, (int, float, str)):
            raise InvalidFilterError(
                f"{where}: {op} compares with a number or a string, got {operand!r} "
                "(booleans compare only with $eq and $ne)"
            )
        value = check_json(operand, where)
        return Field(key, Compare(op, value))  # type: ignore[arg-type]
    if op in ("$in", "$nin"):
        values = tuple(_scalar(v, where, op) for v in _operand_list(op, operand, where))
        atom = Field(key, In(values))
        return atom if op == "$in" else Not(atom)
    if op == "$exists":
        if not isinstance(operand, bool):
            raise InvalidFilterError(f"{where}: $exists takes true or false, got {operand!r}")
        return Field(key, Exists()) if operand else Not(Field(key, Exists()))
    if op == "$array_contains":
        if isinstance(operand, (list, tuple)):
            if not operand:
                raise InvalidFilterError(
                    f"{where}: $array_contains needs a scalar or a non-empty list, got {operand!r}"
                )
            return Field(key, Contains(tuple(_scalar(v, where, op) for v in operand), any_=False))
        return Field(key, Contains((_scalar(operand, where, op),), any_=False))
    if op == "$array_contains_any":
        values = tuple(_scalar(v, where, op) for v in _operand_list(op, operand, where))
        return Field(key, Contains(values, any_=True))
    raise InvalidFilterError(f"{where}: unknown operator {op!r} (known: {list(FIELD_OPERATORS)})")


def _scalar(value: object, where: str, op: str) -> Json:
    if value is not None and not isinstance(value, (str, bool, int, float)):
        raise InvalidFilterError(f"{where}: {op} operands must be JSON scalars, got {value!r}")
    return check_json(value, where)


def is_plain_json(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is made only of the built-in JSON types that ``check_json``
    accepts unchanged: ``dict`` with ``str`` keys, ``list``/``tuple``, ``str``, ``bool``,
    ``None``, ``int`` within 64 bits, finite ``float``, nested at most ``MAX_DEPTH``.
    A fast check (exact types, no copy, leaves checked inline); False means "ask
    ``check_json``", which names the problem or normalises the value. Strings are
    not scanned here.
    """
    t = type(value)
    if t is dict:
        if depth >= MAX_DEPTH:
            return False
        items: Any = value.items()  # type: ignore[attr-defined]
        for k, v in items:
            if type(k) is not str:
                return False
            tv = type(v)  # strings, None and lists of strings inline: most metadata
            if tv is str or v is None:
                continue
            if tv is list and depth + 1 < MAX_DEPTH:
                for m in v:
                    if type(m) is not str and not _plain_item(m, depth + 1):
                        return False
            elif not _plain_item(v, depth):
                return False
        return True
    if t is list or t is tuple:
        if depth >= MAX_DEPTH:
            return False
        members: Any = value
        for v in members:  # noqa: SIM110 - a loop: all() adds a generator frame
            if type(v) is not str and not _plain_item(v, depth):
                return False
        return True
    return _plain_item(value, depth - 1)


def _plain_item(v: object, depth: int) -> bool:
    """``is_plain_json`` of a member ``v`` of a container at ``depth``."""
    t = type(v)
    if t is str or t is bool or v is None:
        return True
    if t is int:
        return -_MAX_INT - 1 <= v <= _MAX_INT  # type: ignore[operator]
    if t is float:
        return math.isfinite(v)  # type: ignore[arg-type]
    if t is dict or t is list or t is tuple:
        return is_plain_json(v, depth + 1)
    return False


def check_json(value: object, where: str, depth: int = 0) -> Json:
    """Return ``value`` if it is JSON-compatible, else raise ``InvalidFilterError``.

    Tuples are accepted as lists. Floats must be finite, ints fit in 64 bits, strings
    be valid Unicode (no lone surrogates), and nesting stay within ``MAX_DEPTH``.
    """
    _check_depth(depth, where)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidFilterError(f"{where}: {value!r} is not valid Unicode text") from None
        return value
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -_MAX_INT - 1 <= value <= _MAX_INT:
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


def render_sql(cond: Cond, field: Callable[[Field], str], *, true: str, false: str) -> str:
    """The SQL text of a condition, for every back end's compiler: ``NOT``/``AND``/``OR``
    around ``field(f)``, the back end's SQL for one field condition, called in text
    order (so bound parameters can be collected as they are written). ``true`` /
    ``false`` are the back end's constant conditions, for an empty ``And`` / ``Or``."""
    if isinstance(cond, Not):
        return f"NOT ({render_sql(cond.condition, field, true=true, false=false)})"
    if isinstance(cond, (And, Or)):
        if not cond.conditions:
            return true if isinstance(cond, And) else false
        joiner = " AND " if isinstance(cond, And) else " OR "
        parts = [render_sql(c, field, true=true, false=false) for c in cond.conditions]
        return join_sql(parts, joiner)
    return field(cond)


JOIN_WIDTH = 64
"""Most terms ``join_sql`` chains without parentheses."""


def join_sql(parts: list[str], joiner: str, *, bare: bool = False) -> str:
    """``parts`` joined by ``joiner`` (``" AND "`` / ``" OR "``), in parentheses, and in
    nested groups of at most ``JOIN_WIDTH`` terms: a flat chain of n terms is an
    expression tree n deep, and SQLite refuses trees deeper than 1,000 ("Expression
    tree is too large"); grouped, 100,000 terms are three levels of parentheses
    and under 200 deep. The text keeps the order of ``parts`` (bound parameters are
    collected in that order). ``bare``: no parentheses around a chain short enough
    to stay flat (the top level of a WHERE clause)."""
    if len(parts) <= JOIN_WIDTH:
        return joiner.join(parts) if bare else "(" + joiner.join(parts) + ")"
    size = -(-len(parts) // JOIN_WIDTH)  # ceil: at most JOIN_WIDTH groups
    groups = [join_sql(parts[i : i + size], joiner) for i in range(0, len(parts), size)]
    return "(" + joiner.join(groups) + ")"


def check_width(params: Sized, limit: int, database: str) -> None:
    """Raise when a compiled filter binds more than ``limit`` values, the most that
    fit, beside the rest of a query, in one statement of ``database``.

    Raises:
        InvalidFilterError: (an ``InvalidArgumentError``) naming ``metadata_filter``
            and the limit (docs/filters.md#long-lists).
    """
    if len(params) > limit:
        raise InvalidFilterError(
            f"metadata_filter binds {len(params):,} values, but at most {limit:,} fit in one "
            f"{database} query (each field condition binds one to three; a $in, $nin or "
            "$array_contains_any list binds at most two whatever its length): put the "
            "alternatives of one field in $in, or split the filter"
        )


# -- the reference evaluator -----------------------------------------------------------


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


def is_number(value: Json) -> bool:
    """A JSON number (``bool`` is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def compare(value: Json, op: CompareOp, operand: int | float | str) -> bool:
    """``value <op> operand`` under the filter's typing: numbers with numbers, strings
    with strings (by code point); any other pair is false."""
    if is_number(operand):
        if not is_number(value):
            return False
    elif not isinstance(value, str):
        return False
    if op == "$gt":
        return bool(value > operand)
    if op == "$gte":
        return bool(value >= operand)
    if op == "$lt":
        return bool(value < operand)
    return bool(value <= operand)


def matches(metadata: Mapping[str, Json] | None, conditions: tuple[Cond, ...]) -> bool:
    """Reference evaluator: does ``metadata`` satisfy all ``conditions``?

    ``None`` metadata behaves as an object with no fields.
    """
    obj = metadata if metadata is not None else {}
    return all(holds(obj, c) for c in conditions)


def holds(obj: Mapping[str, Json], cond: Cond) -> bool:
    """Does the object ``obj`` satisfy one condition?"""
    if isinstance(cond, Not):
        return not holds(obj, cond.condition)
    if isinstance(cond, And):
        return all(holds(obj, c) for c in cond.conditions)
    if isinstance(cond, Or):
        return any(holds(obj, c) for c in cond.conditions)
    return cond.key in obj and _atom_holds(obj[cond.key], cond.atom)


def _atom_holds(value: Json, atom: Atom) -> bool:
    if isinstance(atom, Equals):
        return json_equal(value, atom.value)
    if isinstance(atom, Nested):
        return isinstance(value, dict) and all(holds(value, c) for c in atom.conditions)
    if isinstance(atom, Contains):
        if not isinstance(value, list):
            return False
        found = [any(json_equal(item, v) for item in value) for v in atom.values]
        return any(found) if atom.any_ else all(found)
    if isinstance(atom, Compare):
        return compare(value, atom.op, atom.value)
    if isinstance(atom, In):
        return any(json_equal(value, v) for v in atom.values)
    return True  # Exists: the caller checked the key


__all__ = [
    "FIELD_OPERATORS",
    "FILTER_OPERATORS",
    "MAX_FILTER_DEPTH",
    "And",
    "Atom",
    "Compare",
    "Cond",
    "Contains",
    "Equals",
    "Exists",
    "Field",
    "In",
    "InvalidFilterError",
    "Json",
    "Nested",
    "Not",
    "Or",
    "check_json",
    "check_width",
    "compare",
    "holds",
    "join_sql",
    "json_equal",
    "matches",
    "parse_filter",
    "render_sql",
]
