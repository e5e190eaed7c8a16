"""Distances and rank fusion shared by every back end (docs/store.md#search-strategies)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

RRF_K = 5
"""Reciprocal-rank-fusion constant. The classic 60 (Cormack et al., 2009) suits fusing
many systems; with two lists a small constant keeps the weight on each list's top
ranks, which measured better on LoCoMo (bench/locomo_recall.py)."""

K = TypeVar("K", bound=Hashable)


def rrf(
    ranked_lists: Sequence[Sequence[K]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> dict[K, float]:
    """Reciprocal rank fusion: ``score(x) = sum over lists of w / (k + rank(x))``.

    Ranks start at 1; ``weights`` (one per list, default 1.0 each) scale each list's
    contribution. Returns the fused scores of every key seen, in first-seen order.
    """
    scores: dict[K, float] = {}
    for i, ranked in enumerate(ranked_lists):
        weight = 1.0 if weights is None else weights[i]
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return scores


def rrf_distance(score: float, n_lists: float, k: int = RRF_K) -> float:
    """Map a fused RRF score to a distance in [0, 1]: ``1 - score / best possible``,
    the best possible being rank 1 in every list (``n_lists``: the number of lists,
    or the sum of their weights)."""
    best = n_lists / (k + 1)
    return max(0.0, min(1.0, 1.0 - score / best))


def normalized_distances(scored: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    """Turn ``(key, score)`` pairs (higher is better, >= 0) into ``(key, 1 - score /
    best score)``: the best match gets 0, the others their shortfall from it, in [0, 1].

    BM25 scores have no fixed scale (they grow with corpus statistics and query
    length), so keyword distances are relative to the query's best match.
    """
    best = max((s for _, s in scored), default=0.0)
    if best <= 0:
        return [(key, 0.0) for key, _ in scored]
    return [(key, max(0.0, min(1.0, 1.0 - s / best))) for key, s in scored]
