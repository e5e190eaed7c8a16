"""Compile a parsed metadata filter (``store/filters.py``) to SQLite JSON SQL
(docs/filters.md).

Every field name and value is a bound parameter: the generated SQL text contains only
fixed keywords and generated aliases, so no filter key or value can reach it. Fields
are addressed with ``json_each`` rows compared on ``key``, which works for any key
(SQLite JSON paths cannot quote every key), and the ``type`` column keeps ``true``
apart from ``1``.
"""

from __future__ import annotations

from oam_core.store.filters import Atom, Compare, Contains, Equals, Exists, Field, In, Json, Nested
from oam_core.store.sql.filter import FilterCompiler

_SQL_OP = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class SQLiteFilterCompiler(FilterCompiler):
    """Turns a filter tree into SQL over a JSON text column (``compile``); its
    parameters are in ``params``."""

    true = "1"
    false = "0"

    def _alias(self) -> str:
        return self.alias("_j")

    def field(self, parent: str, field: Field) -> str:
        a = self._alias()
        self.params.append(field.key)
        return (
            f"EXISTS (SELECT 1 FROM json_each({parent}) AS {a} "
            f"WHERE {a}.key = ? AND {self._match(a, field.atom)})"
        )

    def _match(self, a: str, atom: Atom) -> str:
        if isinstance(atom, Equals):
            return self._equals(a, atom.value)
        if isinstance(atom, Nested):
            inner = [self.condition(f"{a}.value", c) for c in atom.conditions]
            return " AND ".join([f"{a}.type = 'object'", *inner])
        if isinstance(atom, Contains):
            parts = []
            for v in atom.values:
                e = self._alias()
                parts.append(
                    f"EXISTS (SELECT 1 FROM json_each({a}.value) AS {e} WHERE {self._equals(e, v)})"
                )
            joined = (" OR " if atom.any_ else " AND ").join(parts)
            return f"{a}.type = 'array' AND ({joined})"
        if isinstance(atom, Compare):
            # TEXT compares with the BINARY collation: UTF-8 byte order, which is
            # code point order, as Python's str comparison.
            types = "= 'text'" if isinstance(atom.value, str) else "IN ('integer', 'real')"
            self.params.append(atom.value)
            return f"{a}.type {types} AND {a}.atom {_SQL_OP[atom.op]} ?"
        if isinstance(atom, In):
            return "(" + " OR ".join(f"({self._equals(a, v)})" for v in atom.values) + ")"
        if isinstance(atom, Exists):
            return "1"
        raise AssertionError(f"unexpected atom {atom!r}")

    def _equals(self, a: str, value: Json) -> str:
        if value is None:
            return f"{a}.type = 'null'"
        if isinstance(value, bool):
            return f"{a}.type = '{'true' if value else 'false'}'"
        if isinstance(value, (int, float)):
            self.params.append(value)
            return f"{a}.type IN ('integer', 'real') AND {a}.atom = ?"
        if isinstance(value, str):
            self.params.append(value)
            return f"{a}.type = 'text' AND {a}.atom = ?"
        if isinstance(value, list):
            self.params.append(len(value))
            parts = [f"{a}.type = 'array'", f"json_array_length({a}.value) = ?"]
            for i, item in enumerate(value):
                e = self._alias()
                self.params.append(i)
                parts.append(
                    f"EXISTS (SELECT 1 FROM json_each({a}.value) AS {e} "
                    f"WHERE {e}.key = ? AND {self._equals(e, item)})"
                )
            return " AND ".join(parts)
        if isinstance(value, dict):
            self.params.append(len(value))
            parts = [f"{a}.type = 'object'", f"(SELECT count(*) FROM json_each({a}.value)) = ?"]
            for key, item in value.items():
                e = self._alias()
                self.params.append(key)
                parts.append(
                    f"EXISTS (SELECT 1 FROM json_each({a}.value) AS {e} "
                    f"WHERE {e}.key = ? AND {self._equals(e, item)})"
                )
            return " AND ".join(parts)
        raise AssertionError(f"unexpected value {value!r}")
