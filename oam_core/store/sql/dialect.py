"""What differs between the SQL back ends that share ``store/sql``: a ``Dialect``.

The statements (``statements.py``) and the shared primitives (``backend.py``) are
written once over the records/chunks layout of docs/store.md#schema; each back end
hands them its ``Dialect``: the placeholder, how a list of values is bound, the
metadata-filter compiler (JSON functions), the row-lock clause, and how its driver's
exceptions map onto ``oam_core.errors`` (docs/errors.md). Vector and full-text
ranking stay in the back end's own modules: they are the part that is not shared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from oam_core.errors import OAMError
from oam_core.store.filters import Cond

T = TypeVar("T")

ErrorMap = Callable[[BaseException, str], "Exception | None"]
"""``map(exc, where)``: the ``oam_core.errors`` exception for a driver exception
(``where`` names the database in its message), or None when ``exc`` is not the
driver's."""


@dataclass(frozen=True)
class Dialect:
    """The facts of one SQL back end that the shared statements need.

    Attributes:
        name: The database's name in messages (``"SQLite"``, ``"PostgreSQL"``).
        mark: The positional parameter placeholder (``?`` or ``%s``).
        array_binds: True when a whole list binds as one array parameter
            (``col = ANY(%s)``); else lists become ``IN (?, ?, ...)`` of at most
            ``IN_LIST`` values.
        no_limit: The ``LIMIT`` value that means "every row" (SQLite ``-1``,
            PostgreSQL ``NULL``).
        metadata_column: The records column the metadata filters run on (the JSON
            text, or a generated ``jsonb`` column).
        compile_filter: ``(column, conditions) -> (sql, params)``: the metadata
            filter (docs/filters.md) in the dialect's JSON functions.
        no_vector: SQL true for a chunk ``c`` stored without a vector.
        for_update: Appended to a row read inside a write transaction to lock the
            row (``""`` where the whole database is locked by the transaction).
        greatest: The scalar maximum of two values (``max`` / ``GREATEST``).
        is_same: The null-safe equality operator (``IS`` / ``IS NOT DISTINCT FROM``).
        map_error: See ``ErrorMap``.
        unique_violation: Whether a driver exception is a unique-key violation.
    """

    name: str
    mark: str
    array_binds: bool
    no_limit: int | None
    metadata_column: str
    compile_filter: Callable[[str, tuple[Cond, ...]], tuple[str, list[Any]]]
    no_vector: str
    for_update: str
    greatest: str
    is_same: str
    map_error: ErrorMap
    unique_violation: Callable[[BaseException], bool]

    def marks(self, n: int) -> str:
        """``n`` placeholders separated by commas."""
        return ", ".join([self.mark] * n)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """SQL true where ``column`` equals one of ``values`` (at most ``IN_LIST`` of
        them without ``array_binds``), and its parameters."""
        if self.array_binds:
            return f"{column} = ANY({self.mark})", [list(values)]
        return f"{column} IN ({self.marks(len(values))})", list(values)

    def batches(self, values: Sequence[T]) -> Iterator[Sequence[T]]:
        """``values`` in slices that ``any_of`` can bind (one slice with array binds)."""
        size = len(values) if self.array_binds else IN_LIST
        for i in range(0, len(values), max(size, 1)):
            yield values[i : i + size]

    def limit(self, value: int | None) -> int | None:
        """The bound ``LIMIT`` value for ``value`` rows (None: every row)."""
        return self.no_limit if value is None else value


IN_LIST = 500
"""Most values in one ``IN (...)`` list (SQLite allows 32766 parameters)."""


@contextmanager
def driver_errors(dialect: Dialect, where: str) -> Iterator[None]:
    """Map the driver's exceptions raised inside the block to ``oam_core.errors``
    (``raise ... from exc``: the driver's exception stays the ``__cause__``); every
    other exception passes unchanged. Used at the store boundary: each connection
    borrowed for a read, each write transaction, each open.

    Args:
        dialect: Whose driver's exceptions to map.
        where: Names the database in the messages (a path, a redacted URL).
    """
    try:
        yield
    except OAMError:
        raise
    except Exception as exc:
        mapped = dialect.map_error(exc, where)
        if mapped is None:
            raise
        raise mapped from exc
