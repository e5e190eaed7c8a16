"""A per-call search strategy: the CLI's ``--strategy``, the inspector's search box
and ``oam mcp --strategy`` rank one call's searches their own way while the store's
recorded default stays as it is (docs/store.md#search-strategies).

``strategy_of`` (``oam_core.checks``, where the search reads it) gives the strategy of
a call. The overrides live in a context variable, each bound to one store object, so
concurrent calls (threads, asyncio tasks) and other stores are not affected, and blocks
for two stores nest.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from oam_core.checks import STRATEGY_OVERRIDE, strategy_of
from oam_core.errors import ConfigurationError
from oam_core.store.options import SearchStrategy

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = ["searching_with", "strategy_of"]


@contextmanager
def searching_with(
    store: OracleMemoryStore, strategy: SearchStrategy | str | None
) -> Iterator[None]:
    """Rank the searches of ``store`` made inside the block with ``strategy`` (None:
    the store's own), without recording it.

    Raises:
        ValueError: for an unknown strategy (``SearchStrategy.parse``).
        ConfigurationError: (a ``ValueError``) for one the store's indexes cannot
            serve (an Oracle store serves only the strategy it was opened with).
    """
    if strategy is None:
        yield
        return
    chosen = SearchStrategy.parse(strategy)
    if not store.runtime.backend.serves_strategy(chosen):
        raise ConfigurationError(
            f"this {type(store).__name__} searches with {store.search_strategy.value} "
            f"only; reopen it with search_strategy={chosen.value} to search by {chosen.value}"
        )
    token = STRATEGY_OVERRIDE.set((*STRATEGY_OVERRIDE.get(), (store, chosen)))
    try:
        yield
    finally:
        STRATEGY_OVERRIDE.reset(token)
