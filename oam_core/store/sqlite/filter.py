"""Compile a parsed metadata filter (``oam_core/filters.py``) to SQLite JSON SQL
(docs/filters.md).

Every field name and value is a bound parameter: the generated SQL text contains only
fixed keywords and generated aliases, so no filter key or value can reach it. A field
is read one of two ways, with the same result:

* by JSON path (``json_type`` / ``json_extract`` with a bound path ``$."key"``) when
  every key on the way is plain ASCII (``PATH_KEY``): one lookup per row instead of a
  ``json_each`` subquery, about twice as fast over a large table. A test for a plain
  string (equality, ``$in``, array membership) first looks for the string in the
  JSON text (``instr``), so rows without it are not parsed (``_needles``). SQLite matches a
  quoted path label against the key as the JSON text spells it, so a key a serializer
  might escape (non-ASCII, ``"``, ``\\``, control characters) is not read this way;
* by ``json_each`` rows compared on ``key`` otherwise (any key).

Either way the ``type`` of the value keeps ``true`` apart from ``1`` and a string
apart from a number, and a missing key makes the field's condition false (never
NULL, so ``NOT`` of it is true, as the reference evaluator says).

A ``$in``/``$nin``/``$array_contains_any`` list longer than ``INLINE`` values is bound
as JSON arrays, one for its strings and one for its numbers
(``value IN (SELECT value FROM json_each(?))``, which SQLite reads once into a
temporary index), so a list of any length is two parameters and one lookup per row;
shorter lists stay an ``OR`` of equalities, whose strings first go through the
``instr`` test. Long ``AND``/``OR`` chains are grouped (``filters.join_sql``) so that
SQLite's expression depth limit (1,000) is not reached.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from oam_core.filters import (
    Atom,
    Compare,
    Cond,
    Contains,
    Equals,
    Exists,
    Field,
    In,
    Json,
    Nested,
    is_number,
    join_sql,
    render_sql,
)
from oam_core.store.sql.filter import FilterCompiler

_SQL_OP = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
INLINE = 16
"""Longest value list compiled as an ``OR`` of equalities; longer ones are bound as
JSON arrays."""
PATH_KEY = re.compile(r"[A-Za-z0-9_ .:'@#%+$-]+")
"""Keys read by JSON path: printable ASCII that no JSON serializer escapes, without
``"`` (a quoted path label cannot hold it); ``$`` included (``$."$message"."name"``,
the participant name a HYBRID search's speaker list filters on)."""


@dataclass(frozen=True)
class _Each:
    """A ``json_each`` row (alias ``a``): its ``type``, ``atom`` and ``value`` columns."""

    a: str


@dataclass(frozen=True)
class _Path:
    """The value at JSON path ``path`` of the JSON text column ``column`` (NULL when
    missing)."""

    column: str
    path: str


_Value = _Each | _Path
_Object = str | _Path
"""The object a condition tests: SQL text of a JSON object (``json_each`` mode), or a
path to it."""


