"""Compile a parsed metadata filter (``store/filters.py``) to jsonb SQL (SPEC §4).

Every field name and value is a bound parameter (``%s``); the SQL text holds only
fixed operators. jsonb equality already is JSON equality as SPEC §4 defines it:
numbers compare by value (``1 = 1.0``), ``true`` never equals ``1``, arrays by order
and length, objects deeply. Each condition is wrapped in ``COALESCE(..., false)`` so a
missing field is false and ``$not`` of it is true, as in the reference evaluator
``filters.matches``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from oam_core.store.filters import AllOf, Contains, Equals, Expr, Field, Nested, Not


class PgFilterCompiler:
    """Turns a filter tree into SQL over a jsonb expression; params in ``self.params``."""

    def __init__(self) -> None:
        self.params: list[Any] = []
        self._aliases = itertools.count()

    def compile(self, column: str, conditions: tuple[Field, ...]) -> str:
        """Return SQL true where ``column`` (a jsonb object or NULL) satisfies all
        ``conditions``."""
        if not conditions:
            return "TRUE"
        return " AND ".join(self._field(column, f) for f in conditions)

    def _field(self, parent: str, field: Field) -> str:
        expr = field.expr
        if isinstance(expr, Not):
            return f"NOT ({self._field(parent, Field(field.key, expr.expr))})"
        if isinstance(expr, AllOf):
            return (
                "("
                + " AND ".join(self._field(parent, Field(field.key, e)) for e in expr.exprs)
                + ")"
            )
        # The field's value gets an alias in a one-row subquery, so the bound key
        # appears once however often the condition refers to the value.
        n = next(self._aliases)
        value = f"_f{n}.v"
        cond = self._match(value, expr)  # its params precede the key's in the SQL text
        self.params.append(field.key)
        return f"COALESCE((SELECT {cond} FROM (SELECT {parent} -> %s::text AS v) AS _f{n}), FALSE)"

    def _match(self, value: str, expr: Expr) -> str:
        if isinstance(expr, Equals):
            self.params.append(json.dumps(expr.value, ensure_ascii=False, allow_nan=False))
            return f"{value} = %s::jsonb"
        if isinstance(expr, Nested):
            inner = [self._field(value, f) for f in expr.conditions]
            return " AND ".join([f"jsonb_typeof({value}) = 'object'", *inner])
        if isinstance(expr, Contains):
            parts = []
            for v in expr.values:
                self.params.append(json.dumps([v], ensure_ascii=False, allow_nan=False))
                parts.append(f"{value} @> %s::jsonb")
            joined = (" OR " if expr.any_ else " AND ").join(parts)
            return f"(jsonb_typeof({value}) = 'array' AND ({joined}))"
        raise AssertionError(f"unexpected expression {expr!r}")
