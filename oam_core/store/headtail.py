"""Fused rankings whose first results do not depend on ``k``: a head fused from lists
ranked a fixed depth deep, and a tail for a ``k`` the head does not fill
(docs/store.md#search-strategies, docs/retrieval.md#memories-and-messages-together).

A fusion reads rank positions, so fusing lists ranked ``k`` deep would make the first
results depend on ``k``: a record tenth in one list and sixtieth in another scores
more when the second list reaches sixty. Every fused ranking of a search (HYBRID, a
KEYWORD query searched in parts, Oracle's index ranking with the query's signal
lists, memories fused with messages) therefore fuses only the first ``depth`` entries
of each list (``FusionConfig.depth``, or ``provenancefusion.MIN_DEPTH``): the head,
the same for every ``k``, holds every record of those lists.

When more results are asked for than the head holds, the lists are ranked deeper
and the records they hold beyond the head follow it (``tail``), by their best rank in
any list (tied entries of a list sharing one, ``tied_ranks``), each at a distance
above the head's last that grows with that rank (``tail_distance``): records of one
rank share a distance, and so come back by record type then id (the store's tie
rule). A list is ranked past ``k`` until its tie at ``k`` is whole (``next_depth``),
so no deeper ranking finds one more record of a rank already returned. Every smaller
``k`` then gives the first results of every larger one, order and distances, as long
as each list's first entries do not depend on how deep it is ranked (true of every
exact ranking, where ties come in record-key order; an approximate vector index,
ANN, may find other neighbours when asked for more).

Everything here is pure (no I/O): the callers rank the lists, ``with_tail`` through a
``fetch`` callable, ``provenancefusion`` through its steps.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from oam_core.checks import MAX_ROWS

__all__ = [
    "next_depth",
    "scored",
    "settled",
    "tail",
    "tail_distance",
    "tied_ranks",
    "with_tail",
]

K = TypeVar("K", bound=Hashable)


def tied_ranks(
    scored: Sequence[tuple[K, float]], alike: dict[Hashable, object] | None = None
) -> list[int]:
    """The rank (from 1) of each entry of ``scored``, a list ordered best first by its
    score or distance: an entry whose value equals an earlier entry's (exactly,
    ``==``, among the entries just before it with that value) shares that entry's
    rank when ``alike`` gives both the same value too (``search.evidence``: every list
    scored them alike); any other entry's rank is its position.

    Args:
        scored: ``(key, score or distance)`` pairs in ranked order (a back end's
            ``rank_vector``, ``rank_keyword`` or native list).
        alike: Per key, what else must be equal for a tie (None: the value alone).

    Returns:
        One int per entry, ``ranks[0] == 1`` when non-empty.
    """
    ranks: list[int] = []
    for position, (key, value) in enumerate(scored, start=1):
        rank, back = position, position - 2
        while back >= 0 and scored[back][1] == value:
            if alike is None or alike.get(scored[back][0]) == alike.get(key):
                rank = ranks[back]
            back -= 1
        ranks.append(rank)
    return ranks


def scored(head: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    """The entries of ``head`` the fusion gave a score: distance below 1. An entry at
    distance 1 is held only by lists of weight 0 (HYBRID's question vector list when
    the second-stage vector lists take all its weight); it is ranked with the tail."""
    return [(key, d) for key, d in head if d < 1.0]


def settled(
    head: Sequence[tuple[K, float]],
    first: Sequence[Sequence[tuple[K, float]]],
    depth: int,
    needed: int,
) -> list[tuple[K, float]] | None:
    """The ranking for ``needed`` results without ranking the lists deeper, or None
    when they must be: the head's scored entries (``scored``) when they are enough,
    else, when every list of ``first`` came back shorter than ``depth`` (it holds
    every record it can), those followed by the ``tail`` of ``first``.

    Args:
        head: The fused head, ``(key, distance)`` pairs, best first.
        first: The lists the head was fused from, as ranked ``depth`` deep.
        depth: The head's depth (>= 1).
        needed: How many results the caller needs (>= 1).
    """
    ranked = scored(head)
    if len(ranked) >= needed:
        return ranked
    if all(len(lst) < depth for lst in first):
        return [*ranked, *tail(head, first, first, depth)]
    return None


def next_depth(lists: Sequence[Sequence[tuple[K, float]]], n: int, needed: int) -> int | None:
    """How deep to rank the lists once more, or None when ``lists`` (ranked ``n``
    deep, ``n > needed``) hold every entry tied with their ``needed``-th: each list
    is shorter than ``n`` or its last entry's value differs from its ``needed``-th's.
    Twice as deep each time, at most ``checks.MAX_ROWS``."""
    if n >= MAX_ROWS:
        return None
    for lst in lists:
        if len(lst) >= n and lst[n - 1][1] == lst[needed - 1][1]:
            return min(2 * n, MAX_ROWS)
    return None


def tail_distance(last: float, rank: int, depth: int) -> float:
    """The distance of a tail record of best rank ``rank``: ``1 - (1 - last) * depth
    / (depth + rank)``, above the head's last distance ``last`` (in [0, 1]) and
    rising toward 1 with the rank, half way at ``rank == depth``."""
    return 1.0 - (1.0 - last) * depth / (depth + rank)


def tail(
    head: Sequence[tuple[K, float]],
    first: Sequence[Sequence[tuple[K, float]]],
    deeper: Sequence[Sequence[tuple[K, float]]],
    depth: int,
) -> list[tuple[K, float]]:
    """The records of ``deeper`` not among the head's scored entries (``scored``) nor
    left out of the head (a record of ``first`` the head does not list: a message a
    memory stands in for), as ``(key, tail_distance)`` pairs by best rank
    (``tied_ranks`` of each list, by value alone); ``last`` is the largest scored
    distance of the head (0 for none).

    Args:
        head: The fused head, ``(key, distance)`` pairs.
        first: The lists the head was fused from.
        deeper: The same lists ranked at least as deep (``next_depth``).
        depth: The head's depth (>= 1).
    """
    listed = {key for key, _ in head}
    ranked = scored(head)
    placed = {key for key, _ in ranked}
    placed.update(key for lst in first for key, _ in lst if key not in listed)
    best: dict[K, int] = {}
    for lst in deeper:
        for (key, _), rank in zip(lst, tied_ranks(lst), strict=True):
            if key not in placed and rank < best.get(key, MAX_ROWS):
                best[key] = rank
    last = max((d for _, d in ranked), default=0.0)
    ordered = sorted(best.items(), key=lambda kr: kr[1])
    return [(key, tail_distance(last, rank, depth)) for key, rank in ordered]


def with_tail(
    head: list[tuple[K, float]],
    first: Sequence[Sequence[tuple[K, float]]],
    fetch: Callable[[int], Sequence[Sequence[tuple[K, float]]]],
    depth: int,
    needed: int,
) -> list[tuple[K, float]]:
    """The ranking for ``needed`` results: ``settled``, or the head's scored entries
    followed by the ``tail`` of the lists ranked by ``fetch(n)`` (the same lists as
    ``first``, ``n`` deep) past ``needed`` until their ties are whole
    (``next_depth``).

    Args:
        head: The fused head, ``(key, distance)`` pairs (a distance in [0, 1]).
        first: The lists the head was fused from, ranked ``depth`` deep (no deeper).
        fetch: Ranks the same lists ``n`` deep.
        depth: The head's depth (>= 1).
        needed: How many results the caller needs (>= 1).
    """
    done = settled(head, first, depth, needed)
    if done is not None:
        return done
    n: int | None = min(needed + 1, MAX_ROWS)
    deeper: Sequence[Sequence[tuple[K, float]]] = []
    while n is not None:
        deeper = fetch(n)
        n = next_depth(deeper, n, needed)
    return [*scored(head), *tail(head, first, deeper, depth)]
