"""One rank fusion for every back end (docs/retrieval.md, docs/store.md#search-strategies).

Back ends rank and never fuse: ``rank_vector``, ``rank_keyword`` and ``rank_hybrid``
(``store/backend.py``) return ranked lists, and Oracle's hybrid index returns its own
ranking. ``store/search.py`` fuses them here, each list once, with the weights of a
``FusionConfig``: the text lists first (their fused head is the pool the query's
signal lists, ``store/signals.py``, are read from), then those signal lists onto the
same scores. ``fuse`` is pure; the distances a search returns say what they measure
(``Distance.kind``), so callers need not guess it from the store's strategy.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from oam_core.errors import InvalidArgumentError
from oam_core.store.signals import (
    DATE_WEIGHT,
    OWN_TEXT_WEIGHT,
    POOL,
    SPEAKER_WEIGHT,
    TIME_WEIGHT,
    Signal,
)

__all__ = [
    "DEFAULT_FUSION",
    "HYBRID_DEPTH",
    "RRF_K",
    "Distance",
    "DistanceKind",
    "FusionConfig",
    "distance_type",
    "fuse",
    "normalized_distances",
    "rrf_distance",
]

RRF_K = 5
"""Reciprocal-rank-fusion constant. The classic 60 (Cormack et al., 2009) suits fusing
many systems; with two lists a small constant keeps the weight on each list's top
ranks, which measured better on LoCoMo (bench/locomo_recall.py)."""

HYBRID_DEPTH = 50
"""Candidates each list of a HYBRID search ranks at least, before fusion."""

K = TypeVar("K", bound=Hashable)


class DistanceKind(str, enum.Enum):
    """What a search result's distance measures (lower is nearer in every kind).

    ``COSINE``: the cosine distance of the record's best search row, 0 (same
    direction) to 2 (opposite). ``KEYWORD``: ``1 - BM25 score / the query's best``,
    in [0, 1]. ``FUSED``: ``1 - fused RRF score / best possible`` (HYBRID, and a query
    long enough to be searched in parts), in [0, 1]. ``HYBRID_INDEX``: ``1 - score /
    best score`` of Oracle's hybrid vector index, in [0, 1]. ``RERANKED``: ``1 -
    sigmoid(reranker score)``, in (0, 1) (docs/retrieval.md#reranking).
    """

    COSINE = "cosine"
    KEYWORD = "keyword"
    FUSED = "fused"
    HYBRID_INDEX = "hybrid_index"
    RERANKED = "reranked"


class Distance(float):
    """A search result's distance: a ``float`` (it compares, sorts and serialises as
    one) that also says what it measures, ``kind`` (a ``DistanceKind``).

    ``store.search`` returns ``(record, distance)`` pairs whose distance is one of
    these (docs/store.md#search-strategies); ``1 - distance`` is the relevance score
    the adapters report. ``Distance.of(value, kind)`` makes one; each kind is a
    subclass, so making one costs what ``float(value)`` does.
    """

    __slots__ = ()
    kind: ClassVar[DistanceKind]

    @staticmethod
    def of(value: float, kind: DistanceKind) -> Distance:
        """``value`` as a distance of ``kind``."""
        return distance_type(kind)(value)


class CosineDistance(Distance):
    """A ``DistanceKind.COSINE`` distance."""

    __slots__ = ()
    kind = DistanceKind.COSINE


class KeywordDistance(Distance):
    """A ``DistanceKind.KEYWORD`` distance."""

    __slots__ = ()
    kind = DistanceKind.KEYWORD


class FusedDistance(Distance):
    """A ``DistanceKind.FUSED`` distance."""

    __slots__ = ()
    kind = DistanceKind.FUSED


class HybridIndexDistance(Distance):
    """A ``DistanceKind.HYBRID_INDEX`` distance."""

    __slots__ = ()
    kind = DistanceKind.HYBRID_INDEX


class RerankedDistance(Distance):
    """A ``DistanceKind.RERANKED`` distance."""

    __slots__ = ()
    kind = DistanceKind.RERANKED


_DISTANCE_CLASSES: dict[DistanceKind, type[Distance]] = {
    cls.kind: cls
    for cls in (
        CosineDistance,
        KeywordDistance,
        FusedDistance,
        HybridIndexDistance,
        RerankedDistance,
    )
}


def distance_type(kind: DistanceKind) -> type[Distance]:
    """The ``Distance`` subclass of ``kind``: ``distance_type(kind)(value)`` is
    ``Distance.of(value, kind)``, for making many of one kind."""
    return _DISTANCE_CLASSES[kind]


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """How a HYBRID search fuses its lists (modelled on langchain-postgres's
    ``HybridSearchConfig``; docs/retrieval.md).

    Attributes:
        rrf_k: The RRF constant ``k`` of ``w / (k + rank)``, an int >= 1.
        list_weight: The weight ``w`` of each vector and keyword list (> 0).
        index_weight: The weight of a ranking a back end's index fused by itself
            (Oracle's hybrid vector index fuses a vector and a keyword list: two
            lists' worth), against which the signal lists are weighed (> 0).
        signals: Which of the query's signal lists apply (``signals.Signal``).
        speaker_weight, date_weight, time_weight, own_text_weight: The weight of
            each signal list (> 0; the defaults and why: ``store/signals.py``).
        pool: How many of the best fused candidates the signal lists re-rank (>= 1).
        depth: How many candidates each list ranks at least (>= 1).

    Raises:
        InvalidArgumentError: naming the field, for a value out of its range.
    """

    rrf_k: int = RRF_K
    list_weight: float = 1.0
    index_weight: float = 2.0
    signals: frozenset[Signal] = frozenset(Signal)
    speaker_weight: float = SPEAKER_WEIGHT
    date_weight: float = DATE_WEIGHT
    time_weight: float = TIME_WEIGHT
    own_text_weight: float = OWN_TEXT_WEIGHT
    pool: int = POOL
    depth: int = HYBRID_DEPTH

    def __post_init__(self) -> None:
        for name in ("rrf_k", "pool", "depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")
        for name in (
            "list_weight",
            "index_weight",
            "speaker_weight",
            "date_weight",
            "time_weight",
            "own_text_weight",
        ):
            weight = getattr(self, name)
            if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
                raise InvalidArgumentError(f"{name} must be a number > 0, got {weight!r}")

        if not isinstance(self.signals, frozenset) or not all(
            isinstance(s, Signal) for s in self.signals
        ):
            raise InvalidArgumentError(
                f"signals must be a frozenset of Signal, got {self.signals!r}"
            )

    def weight(self, signal: Signal) -> float:
        """The weight of ``signal``'s list."""
        weight: float = getattr(self, f"{signal.value}_weight")
        return weight


DEFAULT_FUSION = FusionConfig()
"""The fusion every store searches with."""


def fuse(
    lists: Sequence[Sequence[K]],
    weights: Sequence[float] | None = None,
    *,
    rrf_k: int = RRF_K,
    onto: Sequence[tuple[K, float]] = (),
) -> list[tuple[K, float]]:
    """Weighted reciprocal rank fusion: ``score(x) = sum over lists of w / (rrf_k +
    rank of x)``, ranks from 1.

    Args:
        lists: Ranked key lists, best first (a key at most once a list).
        weights: One weight per list (default 1.0 each).
        rrf_k: The RRF constant.
        onto: ``(key, score)`` pairs of an earlier fusion the lists add to (the
            text lists' fusion, for the signal lists of the same search): the
            same scores, to the last bit, as fusing all the lists at once.

    Returns:
        ``(key, fused score)`` of every key, best first; ties in first-seen order
        (``onto``'s keys first).
    """
    scores = dict(onto)
    for i, ranked in enumerate(lists):
        weight = 1.0 if weights is None else weights[i]
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


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
