"""What differs between the SQL back ends that share ``store/sql``: a ``Dialect``.

The statements (``statements.py``) and the shared primitives (``backend.py``) are
written once over the records/chunks layout of docs/store.md#schema; each back end
hands them its ``Dialect``: the placeholder, how a list of values is bound and how
"no limit" is written, the row-lock clause, the metadata filter in its JSON functions,
and how its driver's exceptions map onto ``oam_core.errors`` (docs/errors.md;
``driver_errors`` applies such a map at the store boundary, for the Oracle back
end as well).
Vector and full-text ranking stay in the back end's own modules: they are the part
that is not shared.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

from oam_core.errors import OAMError
from oam_core.filters import Cond

T = TypeVar("T")


class Dialect(abc.ABC):
    """The facts of one SQL back end that the shared statements need.

    Attributes:
        mark: The positional parameter placeholder (``?`` or ``%s``).
        lock_row: Appended to a row read inside a write transaction to lock the row
            until it ends (``""`` where the transaction holds the whole database).
        windows: Whether the tables have the validity-window columns
            (``sql/schema.WINDOW_COLUMNS``); False for an older SQLite file read
            where it cannot be upgraded: its rows read as having no window.
    """

    mark: ClassVar[str]
    lock_row: ClassVar[str]
    windows: bool = True

    def marks(self, n: int) -> str:
        """``n`` placeholders separated by commas."""
        return ", ".join([self.mark] * n)

    @abc.abstractmethod
    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """SQL true where ``column`` equals one of ``values`` (one ``batches`` slice),
        and its parameters."""

    @abc.abstractmethod
    def batches(self, values: Sequence[T]) -> Iterator[Sequence[T]]:
        """``values`` in the slices that ``any_of`` binds (none for no values)."""

    @abc.abstractmethod
    def limit(self, value: int | None) -> int | None:
        """The bound ``LIMIT`` value for at most ``value`` rows (None: every row)."""

    @abc.abstractmethod
    def metadata_filter(self, conditions: tuple[Cond, ...]) -> tuple[str, list[Any]]:
        """SQL true where the metadata of records ``r`` satisfies the parsed filter
        ``conditions`` (docs/filters.md), and its parameters."""

    @abc.abstractmethod
    def map_error(self, exc: BaseException, where: str) -> Exception | None:
        """The ``oam_core.errors`` exception for a driver exception (``where`` names
        the database in its message), or None when ``exc`` is not the driver's."""

    @abc.abstractmethod
    def unique_violation(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the driver's unique-key violation."""


ErrorMap = Callable[[BaseException, str], "Exception | None"]
"""``map(exc, where)``: the ``oam_core.errors`` exception for a database driver's
exception (``where`` names the database in its message), or None when ``exc`` is
not the driver's."""


@contextmanager
def driver_errors(map_error: ErrorMap, where: str) -> Iterator[None]:
    """Map the driver's exceptions raised inside the block to ``oam_core.errors``
    (docs/errors.md) with ``raise ... from exc``, so the driver's exception stays the
    ``__cause__``; every other exception passes unchanged. The store boundary: each
    back end wraps every connection it lends, every transaction and every open.

    Args:
        map_error: The back end's mapping (see ``ErrorMap``).
        where: Names the database in the messages (a path, a redacted URL).
    """
    try:
        yield
    except OAMError:
        raise
    except Exception as exc:
        mapped = map_error(exc, where)
        if mapped is None:
            raise
        raise mapped from exc
