"""Distances and rank fusion shared by every back end (SPEC §3.5)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

RRF_K = 60
"""The usual reciprocal-rank-fusion constant (Cormack et al., 2009)."""

K = TypeVar("K", bound=Hashable)


def rrf(ranked_lists: Sequence[Sequence[K]], k: int = RRF_K) -> dict[K, float]:
    """Reciprocal rank fusion: ``score(x) = sum over lists of 1 / (k + rank(x))``.

    Ranks start at 1. Returns the fused scores of every key seen.
    """
    scores: dict[K, float] = {}
    for ranked in ranked_lists:
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return scores


def rrf_distance(score: float, n_lists: int, k: int = RRF_K) -> float:
    """Map a fused RRF score to a distance in [0, 1]: ``1 - score / best possible``."""
    best = n_lists / (k + 1)
    return max(0.0, min(1.0, 1.0 - score / best))


def bm25_distance(score: float) -> float:
    """Map a BM25 score (>= 0, higher is better) to a distance in (0, 1]: ``1/(1+s)``.

    A fixed transform, so distances compare across queries.
    """
    return 1.0 / (1.0 + max(0.0, score))
