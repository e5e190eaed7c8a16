"""A store's search with a chosen ``FusionConfig`` (store/search.py ``search``, the body
of ``store.search``), for the tests that switch HYBRID's lists on and off."""

from __future__ import annotations

from typing import Any

from oam_core.apis._sentinel import NOT_SET
from oam_core.store import search as search_flow
from oam_core.store.fusion import FusionConfig


def fused_search(
    store: Any,
    query: str,
    k: int,
    fusion: FusionConfig,
    *,
    user_id: Any = NOT_SET,
    metadata_filter: Any = NOT_SET,
) -> list[tuple[Any, float]]:
    """``(record, distance)`` pairs of ``store.search(query, k)`` fused by ``fusion``,
    with the store's strategy and reranker; ``user_id`` (when given) scopes exactly."""
    return search_flow.search(
        store.runtime,
        query,
        k,
        strategy=store.search_strategy,
        reranker=store.reranker,
        query_vector=None,
        thread_id=NOT_SET,
        user_id=user_id,
        agent_id=NOT_SET,
        exact_user_match=user_id is not NOT_SET,
        exact_agent_match=False,
        exact_thread_match=False,
        record_types=None,
        metadata_filter=metadata_filter,
        fusion=fusion,
    )
