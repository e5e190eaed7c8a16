"""Compile a parsed metadata filter (``store/filters.py``) to jsonb SQL (docs/filters.md).

Every field name and value is a bound parameter (``%s``); the SQL text holds only
fixed operators. jsonb equality already is JSON equality as docs/filters.md defines it:
numbers compare by value (``1 = 1.0``), ``true`` never equals ``1``, arrays by order
and length, objects deeply. Each condition is wrapped in ``COALESCE(..., false)`` so a
missing field is false and ``$not`` of it is true, as in the reference evaluator
``filters.matches``.
"""

from __future__ import annotations

import json
from typing import Any

from oam_core.store.filters import Atom, Compare, Contains, Equals, Exists, Field, In, Nested
from oam_core.store.sql.filter import FilterCompiler

_SQL_OP = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _jsonb(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


class PgFilterCompiler(FilterCompiler):
    """Turns a filter tree into SQL over a jsonb expression (``compile``); its
    parameters are in ``params``."""

    true = "TRUE"
    false = "FALSE"

    def field(self, parent: str, field: Field) -> str:
        # The field's value gets an alias in a one-row subquery, so the bound key
        # appears once however often the condition refers to the value.
        alias = self.alias("_f")
        value = f"{alias}.v"
        cond = self._match(value, field.atom)  # its params precede the key's in the SQL text
        self.params.append(field.key)
        return (
            f"COALESCE((SELECT {cond} FROM (SELECT {parent} -> %s::text AS v) AS {alias}), FALSE)"
        )

    def _match(self, value: str, atom: Atom) -> str:
        if isinstance(atom, Equals):
            self.params.append(_jsonb(atom.value))
            return f"{value} = %s::jsonb"
        if isinstance(atom, Nested):
            inner = [self.condition(value, c) for c in atom.conditions]
            return " AND ".join([f"jsonb_typeof({value}) = 'object'", *inner])
        if isinstance(atom, Contains):
            parts = []
            for v in atom.values:
                self.params.append(_jsonb([v]))
                parts.append(f"{value} @> %s::jsonb")
            joined = (" OR " if atom.any_ else " AND ").join(parts)
            return f"(jsonb_typeof({value}) = 'array' AND ({joined}))"
        if isinstance(atom, Compare):
            op = _SQL_OP[atom.op]
            self.params.append(atom.value if isinstance(atom.value, str) else _jsonb(atom.value))
            if isinstance(atom.value, str):
                # COLLATE "C" compares UTF-8 bytes: code point order, whatever the
                # database's default collation.
                return (
                    f"(jsonb_typeof({value}) = 'string' AND "
                    f'({value} #>> \'{{}}\') COLLATE "C" {op} %s::text COLLATE "C")'
                )
            return f"(jsonb_typeof({value}) = 'number' AND {value} {op} %s::jsonb)"
        if isinstance(atom, In):
            self.params.extend(_jsonb(v) for v in atom.values)
            return f"{value} IN ({', '.join(['%s::jsonb'] * len(atom.values))})"
        if isinstance(atom, Exists):
            return f"{value} IS NOT NULL"
        raise AssertionError(f"unexpected atom {atom!r}")
