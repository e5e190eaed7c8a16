"""A per-call search strategy: the CLI's ``--strategy``, the inspector's search box
and ``oam mcp --strategy`` rank one call's searches their own way while the store's
recorded default stays as it is (docs/store.md#search-strategies).

The override lives in a context variable bound to one store object, so concurrent
calls (threads, asyncio tasks) and other stores are not affected.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from oam_core.errors import InvalidArgumentError
from oam_core.store.options import SearchStrategy

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = ["searching_with", "strategy_of"]

_OVERRIDE: ContextVar[tuple[object, SearchStrategy] | None] = ContextVar(
    "oam_search_strategy", default=None
)


def strategy_of(store: object) -> SearchStrategy:
    """The strategy ``store`` ranks this call's searches with: the override of an
    enclosing ``searching_with(store, ...)``, else ``store.search_strategy``."""
    override = _OVERRIDE.get()
    if override is not None and override[0] is store:
        return override[1]
    strategy = getattr(store, "search_strategy", SearchStrategy.VECTOR)
    return strategy if isinstance(strategy, SearchStrategy) else SearchStrategy.VECTOR


@contextmanager
def searching_with(
    store: OracleMemoryStore, strategy: SearchStrategy | str | None
) -> Iterator[None]:
    """Rank the searches of ``store`` made inside the block with ``strategy`` (None:
    the store's own), without recording it.

    Raises:
        ValueError: for an unknown strategy, or one the store's indexes cannot serve
            (an Oracle store serves only the strategy it was opened with).
    """
    if strategy is None:
        yield
        return
    chosen = SearchStrategy.parse(strategy)
    if not store.runtime.backend.serves_strategy(chosen):
        raise InvalidArgumentError(
            f"this {type(store).__name__} searches with {store.search_strategy.value} "
            f"only; reopen it with search_strategy={chosen.value} to search by {chosen.value}"
        )
    token = _OVERRIDE.set((store, chosen))
    try:
        yield
    finally:
        _OVERRIDE.reset(token)