class SQLiteFilterCompiler(FilterCompiler):
    """Turns a filter tree into SQL over a JSON text column (``compile``); its
    parameters are in ``params``.

    Args:
        paths: Read fields with plain keys by JSON path (the default); False reads
            every field through ``json_each`` (the two agree; tests compare them).
        inline: Longest value list written as an ``OR`` of equalities (``INLINE``);
            longer ones are bound as JSON arrays (the two agree; tests compare them).
    """

    true = "1"
    false = "0"

    def __init__(self, *, paths: bool = True, inline: int = INLINE) -> None:
        super().__init__()
        self.paths = paths
        self.inline = inline

    def compile(self, column: str, conditions: tuple[Cond, ...]) -> str:
        if not conditions:
            return self.true
        root: _Object = _Path(column, "$") if self.paths else column
        return join_sql([self.condition(root, c) for c in conditions], " AND ", bare=True)

    def condition(self, parent: _Object, cond: Cond) -> str:
        return render_sql(cond, lambda f: self.field(parent, f), true=self.true, false=self.false)

    def field(self, parent: _Object, field: Field) -> str:
        if isinstance(parent, _Path):
            if PATH_KEY.fullmatch(field.key):
                value = _Path(parent.column, f'{parent.path}."{field.key}"')
                needles = self._needles(parent.column, field.atom)
                match = self._match(value, field.atom)
                return f"({needles} AND {match})" if needles else match
            if parent.path == "$":
                parent = parent.column
            else:  # a key that cannot be a path label, inside a path-read object
                self.params.append(parent.path)
                parent = f"json_extract({parent.column}, ?)"
        a = self.alias("_j")
        self.params.append(field.key)
        return (
            f"EXISTS (SELECT 1 FROM json_each({parent}) AS {a} "
            f"WHERE {a}.key = ? AND {self._match(_Each(a), field.atom)})"
        )

    def _needles(self, column: str, atom: Atom) -> str:
        """A substring test of the JSON text that every row matching ``atom`` passes
        (empty: none), checked before the row is parsed: a string made only of
        ``PATH_KEY`` characters is written verbatim by every JSON serializer, so a
        text without it cannot hold that string. Equivalent to the exact test it
        guards, so it holds under ``NOT`` too."""
        if isinstance(atom, Equals):
            values: tuple[Json, ...] = (atom.value,)
        elif isinstance(atom, (In, Contains)):
            values = atom.values
        else:
            return ""
        if len(values) > self.inline:
            return ""
        if not all(isinstance(v, str) and PATH_KEY.fullmatch(v) for v in values):
            return ""
        self.params.extend(values)
        joiner = " AND " if isinstance(atom, Contains) and not atom.any_ else " OR "
        return join_sql([f"instr({column}, ?) > 0" for _ in values], joiner)

    # -- reading a value: a json_each row's columns, or path functions --------------

    def _type(self, v: _Value) -> str:
        """SQL of the value's JSON type name (NULL when a path is missing)."""
        if isinstance(v, _Each):
            return f"{v.a}.type"
        self.params.append(v.path)
        return f"json_type({v.column}, ?)"

    def _is(self, v: _Value, *types: str) -> str:
        """True (1) when the value has one of ``types``, else 0 (never NULL)."""
        t = self._type(v)
        if len(types) == 1:
            return f"{t} IS '{types[0]}'"
        names = ", ".join(f"'{n}'" for n in types)
        return f"coalesce({t}, '') IN ({names})" if isinstance(v, _Path) else f"{t} IN ({names})"

    def _atom(self, v: _Value) -> str:
        """SQL of a scalar value (text, number; true is 1)."""
        if isinstance(v, _Each):
            return f"{v.a}.atom"
        self.params.append(v.path)
        return f"json_extract({v.column}, ?)"

    def _members(self, v: _Value) -> str:
        """A ``json_each`` table of the value's members."""
        if isinstance(v, _Each):
            return f"json_each({v.a}.value)"
        self.params.append(v.path)
        return f"json_each({v.column}, ?)"

    def _length(self, v: _Value) -> str:
        if isinstance(v, _Each):
            return f"json_array_length({v.a}.value)"
        self.params.append(v.path)
        return f"json_array_length({v.column}, ?)"

    # -- atoms ----------------------------------------------------------------------

    def _match(self, v: _Value, atom: Atom) -> str:
        if isinstance(atom, Equals):
            return self._equals(v, atom.value)
        if isinstance(atom, Nested):
            inner_parent: _Object = v if isinstance(v, _Path) else f"{v.a}.value"
            head = self._is(v, "object")  # first: parameters go in text order
            inner = [self.condition(inner_parent, c) for c in atom.conditions]
            return join_sql([head, *inner], " AND ")
        if isinstance(atom, Contains):
            head = self._is(v, "array")
            if atom.any_ and len(atom.values) > self.inline:
                e = self.alias("_j")
                members = self._members(v)
                found = self._in_list(_Each(e), atom.values)
                return f"({head} AND EXISTS (SELECT 1 FROM {members} AS {e} WHERE {found}))"
            parts = []
            for value in atom.values:
                e = self.alias("_j")
                parts.append(
                    f"EXISTS (SELECT 1 FROM {self._members(v)} AS {e} "
                    f"WHERE {self._equals(_Each(e), value)})"
                )
            joined = join_sql(parts, " OR " if atom.any_ else " AND ")
            return f"({head} AND {joined})"
        if isinstance(atom, Compare):
            # TEXT compares with the BINARY collation: UTF-8 byte order, which is
            # code point order, as Python's str comparison.
            if isinstance(atom.value, str):
                head = self._is(v, "text")
            else:
                head = self._is(v, "integer", "real")
            value = self._atom(v)
            self.params.append(atom.value)
            return f"({head} AND {value} {_SQL_OP[atom.op]} ?)"
        if isinstance(atom, In):
            if len(atom.values) > self.inline:
                return self._in_list(v, atom.values)
            return join_sql([self._equals(v, value) for value in atom.values], " OR ")
        if isinstance(atom, Exists):
            return f"{self._type(v)} IS NOT NULL" if isinstance(v, _Path) else "1"
        raise AssertionError(f"unexpected atom {atom!r}")

    def _in_list(self, v: _Value, values: tuple[Json, ...]) -> str:
        """True (1) when the value equals one of the scalars ``values``, else 0: the
        strings and the numbers each bound as one JSON array, read by ``json_each``
        (a number's ``atom`` is its value, so ``1`` meets ``1.0``; the type test keeps
        text apart from numbers and from arrays or objects)."""
        strings = [x for x in values if isinstance(x, str)]
        numbers = [x for x in values if is_number(x)]
        parts = []
        for kinds, members in ((("text",), strings), (("integer", "real"), numbers)):
            if members:
                head = self._is(v, *kinds)
                atom = self._atom(v)
                self.params.append(json.dumps(members, ensure_ascii=False, allow_nan=False))
                parts.append(f"({head} AND {atom} IN (SELECT value FROM json_each(?)))")
        for literal in (True, False, None):
            if any(x is literal for x in values):
                parts.append(self._equals(v, literal))
        return join_sql(parts, " OR ")

    def _equals(self, v: _Value, value: Json) -> str:
        """True (1) when the value equals ``value``, else 0 (never NULL)."""
        if value is None:
            return self._is(v, "null")
        if isinstance(value, bool):
            return self._is(v, "true" if value else "false")
        if isinstance(value, (int, float)):
            head = self._is(v, "integer", "real")
            atom = self._atom(v)
            self.params.append(value)
            return f"({head} AND {atom} = ?)"
        if isinstance(value, str):
            if isinstance(v, _Path) and value[:1] not in ("[", "{"):
                # One lookup: json_extract gives a string as TEXT, a number or a
                # boolean as a number (never equal to TEXT), null or a missing key as
                # NULL, and an array or object as JSON text starting with [ or {.
                atom = self._atom(v)
                self.params.append(value)
                return f"{atom} IS ?"
            head = self._is(v, "text")
            atom = self._atom(v)
            self.params.append(value)
            return f"({head} AND {atom} = ?)"
        if isinstance(value, list):
            parts = [self._is(v, "array")]
            parts.append(f"{self._length(v)} = ?")
            self.params.append(len(value))
            for i, item in enumerate(value):
                e = self.alias("_j")
                members = self._members(v)
                self.params.append(i)
                parts.append(
                    f"EXISTS (SELECT 1 FROM {members} AS {e} "
                    f"WHERE {e}.key = ? AND {self._equals(_Each(e), item)})"
                )
            return join_sql(parts, " AND ")
        if isinstance(value, dict):
            parts = [self._is(v, "object")]
            parts.append(f"(SELECT count(*) FROM {self._members(v)}) = ?")
            self.params.append(len(value))
            for key, item in value.items():
                e = self.alias("_j")
                members = self._members(v)
                self.params.append(key)
                parts.append(
                    f"EXISTS (SELECT 1 FROM {members} AS {e} "
                    f"WHERE {e}.key = ? AND {self._equals(_Each(e), item)})"
                )
            return join_sql(parts, " AND ")
        raise AssertionError(f"unexpected value {value!r}")
