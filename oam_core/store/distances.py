"""What a search result's distance measures, and the ``float`` subclass that says
it (docs/store.md#search-strategies). Re-exported by ``store/fusion.py``."""

from __future__ import annotations

import enum
from typing import ClassVar

__all__ = [
    "CosineDistance",
    "Distance",
    "DistanceKind",
    "FusedDistance",
    "HybridIndexDistance",
    "KeywordDistance",
    "RerankedDistance",
    "distance_type",
]


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
