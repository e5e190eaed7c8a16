"""A generated Oracle statement: SQL text, named binds and declared bind types.

Every statement the Oracle back end runs is built as a ``Stmt`` by pure functions
(ddl.py, sql.py, filter.py), so tests can check the exact SQL, the bind values and
the bind types without a database. ``types`` names the ``oracledb.DB_TYPE_*`` each
typed bind gets through ``cursor.setinputsizes`` (docs/oracle.md#bind-types): VECTOR
for ``array.array("f")`` embeddings, JSON for metadata dicts, CLOB for long text and
TIMESTAMP for naive-UTC datetimes (a plain datetime bind would be a DATE).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

BindType = Literal["VECTOR", "JSON", "CLOB", "TIMESTAMP"]


@dataclass(frozen=True)
class Stmt:
    """One statement.

    Attributes:
        sql: The SQL or PL/SQL text (no trailing ``;`` for SQL; PL/SQL ends ``END;``).
        binds: Named binds for ``execute``; for ``executemany``, use ``rows``.
        rows: One bind dict per row for ``executemany`` (empty for ``execute``).
        types: Declared ``DB_TYPE_*`` per bind name.
    """

    sql: str
    binds: Mapping[str, Any] = field(default_factory=dict)
    types: Mapping[str, BindType] = field(default_factory=dict)
    rows: Sequence[Mapping[str, Any]] = ()

    @property
    def is_plsql(self) -> bool:
        """True for an anonymous PL/SQL block."""
        return self.sql.lstrip().upper().startswith(("BEGIN", "DECLARE"))
