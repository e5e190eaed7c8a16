"""Compile a parsed metadata filter (``filters.py``) to Oracle SQL/JSON (docs/filters.md).

Values never reach the SQL text: scalars are bound through ``JSON_EXISTS ... PASSING
:f0 AS "v0"`` (docs/oracle.md#filters-in-sql), lists through ``JSON(:f0)``; ``true``, ``false``
and ``null`` are path literals because PASSING takes no BOOLEAN. Keys must reach the
path text, so each is double-quoted (``$."a b"``), any ``'`` doubled for the SQL
literal, and keys holding ``"``, ``\\`` or control characters are rejected.

Semantics (docs/filters.md, docs/oracle.md#filters-in-sql):

* Scalars match in ``strict`` mode, so an array is never unwrapped: ``{"tags": "a"}``
  does not match ``["a", "b"]``, and a missing key is false.
* Lists match exactly (order and length) with ``JSON_EQUAL`` over ``JSON_QUERY``.
* ``$array_contains``/``$array_contains_any`` test ``type() == "array"`` and an
  element equal to each value (lax ``[*]``; ``type()`` does not unwrap).
* Nested dicts require an object and apply their conditions below its path.
* ``$gt``/``$gte``/``$lt``/``$lte`` test the field's ``type()`` first (``"number"``,
  ``"double"`` or ``"float"`` for a number operand, ``"string"`` for a string), so a
  value of another type never matches and is never cast.
* ``$in`` is an ``||`` of equalities in one ``JSON_EXISTS``; ``$exists`` is
  ``JSON_EXISTS`` of the strict path (true for a JSON ``null`` too). A ``$in`` list
  longer than ``INLINE`` binds its strings and its numbers each as one JSON array
  read by ``JSON_TABLE`` (``EXISTS (... WHERE jt.v = JSON_VALUE(...))`` after a
  ``type()`` test), so any length is a few binds (Oracle takes at most 65,535 per
  statement); the values an SQL column cannot hold exactly (empty strings, which
  Oracle reads as NULL, strings over 4,000 bytes, numbers past 1e38) and ``true``,
  ``false``, ``null`` stay path equalities.
* ``$not``, ``$ne``, ``$nin`` and ``$exists: false`` are SQL ``NOT`` of the positive
  condition; the positive forms are never NULL, so a missing field satisfies the
  negation. ``$and``/``$or`` are SQL ``AND``/``OR``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from oam_core.filters import (
    Atom,
    Compare,
    Cond,
    Contains,
    Equals,
    Exists,
    Field,
    In,
    InvalidFilterError,
    Json,
    Nested,
    check_width,
    is_number,
    join_sql,
    render_sql,
)
from oam_core.store.oracle.stmt import BindType

_BAD_KEY = re.compile(r'["\\\x00-\x1f\x7f]')
_PATH_OP = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_NUMBER_TYPES = ("number", "double", "float")
INLINE = 16
"""Longest ``$in`` list written as path equalities; longer ones go through JSON_TABLE."""
MAX_BINDS = 65_000
"""Most binds a filter may use (Oracle takes 65,535 per statement, with the query's own)."""
_MAX_TEXT = 4000
_MAX_NUMBER = 1e38


class OracleFilterCompiler:
    """Turns a filter tree into SQL over a JSON column plus named binds ``f0, f1, ...``.

    One compiler may compile the same tree for several aliases (the binds are shared
    by name), see ``compile``.
    """

    def __init__(self, prefix: str = "f") -> None:
        self.prefix = prefix
        self.binds: dict[str, Any] = {}
        self.types: dict[str, BindType] = {}
        """Declared bind types: ``CLOB`` for the JSON arrays of long ``$in`` lists."""

    def compile(self, column: str, conditions: tuple[Cond, ...]) -> str:
        """Return an SQL condition true where ``column`` satisfies ``conditions``.

        Raises:
            InvalidFilterError: (a ValueError) for a key the path syntax cannot hold.
        """
        if not conditions:
            return "1 = 1"
        self._column = column
        self._n = 0
        text = join_sql([self._cond((), c) for c in conditions], " AND ", bare=True)
        check_width(self.binds, MAX_BINDS, "Oracle")
        return text

    def _bind(self, value: Any) -> str:
        name = f"{self.prefix}{self._n}"
        self._n += 1
        if name in self.binds and self.binds[name] != value:
            raise AssertionError("a shared compiler must compile the same tree")
        self.binds[name] = value
        return name

    def _cond(self, path: tuple[str, ...], cond: Cond) -> str:
        def field(f: Field) -> str:
            return self._positive((*path, _key(f.key)), f.atom)

        return render_sql(cond, field, true="1 = 1", false="1 = 0")

    def _positive(self, key_path: tuple[str, ...], atom: Atom) -> str:
        at = "@" + "".join(f".{k}" for k in key_path)
        if isinstance(atom, Nested):
            parts = [self._exists(f'strict $?({at}.type() == "object")')]
            parts += [self._cond(key_path, c) for c in atom.conditions]
            return "(" + " AND ".join(parts) + ")"
        if isinstance(atom, Contains):
            tests, passing = self._equalities(f"{at}[*]", atom.values)
            joined = (" || " if atom.any_ else " && ").join(f"({t})" for t in tests)
            return self._exists(f'lax $?({at}.type() == "array" && ({joined}))', passing)
        if isinstance(atom, In) and len(atom.values) > INLINE:
            return self._in_list(key_path, atom.values)
        if isinstance(atom, In):
            tests, passing = self._equalities(at, atom.values)
            joined = " || ".join(f"({t})" for t in tests)
            return self._exists(f"strict $?({joined})", passing)
        if isinstance(atom, Compare):
            lit, bind = self._operand(atom.value)
            names = ("string",) if isinstance(atom.value, str) else _NUMBER_TYPES
            typed = " || ".join(f'{at}.type() == "{t}"' for t in names)
            test = f"({typed}) && {at} {_PATH_OP[atom.op]} {lit}"
            return self._exists(f"strict $?({test})", [bind] if bind else [])
        if isinstance(atom, Exists):
            return self._exists("strict $" + "".join(f".{k}" for k in key_path))
        if isinstance(atom, Equals):
            value = atom.value
            if isinstance(value, (list, dict)):
                name = self._bind(json.dumps(value, ensure_ascii=False, allow_nan=False))
                path = "strict $" + "".join(f".{k}" for k in key_path)
                return (
                    f"({self._exists(path)} AND JSON_EQUAL("
                    f"JSON_QUERY({self._column}, '{_sql(path)}'), JSON(:{name})))"
                )
            lit, bind = self._operand(value)
            return self._exists(f"strict $?({at} == {lit})", [bind] if bind else [])
        raise AssertionError(f"unexpected atom {atom!r}")

    def _in_list(self, key_path: tuple[str, ...], values: tuple[Json, ...]) -> str:
        """The field equals one of ``values``: strings and numbers each bound as one
        JSON array (``JSON_TABLE`` rows compared with ``JSON_VALUE`` of the field,
        whose ``type()`` is tested first, so ``"1"`` never meets ``1``); the rest as
        path equalities. Never NULL, so ``NOT`` of it holds for a missing field."""
        at = "@" + "".join(f".{k}" for k in key_path)
        path = _sql("strict $" + "".join(f".{k}" for k in key_path))
        strings = [v for v in values if _listed_string(v)]
        numbers = [v for v in values if _listed_number(v)]
        rest = [v for v in values if not _listed_string(v) and not _listed_number(v)]
        parts = []
        for members, names, sql_type in (
            (strings, ("string",), f"VARCHAR2({_MAX_TEXT})"),
            (numbers, _NUMBER_TYPES, "NUMBER"),
        ):
            if not members:
                continue
            typed = " || ".join(f'{at}.type() == "{t}"' for t in names)
            head = self._exists(f"strict $?({typed})")
            name = self._bind(json.dumps(members, ensure_ascii=False, allow_nan=False))
            self.types[name] = "CLOB"
            jt = f"jt_{name}"
            parts.append(
                f"({head} AND EXISTS (SELECT 1 FROM JSON_TABLE(:{name}, '$[*]' "
                f"COLUMNS (v {sql_type} PATH '$')) {jt} WHERE {jt}.v = JSON_VALUE("
                f"{self._column}, '{path}' RETURNING {sql_type} NULL ON ERROR)))"
            )
        if rest:
            tests, passing = self._equalities(at, tuple(rest))
            joined = " || ".join(f"({t})" for t in tests)
            parts.append(self._exists(f"strict $?({joined})", passing))
        return join_sql(parts, " OR ")

    def _equalities(self, at: str, values: tuple[Json, ...]) -> tuple[list[str], list[str]]:
        """``at == v`` path tests for each value, and the binds they pass."""
        tests: list[str] = []
        passing: list[str] = []
        for v in values:
            lit, bind = self._operand(v)
            if bind is not None:
                passing.append(bind)
            tests.append(f"{at} == {lit}")
        return tests, passing

    def _operand(self, value: Json) -> tuple[str, str | None]:
        """A path operand: a literal for true/false/null, else ``$vN`` bound by PASSING."""
        if value is None:
            return "null", None
        if isinstance(value, bool):
            return ("true" if value else "false"), None
        if isinstance(value, (int, float, str)):
            name = self._bind(value)
            return f"$v{name[len(self.prefix) :]}", name
        raise AssertionError(f"unexpected operand {value!r}")

    def _exists(self, path: str, binds: list[str] | None = None) -> str:
        passing = ""
        if binds:
            passing = " PASSING " + ", ".join(f':{b} AS "v{b[len(self.prefix) :]}"' for b in binds)
        return f"JSON_EXISTS({self._column}, '{_sql(path)}'{passing})"


def _listed_string(value: Json) -> bool:
    """A string a ``VARCHAR2`` column holds as it is (Oracle reads ``''`` as NULL)."""
    return isinstance(value, str) and 0 < len(value.encode()) <= _MAX_TEXT


def _listed_number(value: Json) -> bool:
    """A number an Oracle ``NUMBER`` holds (up to 38 digits, below 1e126)."""
    return is_number(value) and abs(value) < _MAX_NUMBER


def _key(key: str) -> str:
    if _BAD_KEY.search(key):
        raise InvalidFilterError(
            f"metadata_filter key {key!r}: the Oracle store cannot filter on keys holding "
            "a double quote, a backslash or control characters"
        )
    return f'"{key}"'


def _sql(path: str) -> str:
    """The path as the body of an SQL string literal (``'`` doubled)."""
    return path.replace("'", "''")
