"""Compile a parsed metadata filter (``oam_core/filters.py``) to jsonb SQL (docs/filters.md).

Every field name and value is a bound parameter (``%s``); the SQL text holds only
fixed operators. jsonb equality already is JSON equality as docs/filters.md defines it:
numbers compare by value (``1 = 1.0``), ``true`` never equals ``1``, arrays by order
and length, objects deeply. Each condition is wrapped in ``COALESCE(..., false)`` so a
missing field is false and ``$not`` of it is true, as in the reference evaluator
``filters.matches``.

A value list (``$in``, ``$nin``, ``$array_contains``, ``$array_contains_any``) is one
``jsonb`` array parameter whatever its length, so no list reaches libpq's limit of
65,535 parameters: ``IN (SELECT jsonb_array_elements(%s))`` (the server hashes the
list once per query), or ``@>`` of the whole list for ``$array_contains``. (A
``jsonb[]`` parameter would do too, but psycopg takes seconds to send 100,000
strings that way; one JSON text is sent as it is.)
"""

from __future__ import annotations

import json
from typing import Any

from oam_core.filters import (
    Atom,
    Compare,
    Contains,
    Equals,
    Exists,
    Field,
    In,
    Nested,
    join_sql,
)
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
        if isinstance(field.atom, (Equals, In, Exists)):
            # These name the value once: no subquery, so the server evaluates no
            # subplan per row (a 5% filter over 1M rows scans every row's metadata).
            self.params.append(field.key)
            cond = self._match(f"({parent} -> %s::text)", field.atom)
            return f"COALESCE({cond}, FALSE)"
        # Others name the value several times: it gets an alias in a one-row
        # subquery, so the bound key appears once however often they refer to it.
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
            return join_sql([f"jsonb_typeof({value}) = 'object'", *inner], " AND ")
        if isinstance(atom, Contains):
            # An array contains [v1, v2] when it holds each of them (scalars match
            # only scalar members); "any" asks it of [v] for each v.
            if atom.any_:
                self.params.append(_jsonb(list(atom.values)))
                m = self.alias("_m")
                test = (
                    f"EXISTS (SELECT 1 FROM jsonb_array_elements({value}) AS {m}(m) "
                    f"WHERE {m}.m IN (SELECT jsonb_array_elements(%s::jsonb)))"
                )
            else:
                self.params.append(_jsonb(list(atom.values)))
                test = f"{value} @> %s::jsonb"
            return f"(jsonb_typeof({value}) = 'array' AND {test})"
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
            self.params.append(_jsonb(list(atom.values)))
            return f"{value} IN (SELECT jsonb_array_elements(%s::jsonb))"
        if isinstance(atom, Exists):
            return f"{value} IS NOT NULL"
        raise AssertionError(f"unexpected atom {atom!r}")
