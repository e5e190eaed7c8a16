"""What the SQL back ends' metadata-filter compilers share (docs/filters.md).

A compiler turns a parsed filter tree (``oam_core/filters.py``) into one SQL condition
over a JSON column; every key and value is a bound parameter, collected in
``params`` in the order their placeholders appear in the text, so no filter key or
value can reach the SQL. ``NOT``/``AND``/``OR`` are rendered once
(``filters.render_sql``); a back end writes the SQL of one field condition.
"""

from __future__ import annotations

import abc
import itertools
from typing import Any, ClassVar

from oam_core.filters import Cond, Field, join_sql, render_sql


class FilterCompiler(abc.ABC):
    """Compiles a filter tree to SQL in one dialect; parameters in ``self.params``.

    Attributes:
        true: The dialect's constant true condition (an empty ``$and``).
        false: Its constant false condition (an empty ``$or``).
    """

    true: ClassVar[str]
    false: ClassVar[str]

    def __init__(self) -> None:
        self.params: list[Any] = []
        self._aliases = itertools.count()

    def compile(self, column: str, conditions: tuple[Cond, ...]) -> str:
        """Return SQL true where ``column`` (a JSON object, or NULL) satisfies all
        ``conditions``."""
        if not conditions:
            return self.true
        return join_sql([self.condition(column, c) for c in conditions], " AND ", bare=True)

    def condition(self, parent: str, cond: Cond) -> str:
        """SQL for ``cond`` over the JSON value ``parent``."""
        return render_sql(cond, lambda f: self.field(parent, f), true=self.true, false=self.false)

    def alias(self, stem: str) -> str:
        """A new alias ``<stem><n>`` for a subquery of this filter."""
        return f"{stem}{next(self._aliases)}"

    @abc.abstractmethod
    def field(self, parent: str, field: Field) -> str:
        """SQL for one field condition of the JSON object ``parent``."""
