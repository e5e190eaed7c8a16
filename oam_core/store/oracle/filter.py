"""Compile a parsed metadata filter (``filters.py``) to Oracle SQL/JSON (SPEC §4).

Values never reach the SQL text: scalars are bound through ``JSON_EXISTS ... PASSING
:f0 AS "v0"`` (ORACLE_NOTES §5 [JEX]), lists through ``JSON(:f0)``; ``true``, ``false``
and ``null`` are path literals because PASSING takes no BOOLEAN. Keys must reach the
path text, so each is double-quoted (``$."a b"``), any ``'`` doubled for the SQL
literal, and keys holding ``"``, ``\\`` or control characters are rejected.

Semantics (SPEC §4; ORACLE_NOTES §10 pitfalls 2 and 4):

* Scalars match in ``strict`` mode, so an array is never unwrapped: ``{"tags": "a"}``
  does not match ``["a", "b"]``, and a missing key is false.
* Lists match exactly (order and length) with ``JSON_EQUAL`` over ``JSON_QUERY``.
* ``$array_contains``/``$array_contains_any`` test ``type() == "array"`` and an
  element equal to each value (lax ``[*]``; ``type()`` does not unwrap).
* Nested dicts require an object and apply their conditions below its path.
* ``$not`` is SQL ``NOT`` of the positive condition; the positive forms are never
  NULL, so a missing field satisfies the negation.
"""

from __future__ import annotations

import json
import re
from typing import Any

from oam_core.store.filters import (
    AllOf,
    Contains,
    Equals,
    Expr,
    Field,
    InvalidFilterError,
    Json,
    Nested,
    Not,
)

_BAD_KEY = re.compile(r'["\\\x00-\x1f\x7f]')


class OracleFilterCompiler:
    """Turns a filter tree into SQL over a JSON column plus named binds ``f0, f1, ...``.

    One compiler may compile the same tree for several aliases (the binds are shared
    by name), see ``compile``.
    """

    def __init__(self, prefix: str = "f") -> None:
        self.prefix = prefix
        self.binds: dict[str, Any] = {}

    def compile(self, column: str, conditions: tuple[Field, ...]) -> str:
        """Return an SQL condition true where ``column`` satisfies ``conditions``.

        Raises:
            InvalidFilterError: (a ValueError) for a key the path syntax cannot hold.
        """
        if not conditions:
            return "1 = 1"
        self._column = column
        self._n = 0
        return " AND ".join(self._field((), f) for f in conditions)

    def _bind(self, value: Any) -> str:
        name = f"{self.prefix}{self._n}"
        self._n += 1
        if name in self.binds and self.binds[name] != value:
            raise AssertionError("a shared compiler must compile the same tree")
        self.binds[name] = value
        return name

    def _field(self, path: tuple[str, ...], field: Field) -> str:
        key_path = (*path, _key(field.key))
        expr = field.expr
        if isinstance(expr, Not):
            return f"NOT ({self._field(path, Field(field.key, expr.expr))})"
        if isinstance(expr, AllOf):
            return (
                "(" + " AND ".join(self._field(path, Field(field.key, e)) for e in expr.exprs) + ")"
            )
        return self._positive(key_path, expr)

    def _positive(self, key_path: tuple[str, ...], expr: Expr) -> str:
        at = "@" + "".join(f".{k}" for k in key_path)
        if isinstance(expr, Nested):
            parts = [self._exists(f'strict $?({at}.type() == "object")')]
            parts += [self._field(key_path, f) for f in expr.conditions]
            return "(" + " AND ".join(parts) + ")"
        if isinstance(expr, Contains):
            tests = []
            passing: list[str] = []
            for v in expr.values:
                lit, bind = self._operand(v)
                if bind is not None:
                    passing.append(bind)
                tests.append(f"{at}[*] == {lit}")
            joined = (" || " if expr.any_ else " && ").join(f"({t})" for t in tests)
            return self._exists(f'lax $?({at}.type() == "array" && ({joined}))', passing)
        if isinstance(expr, Equals):
            value = expr.value
            if isinstance(value, (list, dict)):
                name = self._bind(json.dumps(value, ensure_ascii=False, allow_nan=False))
                path = "strict $" + "".join(f".{k}" for k in key_path)
                return (
                    f"({self._exists(path)} AND JSON_EQUAL("
                    f"JSON_QUERY({self._column}, '{_sql(path)}'), JSON(:{name})))"
                )
            lit, bind = self._operand(value)
            return self._exists(f"strict $?({at} == {lit})", [bind] if bind else [])
        raise AssertionError(f"unexpected expression {expr!r}")

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
